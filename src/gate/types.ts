/**
 * The gate's public types: its options, the request view adapters hand it, and its decisions. A
 * leaf of the gate: it imports types only from other layers and the type-only leaves
 * (option-types.ts, status-types.ts), never from the gate's implementation files, which import it.
 */
import type { ControlState } from '../core/control.js'
import type { Store } from '../stores/types.js'
import type { BusyPage } from '../pages/busy.js'
import type { GateResponse } from '../pages/answers.js'
import type { MessagesOption } from '../pages/language.js'
import type { Duration } from '../base/validate.js'
import type { ClientShareOptions, GateBusyOptions, GateHistoryOptions, GateQueueOptions } from './option-types.js'
import type { AdaptiveStatus, InstanceStatus } from './status-types.js'

export type { GateResponse } from '../pages/answers.js'

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

/**
 * Options of {@link createGate}. Durations in milliseconds as numbers, or text with a unit
 * (`'60s'`, `'5m'`, `'250ms'`, `'1h'`), unless named otherwise.
 */
export interface GateOptions<Req = unknown> {
  /** Slots are shared by every gate (in any process) with this name on the same store. Default `'default'`. */
  name?: string
  /**
   * How many visitors (session mode) or requests (request mode) at once. Default 100. An object
   * `{ min, max, initial? }` turns on the adaptive limit: the gate learns the backend's capacity
   * from the latency and failures of admitted work, one figure for the fleet, within [min, max],
   * starting at `initial` (default `min`). Recommended start when you don't know your capacity:
   * `{ min: 5, max: 500 }`. See docs/adaptive.md. Every figure is a whole number from 1 to
   * 2147483647 (2^31 − 1: no site serves more at once; a larger one is refused as a slip).
   */
  limit?: number | { min: number; max: number; initial?: number }
  /** Where slots live. Default: the process-wide memory store. Use `redisStore` for several instances. */
  store?: Store
  /**
   * `'session'` (default): an admitted visitor gets a signed pass cookie that holds a slot for
   * `passTtl` (sliding). `'request'`: a slot per in-flight request, no cookie.
   */
  mode?: 'session' | 'request'
  /** Life of a pass and its slot once the visitor came back with it; slides. Default 60_000. */
  passTtl?: Duration
  /**
   * Life of a new visitor's slot until the visitor comes back with its pass (clients that keep no
   * cookies never hold a slot longer than this). Default 10_000.
   */
  provisionalTtl?: Duration
  /**
   * A pass is trusted from the local cache for at most this long before its slot is checked in the
   * store again: a released or expired slot stops admitting on every instance within this window.
   * Milliseconds, or a duration such as `'5s'`. Default 5_000.
   */
  recheckInterval?: Duration
  /** Request mode: how long a slot may live if its handler never ends. Default 30_000. */
  ttl?: Duration
  /**
   * Request mode: a finished request's slot is kept this long (ms) for the next request on this
   * process instead of being released, so a steady stream of requests costs no store round trip.
   * Every request in flight still holds its own live slot; see docs/gate.md. `0` releases at once.
   * Milliseconds, or a duration such as `'10ms'`. Default 10.
   */
  reuseWindow?: Duration
  /**
   * HMAC secret(s), at least 32 bytes each; sign with the first, accept all (rotation). Default: a
   * random per-process secret (passes then do not survive a restart nor span instances); required
   * when `NODE_ENV=production` with a non-memory store.
   */
  secret?: string | readonly string[]
  cookie?: GateCookieOptions
  /**
   * The busy answer (`503`): `{ page, retryAfter }`, see {@link GateBusyOptions}. Default: the
   * built-in page, `Retry-After: 5`.
   */
  busy?: GateBusyOptions
  /**
   * Seconds, sent as `Retry-After` and in the JSON body. Default 5.
   * @deprecated use `busy.retryAfter`; removed in 0.3. Giving both is refused.
   */
  retryAfter?: number
  /**
   * Paths never gated (health checks, static assets). A string matches that path and everything
   * under it (`'/static'` matches `/static` and `/static/app.css`); a RegExp is tested on the path.
   * A request is let through only when every reading of its path a router could route (decoded,
   * `..` resolved, without a trailing slash, in lower case where the router ignores case) matches a
   * rule: see "One path" in docs/gate.md.
   */
  bypass?: string | RegExp | ReadonlyArray<string | RegExp>
  /** Return `true` to let a request through ungated (synchronous). */
  skip?: (request: Req) => boolean
  /**
   * Custom busy page: HTML, or a function of `{ retryAfter, request, nonce, language, reason }` returning HTML.
   * @deprecated use `busy.page`; removed in 0.3. Giving both is refused.
   */
  busyPage?: BusyPage
  /** A CSP nonce for the built-in busy page's script and style (else allow them by hash). */
  nonce?: (request: Req) => string | undefined
  /**
   * The built-in pages' words (busy, waiting, challenge; the proxy's 502/504), by language tag,
   * added to or changing the built-in languages (en, de, fr, es, it, pt, nl, pl, tr, ru, uk, ar,
   * he, zh, ja). Each page speaks the visitor's language by `Accept-Language` (English when none
   * fits). A tag with a shorter tag in the catalogue (`pt-BR`: `pt`) may change some messages; a
   * new language (`sv`) gives every one. Checked at startup. See "Languages" in docs/gate.md.
   * Example: `{ de: { busyHeading: 'Gerade ist Hochbetrieb' }, sv: { ...allMessages } }`.
   */
  messages?: MessagesOption
  /**
   * When the store fails or is slower than `storeTimeout`. `'local'` (default): this instance admits
   * up to its share of the limit (the limit over the instances reporting to the store; all of it
   * when alone), counting what it already let in, so the backend never sees more than the limit.
   * `'open'`: admits everyone (the backend takes the whole crowd). `'closed'`: answers busy.
   */
  onStoreError?: 'local' | 'open' | 'closed'
  /** Budget for the store calls of one gate decision: milliseconds, or a duration such as `'200ms'`. Default 200. */
  storeTimeout?: Duration
  /** Default: warnings go to `console.warn`. The Fastify plugin uses `fastify.log`. */
  logger?: GateLogger
  /** Most verified passes kept in memory (1 to 2147483647). Default 10_000. */
  cacheSize?: number
  /**
   * How often (milliseconds, or a duration such as `'1s'`) this instance writes its status (its counters) into the store, for the
   * cluster-wide {@link Gate.status}, the dashboard and the fleet's size (one store call, keys that expire). `0`: never. Default 1000.
   */
  statusInterval?: Duration
  /** @deprecated Renamed `statusInterval` in 0.2 (a "report" is the history's); this alias goes in 0.3. */
  reportInterval?: Duration
  /**
   * Session mode: a browser confirms its new pass at once. The page that admits a visitor gets a
   * `Link: <?__airlock=confirm>; rel=prefetch` header; the browser fetches it with the new cookie,
   * and the gate answers that request itself (`204`, the confirmed pass), before any route runs.
   * So a visitor reading a page that makes no other request keeps its slot. `false` turns both off
   * (any later request carrying the pass still confirms it). Default `true`.
   */
  confirm?: boolean
  /**
   * Follow the live control kept in the store for this gate's name (`airlockControl`, the CLI's
   * `airlock control`, the dashboard): a live limit, modes, an admission rate, a scheduled opening,
   * applied within a second (pushed by the store, re-read every 5 s). Costs pass holders nothing.
   * Default `true` (stores without `control()` are simply not steered).
   */
  control?: boolean
  /**
   * A fair waiting room instead of the busy page (session mode only): visitors without a pass take
   * a place in line (a signed ticket cookie) and get `202` with a live waiting page, or JSON
   * `{ status: 'queued', position, eta, waiting }`; they are admitted in order as slots free.
   * `true` for the defaults. Default: none (visitors who find no free slot get the busy answer).
   */
  queue?: boolean | GateQueueOptions
  /**
   * Session mode: each client's share of the gate, counted in the store (so across instances).
   * A client (see `clientKey`) holds at most `places` places in line and unconfirmed slots at once
   * (default 20), at most `slots` unconfirmed slots (default a quarter of the limit, at least 1),
   * and gets at most `perMinute` new ones a minute (default 60). Over it: the busy answer with
   * `reason: 'client-share'`, never a place. A slot stops counting once its pass is confirmed (the
   * browser came back with the cookie), so clients that keep cookies are bounded by the rate only.
   * Default on; `false` turns it off (load tests from one machine). See docs/waiting-room.md "Bots".
   */
  clientShare?: boolean | ClientShareOptions
  /**
   * The client a request comes from, for `clientShare`: a user id, an API key, a session. Return
   * `undefined` for the default: the client's address as the framework sees it (its trust-proxy
   * setting), IPv4 by address and IPv6 by /64.
   */
  clientKey?: (request: Req) => string | undefined
  /**
   * The per-minute history in the store (admitted, turned away, abandoned, released, in line,
   * waits and visits; read with `airlockReport()`, `airlock report` and the dashboard's look
   * back): each instance adds its part of each minute once the minute ends (one store call a
   * minute, and one at close). `{ days }`: how long each minute is kept; `false`: none. Default
   * `{ days: 30 }` on the memory store and the Redis store (a custom store keeps none: the option
   * is then refused). See docs/observability.md.
   */
  history?: boolean | GateHistoryOptions
}

/** How the framework in front of the gate routes, as far as a path's reading goes (bypass.ts). */
export interface RoutingRules {
  /** The router matches paths without regard to case (Express's default; Fastify `caseSensitive: false`). */
  foldCase?: boolean | undefined
  /** The route the framework chose, when it names one path (a static route: no parameters or wildcards). */
  route?: string | undefined
}

/** What a framework adapter hands to {@link Gate.decide}. */
export interface RequestView<Req = unknown> {
  method: string
  /** Path and query, as requested (`/a/b?c=d`). */
  url: string
  headers: {
    cookie?: string | string[] | undefined
    accept?: string | string[] | undefined
    /** The built-in pages' language (read only when one is rendered). */
    'accept-language'?: string | string[] | undefined
    /** Sent by the waiting page's polls. */
    'x-airlock-poll'?: string | string[] | undefined
    /** The challenge page's solution (`queue.challenge`). */
    'x-airlock-solution'?: string | string[] | undefined
    /** For "Leave the line": only from the site itself. */
    origin?: string | undefined
    host?: string | undefined
    'sec-fetch-site'?: string | string[] | undefined
    /** Read only to warn when a proxy's visitors all arrive as the proxy (trust is off). */
    'x-forwarded-for'?: string | string[] | undefined
  }
  /** The request came over HTTPS (as the framework's trust-proxy setting sees it). */
  secure: boolean
  /** The client's address (as the framework's trust-proxy setting sees it), for `clientShare`. */
  ip?: string | undefined
  /** How the framework routes this request's path, for `bypass` rules (see `RoutingRules`). */
  routing?: RoutingRules | undefined
  /** The framework's request, for `skip`, `nonce` and `busyPage`. */
  request: Req
}

/** A request-mode slot: release it exactly once when the handler's work is over. */
export interface RequestSlot {
  readonly token: string
  /**
   * Frees the slot; only the first call does anything. Never rejects. `failed`: the work failed (a
   * 5xx, a thrown handler), for the adaptive limit.
   */
  release(failed?: boolean): Promise<boolean>
  /**
   * The request lasts longer than `ttl` allows a slot to live unattended (an upgraded connection: a
   * WebSocket): keeps the slot alive in the store until {@link release}, refreshed every `ttl / 3`.
   * `lost` is called once if the store no longer has the slot (force-released, or lost in a
   * failover): end the connection then, or more than `limit` would be inside.
   */
  hold(lost: () => void): void
}

/**
 * Not gated (`bypass`, `skip`, or a request the gate only sees, such as an opted-out route). A pass
 * it carries is still confirmed: `setCookie` is the confirmed (or slid) pass when that happened.
 * `response` is set only for the gate's own confirm request (`?__airlock=confirm`): `204`.
 */
export interface BypassDecision {
  kind: 'bypass'
  setCookie: string | undefined
  response: GateResponse | undefined
}

/**
 * Let in by taking a slot now (or because the store failed: within the local quota with
 * `onStoreError: 'local'`, unbounded with `'open'`), or,
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
   * Headers to add to the route's response: for a browser's page, a `Link` that has the browser
   * confirm its new pass at once (see the `confirm` option).
   */
  headers: Readonly<Record<string, string>> | undefined
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
  /**
   * `client-share`: the visitor's client holds its share (`clientShare`). `challenge`: a new visitor
   * is sent the waiting room's proof of work (`queue.challenge`; `202` with the page or JSON);
   * `challenge-failed`: its solution was wrong, forged or replayed. `closed`: the live control lets nobody new in (mode `closed`, `queue-all` without a line, before `opensAt`, after `closesAt`). */
  reason: 'full' | 'store-unavailable' | 'closed' | 'client-share' | 'challenge' | 'challenge-failed'
  /** The waiting room's door cookie, with a challenge. */
  setCookie: string | undefined
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

/** The per-request handle: what `reply.airlock` / `res.locals.airlock` offer a route. */
export interface AirlockHandle {
  /** The gate's decision for this request; `undefined` on a route the gate does not cover. */
  readonly decision: GateDecision | undefined
  /**
   * Session mode: ends the visitor's pass (logout, checkout done): frees its slot and clears the
   * cookie in this response. Request mode: frees this request's slot now. `true` when a live slot
   * was freed. Never rejects.
   */
  release(): Promise<boolean>
}

/**
 * @deprecated Renamed {@link AirlockHandle} in 0.2 ("control" is the operator's live control,
 * `airlockControl()`); this alias goes in 0.3.
 */
export type AirlockControl = AirlockHandle

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
  'busy',
  'retryAfter',
  'bypass',
  'skip',
  'busyPage',
  'nonce',
  'messages',
  'onStoreError',
  'storeTimeout',
  'logger',
  'cacheSize',
  'statusInterval',
  'reportInterval',
  'confirm',
  'control',
  'queue',
  'clientShare',
  'clientKey',
  'history',
] as const satisfies readonly (keyof GateOptions)[]
// And every option is in the list (a key added to GateOptions but not here fails to compile).
type Unlisted = Exclude<keyof GateOptions, (typeof OPTION_KEYS)[number]>
const _everyOptionListed: [Unlisted] extends [never] ? true : Unlisted = true
void _everyOptionListed

/** Every option key of {@link GateOptions}. */
export const GATE_OPTION_KEYS: readonly string[] = OPTION_KEYS

/** A gate's cluster-wide state, as {@link Gate.status} answers it. */
export interface GateStatus {
  name: string
  mode: 'session' | 'request'
  /** This instance's limit in force (instances report their own). */
  limit: number
  /** Where `limit` comes from: the gate's option, the live control, or the adaptive limit. */
  limitSource: 'configured' | 'control' | 'adaptive'
  /** The live control this instance applies (`version` 0: never set). */
  control: ControlState
  /** The adaptive limit (`limit: { min, max }`) as this instance last saw it; `null` when off. */
  adaptive: AdaptiveStatus | null
  /** Slots held in the store, by every instance. */
  held: number
  available: number
  /** Visitors in line. */
  waiting: number
  /** Admissions in the last minute, summed over the instances that report. */
  admittedLastMinute: number
  /** Seconds a newcomer would wait: 0 while a slot is free and nobody waits; `null` while unknown. */
  eta: number | null
  /** Instances that reported within the last few intervals, this one first. */
  instances: (InstanceStatus & { self: boolean })[]
  /** The store's clock (ms). */
  at: number
}
