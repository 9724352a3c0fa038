/**
 * `airlock-shield/proxy`: the shield in front of any website (PHP, Rails, Django, a static shop),
 * not only Node apps: a reverse proxy on `node:http`, the gate (src/gate/) in front of every
 * request, the origin reached through a keep-alive pool (undici, an optional peer). This file only
 * translates: it hands each request to the gate and forwards the admitted ones (forward.ts,
 * upgrade.ts, headers.ts). `airlock proxy` is the command. See docs/proxy.md.
 * @packageDocumentation
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { BlockList, isIP } from 'node:net'
import type { Duplex } from 'node:stream'
import { optionError } from '../base/errors.js'
import { assertPeers, loadPeer } from '../base/peer.js'
import { received, duration, knownKeys, oneOf } from '../base/validate.js'
import { createDashboard } from '../dashboard/server.js'
import { COMMAND_HEADER, handleFor, runCommand } from '../gate/handle.js'
import { createGate, type Gate } from '../gate/gate.js'
import { GATE_OPTION_KEYS, type GateDecision, type GateOptions, type GateResponse } from '../gate/types.js'
import { PageLanguages } from '../pages/language.js'
import { originErrorPage } from '../pages/origin.js'
import { resolveStore } from '../stores/resolve.js'
import { Forwarder, type Outcome } from './forward.js'
import { requestHeaders, upgradeHeaders, type ForwardRules, type Hop } from './headers.js'
import { LOG_FORMATS, LOG_LEVELS, ProxyLog, type ProxyLogOptions } from './log.js'
import { rawHead, tunnel, type UpgradeOutcome } from './upgrade.js'

export type { ProxyLogOptions } from './log.js'

/** Options of {@link createProxy}: where to forward, and the gate's options (all of them). */
export interface ProxyOptions extends GateOptions<IncomingMessage> {
  /** The origin: `http://127.0.0.1:8080` (its path, if any, prefixes every forwarded path). */
  target: string
  /** `false`: forward without the gate (to compare). Default `true`. */
  gated?: boolean
  /**
   * Trust the forwarding headers (`X-Forwarded-For/-Proto/-Host`, `X-Real-IP`, `Forwarded`) a client
   * sends: `true` (every client: only behind a proxy you run), or the addresses and CIDRs of your
   * load balancer (`'10.0.0.0/8'`, `['10.0.0.5', '::1']`). Default `false`: they are replaced with
   * what the proxy saw.
   */
  trustProxy?: boolean | string | string[]
  /** Serve the operator's dashboard at `path` (default `/airlock`) behind `token`. */
  dashboard?: { token: string; path?: string }
  /** Serve Prometheus metrics at this path (needs `prom-client`). Default: none. */
  metricsPath?: string
  /** Largest `Content-Length` forwarded, bytes (`413` above; a chunked body streams as it comes). Default 1 GiB (bodies stream; nothing is buffered whole). */
  bodyLimit?: number
  /**
   * How long the origin may take (ms): to accept the connection, to send its answer's headers, and
   * between two chunks of a body. Past it the visitor gets a `504` page that tries again by itself,
   * and the slot is freed. Default 60 s (nginx's `proxy_read_timeout`).
   */
  upstreamTimeout?: number
  /** Forward the gate's pass cookie to the origin too. Default `false`: the origin never sees it. */
  keepPassCookie?: boolean
  /** The log: an access line per request and every 5xx the proxy makes itself. Default: none (`airlock proxy` logs at `info`). */
  log?: ProxyLogOptions | false
}

/** What {@link createProxy} returns: a server not listening yet. */
export interface AirlockProxy {
  /** The `node:http` server. */
  readonly server: Server
  /** The gate (`undefined` with `gated: false`). */
  readonly gate: Gate<IncomingMessage> | undefined
  /** Starts listening (default `127.0.0.1`, port 3000); resolves the URL. */
  listen(options?: { port?: number; host?: string }): Promise<string>
  /** Stops accepting, lets open requests finish (idle keep-alive connections are closed), stops the gate. */
  close(): Promise<void>
}

const PROXY_KEYS = ['target', 'gated', 'trustProxy', 'dashboard', 'metricsPath', 'bodyLimit', 'upstreamTimeout', 'keepPassCookie', 'log'] as const

/** The small page answered when the origin does not answer (`502`). */
export const badGatewayPage = (): string => originErrorPage(502)

/** Who may set the forwarding headers. */
/** The client behind trusted hops: the nearest `X-Forwarded-For` address not trusted (else the farthest). */
function clientOf(req: IncomingMessage, trusts: (address: string) => boolean): string {
  const header = req.headers['x-forwarded-for']
  const list = (Array.isArray(header) ? header.join(',') : header ?? '').split(',')
  let address = req.socket.remoteAddress ?? ''
  for (let i = list.length - 1; i >= 0; i--) {
    const hop = list[i]!.trim()
    if (hop === '') continue
    address = hop
    if (!trusts(hop)) break
  }
  return address
}

function trustOf(option: unknown): (address: string) => boolean {
  if (option === false || option === undefined) return () => false
  if (option === true) return () => true
  const list = typeof option === 'string' ? option.split(',') : option
  if (!Array.isArray(list) || list.some((a) => typeof a !== 'string')) optionError(`trustProxy must be true, false, or addresses and CIDRs ('10.0.0.0/8' or ['10.0.0.5', '::1']), got ${received(option)}`)
  const blocks = new BlockList()
  for (const entry of list as string[]) {
    const [address = '', bits] = entry.trim().split('/')
    const family = isIP(address)
    if (family === 0 || (bits !== undefined && !/^\d+$/.test(bits))) optionError(`trustProxy: '${entry}' is not an address or CIDR (10.0.0.5, 10.0.0.0/8, ::1)`)
    const type = family === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) blocks.addAddress(address, type)
    else blocks.addSubnet(address, Number(bits), type)
  }
  return (address) => {
    const plain = address.startsWith('::ffff:') ? address.slice(7) : address
    const family = isIP(plain)
    return family !== 0 && blocks.check(plain, family === 6 ? 'ipv6' : 'ipv4')
  }
}

/**
 * Creates the proxy (not listening yet: `await proxy.listen({ port, host })`). Validates every
 * option now (`ERR_AIRLOCK_OPTION`); `ERR_AIRLOCK_PEER_MISSING` when undici is not installed.
 */
export async function createProxy(options: ProxyOptions): Promise<AirlockProxy> {
  if (options === null || typeof options !== 'object') optionError(`createProxy() needs an options object with a target, got ${received(options)}`)
  knownKeys('createProxy()', options, [...GATE_OPTION_KEYS, ...PROXY_KEYS])
  const { target, gated = true, trustProxy = false, dashboard, metricsPath, bodyLimit = 2 ** 30, upstreamTimeout, keepPassCookie = false, log: logOptions, ...gateOptions } = options
  let upstream: URL
  try {
    upstream = new URL(target)
  } catch {
    upstream = new URL('invalid:')
  }
  if (upstream.protocol !== 'http:' && upstream.protocol !== 'https:') {
    optionError(`target must be an http:// or https:// URL (http://127.0.0.1:8080), got ${received(target)}`)
  }
  if (typeof gated !== 'boolean') optionError(`gated must be a boolean, got ${received(gated)}`)
  if (typeof keepPassCookie !== 'boolean') optionError(`keepPassCookie must be a boolean, got ${received(keepPassCookie)}`)
  if (dashboard !== undefined && (typeof dashboard !== 'object' || dashboard === null)) optionError(`dashboard must be { token, path? }, got ${received(dashboard)}`)
  if (metricsPath !== undefined && (typeof metricsPath !== 'string' || !/^\/[A-Za-z0-9._~-][A-Za-z0-9._~/-]*$/.test(metricsPath))) {
    optionError(`metricsPath must be a path of its own such as '/metrics' (no '/', query, fragment or spaces: it is served instead of the site there), got ${received(metricsPath)}`)
  }
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 0) optionError(`bodyLimit must be a number of bytes (0 or more), got ${received(bodyLimit)}`)
  const timeout = upstreamTimeout === undefined ? 60_000 : duration('upstreamTimeout', upstreamTimeout)
  const trusts = trustOf(trustProxy)
  const log = logOptions === undefined || logOptions === false ? undefined : checkedLog(logOptions)
  assertPeers(metricsPath === undefined ? ['undici'] : ['undici', 'prom-client'], 'createProxy()')
  const undici = loadPeer<typeof import('undici')>('undici', 'createProxy()')
  const store = resolveStore(gateOptions.store)
  const gate = gated ? createGate<IncomingMessage>({ ...(log ? { logger: log } : {}), ...gateOptions, store }) : undefined
  const rules: ForwardRules = { trusted: false, passCookie: gate && !keepPassCookie ? gate.cookieName : undefined }
  const trustedRules: ForwardRules = { ...rules, trusted: true }
  const forwarder = new Forwarder(undici, upstream, timeout, new PageLanguages(gateOptions.messages))
  const board = dashboard === undefined ? undefined : { path: (dashboard.path ?? '/airlock').replace(/\/$/, ''), handler: createDashboard({ token: dashboard.token, store, names: [gateOptions.name ?? 'default'] }) }
  const metrics = metricsPath === undefined ? undefined : await mountMetrics()

  /** `https` or `http`, as the client used: through a trusted proxy, as its `X-Forwarded-Proto` says. */
  const protoOf = (req: IncomingMessage, trusted: boolean): string => {
    const claimed = trusted ? String(req.headers['x-forwarded-proto'] ?? '').split(',')[0]!.trim() : ''
    return claimed === 'https' || claimed === 'http' ? claimed : (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
  }
  const hopOf = (req: IncomingMessage): { hop: Hop; rules: ForwardRules } => {
    const remote = req.socket.remoteAddress ?? ''
    const trusted = trusts(remote)
    return { hop: { remote, proto: protoOf(req, trusted), host: req.headers.host ?? '' }, rules: trusted ? trustedRules : rules }
  }
  /** What the gate is told of a request (HTTPS as the client used it, so the pass cookie is `Secure` behind a TLS proxy). */
  const viewOf = (req: IncomingMessage) => {
    const remote = req.socket.remoteAddress ?? ''
    const trusted = trusts(remote)
    return { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, secure: protoOf(req, trusted) === 'https', ip: trusted ? clientOf(req, trusts) : remote, request: req }
  }

  /** The access line, once the response is over. */
  const accessLog = (req: IncomingMessage, res: ServerResponse, t0: number, remote: string | undefined, decision: string, outcome: Outcome | UpgradeOutcome | undefined): void => {
    if (log === undefined) return
    const fields = {
      method: req.method,
      url: req.url,
      status: res.headersSent || outcome === undefined ? res.statusCode : (outcome.upstream ?? 0),
      ms: Math.round((performance.now() - t0) * 10) / 10,
      decision,
      upstream: outcome?.upstream ?? undefined,
      upstreamMs: outcome && 'upstreamMs' in outcome ? Math.round(outcome.upstreamMs * 10) / 10 : undefined,
      remote,
    }
    if (outcome?.error === 'refused' || outcome?.error === 'timeout' || outcome?.error === 'broken') {
      log.error({ ...fields, error: outcome.error, cause: outcome.cause }, outcome.error === 'timeout' ? 'the origin did not answer in time' : outcome.error === 'broken' ? 'the origin broke off its answer' : 'the origin did not answer')
    } else if (log.enabled('info')) log.info(fields, 'request')
  }

  /** Sends the gate's own answer (busy, waiting, a poll's). */
  const answer = (req: IncomingMessage, res: ServerResponse, response: GateResponse, cookies: string[], bodyUnread: boolean): void => {
    const headers: Record<string, string | string[]> = { ...response.headers }
    if (cookies.length > 0) headers['set-cookie'] = cookies
    // A body the client was about to send (or is sending) is not read: close rather than drain it.
    if (bodyUnread) headers.connection = 'close'
    res.writeHead(response.status, headers)
    res.end(req.method === 'HEAD' ? undefined : response.body)
  }

  const admitted = (req: IncomingMessage, res: ServerResponse, d: GateDecision, t0: number, expectsContinue: boolean): void => {
    // (The socket is detached from the request once the response is over: read it now.)
    const remote = req.socket?.remoteAddress
    const cookies: string[] = d.setCookie === undefined ? [] : [d.setCookie]
    if (d.response !== undefined) {
      const bodyUnread = expectsContinue || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined
      answer(req, res, d.response, cookies, bodyUnread)
      accessLog(req, res, t0, remote, d.kind, undefined)
      return
    }
    const slot = d.kind === 'admit' ? d.slot : undefined
    const measures = gate!.mode === 'session' && gate!.measures(d)
    const extra = d.kind === 'admit' ? d.headers : undefined
    if (expectsContinue) res.writeContinue()
    const { hop, rules: r } = hopOf(req)
    const secure = hop.proto === 'https'
    const t1 = measures ? performance.now() : 0
    forwarder.forward(
      req,
      res,
      requestHeaders(req.rawHeaders, hop, r),
      (_status, headers, command) => {
        if (command !== undefined) runCommand(gate!, handleFor(gate!, d, { get: () => cookies, set: (list) => cookies.splice(0, cookies.length, ...list) }, secure), command)
        if (extra !== undefined) for (const k in extra) headers.push(k, extra[k]!)
        for (const c of cookies) headers.push('set-cookie', c)
      },
      (outcome) => {
        const failed = outcome.upstream === null ? outcome.error !== 'aborted' : outcome.upstream >= 500
        if (slot !== undefined) void slot.release(failed)
        if (measures && outcome.error !== 'aborted') gate!.measure(performance.now() - t1, failed, d)
        accessLog(req, res, t0, remote, d.kind, outcome)
      },
    )
  }

  const handle = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void => {
    const t0 = performance.now()
    const url = req.url ?? '/'
    if (board !== undefined && (url === board.path || url.startsWith(`${board.path}/`) || url.startsWith(`${board.path}?`))) {
      ;(req as IncomingMessage & { originalUrl?: string }).originalUrl = url
      req.url = url.slice(board.path.length) || '/'
      return board.handler.handle(req, res)
    }
    if (metrics !== undefined && (url === metricsPath || url.startsWith(`${metricsPath}?`))) {
      metrics.serve(res).catch((err: unknown) => fail(req, res, err))
      return
    }
    const length = req.headers['content-length']
    if (length !== undefined && Number(length) > bodyLimit) {
      res.writeHead(413, { connection: 'close', 'content-type': 'text/plain; charset=utf-8' })
      res.end(`request body over the limit of ${bodyLimit} bytes\n`)
      return
    }
    if (gate === undefined) {
      const remote = req.socket.remoteAddress
      if (expectsContinue) res.writeContinue()
      const { hop, rules: r } = hopOf(req)
      forwarder.forward(req, res, requestHeaders(req.rawHeaders, hop, r), () => {}, (outcome) => accessLog(req, res, t0, remote, 'ungated', outcome))
      return
    }
    const d = gate.decide(viewOf(req))
    if (d instanceof Promise) d.then((x) => admitted(req, res, x, t0, expectsContinue), (err) => fail(req, res, err))
    else admitted(req, res, d, t0, expectsContinue)
  }

  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown): void => {
    log?.error({ method: req.method, url: req.url, cause: (err as Error).message }, 'the gate failed')
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
      res.end('internal error\n')
    }
  }

  /** An upgrade (WebSocket): decided like any request; admitted, the slot lives as long as the tunnel. */
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const t0 = performance.now()
    socket.on('error', () => socket.destroy())
    const open = (d: GateDecision | undefined): void => {
      const cookies = d?.setCookie === undefined ? [] : [d.setCookie]
      if (d?.response !== undefined) {
        const r = d.response
        socket.end(rawHead(r.status, r.status === 503 ? 'Service Unavailable' : 'Refused', { ...r.headers, ...(cookies.length ? { 'set-cookie': cookies } : {}), 'content-length': Buffer.byteLength(r.body), connection: 'close' }) + r.body)
        logUpgrade(req, t0, d.kind, r.status, undefined)
        return
      }
      const slot = d?.kind === 'admit' ? d.slot : undefined
      if (socket.destroyed) {
        void slot?.release()
        return
      }
      const { hop, rules: r } = hopOf(req)
      tunnel(upstream, timeout, req, socket, head, upgradeHeaders(req.rawHeaders, hop, r, String(req.headers.upgrade)), cookies.length ? { 'set-cookie': cookies } : {}, (outcome) => {
        void slot?.release(outcome.error === 'refused' || outcome.error === 'timeout')
        logUpgrade(req, t0, d?.kind ?? 'ungated', outcome.upstream ?? (outcome.error === 'timeout' ? 504 : 502), outcome)
      })
    }
    if (gate === undefined) return open(undefined)
    const d = gate.decide(viewOf(req))
    if (d instanceof Promise) d.then(open, () => socket.destroy())
    else open(d)
  }
  const logUpgrade = (req: IncomingMessage, t0: number, decision: string, status: number, outcome: UpgradeOutcome | undefined): void => {
    if (log === undefined) return
    const fields = { method: req.method, url: req.url, status, ms: Math.round(performance.now() - t0), decision, upgrade: String(req.headers.upgrade ?? ''), remote: req.socket?.remoteAddress }
    if (outcome?.error === 'refused' || outcome?.error === 'timeout') log.error({ ...fields, error: outcome.error, cause: outcome.cause }, 'the origin did not open the upgrade')
    else if (log.enabled('info')) log.info(fields, 'upgrade')
  }

  const server = createServer({ requireHostHeader: false }, (req, res) => handle(req, res, false))
  server.on('checkContinue', (req, res) => handle(req, res, true))
  server.on('upgrade', upgrade)
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000

  return {
    server,
    gate,
    async listen({ port = 3000, host = '127.0.0.1' } = {}) {
      await gate?.ready
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          server.removeListener('error', reject)
          resolve()
        })
      })
      const address = server.address() as { port: number }
      return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`
    },
    async close() {
      const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve()
      // Keep-alive connections close as soon as their request is over, not after keepAliveTimeout.
      const idle = setInterval(() => server.closeIdleConnections(), 50)
      server.closeIdleConnections()
      await closed
      clearInterval(idle)
      await Promise.all([gate?.close(), forwarder.close(), board?.handler.close(), metrics?.stop()])
      log?.flush()
    },
  }

  async function mountMetrics(): Promise<{ serve(res: ServerResponse): Promise<void>; stop(): void }> {
    const prom = loadPeer<typeof import('prom-client')>('prom-client', 'the proxy metricsPath option')
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
}

function checkedLog(options: ProxyLogOptions): ProxyLog {
  if (typeof options !== 'object' || options === null) optionError(`log must be false or { level, format, destination }, got ${received(options)}`)
  knownKeys('log', options, ['level', 'format', 'destination'])
  const level = options.level === undefined ? undefined : oneOf('log.level', options.level, LOG_LEVELS)
  const format = options.format === undefined ? undefined : oneOf('log.format', options.format, LOG_FORMATS)
  if (options.destination !== undefined && typeof options.destination?.write !== 'function') optionError(`log.destination must be a stream with write(), got ${received(options.destination)}`)
  return new ProxyLog({ level, format, destination: options.destination })
}

export { COMMAND_HEADER }
