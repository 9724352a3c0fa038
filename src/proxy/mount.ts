/**
 * What the proxy and the decision service both do besides the gate: serve Prometheus metrics at a
 * path of their own, check their log option, listen and close.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { optionError } from '../base/errors.js'
import { assertPeers, loadPeer } from '../base/peer.js'
import { knownKeys, oneOf, received } from '../base/validate.js'
import { LOG_FORMATS, LOG_LEVELS, ProxyLog, type ProxyLogOptions } from './log.js'

/** Metrics served by a server of the package. */
export interface MountedMetrics {
  serve(res: ServerResponse): Promise<void>
  stop(): void
}

/** Checks a `metricsPath` option (`ERR_AIRLOCK_OPTION`). */
export function checkMetricsPath(metricsPath: unknown): void {
  if (
    metricsPath !== undefined &&
    (typeof metricsPath !== 'string' || !/^\/[A-Za-z0-9._~-][A-Za-z0-9._~/-]*$/.test(metricsPath))
  ) {
    optionError(
      `metricsPath must be a path of its own such as '/metrics' (no '/', query, fragment or spaces: it is served instead of the site there), got ${received(metricsPath)}`,
    )
  }
}

/** The gate metrics of this process on a registry of their own (needs `prom-client`). */
export async function metricsAt(metricsPath: string, where: string): Promise<MountedMetrics> {
  checkMetricsPath(metricsPath)
  assertPeers(['prom-client'], where)
  const prom = loadPeer<typeof import('prom-client')>('prom-client', where)
  const { airlockMetrics } = await import('../prometheus/metrics.js')
  const registry = new prom.Registry()
  const m = airlockMetrics({ registry })
  return {
    async serve(res) {
      const text = await registry.metrics()
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' })
      res.end(text)
    },
    stop: () => m.stop(),
  }
}

/** A `log` option checked, as a {@link ProxyLog}. */
export function checkedLog(options: ProxyLogOptions): ProxyLog {
  if (typeof options !== 'object' || options === null)
    optionError(`log must be false or { level, format, destination }, got ${received(options)}`)
  knownKeys('log', options, ['level', 'format', 'destination'])
  const level = options.level === undefined ? undefined : oneOf('log.level', options.level, LOG_LEVELS)
  const format = options.format === undefined ? undefined : oneOf('log.format', options.format, LOG_FORMATS)
  if (options.destination !== undefined && typeof options.destination?.write !== 'function')
    optionError(`log.destination must be a stream with write(), got ${received(options.destination)}`)
  return new ProxyLog({ level, format, destination: options.destination })
}

/**
 * A `node:http` server for `handle`, whose throw is that request's `fail`, never the process's end;
 * keep-alive past the usual 60 s of the proxies in front (nginx, load balancers).
 */
export function guardedServer(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  fail: (req: IncomingMessage, res: ServerResponse, err: unknown) => void,
): Server {
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    try {
      handle(req, res)
    } catch (err) {
      fail(req, res, err)
    }
  })
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  return server
}

/** Listens on `host:port`; resolves the URL (rejects when the port cannot be had). */
export async function listenOn(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.removeListener('error', reject)
      resolve()
    })
  })
  return `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as { port: number }).port}`
}

/** Stops accepting and resolves once open requests are over (idle keep-alive connections closed at once). */
export async function closeServer(server: Server): Promise<void> {
  const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve()
  const idle = setInterval(() => server.closeIdleConnections(), 50)
  server.closeIdleConnections()
  await closed
  clearInterval(idle)
}
