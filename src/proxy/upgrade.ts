/**
 * WebSocket (and other `Upgrade`) connections through the proxy: the origin's `101` handed back to
 * the client, then the two sockets piped both ways until either closes. `done` is called exactly
 * once when both are closed, or when the upgrade fails: the gate's slot lives as long as the tunnel.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { Duplex } from 'node:stream'
import { responseHeaderList } from './headers.js'

/** How an upgrade ended (for the log): `open` then closed, or why it never opened. */
export interface UpgradeOutcome {
  upstream: number | null
  error?: 'refused' | 'timeout' | 'aborted'
  cause?: string
}

/**
 * The first lines of an HTTP/1.1 response written by hand on a socket (status line and headers):
 * `list`, a flat `[name, value, ...]` list (the origin's), then `headers`.
 */
export function rawHead(
  status: number,
  message: string,
  headers: Record<string, string | number | string[] | undefined>,
  list: readonly string[] = [],
): string {
  let head = `HTTP/1.1 ${status} ${message}\r\n`
  for (let i = 0; i < list.length; i += 2) head += `${list[i]}: ${list[i + 1]!.replace(/[\r\n]/g, '')}\r\n`
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${String(v).replace(/[\r\n]/g, '')}\r\n`
  }
  return `${head}\r\n`
}

/**
 * Opens the upgrade at the origin (`target`, with `headers`) for the client's `socket` (`head`: bytes
 * it sent past the request). `extra`: headers the gate adds to the `101` (its cookie). `done(outcome)`
 * once the tunnel is over.
 */
export function tunnel(
  target: URL,
  timeout: number,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  headers: string[],
  extra: Record<string, string | string[]>,
  done: (outcome: UpgradeOutcome) => void,
): void {
  let finished = false
  const finish = (outcome: UpgradeOutcome): void => {
    if (finished) return
    finished = true
    done(outcome)
  }
  const prefix = target.pathname === '/' ? '' : target.pathname.replace(/\/$/, '')
  const up = (target.protocol === 'https:' ? httpsRequest : httpRequest)({
    host: target.hostname,
    port: target.port || (target.protocol === 'https:' ? 443 : 80),
    method: req.method,
    path: prefix + (req.url ?? '/'),
    headers,
    timeout,
  })
  const fail = (status: 502 | 504, error: 'refused' | 'timeout', cause: string): void => {
    if (!socket.destroyed)
      socket.end(
        rawHead(status, status === 504 ? 'Gateway Timeout' : 'Bad Gateway', {
          connection: 'close',
          'content-length': 0,
        }),
      )
    finish({ upstream: null, error, cause })
  }
  up.on('timeout', () => {
    up.destroy()
    fail(504, 'timeout', `the origin did not answer the upgrade within ${timeout} ms`)
  })
  up.on('error', (err) => fail(502, 'refused', err.message))
  // The client left before the origin answered.
  const onEarlyClose = (): void => {
    up.destroy()
    finish({ upstream: null, error: 'aborted' })
  }
  socket.once('close', onEarlyClose)
  // The origin refused the upgrade: its answer goes back as it is, and the tunnel is over.
  up.on('response', (res) => {
    socket.removeListener('close', onEarlyClose)
    socket.write(
      rawHead(
        res.statusCode ?? 502,
        res.statusMessage ?? '',
        { ...extra, connection: 'close' },
        responseHeaderList(res.rawHeaders).list,
      ),
    )
    res.pipe(socket)
    res.on('end', () => finish({ upstream: res.statusCode ?? null }))
    res.on('error', () => finish({ upstream: res.statusCode ?? null }))
  })
  up.on('upgrade', (res, upstream, upstreamHead) => {
    socket.removeListener('close', onEarlyClose)
    up.setTimeout(0)
    socket.write(
      rawHead(
        101,
        'Switching Protocols',
        { ...extra, connection: 'Upgrade', upgrade: res.headers.upgrade },
        responseHeaderList(res.rawHeaders).list,
      ),
    )
    if (upstreamHead.length > 0) socket.write(upstreamHead)
    if (head.length > 0) upstream.write(head)
    let open = 2
    const closed = (): void => {
      if (--open === 0) finish({ upstream: 101 })
    }
    for (const [a, b] of [
      [socket, upstream],
      [upstream, socket],
    ] as const) {
      a.pipe(b)
      a.once('close', () => {
        b.destroy()
        closed()
      })
      a.on('error', () => a.destroy())
    }
    if (socket.destroyed) upstream.destroy()
  })
  up.end()
}
