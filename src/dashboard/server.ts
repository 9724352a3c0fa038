/**
 * The operator's dashboard over HTTP, framework-free: a Node `(req, res)` handler that Express
 * mounts as middleware, the Fastify plugin hands raw requests to, and `airlock dashboard` serves
 * alone. Routes, relative to where it is mounted: `/` the page, `/events` server-sent events,
 * `/state` a JSON snapshot, `/history?name=&range=hour|day|30d` the look back (look-back.ts),
 * `POST /control` the live controls. Every route needs the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { optionError } from '../base/errors.js'
import { boolean, received, duration, optionsObject, semaphoreName } from '../base/validate.js'
import type { Duration } from '../base/validate.js'
import { airlockControl, type ControlPatch, type LiveControl } from '../core/control.js'
import { DASHBOARD_CSP, renderDashboardPage } from '../pages/dashboard.js'
import { resolveStore } from '../stores/resolve.js'
import type { Store } from '../stores/types.js'
import { Sampler, type GateView } from './sampler.js'
import { LOOK_BACK_RANGES, LookBacks, type LookBackRange } from './look-back.js'
import { postedToken, SignInGuard, signInPage, SIGN_IN_CSP } from './sign-in.js'

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
  /** Told of each control change made from the page (`info`). */
  logger?: { info?(obj: object, msg?: string): void; warn(obj: object, msg?: string): void }
}

export interface Dashboard {
  /** Handles a request; `req.url` is taken relative to the mount (Express strips its mount path). */
  handle(req: IncomingMessage, res: ServerResponse): void
  readonly sampler: Sampler
  /** Settles after the first sample. */
  readonly ready: Promise<void>
  close(): void
}

const COOKIE = 'airlock_dashboard'
const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/**
 * Creates the dashboard for `names` in `store`. Validates its options now (`ERR_AIRLOCK_OPTION`).
 * The token is compared in constant time (both sides hashed first, so its length does not leak).
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  optionsObject('createDashboard()', options, ['token', 'store', 'names', 'controls', 'interval', 'logger'])
  if (typeof options.token !== 'string' || options.token.length < 16) {
    optionError(`token must be a string of at least 16 characters (openssl rand -hex 24), got ${options.token === undefined ? 'none' : 'a shorter one'}`)
  }
  const names = options.names ?? ['default']
  if (!Array.isArray(names) || names.length === 0) optionError(`names must be a non-empty array of gate names, got ${received(names)}`)
  for (const n of names) semaphoreName('names[]', n)
  const store = resolveStore(options.store)
  if (options.controls !== undefined) boolean('controls', options.controls)
  const controls = options.controls !== false && typeof store.control === 'function'
  const expected = digest(options.token)
  const cookieValue = digest(`cookie:${options.token}`).toString('hex')
  const interval = options.interval === undefined ? undefined : duration('interval', options.interval)
  if (interval !== undefined && interval < 100) optionError(`interval must be at least 100 ms (the dashboard samples the store this often), got ${interval}`)
  const sampler = new Sampler({ store, names, interval })
  const ready = sampler.start()
  const steer = new Map<string, LiveControl>()
  if (controls) for (const n of names) steer.set(n, airlockControl({ name: n, store, by: 'dashboard', logger: options.logger }))
  const lookBacks = new LookBacks(store)
  const page = renderDashboardPage({ names, controls, history: lookBacks.available })

  const authorized = (req: IncomingMessage, url: URL): 'header' | 'cookie' | 'query' | null => {
    const auth = req.headers.authorization
    if (auth?.startsWith('Bearer ') && timingSafeEqual(digest(auth.slice(7)), expected)) return 'header'
    const cookie = /(?:^|;\s*)airlock_dashboard=([0-9a-f]{64})/.exec(req.headers.cookie ?? '')?.[1]
    if (cookie !== undefined && timingSafeEqual(Buffer.from(cookie), Buffer.from(cookieValue))) return 'cookie'
    const query = url.searchParams.get('token')
    if (query !== null && timingSafeEqual(digest(query), expected)) return 'query'
    return null
  }

  const guard = new SignInGuard()
  const signedIn = (req: IncomingMessage, res: ServerResponse): void => {
    // The token becomes an HttpOnly cookie (its hash): out of the address bar, history and logs.
    const mount = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'
    const clean = mount.split('?')[0]!
    send(res, 303, 'text/plain; charset=utf-8', '', {
      location: clean,
      'set-cookie': `${COOKIE}=${cookieValue}; Path=${clean.replace(/\/[^/]*$/, '') || '/'}; HttpOnly; SameSite=Strict${isSecure(req) ? '; Secure' : ''}`,
    })
  }
  const refused = (req: IncomingMessage, res: ServerResponse, wrong: boolean, form = false): void => {
    if (wrong) guard.failed(req.socket.remoteAddress ?? '', Date.now())
    if (form || (req.method === 'GET' && String(req.headers.accept ?? '').includes('text/html'))) {
      return send(res, 401, 'text/html; charset=utf-8', signInPage(wrong), { 'content-security-policy': SIGN_IN_CSP })
    }
    send(res, 401, 'text/plain; charset=utf-8', 'unauthorized\n', { 'www-authenticate': 'Bearer' })
  }

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://dashboard')
    // Whatever the host logs once the answer is sent (Express's morgan reads `originalUrl`, a plain
    // server's `req.url`) shows the link without its token.
    if (url.searchParams.has('token')) redactRequest(req)
    const client = req.socket.remoteAddress ?? ''
    const wait = guard.wait(client, Date.now())
    if (wait > 0) return send(res, 429, 'text/plain; charset=utf-8', 'too many wrong tokens: try again later\n', { 'retry-after': String(Math.ceil(wait / 1000)) })
    const path = url.pathname.replace(/\/+$/, '') || '/'
    if (req.method === 'POST' && path === '/' && String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
      void postedToken(req).then((token) => {
        if (token !== undefined && timingSafeEqual(digest(token), expected)) {
          guard.succeeded(client)
          return signedIn(req, res)
        }
        refused(req, res, true, true)
      })
      return
    }
    const how = authorized(req, url)
    if (how === null) return refused(req, res, req.headers.authorization !== undefined || url.searchParams.has('token') || /airlock_dashboard=/.test(req.headers.cookie ?? ''))
    guard.succeeded(client)
    // A `?token=` link works once: the answer sets the cookie and leaves the token out of the address.
    if (how === 'query') return signedIn(req, res)
    if (req.method === 'GET' && (path === '/' || path === '')) {
      return send(res, 200, 'text/html; charset=utf-8', page, { 'content-security-policy': DASHBOARD_CSP })
    }
    if (req.method === 'GET' && path === '/state') return sendJson(res, 200, snapshot(sampler))
    if (req.method === 'GET' && path === '/events') return events(req, res, sampler)
    if (req.method === 'GET' && path === '/history') return void lookBack(res, url, names, lookBacks)
    if (req.method === 'POST' && path === '/control') return void control(req, res, steer)
    send(res, 404, 'text/plain; charset=utf-8', 'not found\n')
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
  if (!Object.hasOwn(LOOK_BACK_RANGES, range)) return sendJson(res, 400, { error: `range must be one of ${Object.keys(LOOK_BACK_RANGES).join(', ')}` })
  if (!lookBacks.available) return sendJson(res, 404, { error: 'this store keeps no history' })
  try {
    sendJson(res, 200, await lookBacks.get(name, range as LookBackRange))
  } catch (err) {
    sendJson(res, 503, { error: (err as Error).message })
  }
}

function events(req: IncomingMessage, res: ServerResponse, sampler: Sampler): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' })
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
  if (req.headers['x-airlock-dashboard'] !== '1' || !String(req.headers['content-type']).startsWith('application/json')) {
    return sendJson(res, 400, { error: 'send JSON with the X-Airlock-Dashboard: 1 header' })
  }
  let body = ''
  for await (const chunk of req) {
    body += String(chunk)
    if (body.length > 4096) return sendJson(res, 413, { error: 'the body is limited to 4 KB' })
  }
  let parsed: { name?: unknown; patch?: unknown }
  try {
    parsed = JSON.parse(body) as typeof parsed
  } catch {
    return sendJson(res, 400, { error: 'the body is not JSON' })
  }
  const live = typeof parsed.name === 'string' ? steer.get(parsed.name) : undefined
  if (live === undefined) return sendJson(res, 400, { error: steer.size === 0 ? 'live controls are off' : 'unknown gate name' })
  try {
    const state = await live.set(parsed.patch as ControlPatch)
    sendJson(res, 200, state)
  } catch (err) {
    sendJson(res, 400, { error: (err as Error).message })
  }
}

function isSecure(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true
}

function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', ...headers })
  res.end(body)
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value))
}

/** A URL with the value of each `token` parameter replaced by `[redacted]`, for logs. */
export function redactToken(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/g, '$1[redacted]')
}

function redactRequest(req: IncomingMessage & { originalUrl?: string }): void {
  if (req.url !== undefined) req.url = redactToken(req.url)
  if (req.originalUrl !== undefined) req.originalUrl = redactToken(req.originalUrl)
}
