/**
 * Table rows for option validation: each option is described by its kind, and each kind stands for
 * a standard set of bad values (wrong types, NaN, ±Infinity, negatives, 0 where not allowed, 1.5
 * where an integer is needed, 2^31 and 2^53 where a timer or a safe integer would overflow).
 */

/** 2^31: one past the longest a timer can wait. */
export const PAST_TIMER = 2 ** 31
/** The longest duration any option accepts (2^31 − 1 ms). */
export const LONGEST = 2 ** 31 - 1

const numbers = {
  nan: Number.NaN,
  inf: Infinity,
  negInf: -Infinity,
  neg: -1,
  zero: 0,
  half: 1.5,
  timer: PAST_TIMER,
  huge: 2 ** 53,
}
type NumberCase = keyof typeof numbers

function numeric(asString: string, ...cases: NumberCase[]): unknown[] {
  return [asString, true, {}, ...cases.map((c) => numbers[c])]
}

/** The bad values of each kind of option. */
export const BAD = {
  /** Positive integer ms, at most 2^31 − 1. */
  duration: numeric('1000', 'nan', 'inf', 'negInf', 'neg', 'zero', 'half', 'timer', 'huge'),
  /** Non-negative integer ms (0 turns it off), at most 2^31 − 1. */
  durationOrZero: numeric('10', 'nan', 'inf', 'negInf', 'neg', 'half', 'timer', 'huge'),
  /** Non-negative ms at most 2^31 − 1, or Infinity (forever). */
  wait: numeric('1000', 'nan', 'negInf', 'neg', 'timer', 'huge'),
  /** Whole seconds, at most (2^31 − 1) / 1000. */
  seconds: [...numeric('5', 'nan', 'inf', 'negInf', 'neg', 'zero', 'half', 'huge'), Math.ceil(PAST_TIMER / 1000)],
  /** Positive integer (a count, not a duration). */
  count: numeric('1', 'nan', 'inf', 'negInf', 'neg', 'zero', 'half', 'huge'),
  /** Positive integer at most 2^31 − 1: a gate's counts (`limit`, its adaptive bounds, `cacheSize`, `clientShare`). */
  boundedCount: numeric('1', 'nan', 'inf', 'negInf', 'neg', 'zero', 'half', 'timer', 'huge'),
  /** Non-negative integer (0: no cap). */
  countOrZero: numeric('1', 'nan', 'inf', 'negInf', 'neg', 'half', 'huge'),
  boolean: ['true', 1, 0, {}],
  signal: ['abort', true, {}, new AbortController()],
  function: ['fn', 1, true, {}],
  name: ['', 'has space', 'x'.repeat(65), 1, {}],
  choice: ['nope', 1, true, {}],
  /** An options object (nested) or the options argument itself. */
  object: ['x', 1, true, () => 1],
  store: ['memory', 1, true, {}],
  /** No standard set: the option's own bad values only. */
  custom: [],
} satisfies Record<string, unknown[]>

export type Kind = keyof typeof BAD

/** One option: its name (dotted for nested options), its kind, and bad values only it has. */
export type OptionSpec = readonly [option: string, kind: Kind, extra?: readonly unknown[]]

export interface Row {
  /** What the message must name: the option, or `'bogus'` for an unknown key. */
  option: string
  value: unknown
}

/** An unknown key, for each options object. */
export const UNKNOWN = 'bogus'

/**
 * Every (option, bad value) row of a factory, plus one unknown key per options object (the top
 * level unless `unknownKey` is false, and each nested object named in `nested`).
 */
export function rows(specs: readonly OptionSpec[], nested: readonly string[] = [], unknownKey = true): Row[] {
  const out: Row[] = []
  for (const [option, kind, extra = []] of specs) {
    for (const value of [...BAD[kind], ...extra]) out.push({ option, value })
  }
  for (const where of [...(unknownKey ? [''] : []), ...nested])
    out.push({ option: where ? `${where}.${UNKNOWN}` : UNKNOWN, value: 1 })
  return out
}

/** The options object that sets `option` (dotted: nested) to `value`. */
export function patch(option: string, value: unknown): Record<string, unknown> {
  const dot = option.indexOf('.')
  if (dot === -1) return { [option]: value }
  return { [option.slice(0, dot)]: patch(option.slice(dot + 1), value) }
}

/** A short label for a value in a test name. */
export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 12 ? `${value.slice(0, 8)}…` : value)
  if (typeof value === 'function') return 'a function'
  if (value instanceof AbortController) return 'an AbortController'
  if (Array.isArray(value)) return `[${value.map(show).join(', ')}]`
  if (value !== null && typeof value === 'object') return Object.keys(value).length === 0 ? '{}' : 'an object'
  if (value === PAST_TIMER) return '2**31'
  if (value === 2 ** 53) return '2**53'
  return String(value)
}

/** The bad values of each kind of command-line flag (as typed). */
export const BAD_FLAG = {
  /** Positive: ms or with a unit, at most 2^31 − 1 ms. */
  duration: ['', 'soon', '-1', '0', 'NaN', 'Infinity', '1e3', '2147483648', '597h', '9007199254740993'],
  /** 0 allowed. */
  durationOrZero: ['', 'soon', '-1', 'NaN', 'Infinity', '1e3', '2147483648', '597h'],
  /** 0 tries once; 'forever' (or 'infinity') waits. */
  wait: ['', 'soon', '-1', 'NaN', '1e3', '2147483648', '597h'],
  count: ['', 'x', '-1', '0', '1.5', 'NaN', 'Infinity', '9007199254740993'],
  port: ['', 'x', '-1', '1.5', '65536', 'NaN'],
  name: ['', 'a b', 'x'.repeat(65), '{x}'],
  choice: ['', 'loud'],
  url: ['', 'http://x', 'localhost:6379'],
} satisfies Record<string, string[]>

export type FlagKind = keyof typeof BAD_FLAG
