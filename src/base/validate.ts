import { optionError } from './errors.js'

/** A received value, as an error message shows it (`got 0`, `got "abc"`, `got a function`). */
export function received(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value)
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** `name` must be a positive integer (1, 2, …). */
export function positiveInteger(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    optionError(`${option} must be a positive integer, got ${received(value)}`)
  }
  return value
}

/**
 * The largest count a gate takes (`limit`, its adaptive bounds `limit.min`/`max`/`initial`,
 * `cacheSize`, `clientShare.places`/`slots`/`perMinute`): 2^31 − 1, the bound of every duration
 * too ({@link MAX_DURATION}). No site serves two billion visitors or requests at once, nor keeps
 * that many passes in one process's memory, so a larger number is a slip (a byte count or a
 * timestamp pasted in, `Number.MAX_SAFE_INTEGER` meant as "no limit"), and below it what the gate
 * computes from its counts (the adaptive limit's growth, a fleet's shares added up) stays exact.
 */
export const MAX_COUNT = 2 ** 31 - 1

/**
 * A count a gate keeps: a positive integer at most {@link MAX_COUNT}. `why` is said after the bound
 * (what no site has more of, and what to do instead).
 */
export function boundedCount(option: string, value: unknown, why: string): number {
  positiveInteger(option, value)
  if ((value as number) > MAX_COUNT)
    optionError(`${option} must be at most ${MAX_COUNT} (2^31 − 1; ${why}), got ${value}`)
  return value as number
}

/** `name` must be a non-negative integer (0, 1, …). */
export function nonNegativeInteger(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    optionError(`${option} must be a non-negative integer, got ${received(value)}`)
  }
  return value
}

/**
 * The longest duration any option may have (ms): 2^31 − 1, about 24.8 days, the longest a timer
 * can wait. Node fires a longer `setTimeout` after 1 ms (with a `TimeoutOverflowWarning`), which
 * turns a long wait into a busy loop.
 */
export const MAX_DURATION = 2 ** 31 - 1

/** Where a duration's upper bound comes from, for the error message. */
export interface DurationBound {
  /** The largest value accepted (ms, or `unit`s). */
  max: number
  /** Said after the bound: `(about 24.8 days, the longest a timer can wait)`. */
  why: string
}

/** The bound of every duration: what a timer can hold. */
export const TIMER_BOUND: DurationBound = { max: MAX_DURATION, why: 'about 24.8 days, the longest a timer can wait' }

/**
 * The bound of an option that is multiplied by `factor` into a longer duration (`pollInterval`,
 * whose 10× is a waiter's idle timeout): the product must fit {@link MAX_DURATION} too.
 * `product` names it, e.g. `'10 × pollInterval'`.
 */
export function productBound(factor: number, product: string): DurationBound {
  return {
    max: Math.floor(MAX_DURATION / factor),
    why: `${product} must fit ${MAX_DURATION} ms, the longest a timer can wait`,
  }
}

function atMost(option: string, value: number, bound: DurationBound, unit = 'ms', orElse = ''): void {
  if (value > bound.max)
    optionError(`${option} must be at most ${bound.max} ${unit} (${bound.why})${orElse}, got ${value}`)
}

/** A duration: milliseconds as a number, or text with its unit (`'250ms'`, `'60s'`, `'5m'`, `'1h'`). */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h'}`

/** A duration already checked and meant in milliseconds, passed on to another factory (`'400ms'`: not a unit mistake). */
export function inMs(ms: number): Duration {
  return `${ms}ms`
}

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const
const DURATION_TEXT = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/

/** A {@link Duration} in ms: a number as it is, a text with its unit converted; anything else as it is (refused by the caller). */
export function durationValue(value: unknown): unknown {
  if (typeof value !== 'string') return value
  const m = DURATION_TEXT.exec(value)
  return m ? Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]) : value
}

/** A duration in milliseconds (or a {@link Duration} text): a positive integer, at most {@link MAX_DURATION} (or `bound`). */
export function duration(option: string, given: unknown, bound: DurationBound = TIMER_BOUND): number {
  const value = durationValue(given)
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    optionError(
      `${option} must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got ${received(given)}`,
    )
  }
  atMost(option, value, bound)
  return value
}

/** A duration in milliseconds (or a {@link Duration} text) that may be 0 (off): a non-negative integer, at most {@link MAX_DURATION}. */
export function durationOrZero(option: string, given: unknown): number {
  const value = durationValue(given)
  atMost(option, nonNegativeInteger(option, value), TIMER_BOUND)
  return value as number
}

/**
 * A duration that is surely not meant in milliseconds when a bare number is this small (`passTtl:
 * 60`): refused with the likely intent. Text with a unit (`'500ms'`) says it is meant.
 */
export function notTinyMs(option: string, given: unknown, ms: number, least = 1000): number {
  if (typeof given === 'number' && ms < least) {
    optionError(
      `${option} is in milliseconds: ${given} is ${given} ms; did you mean '${given}s'? (write '${given}ms' if you do mean milliseconds)`,
    )
  }
  return ms
}

/** A duration in whole seconds (`retryAfter`): a positive integer, at most an hour (more is surely milliseconds). */
export function seconds(option: string, value: unknown): number {
  positiveInteger(option, value)
  if ((value as number) > 3600) {
    const n = value as number
    optionError(
      `${option} is in seconds and at most 3600 (an hour): ${n} is ${Math.round(n / 60)} min; did you mean ${Math.max(1, Math.round(n / 1000))}?`,
    )
  }
  return value as number
}

/** A non-negative duration in milliseconds, at most {@link MAX_DURATION}, or `Infinity` (wait forever). */
export function waitDuration(option: string, value: unknown): number {
  if (value === Infinity) return Infinity
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    optionError(`${option} must be a non-negative number of milliseconds or Infinity, got ${received(value)}`)
  }
  atMost(option, value, TIMER_BOUND, 'ms', ' or Infinity to wait forever')
  return value
}

/** `true` or `false`. */
export function boolean(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') optionError(`${option} must be true or false, got ${received(value)}`)
  return value
}

/** An `AbortSignal` (from `new AbortController().signal` or `AbortSignal.timeout(ms)`), or undefined. */
export function abortSignal(option: string, value: unknown): AbortSignal | undefined {
  if (value !== undefined && !(value instanceof AbortSignal)) {
    optionError(`${option} must be an AbortSignal (new AbortController().signal), got ${received(value)}`)
  }
  return value
}

/** A non-empty name made of characters safe in a Redis key and a cookie. */
export function safeName(option: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,64}$/.test(value)) {
    optionError(`${option} must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-', got ${received(value)}`)
  }
  return value
}

/**
 * A semaphore's or waiting room's name: a safe name, or `group/member` (two safe names), which
 * keeps the member's keys on its group's Redis Cluster slot, beside the group's other members (the
 * lock service keeps a resource's locks with its data this way).
 */
export function semaphoreName(option: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,64}(\/[A-Za-z0-9._:-]{1,64})?$/.test(value)) {
    optionError(
      `${option} must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-' ` +
        `(or group/member, two such names), got ${received(value)}`,
    )
  }
  return value
}

/** One of the allowed string values. */
export function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    optionError(`${option} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${received(value)}`)
  }
  return value as T
}

/** `options` must be an object with only `allowed` keys (e.g. a method's options). */
export function optionsObject(what: string, options: unknown, allowed: readonly string[]): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    optionError(`${what} options must be an object, got ${received(options)}`)
  }
  knownKeys(what, options, allowed)
}

/** Rejects option keys the caller did not mean (typos such as `limt`), naming the likely one. */
export function knownKeys(what: string, options: object, allowed: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) optionError(unknownKeyMessage(what, key, allowed))
  }
}

/** `x has no option 'passTTL' (did you mean 'passTtl'?); known options are ...`. */
export function unknownKeyMessage(what: string, key: string, allowed: readonly string[]): string {
  const near = nearest(key, allowed)
  return `${what} has no option '${key}'${near === undefined ? '' : ` (did you mean '${near}'?)`}; known options are ${allowed.join(', ')}`
}

/**
 * The known key a typo most likely meant: the same letters in another case or with `_`/`-`
 * (`pass_ttl`, `PASSTTL`), or within a small edit distance (one edit for short keys, two for longer).
 */
export function nearest(key: string, allowed: readonly string[]): string | undefined {
  const plain = (k: string): string => k.toLowerCase().replace(/[_-]/g, '')
  const same = allowed.find((a) => plain(a) === plain(key))
  if (same !== undefined) return same
  let best: string | undefined
  let bestDistance = Infinity
  for (const a of allowed) {
    const d = editDistance(plain(key), plain(a))
    if (d < bestDistance) [best, bestDistance] = [a, d]
  }
  return best !== undefined && bestDistance <= (best.length > 5 ? 2 : 1) ? best : undefined
}

/** Levenshtein distance with adjacent transpositions (optimal string alignment). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return Infinity
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1)
      d[i]![j] = v
    }
  }
  return d[a.length]![b.length]!
}
