/**
 * The gate's options, resolved: every option checked (a bad one throws `ERR_AIRLOCK_OPTION` with a
 * sentence naming it and the fix) and every default and derived value settled, in one function
 * with no side effects but the process's random secret, made once when first needed.
 */
import type { AdaptiveSettings, GateBusyOptions, GateQueueOptions } from './option-types.js'
import type { Store } from '../stores/types.js'
import { resolveStore } from '../stores/resolve.js'
import { historyFor } from '../stores/history.js'
import { optionError, warnOnce } from '../base/errors.js'
import { cookieAttributes } from '../base/http.js'
import { randomSecret, secretList } from '../base/signing.js'
import {
  boundedCount,
  received,
  duration,
  durationOrZero,
  inMs,
  knownKeys,
  notTinyMs,
  type Duration,
  oneOf,
  positiveInteger,
  safeName,
  seconds,
} from '../base/validate.js'
import type { BusyPage, BusySettings } from '../pages/busy.js'
import { PageLanguages } from '../pages/language.js'
import { clientShareSettings, type ClientShareSettings } from './client-share.js'
import { PathMatcher } from './bypass.js'
import { GATE_OPTION_KEYS, type GateLogger, type GateOptions } from './types.js'

/** The pass cookie, resolved. */
export interface CookieSettings {
  name: string
  /** `'auto'`: `Secure` when the request came over HTTPS. */
  secure: boolean | 'auto'
  /** `; Path=/; HttpOnly; SameSite=Lax` etc. (without Max-Age and Secure). */
  tail: string
  /** The tail of a cookie that removes the pass. */
  clearTail: string
}

/** Every gate option, checked and settled. */
export interface GateSettings<Req> {
  name: string
  limit: number
  mode: 'session' | 'request'
  passTtl: number
  provisionalTtl: number
  recheckInterval: number
  ttl: number
  /** The gate's semaphore's ttl: `provisionalTtl` in session mode, `ttl` in request mode (as `'Nms'`: checked already). */
  slotTtl: Duration
  reuseWindow: number
  onStoreError: 'local' | 'open' | 'closed'
  storeTimeout: number
  store: Store
  logger: GateLogger
  cacheSize: number
  statusInterval: number
  /** Session mode with `confirm`: a browser's admitting page links to the confirm request. */
  confirm: boolean
  /** Follow the live control record in the store. */
  control: boolean
  /** `limit: { min, max, initial? }`: the adaptive limit's bounds and start. */
  adaptive: AdaptiveSettings | undefined
  /** The first signs, all verify. */
  secrets: readonly string[]
  /** The secret is the random per-process one (no `secret` given). */
  randomSecret: boolean
  cookie: CookieSettings
  ticketCookieName: string
  bypass: PathMatcher | undefined
  skip: ((request: Req) => boolean) | undefined
  /** The busy answer's settings (`busy`, its deprecated flat aliases folded in), handed whole to the answers and the page. */
  busy: BusySettings
  nonce: ((request: Req) => string | undefined) | undefined
  /** The built-in pages' languages: the built-in catalogue with the `messages` option applied. */
  languages: PageLanguages
  /** Checked by the line itself (`GateLine`); here only its presence and the mode. */
  queue: true | GateQueueOptions | undefined
  /** Each client's share (session mode; `undefined`: off). */
  clientShare: ClientShareSettings | undefined
  clientKey: ((request: Req) => string | undefined) | undefined
  /** The per-minute history: days each minute is kept (`undefined`: off). */
  history: { days: number } | undefined
}

const consoleLogger: GateLogger = {
  warn: (obj, msg) => console.warn(msg ?? '', obj),
  info: () => {},
  error: (obj, msg) => console.error(msg ?? '', obj),
}

let processSecret: string | undefined

/** Resolves gate options (see {@link GateOptions}). Throws `ERR_AIRLOCK_OPTION` naming the first bad one. */
export function resolveGateOptions<Req>(options: GateOptions<Req> = {}): GateSettings<Req> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    optionError(`gate options must be an object, got ${received(options)}`)
  }
  knownKeys('airlock gate', options, GATE_OPTION_KEYS)
  const o = options
  const name = safeName('name', o.name ?? 'default')
  const mode = oneOf('mode', o.mode ?? 'session', ['session', 'request'] as const)
  const passTtl = notTinyMs('passTtl', o.passTtl, duration('passTtl', o.passTtl ?? 60_000))
  const provisionalTtl = notTinyMs(
    'provisionalTtl',
    o.provisionalTtl,
    duration('provisionalTtl', o.provisionalTtl ?? Math.min(10_000, passTtl)),
  )
  const ttl = notTinyMs('ttl', o.ttl, duration('ttl', o.ttl ?? 30_000))
  if (provisionalTtl > passTtl)
    optionError(`provisionalTtl must be at most passTtl (${passTtl}), got ${provisionalTtl}`)
  const recheckInterval = duration('recheckInterval', o.recheckInterval ?? Math.min(5_000, passTtl))
  if (recheckInterval > passTtl)
    optionError(`recheckInterval must be at most passTtl (${passTtl}), got ${recheckInterval}`)
  const store = resolveStore(o.store)
  if (o.confirm !== undefined && typeof o.confirm !== 'boolean')
    optionError(`confirm must be a boolean, got ${received(o.confirm)}`)
  if (o.control !== undefined && typeof o.control !== 'boolean')
    optionError(`control must be a boolean, got ${received(o.control)}`)
  const cookie = cookieSettings(o.cookie, name)
  const queue = queueOption(o.queue, mode)
  const adaptive = adaptiveOption(o.limit)
  return {
    name,
    limit: adaptive?.initial ?? boundedCount('limit', o.limit ?? 100, `${NO_SITE}: ${UNGATED}`),
    adaptive,
    mode,
    passTtl,
    provisionalTtl,
    recheckInterval,
    ttl,
    slotTtl: inMs(mode === 'session' ? provisionalTtl : ttl),
    reuseWindow: durationOrZero('reuseWindow', o.reuseWindow ?? 10),
    onStoreError: oneOf('onStoreError', o.onStoreError ?? 'local', ['local', 'open', 'closed'] as const),
    storeTimeout: duration('storeTimeout', o.storeTimeout ?? 200),
    store,
    logger: checkLogger(o.logger) ?? consoleLogger,
    cacheSize: boundedCount('cacheSize', o.cacheSize ?? 10_000, 'no process keeps that many passes in memory'),
    statusInterval: statusIntervalOption(o.statusInterval, o.reportInterval),
    confirm: mode === 'session' && o.confirm !== false,
    control: o.control !== false,
    ...secrets(o.secret, mode, store),
    cookie,
    ticketCookieName:
      o.cookie?.name !== undefined
        ? `${cookie.name}_ticket`
        : name === 'default'
          ? 'airlock_ticket'
          : `airlock_ticket_${name.replace(/[^A-Za-z0-9_-]/g, '_')}`,
    bypass: bypassOption(o.bypass),
    skip: functionOption('skip', o.skip, '(request) => boolean'),
    busy: busyOption(o),
    nonce: functionOption('nonce', o.nonce, '(request) => string'),
    languages: new PageLanguages(o.messages),
    queue,
    clientShare: clientShareOption(o.clientShare, mode),
    clientKey: functionOption('clientKey', o.clientKey, '(request) => string | undefined'),
    history: historyOption(o.history, store),
  }
}

/** `history`: on by default (30 days) where the store keeps one; `false` off; `{ days }`. */
function historyOption(option: unknown, store: Store): { days: number } | undefined {
  if (option === false) return undefined
  if (
    option !== undefined &&
    option !== true &&
    (option === null || typeof option !== 'object' || Array.isArray(option))
  ) {
    optionError(`history must be true, false or an object such as { days: 30 }, got ${received(option)}`)
  }
  let days = 30
  if (typeof option === 'object') {
    knownKeys('history', option, ['days'])
    const given = (option as { days?: unknown }).days
    if (given !== undefined) days = positiveInteger('history.days', given)
    if (days > 3650) optionError(`history.days must be at most 3650 (ten years), got ${days}`)
  }
  if (historyFor(store) === undefined) {
    if (option === undefined) return undefined
    optionError(
      `history needs the memory store or a Redis store: the '${store.kind}' store keeps no history; remove the history option`,
    )
  }
  return { days }
}

/** `clientShare`: session mode's (on unless `false`); request mode has none (an object there is a mistake). */
function clientShareOption(option: unknown, mode: 'session' | 'request'): ClientShareSettings | undefined {
  const share = clientShareSettings(option)
  if (mode === 'session') return share
  if (option !== undefined && option !== false && option !== true) {
    optionError(
      "clientShare needs mode 'session': it counts places in line and unconfirmed slots, which request mode " +
        "does not have; remove clientShare (or use a rate limiter for each client's request rate)",
    )
  }
  return undefined
}

function secrets(
  secret: unknown,
  mode: 'session' | 'request',
  store: Store,
): { secrets: readonly string[]; randomSecret: boolean } {
  if (secret !== undefined) return { secrets: secretList('secret', secret), randomSecret: false }
  if (mode === 'session' && process.env.NODE_ENV === 'production' && store.kind !== 'memory') {
    optionError(
      `secret is required when NODE_ENV=production and the store is shared ('${store.kind}'): ` +
        'passes signed with a random per-process secret are refused by other instances and after a restart; ' +
        'pass secret: process.env.AIRLOCK_SECRET (at least 32 bytes)',
    )
  }
  processSecret ??= randomSecret()
  return { secrets: [processSecret], randomSecret: true }
}

function cookieSettings(option: GateOptions['cookie'], gate: string): CookieSettings {
  const c = option ?? {}
  if (c === null || typeof c !== 'object' || Array.isArray(c))
    optionError(`cookie must be an object, got ${received(c)}`)
  knownKeys('cookie', c, ['name', 'path', 'domain', 'secure', 'sameSite', 'httpOnly'])
  const name = c.name ?? (gate === 'default' ? 'airlock_pass' : `airlock_pass_${gate.replace(/[^A-Za-z0-9_-]/g, '_')}`)
  if (typeof name !== 'string' || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/.test(name)) {
    optionError(`cookie.name must be a cookie name (letters, digits, '_', '-', ...), got ${received(c.name)}`)
  }
  const path = c.path ?? '/'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (typeof path !== 'string' || !/^\/[^;\s\x00-\x1f\x7f]*$/.test(path)) {
    optionError(`cookie.path must start with '/' and contain no ';' or spaces, got ${received(c.path)}`)
  }
  if (
    c.domain !== undefined &&
    (typeof c.domain !== 'string' || !/^\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(c.domain))
  ) {
    optionError(`cookie.domain must be a domain name such as 'example.com', got ${received(c.domain)}`)
  }
  const secure = c.secure ?? 'auto'
  if (secure !== 'auto' && typeof secure !== 'boolean')
    optionError(`cookie.secure must be true, false or 'auto', got ${received(secure)}`)
  const sameSite = oneOf('cookie.sameSite', c.sameSite ?? 'lax', ['lax', 'strict', 'none'] as const)
  if (sameSite === 'none' && secure !== true) {
    optionError("cookie.sameSite 'none' needs cookie.secure: true (browsers drop SameSite=None cookies without Secure)")
  }
  const httpOnly = c.httpOnly ?? true
  if (typeof httpOnly !== 'boolean') optionError(`cookie.httpOnly must be a boolean, got ${received(httpOnly)}`)
  const tail = cookieAttributes({ path, domain: c.domain, httpOnly, sameSite })
  return { name, secure, tail, clearTail: `${tail}; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT` }
}

function queueOption(queue: GateOptions['queue'], mode: 'session' | 'request'): true | GateQueueOptions | undefined {
  if (queue === undefined || queue === false) return undefined
  if (queue !== true && (queue === null || typeof queue !== 'object' || Array.isArray(queue))) {
    optionError(`queue must be true or an object such as { order: 'fifo', maxLength: 100_000 }, got ${received(queue)}`)
  }
  if (mode !== 'session') {
    optionError(
      "queue needs mode 'session': a place in line is kept by a ticket cookie, which request mode does not use; " +
        "remove mode: 'request' or the queue option",
    )
  }
  return queue
}

function bypassOption(bypass: GateOptions['bypass']): PathMatcher | undefined {
  const list = bypass === undefined ? [] : Array.isArray(bypass) ? bypass : [bypass]
  return list.length === 0 ? undefined : new PathMatcher(list)
}

function functionOption<F>(option: string, value: F | undefined, shape: string): F | undefined {
  if (value !== undefined && typeof value !== 'function')
    optionError(`${option} must be a function ${shape}, got ${received(value)}`)
  return value
}

/** The options that hold busy settings: the `busy` group and its deprecated flat aliases. */
type BusyForms = Pick<GateOptions, 'busy' | 'busyPage' | 'retryAfter'>

/** The `busy` group's keys, and the flat options it replaces (deprecated aliases, removed in 0.3) with the key each is. */
const BUSY_KEYS = ['page', 'retryAfter'] as const satisfies readonly (keyof GateBusyOptions)[]
const BUSY_ALIASES = { busyPage: 'page', retryAfter: 'retryAfter' } as const satisfies Record<
  string,
  (typeof BUSY_KEYS)[number]
>

/**
 * `busy: { page, retryAfter }`, the deprecated flat `busyPage` and `retryAfter` folded in: one
 * setting may be given in either form, not both. A bad value's message names the form it came in.
 */
function busyOption(o: BusyForms): BusySettings {
  const group: unknown = o.busy === undefined ? {} : o.busy
  if (group === null || typeof group !== 'object' || Array.isArray(group)) {
    optionError(`busy must be an object such as { page: '<h1>Busy</h1>', retryAfter: 5 }, got ${received(o.busy)}`)
  }
  for (const key of Object.keys(group)) {
    const meant = Object.hasOwn(BUSY_ALIASES, key) ? BUSY_ALIASES[key as keyof typeof BUSY_ALIASES] : undefined
    if (meant !== undefined && meant !== key)
      optionError(`busy has no option '${key}' (did you mean '${meant}'?); known options are ${BUSY_KEYS.join(', ')}`)
  }
  knownKeys('busy', group, BUSY_KEYS)
  const g = group as GateBusyOptions
  for (const [flat, key] of Object.entries(BUSY_ALIASES) as [keyof typeof BUSY_ALIASES, keyof GateBusyOptions][]) {
    if (o[flat] !== undefined && g[key] !== undefined) {
      optionError(
        `${flat} and busy.${key} are one setting, given twice: keep busy.${key} and remove ${flat} (deprecated; removed in 0.3)`,
      )
    }
  }
  const page = g.page !== undefined ? busyPageOption('busy.page', g.page) : busyPageOption('busyPage', o.busyPage)
  const retryAfter =
    g.retryAfter !== undefined ? seconds('busy.retryAfter', g.retryAfter) : seconds('retryAfter', o.retryAfter ?? 5)
  return { page, retryAfter }
}

/** `statusInterval`, or its deprecated name `reportInterval` (removed in 0.3): one of them. */
function statusIntervalOption(value: unknown, old: unknown): number {
  if (value !== undefined && old !== undefined)
    optionError(
      'statusInterval and reportInterval are one setting, given twice: keep statusInterval and remove reportInterval (deprecated; removed in 0.3)',
    )
  return old !== undefined ? durationOrZero('reportInterval', old) : durationOrZero('statusInterval', value ?? 1000)
}

function busyPageOption(option: string, page: unknown): BusyPage | undefined {
  if (page !== undefined && typeof page !== 'string' && typeof page !== 'function') {
    optionError(
      `${option} must be an HTML string or a function ({ retryAfter, request, nonce, language, reason }) => string, got ${received(page)}`,
    )
  }
  return page as BusyPage | undefined
}

function checkLogger(logger: unknown): GateLogger | undefined {
  if (logger === undefined) return undefined
  if (logger === null || typeof logger !== 'object' || typeof (logger as GateLogger).warn !== 'function') {
    optionError(`logger must be a pino-shaped logger with a warn(obj, msg) method, got ${received(logger)}`)
  }
  return logger as GateLogger
}

/** Why a limit stops at 2^31 − 1 (`MAX_COUNT`, validate.ts), and what to do instead of a larger one. */
const NO_SITE = 'no site serves more visitors or requests at once'
const UNGATED = 'to let everyone in, leave the route ungated with bypass or skip'

/** `limit` as an object: the adaptive limit's bounds (a number is not adaptive). */
function adaptiveOption(limit: unknown): AdaptiveSettings | undefined {
  if (limit === null || typeof limit !== 'object') return undefined
  knownKeys('limit', limit as object, ['min', 'max', 'initial'])
  const l = limit as { min?: unknown; max?: unknown; initial?: unknown }
  const min = boundedCount('limit.min', l.min, NO_SITE)
  const max = boundedCount('limit.max', l.max, NO_SITE)
  if (max < min) optionError(`limit.max must be at least limit.min (${min}), got ${max}`)
  const initial = boundedCount('limit.initial', l.initial ?? min, NO_SITE)
  if (initial < min || initial > max)
    optionError(`limit.initial must be within limit.min and limit.max (${min}..${max}), got ${initial}`)
  return { min, max, initial }
}

/** Loggers already told about the random secret (once per logger, so once per app). */
const warnedRandomSecret = new WeakSet<object>()

/** Warns once per logger when session passes are signed with a random per-process secret. */
export function warnRandomSecret<Req>(s: GateSettings<Req>): void {
  if (s.randomSecret && s.mode === 'session' && !warnedRandomSecret.has(s.logger)) {
    warnedRandomSecret.add(s.logger)
    const message =
      'airlock-shield: no secret given, passes are signed with a random per-process secret: they will not ' +
      'survive a restart nor be accepted by other instances. Set the secret option (32+ bytes) in production.'
    s.logger.warn({ gate: s.name }, message)
    // Also on stderr, once per process: Fastify() has no logger by default.
    warnOnce('AIRLOCK_NO_SECRET', message)
  }
}

/**
 * The options of a route gate made from a gate's (`gate.child`): everything but the name and the
 * cookie's name is inherited (the secret only when it is not the random one), then overridden.
 */
export function childOptions<Req>(
  base: GateOptions<Req>,
  options: GateOptions<Req> & { name: string },
  logger: GateLogger,
  secrets: readonly string[] | undefined,
): GateOptions<Req> {
  const { cookie, busy: _busy, busyPage: _busyPage, retryAfter: _retryAfter, ...rest } = base
  const inherited: GateOptions<Req> = { ...rest, logger }
  if (cookie) {
    const { name: _ownName, ...attributes } = cookie
    inherited.cookie = attributes
  }
  if (secrets !== undefined) inherited.secret = secrets
  const child: GateOptions<Req> = { ...inherited, ...options }
  // The busy settings the child does not give (in either form) are inherited into its `busy`
  // group, so a parent's flat alias never meets the child's group form as "given twice".
  const own = new Set(Object.keys(givenBusy(options)))
  const left = Object.entries(givenBusy(base)).filter(([key]) => !own.has(key))
  const group = options.busy
  if (
    left.length > 0 &&
    (group === undefined || (group !== null && typeof group === 'object' && !Array.isArray(group)))
  )
    child.busy = { ...Object.fromEntries(left), ...group }
  return child
}

/** The busy settings `options` gives, as the `busy` group's keys (its flat aliases folded in; undefined ones left out). */
function givenBusy(options: BusyForms): GateBusyOptions {
  const group: GateBusyOptions = options.busy !== null && typeof options.busy === 'object' ? options.busy : {}
  const given: Record<string, unknown> = {}
  for (const [flat, key] of Object.entries(BUSY_ALIASES) as [keyof typeof BUSY_ALIASES, keyof GateBusyOptions][]) {
    const value = group[key] ?? options[flat]
    if (value !== undefined) given[key] = value
  }
  return given as GateBusyOptions
}
