import { defaultStore } from '../stores/memory.js'
import { assertStore } from '../stores/assert.js'
import type { Store } from '../stores/types.js'
import { BUSY_PAGE_CSP, busyJson, renderBusyPage, type BusyPage } from '../pages/busy.js'
import { AirlockError, optionError } from './errors.js'
import { cookieAttributes, cookieValues, firstCookie, pathOf, prefersJson } from './http.js'
import { decodePass, encodePass, PASS_CONTEXT, PASS_MAX_LENGTH, PassCache, type PassFields } from './pass.js'
import { createSemaphore, type Lease, type Semaphore } from './semaphore.js'
import { GateLine, type GateQueueOptions } from './line.js'
import { SlotPool, type PooledSlot } from './slot-pool.js'
import { withinBudget } from './budget.js'
import { newVisitorId, type EnterResult } from './waiting-room.js'
import { createSigner, randomSecret, secretList, type Signer } from './signing.js'
import { describe, duration, knownKeys, nonNegativeInteger, oneOf, positiveInteger, safeName } from './validate.js'

/** A pino-shaped logger: objects first (`log.warn({ err, gate }, 'message')`). */
export interface GateLogger {
  warn(obj: object, msg?: string): void
  info?(obj: object, msg?: string): void
  error?(obj: object, msg?: string): void
}

/** Attributes of the pass cookie. */
export interface GateCookieOptions {
  /** Default `'airlock_pass'` for the gate named `'default'`, else `'airlock_pass_<name>'`. */
  name?: string
  /** Default `'/'`. */
  path?: string
  /** Default: none (host-only cookie). */
  domain?: string
  /**
   * `'auto'` (default): `Secure` when the request came over HTTPS, as the framework sees it
   * (Fastify `request.protocol`, Express `req.secure`, both honouring their trust-proxy setting).
   */
  secure?: boolean | 'auto'
  /** Default `'lax'`. `'none'` needs `secure: true`. */
  sameSite?: 'lax' | 'strict' | 'none'
  /** Default `true`. */
  httpOnly?: boolean
}

/** Options of {@link createGate}. Durations in milliseconds unless named otherwise. */
export interface GateOptions<Req = unknown> {
  /** Slots are shared by every gate (in any process) with this name on the same store. Default `'default'`. */
  name?: string
  /** How many visitors (session mode) or requests (request mode) at once. Default 100. */
  limit?: number
  /** Where slots live. Default: the process-wide memory store. Use `redisStore` for several instances. */
  store?: Store
  /**
   * `'session'` (default): an admitted visitor gets a signed pass cookie that holds a slot for
   * `passTtl` (sliding). `'request'`: a slot per in-flight request, no cookie.
   */
  mode?: 'session' | 'request'
  /** Life of a pass and its slot once the visitor came back with it; slides. Default 60_000. */
  passTtl?: number
  /**
   * Life of a new visitor's slot until the visitor comes back with its pass (clients that keep no
   * cookies never hold a slot longer than this). Default 10_000.
   */
  provisionalTtl?: number
  /**
   * A pass is trusted from the local cache for at most this long before its slot is checked in the
   * store again: a released or expired slot stops admitting on every instance within this window.
   * Default 5_000.
   */
  recheckInterval?: number
  /** Request mode: how long a slot may live if its handler never ends. Default 30_000. */
  ttl?: number
  /**
   * Request mode: a finished request's slot is kept this long (ms) for the next request on this
   * process instead of being released, so a steady stream of requests costs no store round trip.
   * Every request in flight still holds its own live slot; see docs/gate.md. `0` releases at once.
   * Default 10.
   */
  reuseWindow?: number
  /**
   * HMAC secret(s), at least 32 bytes each; sign with the first, accept all (rotation). Default: a
   * random per-process secret (passes then do not survive a restart nor span instances); required
   * when `NODE_ENV=production` with a non-memory store.
   */
  secret?: string | readonly string[]
  cookie?: GateCookieOptions
  /** Seconds, sent as `Retry-After` and in the JSON body. Default 5. */
  retryAfter?: number
  /**
   * Paths never gated (health checks, static assets). A string matches that path and everything
   * under it (`'/static'` matches `/static` and `/static/app.css`); a RegExp is tested on the path.
   */
  bypass?: string | RegExp | ReadonlyArray<string | RegExp>
  /** Return `true` to let a request through ungated (synchronous). */
  skip?: (request: Req) => boolean
  /** Custom busy page: HTML, or a function of `{ retryAfter, request, nonce }` returning HTML. */
  busyPage?: BusyPage
  /** A CSP nonce for the built-in busy page's script and style (else allow them by hash). */
  nonce?: (request: Req) => string | undefined
  /** When the store fails or is slower than `storeTimeout`: `'open'` (default) admits, `'closed'` answers busy. */
  onStoreError?: 'open' | 'closed'
  /** Budget for the store calls of one gate decision. Default 200. */
  storeTimeout?: number
  /** Default: warnings go to `console.warn`. The Fastify plugin uses `fastify.log`. */
  logger?: GateLogger
  /** Most verified passes kept in memory. Default 10_000. */
  cacheSize?: number
  /**
   * A fair waiting room instead of the busy page (session mode only): visitors without a pass take
   * a place in line (a signed ticket cookie) and get `202` with a live waiting page, or JSON
   * `{ status: 'queued', position, eta, waiting }`; they are admitted in order as slots free.
   * `true` for the defaults. Default: none (visitors who find no free slot get the busy answer).
   */
  queue?: boolean | GateQueueOptions
}

/** What a framework adapter hands to {@link Gate.decide}. */
export interface RequestView<Req = unknown> {
  method: string
  /** Path and query, as requested (`/a/b?c=d`). */
  url: string
  headers: {
    cookie?: string | string[] | undefined
    accept?: string | string[] | undefined
    /** Sent by the waiting page's polls. */
    'x-airlock-poll'?: string | string[] | undefined
  }
  /** The request came over HTTPS (as the framework's trust-proxy setting sees it). */
  secure: boolean
  /** The framework's request, for `skip`, `nonce` and `busyPage`. */
  request: Req
}

/** A response the gate gives instead of the route (busy now; a waiting page later). */
export interface GateResponse {
  status: number
  /** Lower-case names. Shared between responses: never mutate. */
  headers: Readonly<Record<string, string>>
  /** Empty for `HEAD`. */
  body: string
}

/** A request-mode slot: release it exactly once when the handler's work is over. */
export interface RequestSlot {
  readonly token: string
  /** Frees the slot; only the first call does anything. Never rejects. */
  release(): Promise<boolean>
}

/** Not gated (`bypass`, `skip`). */
export interface BypassDecision {
  kind: 'bypass'
  setCookie: undefined
  response: undefined
}

/**
 * Let in by taking a slot now (or because the store failed and `onStoreError` is `'open'`), or,
 * with a `queue`, by reaching the head of the line.
 */
export interface AdmitDecision {
  kind: 'admit'
  reason: 'slot' | 'line' | 'store-unavailable'
  /** The slot's lease token; `undefined` when admitted without one (store unavailable). */
  token: string | undefined
  /** Session mode: the new (provisional) pass cookie to set. */
  setCookie: string | undefined
  /**
   * Set only when the waiting page's poll (`X-Airlock-Poll`) is admitted: `200 {"status":"admitted"}`
   * with the pass cookie, and the page then loads the site. Otherwise the route runs.
   */
  response: GateResponse | undefined
  /** Request mode: release when the handler's work is over. */
  slot: RequestSlot | undefined
}

/** Let in by a valid pass (the hot path). */
export interface PassDecision {
  kind: 'pass'
  token: string
  /** A renewed pass (upgraded from provisional, or slid) to set. */
  setCookie: string | undefined
  response: undefined
}

/** Answered by the gate; the route never runs. */
export interface BusyDecision {
  kind: 'busy'
  reason: 'full' | 'store-unavailable'
  setCookie: undefined
  response: GateResponse
}

/** Given a place in line (the `queue` option): `202` with the waiting page or JSON. */
export interface QueuedDecision {
  kind: 'queued'
  /** 1-based place in line; `null` in random order. */
  position: number | null
  /** Visitors in line, this one included. */
  waiting: number
  /** Estimated wait in seconds; `null` while unknown (and in random order). */
  eta: number | null
  /** A new visitor's ticket cookie (its place in line). */
  setCookie: string | undefined
  response: GateResponse
}

/**
 * The outcome for one request. Adapters set `setCookie` when present, then
 * send `response` when present (the route does not run), else continue to the route.
 */
export type GateDecision = BypassDecision | AdmitDecision | PassDecision | BusyDecision | QueuedDecision

/** What `reply.airlock` / `res.locals.airlock` offer a route. */
export interface AirlockControl {
  /** The gate's decision for this request; `undefined` on a route the gate does not cover. */
  readonly decision: GateDecision | undefined
  /**
   * Session mode: ends the visitor's pass (logout, checkout done): frees its slot and clears the
   * cookie in this response. Request mode: frees this request's slot now. `true` when a live slot
   * was freed. Never rejects.
   */
  release(): Promise<boolean>
}

type Outcome = PassDecision | 'dead' | { error: unknown }

interface CacheEntry {
  validUntil: number
  decision: PassDecision
}

const BYPASS: BypassDecision = Object.freeze({ kind: 'bypass', setCookie: undefined, response: undefined })
const OPEN_ADMIT: AdmitDecision = Object.freeze({
  kind: 'admit',
  reason: 'store-unavailable',
  token: undefined,
  setCookie: undefined,
  response: undefined,
  slot: undefined,
})

/** After this many consecutive store failures, stop calling the store until a probe succeeds. */
export const BREAKER_THRESHOLD = 3
/** How often an open breaker probes the store (ms). */
export const BREAKER_PROBE_MS = 1000
/** Store failures are logged at most once per this interval (ms). */
export const STORE_LOG_INTERVAL_MS = 10_000

const OPTION_KEYS = [
  'name',
  'limit',
  'store',
  'mode',
  'passTtl',
  'provisionalTtl',
  'recheckInterval',
  'ttl',
  'reuseWindow',
  'secret',
  'cookie',
  'retryAfter',
  'bypass',
  'skip',
  'busyPage',
  'nonce',
  'onStoreError',
  'storeTimeout',
  'logger',
  'cacheSize',
  'queue',
] as const satisfies readonly (keyof GateOptions)[]

/** Every option key of {@link GateOptions}. */
export const GATE_OPTION_KEYS: readonly string[] = OPTION_KEYS

const consoleLogger: GateLogger = {
  warn: (obj, msg) => console.warn(msg ?? '', obj),
  info: () => {},
  error: (obj, msg) => console.error(msg ?? '', obj),
}

let processSecret: string | undefined
/** Loggers already told about the random secret (once per logger, so once per app). */
const warnedRandomSecret = new WeakSet<object>()

function timeoutError(budget: number): AirlockError {
  return new AirlockError('ERR_AIRLOCK_STORE_UNAVAILABLE', `the store did not answer within storeTimeout (${budget} ms)`)
}

const BREAKER_OPEN = new AirlockError(
  'ERR_AIRLOCK_STORE_UNAVAILABLE',
  'the store is unavailable (circuit open after repeated failures; probing for recovery)',
)

const noop = (): void => {}

/**
 * A framework-free gate: decides, from a plain {@link RequestView}, whether a request may reach the
 * site. Create with {@link createGate}; the Fastify plugin and Express middleware only translate.
 */
export class Gate<Req = unknown> {
  readonly name: string
  readonly limit: number
  readonly mode: 'session' | 'request'
  readonly passTtl: number
  readonly provisionalTtl: number
  readonly recheckInterval: number
  readonly ttl: number
  /** Request mode: how long a finished request's slot waits for the next one (0: no reuse). */
  readonly reuseWindow: number
  readonly retryAfter: number
  readonly onStoreError: 'open' | 'closed'
  readonly storeTimeout: number
  readonly cookieName: string
  readonly store: Store
  readonly logger: GateLogger
  /** The secrets in use (first signs); a random per-process one when none was given. */
  readonly secrets: readonly string[]
  /** True when the secret is the random per-process one. */
  readonly randomSecret: boolean

  private readonly sem: Semaphore
  /** The waiting room, with the `queue` option. */
  private readonly line: GateLine | undefined
  /** Request mode's reusable slots (`reuseWindow` > 0). */
  private readonly pool: SlotPool | undefined
  private readonly signer: Signer
  private readonly cache: PassCache<CacheEntry>
  private readonly inflight = new Map<string, Promise<Outcome>>()
  private readonly exact: Set<string>
  private readonly prefixes: string[]
  private readonly patterns: RegExp[]
  private readonly bypassing: boolean
  private readonly skip: ((request: Req) => boolean) | undefined
  private readonly busyPage: BusyPage | undefined
  private readonly nonce: ((request: Req) => string | undefined) | undefined
  private readonly cookieSecure: boolean | 'auto'
  private readonly cookieTail: string
  private readonly clearTail: string
  private readonly jsonHeaders: Readonly<Record<string, string>>
  private readonly htmlHeaders: Readonly<Record<string, string>>
  private readonly jsonBody: string

  /** User functions that threw (logged once each). */
  private readonly warnedOptions = new Set<string>()
  private failures = 0
  private breakerOpen = false
  private probeTimer: NodeJS.Timeout | undefined
  private lastLogAt = -Infinity
  private suppressed = 0
  private closed = false

  constructor(options: GateOptions<Req> = {}) {
    if (options === null || typeof options !== 'object') {
      optionError(`gate options must be an object, got ${describe(options)}`)
    }
    knownKeys('airlock gate', options, OPTION_KEYS)
    const o = options
    this.name = safeName('name', o.name ?? 'default')
    this.limit = positiveInteger('limit', o.limit ?? 100)
    this.mode = oneOf('mode', o.mode ?? 'session', ['session', 'request'] as const)
    this.passTtl = duration('passTtl', o.passTtl ?? 60_000)
    this.provisionalTtl = duration('provisionalTtl', o.provisionalTtl ?? Math.min(10_000, this.passTtl))
    if (this.provisionalTtl > this.passTtl) {
      optionError(`provisionalTtl must be at most passTtl (${this.passTtl}), got ${this.provisionalTtl}`)
    }
    this.recheckInterval = duration('recheckInterval', o.recheckInterval ?? Math.min(5_000, this.passTtl))
    if (this.recheckInterval > this.passTtl) {
      optionError(`recheckInterval must be at most passTtl (${this.passTtl}), got ${this.recheckInterval}`)
    }
    this.ttl = duration('ttl', o.ttl ?? 30_000)
    this.reuseWindow = nonNegativeInteger('reuseWindow', o.reuseWindow ?? 10)
    this.retryAfter = positiveInteger('retryAfter', o.retryAfter ?? 5)
    this.onStoreError = oneOf('onStoreError', o.onStoreError ?? 'open', ['open', 'closed'] as const)
    this.storeTimeout = duration('storeTimeout', o.storeTimeout ?? 200)
    this.store = o.store === undefined ? defaultStore() : assertStore(o.store)
    this.logger = checkLogger(o.logger) ?? consoleLogger
    const cacheSize = positiveInteger('cacheSize', o.cacheSize ?? 10_000)

    if (o.secret === undefined) {
      if (this.mode === 'session' && process.env.NODE_ENV === 'production' && this.store.kind !== 'memory') {
        optionError(
          `secret is required when NODE_ENV=production and the store is shared ('${this.store.kind}'): ` +
            'passes signed with a random per-process secret are refused by other instances and after a restart; ' +
            'pass secret: process.env.AIRLOCK_SECRET (at least 32 bytes)',
        )
      }
      processSecret ??= randomSecret()
      this.secrets = [processSecret]
      this.randomSecret = true
    } else {
      this.secrets = secretList('secret', o.secret)
      this.randomSecret = false
    }
    this.signer = createSigner({ secrets: this.secrets, context: PASS_CONTEXT, maxLength: PASS_MAX_LENGTH })

    // Cookie.
    const c = o.cookie ?? {}
    if (c === null || typeof c !== 'object') optionError(`cookie must be an object, got ${describe(c)}`)
    knownKeys('cookie', c, ['name', 'path', 'domain', 'secure', 'sameSite', 'httpOnly'])
    this.cookieName = c.name ?? (this.name === 'default' ? 'airlock_pass' : `airlock_pass_${this.name.replace(/[^A-Za-z0-9_-]/g, '_')}`)
    if (typeof this.cookieName !== 'string' || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/.test(this.cookieName)) {
      optionError(`cookie.name must be a cookie name (letters, digits, '_', '-', ...), got ${describe(c.name)}`)
    }
    const path = c.path ?? '/'
    if (typeof path !== 'string' || !/^\/[^;\s\x00-\x1f\x7f]*$/.test(path)) {
      optionError(`cookie.path must start with '/' and contain no ';' or spaces, got ${describe(c.path)}`)
    }
    if (c.domain !== undefined && (typeof c.domain !== 'string' || !/^\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(c.domain))) {
      optionError(`cookie.domain must be a domain name such as 'example.com', got ${describe(c.domain)}`)
    }
    const secure = c.secure ?? 'auto'
    if (secure !== 'auto' && typeof secure !== 'boolean') {
      optionError(`cookie.secure must be true, false or 'auto', got ${describe(secure)}`)
    }
    const sameSite = oneOf('cookie.sameSite', c.sameSite ?? 'lax', ['lax', 'strict', 'none'] as const)
    if (sameSite === 'none' && secure !== true) {
      optionError("cookie.sameSite 'none' needs cookie.secure: true (browsers drop SameSite=None cookies without Secure)")
    }
    const httpOnly = c.httpOnly ?? true
    if (typeof httpOnly !== 'boolean') optionError(`cookie.httpOnly must be a boolean, got ${describe(httpOnly)}`)
    this.cookieSecure = secure
    this.cookieTail = cookieAttributes({ path, domain: c.domain, httpOnly, sameSite })
    this.clearTail = `${this.cookieTail}; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT`

    // Bypass and skip.
    const list = o.bypass === undefined ? [] : Array.isArray(o.bypass) ? o.bypass : [o.bypass]
    this.exact = new Set()
    this.prefixes = []
    this.patterns = []
    for (const [i, b] of (list as unknown[]).entries()) {
      if (b instanceof RegExp) this.patterns.push(b)
      else if (typeof b === 'string' && b.startsWith('/')) {
        const p = b.length > 1 && b.endsWith('/') ? b.slice(0, -1) : b
        this.exact.add(p)
        this.prefixes.push(p === '/' ? '/' : `${p}/`)
      } else {
        optionError(`bypass[${i}] must be a path starting with '/' or a RegExp, got ${describe(b)}`)
      }
    }
    this.bypassing = list.length > 0
    if (o.skip !== undefined && typeof o.skip !== 'function') {
      optionError(`skip must be a function (request) => boolean, got ${describe(o.skip)}`)
    }
    this.skip = o.skip
    if (o.busyPage !== undefined && typeof o.busyPage !== 'string' && typeof o.busyPage !== 'function') {
      optionError(`busyPage must be an HTML string or a function ({ retryAfter, request }) => string, got ${describe(o.busyPage)}`)
    }
    this.busyPage = o.busyPage
    if (o.nonce !== undefined && typeof o.nonce !== 'function') {
      optionError(`nonce must be a function (request) => string, got ${describe(o.nonce)}`)
    }
    this.nonce = o.nonce

    if (o.queue !== undefined && o.queue !== false) {
      if (o.queue !== true && (o.queue === null || typeof o.queue !== 'object')) {
        optionError(`queue must be true or an object such as { order: 'fifo', maxLength: 100_000 }, got ${describe(o.queue)}`)
      }
      if (this.mode !== 'session') {
        optionError(
          "queue needs mode 'session': a place in line is kept by a ticket cookie, which request mode does not use; " +
            "remove mode: 'request' or the queue option",
        )
      }
    }
    const ticketCookieName =
      c.name !== undefined
        ? `${this.cookieName}_ticket`
        : this.name === 'default'
          ? 'airlock_ticket'
          : `airlock_ticket_${this.name.replace(/[^A-Za-z0-9_-]/g, '_')}`
    this.line =
      o.queue === undefined || o.queue === false
        ? undefined
        : new GateLine(this.name, o.queue, {
            limit: this.limit,
            ttl: this.provisionalTtl,
            store: this.store,
            secrets: this.secrets,
            ticketCookieName,
          })

    this.cache = new PassCache(cacheSize)
    this.sem = createSemaphore({
      name: this.name,
      limit: this.limit,
      ttl: this.mode === 'session' ? this.provisionalTtl : this.ttl,
      store: this.store,
    })
    this.pool =
      this.mode === 'request' && this.reuseWindow > 0
        ? new SlotPool(this.sem, {
            window: this.reuseWindow,
            confirmEvery: Math.min(1000, this.ttl / 4),
            onError: (err, op) => this.logStoreError(err, op),
          })
        : undefined

    const common = { 'retry-after': String(this.retryAfter), 'cache-control': 'no-store', vary: 'Accept' }
    this.jsonHeaders = Object.freeze({ ...common, 'content-type': 'application/json; charset=utf-8' })
    this.htmlHeaders = Object.freeze({ ...common, 'content-type': 'text/html; charset=utf-8' })
    this.jsonBody = busyJson(this.retryAfter)

    if (this.randomSecret && this.mode === 'session' && !warnedRandomSecret.has(this.logger)) {
      warnedRandomSecret.add(this.logger)
      this.logger.warn(
        { gate: this.name },
        'airlock-shield: no secret given, passes are signed with a random per-process secret: they will not ' +
          'survive a restart nor be accepted by other instances. Set the secret option (32+ bytes) in production.',
      )
    }
  }

  /**
   * Decides one request. Synchronous for pass holders found in the cache (no store call, no crypto);
   * a promise otherwise. Never rejects: store trouble is handled by `onStoreError`.
   */
  decide(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    if (this.bypassing && this.bypassed(pathOf(view.url))) return BYPASS
    if (this.skip !== undefined && this.userCall('skip', this.skip, view.request) === true) return BYPASS
    if (this.mode === 'request') return this.decideRequest(view)
    const value = firstCookie(view.headers.cookie, this.cookieName)
    if (value !== undefined) {
      const entry = this.cache.get(value, Date.now())
      if (entry !== undefined) return entry.decision
    }
    return this.decideSession(view, value !== undefined)
  }

  /**
   * Ends what `decision` holds: a request-mode slot, or (session mode) the visitor's pass and its
   * slot. Send {@link clearCookie} with the response to forget the pass in the browser.
   * `true` when a live slot was freed. Never rejects.
   */
  async release(decision: GateDecision): Promise<boolean> {
    if (decision.kind === 'admit' && decision.slot) return decision.slot.release()
    if (decision.kind !== 'admit' && decision.kind !== 'pass') return false
    const token = decision.token
    if (token === undefined) return false
    this.cache.deleteWhere((e) => e.decision.token === token)
    try {
      return await this.sem.lease(token).release()
    } catch (err) {
      this.logStoreError(err, 'release')
      return false
    }
  }

  /** A `Set-Cookie` value that removes the pass cookie. */
  clearCookie(secure: boolean): string {
    return `${this.cookieName}=${this.secureTail(this.clearTail, secure)}`
  }

  /** Live slots of this gate in its store. */
  state(): Promise<{ limit: number; held: number; available: number; waiting: number }> {
    return this.sem.getState()
  }

  /** Stops timers and forgets cached passes. Does not close the store (you own it). Idempotent. */
  async close(): Promise<void> {
    this.closed = true
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = undefined
    this.cache.clear()
    this.inflight.clear()
    await this.pool?.close()
  }

  // --- session mode -------------------------------------------------------------------------

  private async decideSession(view: RequestView<Req>, hasCookie: boolean): Promise<GateDecision> {
    const deadline = Date.now() + this.storeTimeout
    if (hasCookie) {
      for (const value of cookieValues(view.headers.cookie, this.cookieName)) {
        const pass = decodePass(this.signer, value)
        if (pass === null || pass.gate !== this.name) continue
        const now = Date.now()
        if (pass.expiresAt <= now) continue
        const cached = this.cache.get(value, now)
        if (cached) return cached.decision
        let pending = this.inflight.get(value)
        if (pending === undefined) {
          pending = this.checkPass(value, pass, view.secure, deadline)
          this.inflight.set(value, pending)
          void pending.finally(() => this.inflight.delete(value))
        }
        const outcome = await pending
        if (outcome === 'dead') break
        if ('error' in outcome) return this.storeFailed(view, outcome.error)
        return outcome
      }
    }
    return this.line === undefined ? this.admitVisitor(view, deadline) : this.joinLine(this.line, view, deadline)
  }

  /** Checks (and if due, upgrades or slides) a verified, unexpired pass against the store. */
  private async checkPass(value: string, pass: PassFields, secure: boolean, deadline: number): Promise<Outcome> {
    const t0 = Date.now()
    try {
      const lease = this.sem.lease(pass.token)
      if (pass.provisional || pass.expiresAt - t0 < this.passTtl / 2) {
        if (!(await this.call(() => lease.refresh(this.passTtl), deadline))) return 'dead'
        const expiresAt = t0 + this.passTtl
        const renewed = encodePass(this.signer, { gate: this.name, token: pass.token, expiresAt, provisional: false })
        this.cache.set(renewed, {
          validUntil: Math.min(t0 + this.recheckInterval, expiresAt - this.passTtl / 2),
          decision: { kind: 'pass', token: pass.token, setCookie: undefined, response: undefined },
        })
        // Requests still carrying the old value (sent before the new cookie arrived) pass and get it again.
        const decision: PassDecision = {
          kind: 'pass',
          token: pass.token,
          setCookie: this.passCookie(renewed, this.passTtl, secure),
          response: undefined,
        }
        this.cache.set(value, { validUntil: Math.min(t0 + this.recheckInterval, pass.expiresAt), decision })
        return decision
      }
      if ((await this.call(() => lease.state(), deadline)) !== 'acquired') return 'dead'
      const decision: PassDecision = { kind: 'pass', token: pass.token, setCookie: undefined, response: undefined }
      this.cache.set(value, {
        validUntil: Math.min(t0 + this.recheckInterval, pass.expiresAt - this.passTtl / 2),
        decision,
      })
      return decision
    } catch (error) {
      return { error }
    }
  }

  /** A visitor without a valid pass: a provisional slot and pass if one is free, else busy. */
  private async admitVisitor(view: RequestView<Req>, deadline: number): Promise<GateDecision> {
    const t0 = Date.now()
    let lease: Lease | null
    try {
      lease = await this.call(() => this.sem.acquire(), deadline, releaseLate)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    if (lease === null) return this.busy(view, 'full')
    const value = encodePass(this.signer, {
      gate: this.name,
      token: lease.token,
      expiresAt: t0 + this.provisionalTtl,
      provisional: true,
    })
    return {
      kind: 'admit',
      reason: 'slot',
      token: lease.token,
      setCookie: this.passCookie(value, this.provisionalTtl, view.secure),
      response: undefined,
      slot: undefined,
    }
  }

  // --- waiting room (queue) -----------------------------------------------------------------

  /**
   * A visitor without a valid pass, with a `queue`: enters the line under its ticket's visitor id
   * (or a new one). Admitted (the line was empty and a slot free, or the visitor is the head): a
   * provisional pass bound to a slot whose token is the visitor id. Queued: `202` and, for a new
   * visitor, the ticket cookie. Line full: busy.
   */
  private async joinLine(line: GateLine, view: RequestView<Req>, deadline: number): Promise<GateDecision> {
    const t0 = Date.now()
    const ticketId = line.readTicket(view.headers.cookie, t0)
    const visitorId = ticketId ?? newVisitorId()
    let result: EnterResult
    try {
      // A new visitor admitted after the budget ran out never learns it: free that slot again.
      result = await this.call(() => line.room.enter(visitorId), deadline, ticketId === undefined ? releaseLateEntry : undefined)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    if (result.status === 'full') return this.busy(view, 'full')
    if (result.status === 'queued') {
      const place = line.place(result)
      return {
        kind: 'queued',
        ...place,
        setCookie:
          ticketId === undefined
            ? `${line.ticketCookieName}=${line.ticket(visitorId, t0)}${this.secureTail(this.cookieTail, view.secure)}`
            : undefined,
        response: line.queuedResponse(
          place,
          { method: view.method, accept: view.headers.accept, poll: isPoll(view), request: view.request },
          this.nonce && (() => this.nonceFor(view.request)),
          (err) => this.logger.warn({ err, gate: this.name }, 'airlock-shield: queue.page threw; sending the built-in page'),
        ),
      }
    }
    const pass = this.passCookie(
      encodePass(this.signer, { gate: this.name, token: visitorId, expiresAt: t0 + this.provisionalTtl, provisional: true }),
      this.provisionalTtl,
      view.secure,
    )
    return {
      kind: 'admit',
      reason: ticketId === undefined ? 'slot' : 'line',
      token: visitorId,
      // The ticket stays: it names the visitor in this gate's line, and a place only exists in the store.
      setCookie: pass,
      response: isPoll(view) ? line.admittedResponse() : undefined,
      slot: undefined,
    }
  }

  // --- request mode -------------------------------------------------------------------------

  /** Request mode: a slot from the pool (synchronous), else one from the store. */
  private decideRequest(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const pooled = this.pool?.take(Date.now())
    return pooled !== undefined ? this.admitRequest(pooled) : this.acquireRequest(view)
  }

  private async acquireRequest(view: RequestView<Req>): Promise<GateDecision> {
    const sentAt = Date.now()
    let lease: Lease | null
    try {
      lease = await this.call(() => this.sem.acquire(), sentAt + this.storeTimeout, releaseLate)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    if (lease === null) return this.busy(view, 'full')
    return this.admitRequest(SlotPool.slot(lease, sentAt))
  }

  private admitRequest(slot: PooledSlot): AdmitDecision {
    return {
      kind: 'admit',
      reason: 'slot',
      token: slot.lease.token,
      setCookie: undefined,
      response: undefined,
      slot: this.requestSlot(slot),
    }
  }

  /** The request's slot: released once, back to the pool (when reusing) or to the store. */
  private requestSlot(slot: PooledSlot): RequestSlot {
    const pool = this.pool
    let done: Promise<boolean> | undefined
    return {
      token: slot.lease.token,
      release: () => {
        if (done) return done
        if (pool) {
          pool.give(slot, Date.now())
          return (done = Promise.resolve(true))
        }
        return (done = slot.lease.release().catch((err: unknown) => {
          // The slot then frees itself after `ttl`.
          this.logStoreError(err, 'release')
          return false
        }))
      },
    }
  }

  // --- responses ----------------------------------------------------------------------------

  private busy(view: RequestView<Req>, reason: BusyDecision['reason']): BusyDecision {
    return { kind: 'busy', reason, setCookie: undefined, response: this.busyResponse(view) }
  }

  /** The busy answer for this request: JSON or HTML by `Accept`, no body for `HEAD`. */
  busyResponse(view: RequestView<Req>): GateResponse {
    const head = view.method === 'HEAD'
    if (prefersJson(view.headers.accept)) {
      return { status: 503, headers: this.jsonHeaders, body: head ? '' : this.jsonBody }
    }
    if (head) return { status: 503, headers: this.htmlHeaders, body: '' }
    const nonce = this.nonceFor(view.request)
    if (this.busyPage === undefined) {
      return {
        status: 503,
        headers: { ...this.htmlHeaders, 'content-security-policy': BUSY_PAGE_CSP },
        body: renderBusyPage(this.retryAfter, nonce),
      }
    }
    let body: string
    try {
      body =
        typeof this.busyPage === 'string'
          ? this.busyPage
          : String(this.busyPage({ retryAfter: this.retryAfter, request: view.request, nonce }))
    } catch (err) {
      this.logger.warn({ err, gate: this.name }, 'airlock-shield: busyPage threw; sending the built-in page')
      return {
        status: 503,
        headers: { ...this.htmlHeaders, 'content-security-policy': BUSY_PAGE_CSP },
        body: renderBusyPage(this.retryAfter, nonce),
      }
    }
    return { status: 503, headers: this.htmlHeaders, body }
  }

  /** The CSP nonce for this request, if a `nonce` function is set (one that throws gives none). */
  private nonceFor(request: Req): string | undefined {
    return this.nonce === undefined ? undefined : this.userCall('nonce', this.nonce, request)
  }

  /**
   * Calls a user-supplied `skip` or `nonce` function. One that throws is treated as answering
   * `undefined` (not skipped, no nonce) and logged once per gate, so a bug there never turns into a
   * 500 nor lets a request bypass the gate.
   */
  private userCall<T>(option: 'skip' | 'nonce', fn: (request: Req) => T, request: Req): T | undefined {
    try {
      return fn(request)
    } catch (err) {
      if (!this.warnedOptions.has(option)) {
        this.warnedOptions.add(option)
        this.logger.warn({ err, gate: this.name }, `airlock-shield: the ${option} option threw; treating it as undefined`)
      }
      return undefined
    }
  }

  private passCookie(value: string, life: number, secure: boolean): string {
    return `${this.cookieName}=${value}${this.secureTail(`${this.cookieTail}; Max-Age=${Math.ceil(life / 1000)}`, secure)}`
  }

  private secureTail(tail: string, secure: boolean): string {
    return this.cookieSecure === true || (this.cookieSecure === 'auto' && secure) ? `${tail}; Secure` : tail
  }

  private bypassed(path: string): boolean {
    if (this.exact.has(path)) return true
    for (const p of this.prefixes) if (path.startsWith(p)) return true
    for (const r of this.patterns) {
      r.lastIndex = 0
      if (r.test(path)) return true
    }
    return false
  }

  // --- store budget, breaker, logging -------------------------------------------------------

  /**
   * Runs one store call within what is left of the decision's budget. Fails at once while the
   * breaker is open. `onLate` receives a result that arrives after the budget ran out.
   */
  private async call<T>(op: () => Promise<T>, deadline: number, onLate?: (value: T) => void): Promise<T> {
    if (this.breakerOpen) throw BREAKER_OPEN
    const budget = deadline - Date.now()
    if (budget <= 0) {
      this.failed()
      throw timeoutError(this.storeTimeout)
    }
    try {
      const value = await withinBudget(op(), budget, () => timeoutError(this.storeTimeout), onLate)
      this.failures = 0
      return value
    } catch (err) {
      this.failed()
      throw err
    }
  }

  private failed(): void {
    if (++this.failures >= BREAKER_THRESHOLD && !this.breakerOpen && !this.closed) {
      this.breakerOpen = true
      this.scheduleProbe()
    }
  }

  private scheduleProbe(): void {
    this.probeTimer = setTimeout(() => void this.probe(), BREAKER_PROBE_MS)
    this.probeTimer.unref?.()
  }

  private async probe(): Promise<void> {
    this.probeTimer = undefined
    if (this.closed) return
    try {
      await withinBudget(this.store.state(this.name), this.storeTimeout, () => timeoutError(this.storeTimeout))
      if (this.closed) return
      this.breakerOpen = false
      this.failures = 0
      this.suppressed = 0
      this.lastLogAt = -Infinity
      this.logger.info?.({ gate: this.name }, 'airlock-shield: store available again')
    } catch {
      if (!this.closed) this.scheduleProbe()
    }
  }

  private storeFailed(view: RequestView<Req>, err: unknown): GateDecision {
    this.logStoreError(err, this.onStoreError === 'open' ? 'failing open' : 'failing closed')
    return this.onStoreError === 'open' ? OPEN_ADMIT : this.busy(view, 'store-unavailable')
  }

  /** Logs a store failure at most once per {@link STORE_LOG_INTERVAL_MS}. */
  private logStoreError(err: unknown, what: string): void {
    const now = Date.now()
    if (now - this.lastLogAt < STORE_LOG_INTERVAL_MS) {
      this.suppressed++
      return
    }
    this.lastLogAt = now
    const suppressed = this.suppressed
    this.suppressed = 0
    this.logger.warn(
      { err, gate: this.name, policy: this.onStoreError, suppressed },
      `airlock-shield: store unavailable (${what})`,
    )
  }
}

/** True for the waiting page's own polls. */
function isPoll(view: RequestView<unknown>): boolean {
  return view.headers['x-airlock-poll'] !== undefined
}

/** Frees a slot a new visitor was admitted to after its decision had already given up on it. */
function releaseLateEntry(result: EnterResult): void {
  if (result.status === 'admitted') result.lease.release().catch(noop)
}

/** Releases a slot acquired after its decision had already given up on it. */
function releaseLate(lease: Lease | null): void {
  lease?.release().catch(noop)
}

function checkLogger(logger: unknown): GateLogger | undefined {
  if (logger === undefined) return undefined
  if (logger === null || typeof logger !== 'object' || typeof (logger as GateLogger).warn !== 'function') {
    optionError(`logger must be a pino-shaped logger with a warn(obj, msg) method, got ${describe(logger)}`)
  }
  return logger as GateLogger
}

/**
 * Creates a gate. Validates every option now: throws `ERR_AIRLOCK_OPTION` with a sentence naming
 * the option and the fix.
 */
export function createGate<Req = unknown>(options?: GateOptions<Req>): Gate<Req> {
  return new Gate<Req>(options)
}
