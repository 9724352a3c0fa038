/**
 * The decision service (`airlock auth`): the gate for a proxy the site already runs (nginx, Caddy,
 * Traefik), answering its forward-auth subrequests. The proxy asks only for requests without a
 * valid pass (nginx's njs module checks passes itself: see connector/njs.ts); the service answers
 * with the gate's full behaviour in session mode: continue to the origin (with the new pass), or
 * the gate's own answer (busy, the waiting room, a poll's, the door), which the proxy sends as is.
 *
 * Its paths (on its own port, reached by the proxy only):
 * - `/.airlock/decide`: njs, Caddy and Traefik. `Airlock-Action: continue` (200, the cookies to set,
 *   also as `Airlock-Cookie-1`, `-2` for proxies that keep one header of a name) or the gate's
 *   answer as it is, with `Airlock-Action: answer`.
 * - `/.airlock/auth-request`: nginx's `auth_request` (no njs). It understands only 2xx (continue)
 *   and 401/403: an answer is `401` with `Airlock-Answer: <id>`, which nginx's `error_page` then
 *   fetches once from `/.airlock/answer/<id>`.
 * - `/.airlock/health`, the dashboard and metrics when configured.
 * The original request is named by `X-Original-Method`/`X-Original-URI` (nginx) or
 * `X-Forwarded-Method`/`X-Forwarded-Uri` (Caddy, Traefik); its headers come along.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { trustPolicy, type TrustProxyOption } from '../base/client-address.js'
import { optionError } from '../base/errors.js'
import { knownKeys, nonNegativeInteger, received } from '../base/validate.js'
import { createGate, type Gate } from '../gate/gate.js'
import { GATE_OPTION_KEYS, type GateDecision, type GateOptions, type GateResponse } from '../gate/types.js'
import { resolveStore } from '../stores/resolve.js'
import { SHIELD_HEADER, shieldHeader } from '../pages/answers.js'
import { dashboardAt } from './board.js'
import { hopOf } from './headers.js'
import type { ProxyLog, ProxyLogOptions } from './log.js'
import {
  checkMetricsPath,
  checkedLog,
  closeServer,
  guardedServer,
  listenOn,
  metricsAt,
  type MountedMetrics,
} from './mount.js'

/** Options of {@link createDecisionService}: the gate's (session mode) and the service's own. */
export interface DecisionServiceOptions extends GateOptions<IncomingMessage> {
  /**
   * The proxies whose `X-Forwarded-For`/`-Proto` name the visitor (as for `airlock proxy`). Default
   * `'loopback'`: the service is asked by a proxy on the same machine, which must send
   * `X-Forwarded-For` (the generated configs do). Keep the port unreachable from anywhere else.
   * A number of hops is taken too (`1`: the peer is your one proxy).
   */
  trustProxy?: TrustProxyOption
  /** Serve the operator's dashboard at `path` (default `/airlock`) behind `token`. */
  dashboard?: { token: string; path?: string }
  /** Serve Prometheus metrics at this path (needs `prom-client`). */
  metricsPath?: string
  /**
   * Seconds the proxy may keep a refusal that is the same for every visitor without a cookie of the
   * gate (the site is full or closed: the busy page), so a crowd's retries cost the proxy, not this
   * service (`X-Accel-Expires`; nginx's `proxy_cache` in the generated config). `0`: never. Default 1.
   */
  refusalCache?: number
  /** An access line per decision (default: none; `airlock auth` logs at `warn`). */
  log?: ProxyLogOptions | false
}

/** What {@link createDecisionService} returns: a server not listening yet. */
export interface DecisionService {
  readonly server: Server
  readonly gate: Gate<IncomingMessage>
  /** Starts listening (default `127.0.0.1`, port 8787); resolves the URL. */
  listen(options?: { port?: number; host?: string }): Promise<string>
  /** Stops accepting, lets open requests finish, stops the gate. */
  close(): Promise<void>
}

const SERVICE_KEYS = ['trustProxy', 'dashboard', 'metricsPath', 'refusalCache', 'log'] as const
/** The sentence for request mode: nothing tells a forward-auth service when a request ends. */
export const REQUEST_MODE_REFUSED =
  'mode: request cannot work behind forward-auth: nginx, Caddy and Traefik never tell the service when a request ends, so its slot would never be freed; use session mode here, or `airlock proxy --mode request` (the proxy sees every answer end)'
const ANSWER_LIFE = 10_000
const MAX_ANSWERS = 10_000
/** The headers of a `continue`: never kept by a browser or by nginx's cache. */
const CONTINUE = { 'airlock-action': 'continue', 'cache-control': 'no-store', 'x-accel-expires': '0' }

/**
 * Creates the decision service (not listening yet). Validates every option now
 * (`ERR_AIRLOCK_OPTION`); request mode and an adaptive limit are refused (the service never sees a
 * request end nor the origin's answer).
 */
export async function createDecisionService(options: DecisionServiceOptions): Promise<DecisionService> {
  if (options === null || typeof options !== 'object')
    optionError(`createDecisionService() needs an options object, got ${received(options)}`)
  knownKeys('createDecisionService()', options, [...GATE_OPTION_KEYS, ...SERVICE_KEYS])
  const { trustProxy = 'loopback', dashboard, metricsPath, refusalCache = 1, log: logOptions, ...gateOptions } = options
  if (gateOptions.mode === 'request') optionError(REQUEST_MODE_REFUSED)
  if (typeof gateOptions.limit === 'object' && gateOptions.limit !== null) {
    optionError(
      "limit must be a number here: an adaptive limit learns from the origin's answers, which a forward-auth service never sees (use `airlock proxy --adaptive` for that)",
    )
  }
  const cacheFor = nonNegativeInteger('refusalCache', refusalCache)
  if (dashboard !== undefined && (typeof dashboard !== 'object' || dashboard === null))
    optionError(`dashboard must be { token, path? }, got ${received(dashboard)}`)
  checkMetricsPath(metricsPath)
  const trusts = trustPolicy(trustProxy)
  const log: ProxyLog | undefined =
    logOptions === undefined || logOptions === false ? undefined : checkedLog(logOptions)
  const store = resolveStore(gateOptions.store)
  const gate = createGate<IncomingMessage>({ ...(log ? { logger: log } : {}), ...gateOptions, store, mode: 'session' })
  const gateCookies = [`${gate.cookieName}=`, `${gate.ticketCookieName}=`, `${gate.ticketCookieName}_door=`]
  const board =
    dashboard === undefined
      ? undefined
      : dashboardAt(dashboard, { store, name: gate.name, secret: gateOptions.secret, trustProxy, logger: log })
  const metrics: MountedMetrics | undefined =
    metricsPath === undefined ? undefined : await metricsAt(metricsPath, 'createDecisionService()')
  /** Answers kept for nginx's `error_page` (auth_request), once each. */
  const answers = new Map<string, { at: number; response: GateResponse; cookies: string[] }>()

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const t0 = performance.now()
    const url = req.url ?? '/'
    // The question's own path, whatever query comes along (Caddy's rewrite keeps the original one).
    const path = url.indexOf('?') < 0 ? url : url.slice(0, url.indexOf('?'))
    const authRequest = path === '/.airlock/auth-request'
    if (path === '/.airlock/decide' || authRequest) {
      const hop = hopOf(req.socket.remoteAddress ?? '', false, req.headers, trusts)
      const view = {
        method: original(req.headers['x-original-method'] ?? req.headers['x-forwarded-method'], 'GET'),
        url: originalUrl(req.headers['x-original-uri'] ?? req.headers['x-forwarded-uri']),
        headers: req.headers,
        secure: hop.proto === 'https',
        ip: hop.client,
        request: req,
      }
      const d = gate.decide(view)
      const send = (x: GateDecision): void => {
        reply(res, x, authRequest, view.method, anonymous(req.headers.cookie))
        if (log?.enabled('info'))
          log.info(
            {
              method: view.method,
              url: view.url,
              status: res.statusCode,
              ms: Math.round((performance.now() - t0) * 10) / 10,
              decision: x.kind,
              remote: hop.client,
            },
            'decision',
          )
      }
      if (d instanceof Promise) d.then(send, (err: unknown) => fail(res, err))
      else send(d)
      return
    }
    if (path.startsWith('/.airlock/answer/'))
      return kept(res, path.slice('/.airlock/answer/'.length), req.method === 'HEAD')
    if (path === '/.airlock/health') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' })
      res.end('ok\n')
      return
    }
    if (board?.owns(url))
      return board.serve(req, res, hopOf(req.socket.remoteAddress ?? '', false, req.headers, trusts).client)
    if (metrics !== undefined && (url === metricsPath || url.startsWith(`${metricsPath}?`))) {
      metrics.serve(res).catch((err: unknown) => fail(res, err))
      return
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
    res.end('airlock decision service: the proxy in front asks /.airlock/decide (see docs/nginx.md)\n')
  }

  /** True when the request carries no cookie of the gate: its refusal is everyone's. */
  function anonymous(cookie: string | string[] | undefined): boolean {
    if (cookie === undefined) return true
    const text = Array.isArray(cookie) ? cookie.join('; ') : cookie
    return !gateCookies.some((name) => text.includes(name))
  }

  function reply(res: ServerResponse, d: GateDecision, authRequest: boolean, method: string, anon: boolean): void {
    const cookies = d.setCookie === undefined ? [] : [d.setCookie]
    if (d.response === undefined) {
      const headers: Record<string, string | string[]> = { ...CONTINUE }
      if (cookies.length > 0) headers['set-cookie'] = cookies
      for (const [i, c] of cookies.entries()) headers[`airlock-cookie-${i + 1}`] = c
      const extra = d.kind === 'admit' ? d.headers : undefined
      if (extra !== undefined) for (const k in extra) headers[k] = extra[k]!
      res.writeHead(200, headers)
      res.end()
      return
    }
    const shared =
      cacheFor > 0 &&
      anon &&
      cookies.length === 0 &&
      d.kind === 'busy' &&
      (d.reason === 'full' || d.reason === 'closed')
    if (authRequest) {
      const id = keep(d.response, cookies)
      res.writeHead(401, { 'airlock-action': 'answer', 'airlock-answer': id, 'cache-control': 'no-store' })
      res.end()
      return
    }
    // X-Accel-Expires before Cache-Control: nginx before 1.23 reads them in order, and a `no-store`
    // read first would make the answer uncacheable whatever comes after.
    const headers: Record<string, string | string[]> = {
      'x-accel-expires': shared ? String(cacheFor) : '0',
      ...d.response.headers,
      'airlock-action': 'answer',
    }
    if (cookies.length > 0) headers['set-cookie'] = cookies
    for (const [i, c] of cookies.entries()) headers[`airlock-cookie-${i + 1}`] = c
    res.writeHead(d.response.status, headers)
    res.end(method === 'HEAD' ? undefined : d.response.body)
  }

  function keep(response: GateResponse, cookies: string[]): string {
    const now = Date.now()
    if (answers.size >= MAX_ANSWERS) {
      for (const [id, a] of answers) if (a.at + ANSWER_LIFE < now || answers.size >= MAX_ANSWERS) answers.delete(id)
    }
    const id = randomBytes(12).toString('base64url')
    answers.set(id, { at: now, response, cookies })
    return id
  }

  function kept(res: ServerResponse, id: string, head: boolean): void {
    const a = answers.get(id)
    answers.delete(id)
    if (a === undefined || a.at + ANSWER_LIFE < Date.now()) {
      res.writeHead(503, {
        'content-type': 'text/plain; charset=utf-8',
        'retry-after': '1',
        'cache-control': 'no-store',
        [SHIELD_HEADER]: shieldHeader('busy', gate.name, 'answer-expired'),
      })
      res.end('try again in a moment\n')
      return
    }
    const headers: Record<string, string | string[]> = { ...a.response.headers }
    if (a.cookies.length > 0) headers['set-cookie'] = a.cookies
    res.writeHead(a.response.status, headers)
    res.end(head ? undefined : a.response.body)
  }

  function fail(res: ServerResponse, err: unknown): void {
    log?.error({ cause: (err as Error)?.message }, 'the gate failed')
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      res.end('internal error\n')
    }
  }

  const server = guardedServer(handle, (_req, res, err) => fail(res, err))

  return {
    server,
    gate,
    async listen({ port = 8787, host = '127.0.0.1' } = {}) {
      await gate.ready
      return listenOn(server, port, host)
    },
    async close() {
      await closeServer(server)
      await Promise.all([gate.close(), board?.handler.close(), metrics?.stop()])
      log?.flush()
    },
  }
}

/** The original method as the proxy names it (a token), else `fallback`. */
function original(value: string | string[] | undefined, fallback: string): string {
  const text = Array.isArray(value) ? value[0] : value
  return text !== undefined && /^[A-Z]{1,16}$/.test(text) ? text : fallback
}

/** The original path and query (`/a?b`); anything that is not one is `/`. */
function originalUrl(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value[0] : value
  return text?.startsWith('/') && text.length <= 8192 ? text : '/'
}
