/**
 * `airlock-shield/proxy`: the shield in front of any website (PHP, Rails, Django, a static shop),
 * not only Node apps: a reverse proxy on `node:http`, the gate (src/gate/) in front of every
 * request, the origin reached through a keep-alive pool (undici, an optional peer). This file only
 * translates: it hands each request to the gate and forwards the admitted ones (forward.ts,
 * upgrade.ts, headers.ts). `airlock proxy` is the command. See docs/proxy.md.
 * @packageDocumentation
 */
import { ServerResponse, type IncomingMessage, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { assertPeers, loadPeer } from '../base/peer.js'
import { createGate, type Gate } from '../gate/gate.js'
import type { GateDecision, GateResponse } from '../gate/types.js'
import { PageLanguages } from '../pages/language.js'
import { originErrorPage } from '../pages/origin.js'
import { resolveStore } from '../stores/resolve.js'
import { ProxyAdmission } from './admission.js'
import { dashboardAt } from './board.js'
import { Forwarder, type Outcome } from './forward.js'
import { hopOf, requestHeaders, upgradeHeaders, type ForwardRules, type Hop } from './headers.js'
import { closeServer, guardedServer, listenOn, metricsAt } from './mount.js'
import { resolveProxyOptions, type ProxyOptions } from './options.js'
import { rawHead, tunnel, type UpgradeOutcome } from './upgrade.js'

export type { ProxyLogOptions } from './log.js'
export type { ProxyOptions } from './options.js'

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

/** The small page answered when the origin does not answer (`502`). */
export const badGatewayPage = (): string => originErrorPage(502)

/**
 * Creates the proxy (not listening yet: `await proxy.listen({ port, host })`). Validates every
 * option now (`ERR_AIRLOCK_OPTION`); `ERR_AIRLOCK_PEER_MISSING` when undici is not installed.
 */
export async function createProxy(options: ProxyOptions): Promise<AirlockProxy> {
  const settings = resolveProxyOptions(options)
  const { upstream, timeout, log, metricsPath, bodyLimit, gateOptions, dashboard } = settings
  assertPeers(metricsPath === undefined ? ['undici'] : ['undici', 'prom-client'], 'createProxy()')
  const undici = loadPeer<typeof import('undici')>('undici', 'createProxy()')
  const store = resolveStore(gateOptions.store)
  const gate = settings.gated
    ? createGate<IncomingMessage>({ ...(log ? { logger: log } : {}), ...gateOptions, store })
    : undefined
  const rules: ForwardRules = { passCookie: gate && !settings.keepPassCookie ? gate.cookieName : undefined }
  const forwarder = new Forwarder(undici, upstream, timeout, new PageLanguages(gateOptions.messages))
  const board =
    dashboard === undefined
      ? undefined
      : dashboardAt(dashboard, {
          store,
          name: gateOptions.name ?? 'default',
          secret: gateOptions.secret,
          trustProxy: settings.trustProxy,
          logger: log,
        })
  const metrics = metricsPath === undefined ? undefined : await metricsAt(metricsPath, 'the proxy metricsPath option')

  /** What the proxy vouches for to the origin: the client it decided on, the trusted chain, the scheme, the host. */
  const hopFor = (req: IncomingMessage): Hop =>
    hopOf(
      req.socket.remoteAddress ?? '',
      (req.socket as { encrypted?: boolean }).encrypted === true,
      req.headers,
      settings.trusts,
    )
  /** What the gate is told of a request (HTTPS as the client used it, so the pass cookie is `Secure` behind a TLS proxy). */
  const viewOf = (req: IncomingMessage, hop: Hop) => ({
    method: req.method ?? 'GET',
    url: req.url ?? '/',
    headers: req.headers,
    secure: hop.proto === 'https',
    ip: hop.client,
    request: req,
  })

  /** The access line, once the response is over. */
  const accessLog = (
    req: IncomingMessage,
    res: ServerResponse,
    t0: number,
    remote: string | undefined,
    decision: string,
    outcome: Outcome | UpgradeOutcome | undefined,
  ): void => {
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
      log.error(
        { ...fields, error: outcome.error, cause: outcome.cause },
        outcome.error === 'timeout'
          ? 'the origin did not answer in time'
          : outcome.error === 'broken'
            ? 'the origin broke off its answer'
            : 'the origin did not answer',
      )
    } else if (log.enabled('info')) log.info(fields, 'request')
  }

  /** Sends the gate's own answer (busy, waiting, a poll's). */
  const answer = (
    req: IncomingMessage,
    res: ServerResponse,
    response: GateResponse,
    cookies: string[],
    bodyUnread: boolean,
  ): void => {
    const headers: Record<string, string | string[]> = { ...response.headers }
    if (cookies.length > 0) headers['set-cookie'] = cookies
    // A body the client was about to send (or is sending) is not read: close rather than drain it.
    if (bodyUnread) headers.connection = 'close'
    res.writeHead(response.status, headers)
    res.end(req.method === 'HEAD' ? undefined : response.body)
  }

  const admitted = (
    req: IncomingMessage,
    res: ServerResponse,
    d: GateDecision,
    t0: number,
    expectsContinue: boolean,
    hop: Hop,
  ): void => {
    // (The socket is detached from the request once the response is over: read it now.)
    const remote = req.socket?.remoteAddress
    const admission = new ProxyAdmission(gate!, d, hop.proto === 'https')
    const gateAnswer = admission.open()
    if (gateAnswer !== undefined) {
      const bodyUnread =
        expectsContinue ||
        (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
        req.headers['transfer-encoding'] !== undefined
      answer(req, res, gateAnswer, admission.answerCookies(), bodyUnread)
      accessLog(req, res, t0, remote, d.kind, undefined)
      return
    }
    if (expectsContinue) res.writeContinue()
    forwarder.forward(
      req,
      res,
      requestHeaders(req.rawHeaders, hop, rules),
      (_status, headers, command) => admission.head(headers, d.kind === 'bypass' ? undefined : command),
      (outcome) => {
        admission.over(outcome)
        accessLog(req, res, t0, remote, d.kind, outcome)
      },
    )
  }

  const handle = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void => {
    const t0 = performance.now()
    const url = req.url ?? '/'
    if (board?.owns(url)) return board.serve(req, res, hopFor(req).client)
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
      forwarder.forward(
        req,
        res,
        requestHeaders(req.rawHeaders, hopFor(req), rules),
        () => {},
        (outcome) => accessLog(req, res, t0, remote, 'ungated', outcome),
      )
      return
    }
    const hop = hopFor(req)
    const d = gate.decide(viewOf(req, hop))
    if (d instanceof Promise)
      d.then(
        (x) => admitted(req, res, x, t0, expectsContinue, hop),
        (err) => fail(req, res, err),
      )
    else admitted(req, res, d, t0, expectsContinue, hop)
  }

  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown): void => {
    log?.error({ method: req.method, url: req.url, cause: (err as Error).message }, 'the gate failed')
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
      res.end('internal error\n')
    }
  }

  /**
   * An upgrade. A WebSocket is decided like any request; admitted, the slot lives (kept alive in the
   * store) as long as the tunnel. Any other token (`h2c`, `TLS/1.0`, ...) is never forwarded: the
   * request is answered as a plain one (an `h2c` upgrade would hand the origin's HTTP/2 connection
   * to the client, past the gate), or refused when it carries a body (Node leaves it unparsed).
   */
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const t0 = performance.now()
    socket.on('error', () => socket.destroy())
    const url = req.url ?? '/'
    if (!isWebSocket(req.headers.upgrade) || isOwnPath(url)) return plainOverUpgrade(req, socket, head)
    const hop = hopFor(req)
    const open = (d: GateDecision | undefined): void => {
      const cookies = d?.setCookie === undefined ? [] : [d.setCookie]
      if (d?.response !== undefined) {
        const r = d.response
        socket.end(
          rawHead(r.status, r.status === 503 ? 'Service Unavailable' : 'Refused', {
            ...r.headers,
            ...(cookies.length ? { 'set-cookie': cookies } : {}),
            'content-length': Buffer.byteLength(r.body),
            connection: 'close',
          }) + r.body,
        )
        logUpgrade(req, t0, d.kind, r.status, undefined)
        return
      }
      const slot = d?.kind === 'admit' ? d.slot : undefined
      if (socket.destroyed) {
        void slot?.release()
        return
      }
      // An open WebSocket is a request that lasts: its slot stays alive while it is open.
      slot?.hold(() => socket.destroy())
      tunnel(
        upstream,
        timeout,
        req,
        socket,
        head,
        upgradeHeaders(req.rawHeaders, hop, rules, 'websocket'),
        cookies.length ? { 'set-cookie': cookies } : {},
        (outcome) => {
          void slot?.release(outcome.error === 'refused' || outcome.error === 'timeout')
          logUpgrade(
            req,
            t0,
            d?.kind ?? 'ungated',
            outcome.upstream ?? (outcome.error === 'timeout' ? 504 : 502),
            outcome,
          )
        },
      )
    }
    if (gate === undefined) return open(undefined)
    const d = gate.decide(viewOf(req, hop))
    if (d instanceof Promise) d.then(open, () => socket.destroy())
    else open(d)
  }
  /** Paths the proxy answers itself (the dashboard, metrics): never upgraded. */
  const isOwnPath = (url: string): boolean =>
    board?.owns(url) === true || (metrics !== undefined && (url === metricsPath || url.startsWith(`${metricsPath}?`)))
  /** A request that asked for an upgrade the proxy does not forward: answered as a plain request, on a connection that then closes. */
  const plainOverUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const length = req.headers['content-length']
    if (head.length > 0 || req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) {
      const body = 'only WebSocket upgrades are forwarded: send the request without Upgrade\n'
      socket.end(
        rawHead(400, 'Bad Request', {
          'content-type': 'text/plain; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        }) + body,
      )
      return
    }
    // Node no longer reads this socket: a client that ends its side is gone (no half-open socket left).
    socket.once('end', () => socket.destroy())
    const res = new ServerResponse(req)
    res.shouldKeepAlive = false
    res.assignSocket(socket as Socket)
    res.once('finish', () => {
      res.detachSocket(socket as Socket)
      ;(socket as Socket).destroySoon()
    })
    req.resume()
    handle(req, res, false)
  }
  const logUpgrade = (
    req: IncomingMessage,
    t0: number,
    decision: string,
    status: number,
    outcome: UpgradeOutcome | undefined,
  ): void => {
    if (log === undefined) return
    const fields = {
      method: req.method,
      url: req.url,
      status,
      ms: Math.round(performance.now() - t0),
      decision,
      upgrade: String(req.headers.upgrade ?? ''),
      remote: req.socket?.remoteAddress,
    }
    if (outcome?.error === 'refused' || outcome?.error === 'timeout')
      log.error({ ...fields, error: outcome.error, cause: outcome.cause }, 'the origin did not open the upgrade')
    else if (log.enabled('info')) log.info(fields, 'upgrade')
  }

  // Whatever goes wrong with one request is that request's 500, never the process's end.
  const server = guardedServer((req, res) => handle(req, res, false), fail)
  server.on('checkContinue', (req, res) => {
    try {
      handle(req, res, true)
    } catch (err) {
      fail(req, res, err)
    }
  })
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      upgrade(req, socket, head)
    } catch (err) {
      log?.error({ method: req.method, url: req.url, cause: (err as Error).message }, 'the gate failed')
      socket.destroy()
    }
  })

  return {
    server,
    gate,
    async listen({ port = 3000, host = '127.0.0.1' } = {}) {
      await gate?.ready
      return listenOn(server, port, host)
    },
    async close() {
      // Keep-alive connections close as soon as their request is over, not after keepAliveTimeout.
      await closeServer(server)
      await Promise.all([gate?.close(), forwarder.close(), board?.handler.close(), metrics?.stop()])
      log?.flush()
    },
  }
}

/** `Upgrade: websocket`, the one protocol the proxy forwards (one token, any case). */
function isWebSocket(upgrade: string | undefined): boolean {
  return upgrade !== undefined && upgrade.trim().toLowerCase() === 'websocket'
}

export { COMMAND_HEADER } from '../gate/handle.js'
