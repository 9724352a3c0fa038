/**
 * The operator's dashboard over HTTP, framework-free: a Node `(req, res)` handler that Express
 * mounts as middleware, the Fastify plugin hands raw requests to, and `airlock dashboard` serves
 * alone. Routes, relative to where it is mounted: `/` the page, `/events` server-sent events,
 * `/state` a JSON snapshot, `/history?name=&range=hour|day|30d` the look back (look-back.ts),
 * `POST /control` the live controls. Every route needs the token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { BODY_ERROR_HEADERS, readBody, SMALL_BODY, type BodyRead } from '../base/body.js'
import {
  addressBlock,
  clientBehind,
  trustPolicy,
  type TrustPolicy,
  type TrustProxyOption,
} from '../base/client-address.js'
import { optionError } from '../base/errors.js'
import { randomSecret, secretList } from '../base/signing.js'
import { boolean, received, duration, optionsObject, semaphoreName } from '../base/validate.js'
import type { Duration } from '../base/validate.js'
import { airlockControl, type ControlPatch, type LiveControl } from '../core/control.js'
import { DASHBOARD_CSP, renderDashboardPage } from '../pages/dashboard.js'
import { resolveStore } from '../stores/resolve.js'
import type { Store } from '../stores/types.js'
import { Sampler, type GateView } from './sampler.js'
import { LOOK_BACK_RANGES, LookBacks, type LookBackRange } from './look-back.js'
import { COOKIE, Credentials, formToken, SignInGuard, signInPage, SIGN_IN_CSP } from './sign-in.js'

export interface DashboardOptions {
  /** The token an operator presents (at least 16 characters; from the environment, never from code). */
  token: string
  /** The gates' store. Default: the process-wide memory store. */
  store?: Store
  /** The gate names to show. Default `['default']`. */
  names?: readonly string[]
  /** Show the live controls (limit, mode, admission rate, opening) on the page. Default true. */
  controls?: boolean
  /** ms between samples. Default 1000. */
  interval?: Duration
  /**
   * Signs the sign-in cookie (the gates' `secret`: one, or several for rotation, each 32+ bytes), so
   * an operator signed in on one instance is signed in on every instance and after a restart.
   * Default: a random one for this process.
   */
  secret?: string | readonly string[]
  /**
   * Whose `X-Forwarded-For` to believe when the host does not say who the client is (the wrong-token
   * slow-down counts per client): as the proxy's `trustProxy` (addresses, CIDRs, `loopback`, ...,
   * or a number of hops). Default `false`. Express (`req.ip`), Fastify (`request.ip`) and the proxy
   * tell the client themselves.
   */
  trustProxy?: TrustProxyOption
  /** Told of each control change made from the page (`info`). */
  logger?: {
    info?(obj: object, msg?: string): void
    warn(obj: object, msg?: string): void
    error?(obj: object, msg?: string): void
  }
}

export interface Dashboard {
  /**
   * Handles a request; `req.url` is taken relative to the mount (Express strips its mount path).
   * `client`: the client's address as the host sees it (its trust-proxy setting applied); default
   * Express's `req.ip`, else the socket's address behind `trustProxy`. Never throws, never rejects:
   * a request that breaks off or goes wrong is answered (or dropped) on its own.
   */
  handle(req: IncomingMessage, res: ServerResponse, client?: string): void
  readonly sampler: Sampler
  /** Settles after the first sample. */
  readonly ready: Promise<void>
  close(): void
}

/** The sign-in form's body: a token field, within 10 s. */
const FORM_BODY = { limit: 1024, timeout: 10_000 }

/**
 * Creates the dashboard for `names` in `store`. Validates its options now (`ERR_AIRLOCK_OPTION`).
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  optionsObject('createDashboard()', options, [
    'token',
    'store',
    'names',
    'controls',
    'interval',
    'secret',
    'trustProxy',
    'logger',
  ])
  if (typeof options.token !== 'string' || options.token.length < 16) {
    optionError(
      `token must be a string of at least 16 characters (openssl rand -hex 24), got ${options.token === undefined ? 'none' : 'a shorter one'}`,
    )
  }
  const names = options.names ?? ['default']
  if (!Array.isArray(names) || names.length === 0)
    optionError(`names must be a non-empty array of gate names, got ${received(names)}`)
  for (const n of names) semaphoreName('names[]', n)
  const store = resolveStore(options.store)
  if (options.controls !== undefined) boolean('controls', options.controls)
  const controls = options.controls !== false && typeof store.control === 'function'
  const credentials = new Credentials(
    options.token,
    options.secret === undefined ? [randomSecret()] : secretList('secret', options.secret),
  )
  const trusts = trustPolicy(options.trustProxy)
  const interval = options.interval === undefined ? undefined : duration('interval', options.interval)
  if (interval !== undefined && interval < 100)
    optionError(`interval must be at least 100 ms (the dashboard samples the store this often), got ${interval}`)
  const sampler = new Sampler({ store, names, interval })
  const ready = sampler.start()
  const steer = new Map<string, LiveControl>()
  if (controls)
    for (const n of names) steer.set(n, airlockControl({ name: n, store, by: 'dashboard', logger: options.logger }))
  const lookBacks = new LookBacks(store, sampler)
  const page = renderDashboardPage({ names, controls, history: lookBacks.available, interval: interval ?? 1000 })
  const guard = new SignInGuard()
  const clientOf = (req: IncomingMessage): string =>
    (req as { ip?: string }).ip ?? clientBehind(req.socket?.remoteAddress ?? '', req.headers['x-forwarded-for'], trusts)

  const signedIn = (req: IncomingMessage, res: ServerResponse): void => {
    // The token becomes an HttpOnly cookie (an HMAC of it): out of the address bar, history and logs.
    const mount = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'
    const clean = mount.split('?')[0]!
    send(res, 303, 'text/plain; charset=utf-8', '', {
      location: clean,
      'set-cookie': `${COOKIE}=${credentials.cookieValue}; Path=${clean.replace(/\/[^/]*$/, '') || '/'}; HttpOnly; SameSite=Strict${isSecure(req, trusts) ? '; Secure' : ''}`,
    })
  }
  const refused = (req: IncomingMessage, res: ServerResponse, wrong: boolean, form = false): void => {
    if (form || (req.method === 'GET' && String(req.headers.accept ?? '').includes('text/html'))) {
      return send(res, 401, 'text/html; charset=utf-8', signInPage(wrong), { 'content-security-policy': SIGN_IN_CSP })
    }
    send(res, 401, 'text/plain; charset=utf-8', 'unauthorized\n', { 'www-authenticate': 'Bearer' })
  }
  const slowedDown = (res: ServerResponse, wait: number, bodyUnread: boolean): void =>
    send(res, 429, 'text/plain; charset=utf-8', 'too many wrong tokens: try again later\n', {
      'retry-after': String(Math.ceil(wait / 1000)),
      // The shield's own answer, as every refusal of the gate (the dashboard's sign-in, slowed down).
      airlock: 'refused; reason=sign-in-attempts',
      ...(bodyUnread ? BODY_ERROR_HEADERS : {}),
    })

  /** The sign-in form posted: its token checked (unless this client is slowed down). */
  const signIn = async (req: IncomingMessage, res: ServerResponse, client: string): Promise<void> => {
    const wait = guard.wait(client, Date.now())
    if (wait > 0) return slowedDown(res, wait, true)
    const body = await readBody(req, FORM_BODY)
    if (!body.ok) return bodyFailed(res, body)
    const token = formToken(body.text)
    if (token !== undefined && credentials.token(token)) {
      guard.succeeded(client)
      return signedIn(req, res)
    }
    guard.failed(client, Date.now())
    refused(req, res, true, true)
  }

  const route = (req: IncomingMessage, res: ServerResponse, client: string): void | Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://dashboard')
    const query = url.searchParams.get('token')
    // Whatever the host logs once the answer is sent (Express's morgan reads `originalUrl`, a plain
    // server's `req.url`) shows the link without its token (`tok%65n=` is `token=` too).
    if (query !== null) redactRequest(req)
    const path = url.pathname.replace(/\/+$/, '') || '/'
    if (
      req.method === 'POST' &&
      path === '/' &&
      String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')
    ) {
      return signIn(req, res, client)
    }
    // A signed-in operator (the cookie cannot be computed from a guess) is never slowed down by others' guesses.
    if (!credentials.cookie(cookieHeader(req))) {
      const auth = req.headers.authorization
      const presented = auth?.startsWith('Bearer ') ? auth.slice(7) : (query ?? undefined)
      if (presented === undefined) return refused(req, res, false)
      const wait = guard.wait(client, Date.now())
      if (wait > 0) return slowedDown(res, wait, false)
      if (!credentials.token(presented)) {
        guard.failed(client, Date.now())
        return refused(req, res, true)
      }
      guard.succeeded(client)
      // A `?token=` link works once: the answer sets the cookie and leaves the token out of the address.
      if (presented === query && auth === undefined) return signedIn(req, res)
    }
    if (req.method === 'GET' && (path === '/' || path === '')) {
      return send(res, 200, 'text/html; charset=utf-8', page, { 'content-security-policy': DASHBOARD_CSP })
    }
    if (req.method === 'GET' && path === '/state') return sendJson(res, 200, snapshot(sampler))
    if (req.method === 'GET' && path === '/events') return events(req, res, sampler)
    if (req.method === 'GET' && path === '/history') return lookBack(res, url, names, lookBacks)
    if (req.method === 'POST' && path === '/control') return control(req, res, steer)
    send(res, 404, 'text/plain; charset=utf-8', 'not found\n')
  }

  const broke = (res: ServerResponse, err: unknown): void => {
    options.logger?.error?.({ err }, 'the dashboard failed to answer')
    if (!res.headersSent && !res.destroyed)
      send(res, 500, 'text/plain; charset=utf-8', 'internal error\n', BODY_ERROR_HEADERS)
  }
  const handle = (req: IncomingMessage, res: ServerResponse, client?: string): void => {
    try {
      const key = client ?? clientOf(req)
      const answered = route(req, res, addressBlock(key) ?? key)
      if (answered !== undefined) answered.catch((err: unknown) => broke(res, err))
    } catch (err) {
      broke(res, err)
    }
  }
  return { handle, sampler, ready, close: () => sampler.close() }
}

function snapshot(sampler: Sampler): { views: GateView[]; history: Record<string, readonly unknown[]> } {
  return { views: sampler.views(), history: Object.fromEntries(sampler.names.map((n) => [n, sampler.history(n)])) }
}

async function lookBack(res: ServerResponse, url: URL, names: readonly string[], lookBacks: LookBacks): Promise<void> {
  const name = url.searchParams.get('name') ?? ''
  const range = url.searchParams.get('range') ?? 'hour'
  if (!names.includes(name)) return sendJson(res, 400, { error: 'unknown gate name' })
  if (!Object.hasOwn(LOOK_BACK_RANGES, range))
    return sendJson(res, 400, { error: `range must be one of ${Object.keys(LOOK_BACK_RANGES).join(', ')}` })
  if (!lookBacks.available) return sendJson(res, 404, { error: 'this store keeps no history' })
  try {
    sendJson(res, 200, await lookBacks.get(name, range as LookBackRange))
  } catch (err) {
    sendJson(res, 503, { error: (err as Error).message }, { airlock: 'busy; reason=store-unavailable' })
  }
}

function events(req: IncomingMessage, res: ServerResponse, sampler: Sampler): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  })
  res.write(`event: init\ndata: ${JSON.stringify(snapshot(sampler))}\n\n`)
  const unsubscribe = sampler.subscribe((views) => res.write(`event: sample\ndata: ${JSON.stringify({ views })}\n\n`))
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 15_000).unref()
  const stop = (): void => {
    unsubscribe()
    clearInterval(heartbeat)
  }
  req.on('close', stop)
  res.on('close', stop)
}

async function control(req: IncomingMessage, res: ServerResponse, steer: Map<string, LiveControl>): Promise<void> {
  // A custom header and JSON: a cross-site form cannot send either (and the cookie is SameSite=Strict).
  if (
    req.headers['x-airlock-dashboard'] !== '1' ||
    !String(req.headers['content-type']).startsWith('application/json')
  ) {
    return sendJson(res, 400, { error: 'send JSON with the X-Airlock-Dashboard: 1 header' })
  }
  const body = await readBody(req, SMALL_BODY)
  if (!body.ok) return bodyFailed(res, body)
  let parsed: { name?: unknown; patch?: unknown }
  try {
    parsed = JSON.parse(body.text) as typeof parsed
  } catch {
    return sendJson(res, 400, { error: 'the body is not JSON' })
  }
  const live = typeof parsed.name === 'string' ? steer.get(parsed.name) : undefined
  if (live === undefined)
    return sendJson(res, 400, { error: steer.size === 0 ? 'live controls are off' : 'unknown gate name' })
  try {
    const state = await live.set(parsed.patch as ControlPatch)
    sendJson(res, 200, state)
  } catch (err) {
    sendJson(res, 400, { error: (err as Error).message })
  }
}

/** HTTPS, as the client used it (behind a trusted proxy: as its last `X-Forwarded-Proto` says). */
function isSecure(req: IncomingMessage, trusts: TrustPolicy): boolean {
  if ((req.socket as { encrypted?: boolean } | undefined)?.encrypted === true) return true
  const proto = req.headers['x-forwarded-proto']
  return (
    typeof proto === 'string' &&
    trusts(req.socket?.remoteAddress ?? '') &&
    proto
      .slice(proto.lastIndexOf(',') + 1)
      .trim()
      .toLowerCase() === 'https'
  )
}

/** The `Cookie` header as one string (HTTP/2 may send several). */
function cookieHeader(req: IncomingMessage): string | undefined {
  const c = req.headers.cookie as string | string[] | undefined
  return Array.isArray(c) ? c.join('; ') : c
}

/** A body that could not be read: answered with why (nothing when the client went away). */
function bodyFailed(res: ServerResponse, read: Extract<BodyRead, { ok: false }>): void {
  if (read.aborted || res.destroyed) return
  send(res, read.status, 'application/json; charset=utf-8', JSON.stringify({ error: read.message }), BODY_ERROR_HEADERS)
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...headers,
  })
  res.end(body)
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value), headers)
}

/**
 * A URL with the value of each `token` parameter replaced by `[redacted]`, for logs: every parameter
 * whose name reads `token` once decoded (`tok%65n=`, `%74oken=` too), as the dashboard reads it.
 */
export function redactToken(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const hash = url.indexOf('#', q)
  const query = url.slice(q + 1, hash < 0 ? undefined : hash)
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=')
    const name = eq < 0 ? part : part.slice(0, eq)
    return new URLSearchParams(`${name}=`).has('token') ? `${name}=[redacted]` : part
  })
  return `${url.slice(0, q + 1)}${parts.join('&')}${hash < 0 ? '' : url.slice(hash)}`
}

function redactRequest(req: IncomingMessage & { originalUrl?: string }): void {
  if (req.url !== undefined) req.url = redactToken(req.url)
  if (req.originalUrl !== undefined) req.originalUrl = redactToken(req.originalUrl)
}
