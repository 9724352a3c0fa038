/**
 * The options fuzz (issue 25): generated odd values (other types, NaN, ±Infinity, negatives,
 * fractions, 2^31 and above, text with a wrong unit), near-miss spellings of every option
 * (`passTTL`, `pass_ttl`, `passTt`, `psasTtl`) and seconds given for milliseconds, thrown at every
 * public options object (test/helpers/option-targets.ts: the gate through both adapters, the proxy,
 * the dashboard, the live control and its `set()`, the semaphore and its methods, the waiting room,
 * throttle, the lock server, the stores, the signer). Each must be refused with `ERR_AIRLOCK_OPTION`
 * and a message naming the option (a misspelling: naming it and the option it most likely meant).
 * The values come from a seeded generator: a failure names the seed and the value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isAirlockError } from '../src/index.js'
import { patch, show, type Kind } from './helpers/options.js'
import { closeTargets, failure, openTargets, targets, type Target } from './helpers/option-targets.js'

beforeAll(openTargets)
afterAll(closeTargets)

const SEED = Number(process.env.FUZZ_SEED ?? 20261126)

/** mulberry32: a small seeded generator, so a failing value can be found again. */
function generator(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const random = generator(SEED)
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
const int = (below: number): number => Math.floor(random() * below)

/** Odd values of every type that is not a number or a string. */
const OTHER_TYPES: Array<() => unknown> = [
  () => true,
  () => false,
  () => [],
  () => [int(10)],
  () => ({}),
  () => ({ value: int(10) }),
  () => 10n,
  () => Symbol('x'),
  () => new Date(),
  () => () => 1,
]
/** Numbers no option of a numeric kind takes. */
const ODD_NUMBERS: Array<() => number> = [
  () => Number.NaN,
  () => -Infinity,
  () => -(1 + int(1e9)),
  () => int(1000) + pick([0.25, 0.5, 0.75]),
  () => 2 ** 31 + int(2 ** 31),
  () => 2 ** 53 * (1 + random()),
]
/** Numbers no count takes (a count may pass 2^31: it is no timer; a gate's counts may not, see `boundedCount`). */
const ODD_COUNTS = ODD_NUMBERS.filter((_, i) => i !== 4)
/** Text no duration takes: no unit, a unit it does not know, spaces, signs, exponents. */
const ODD_DURATION_TEXT: Array<() => string> = [
  () => String(1 + int(100_000)),
  () => `${1 + int(60)} ${pick(['sec', 'seconds', 'min', 'mins', 'msec'])}`,
  () => `${1 + int(60)}${pick(['d', 'w', 'y', 'mins', 'secs', 'sec', 'hr', 'MS', 'S', 'M'])}`,
  () => `-${1 + int(60)}s`,
  () => `${1 + int(9)}e3ms`,
  () => pick(['ms', 's', '', ' ', 'soon', 'forever', 'NaN', 'Infinity', '0x10', '1.5.0s', '∞']),
]

/** The generator of each option kind's odd values; `custom` options have only their own (test/options.test.ts). */
const ODD: Partial<Record<Kind, () => unknown>> = {
  duration: () => pick([pick(ODD_NUMBERS), pick(ODD_DURATION_TEXT), pick(OTHER_TYPES), () => -0.5, () => 0])(),
  durationOrZero: () => pick([pick(ODD_NUMBERS), pick(ODD_DURATION_TEXT), pick(OTHER_TYPES)])(),
  // A wait may be a fraction of a millisecond (as setTimeout's); 0 tries once, Infinity waits.
  wait: () => pick([pick(ODD_NUMBERS.filter((_, i) => i !== 3)), pick(ODD_DURATION_TEXT), pick(OTHER_TYPES)])(),
  seconds: () =>
    pick([pick(ODD_NUMBERS), () => 3601 + int(1e6), () => String(1 + int(60)), pick(OTHER_TYPES), () => 0])(),
  // (A function is a live limit where a count may be one: not among a count's odd values.)
  count: () => pick([pick(ODD_COUNTS), () => String(1 + int(100)), pick(OTHER_TYPES.slice(0, 9)), () => 0])(),
  countOrZero: () => pick([pick(ODD_COUNTS), () => String(1 + int(100)), pick(OTHER_TYPES.slice(0, 9))])(),
  // A gate's counts stop at 2^31 − 1 (issue 42): 2^31 and over are odd values for them.
  boundedCount: () => pick([pick(ODD_NUMBERS), () => String(1 + int(100)), pick(OTHER_TYPES.slice(0, 9)), () => 0])(),
  boolean: () => pick([() => pick(['true', 'false', 'yes', '1', '']), () => int(2), pick(OTHER_TYPES.slice(2))])(),
  function: () => pick([() => 'fn', () => int(10), pick(OTHER_TYPES.slice(0, 7))])(),
  signal: () =>
    pick([() => 'abort', () => ({ aborted: false }), () => new AbortController(), pick(OTHER_TYPES.slice(0, 7))])(),
  name: () =>
    pick([
      () => '',
      () => `a ${int(9)}`,
      () => 'x'.repeat(65 + int(100)),
      () => `{${int(9)}}`,
      () => int(10),
      pick(OTHER_TYPES.slice(0, 7)),
    ])(),
  choice: () =>
    pick([
      () => pick(['Session', 'REQUEST', 'sessions', 'fifo ', 'lax ', 'Strict!', 'open ', 'closed?', 'nope']),
      () => int(3),
      pick(OTHER_TYPES.slice(0, 7)),
    ])(),
  object: () => pick([() => 'x', () => int(10), () => true, () => () => 1])(),
  store: () =>
    pick([
      () => 'memory',
      () => 'redis://127.0.0.1:6379',
      () => int(10),
      () => ({}),
      () => ({ kind: 'memory' }),
      () => true,
    ])(),
}
const PER_OPTION = 6

/** Near misses of a key: other case, snake case, a letter dropped, two swapped, one added. */
function nearMisses(key: string): string[] {
  const out = new Set<string>([
    key.toLowerCase(),
    key.toUpperCase(),
    key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
    key.slice(0, -1),
    key.length > 3 ? key.slice(0, 1) + key.slice(2, 3) + key.slice(1, 2) + key.slice(3) : `${key}${key.slice(-1)}`,
    `${key}s`,
    key.replace(/Ttl$/, 'TTL').replace(/Timeout$/, 'TimeOut'),
  ])
  out.delete(key)
  return [...out].filter((k) => k.length > 1)
}

interface Row {
  option: string
  value: unknown
  /** For a misspelling: the option it most likely meant. */
  meant?: string
  /** What the message must say besides the option's name. */
  says?: string
}

function generated(target: Target): Row[] {
  const out: Row[] = []
  for (const [option, kind] of target.specs) {
    const odd = ODD[kind]
    if (odd !== undefined) for (let i = 0; i < PER_OPTION; i++) out.push({ option, value: odd() })
  }
  return out
}

function misspelled(target: Target): Row[] {
  if (target.positional) return []
  const out: Row[] = []
  const levels = ['', ...(target.nested ?? [])]
  for (const level of levels) {
    const prefix = level === '' ? '' : `${level}.`
    const keys = target.specs
      .map(([o]) => o)
      .filter((o) => o.startsWith(prefix) && !o.slice(prefix.length).includes('.'))
      .map((o) => o.slice(prefix.length))
    for (const key of keys) {
      for (const miss of nearMisses(key))
        if (!keys.includes(miss)) out.push({ option: prefix + miss, value: 1, meant: key })
    }
  }
  return out
}

/** Options where a bare number under a second is surely seconds: `ttl` and `passTtl`. */
function secondsForMs(target: Target): Row[] {
  if (target.name === 'lease.refresh') return []
  return target.specs
    .filter(([option, kind]) => kind === 'duration' && /^(ttl|passTtl|provisionalTtl)$/.test(option))
    .flatMap(([option]) =>
      [5, 30, 60, 1 + int(999)].map((value) => ({
        option,
        value,
        says: `${option} is in milliseconds: ${value} is ${value} ms; did you mean '${value}s'?`,
      })),
    )
}

/**
 * Values an earlier run of this fuzz let through (issue 42), thrown at every gate target that has
 * the option (or the one target `only` names), each with what its message must say: a gate's counts stop at 2^31 − 1 (the adaptive
 * bounds too), the proxy's bodyLimit 0 said nothing it meant, and each busy setting is given once.
 */
const LEFTOVERS: Array<Row & { only?: string }> = [
  { option: 'limit', value: 2 ** 31, says: 'limit must be at most 2147483647' },
  { option: 'limit', value: { min: 1, max: 2 ** 31 }, says: 'limit.max must be at most 2147483647' },
  { option: 'cacheSize', value: 2 ** 31, says: 'cacheSize must be at most 2147483647' },
  { option: 'clientShare.places', value: 2 ** 31, says: 'clientShare.places must be at most 2147483647' },
  {
    option: 'bodyLimit',
    value: 0,
    says: 'bodyLimit must be a whole number of bytes, at least 1',
    only: 'createProxy',
  },
  { option: 'busy', value: { page: 'x', pgae: 'y' }, says: "busy has no option 'pgae' (did you mean 'page'?)" },
]
const BOTH_FORMS = { busyPage: '<p>a</p>', busy: { page: '<p>b</p>' } }

/** The gate's options objects (the adapters' and the proxy's): the ones with `retryAfter`. */
const isGate = (target: Target): boolean => target.specs.some(([o]) => o === 'retryAfter')

function leftovers(target: Target): Row[] {
  const top = new Set(target.specs.map(([o]) => o.split('.')[0]))
  return LEFTOVERS.filter(
    (row) => top.has(row.option.split('.')[0]!) && (row.only === undefined ? isGate(target) : row.only === target.name),
  )
}

const all = targets.map((target) => ({
  target,
  odd: generated(target),
  misses: misspelled(target),
  seconds: secondsForMs(target),
  earlier: leftovers(target),
}))

/** Each row refused with a message naming its option; the rows that were not, described. */
async function wrong(target: Target, rows: Row[]): Promise<string[]> {
  const out: string[] = []
  for (const row of rows) {
    const options = { ...target.base, ...patch(row.option, row.value) }
    const err = await failure(() => target.make(options))
    const label = `${row.option} = ${show(row.value)}`
    if (!isAirlockError(err, 'ERR_AIRLOCK_OPTION')) {
      out.push(`${label}: ${err === undefined ? 'accepted' : String(err)}`)
      continue
    }
    const message = (err as Error).message
    const leaf = row.option.slice(row.option.lastIndexOf('.') + 1)
    const names =
      row.meant !== undefined
        ? message.includes(`'${leaf}'`) && message.includes(`did you mean '${row.meant}'?`)
        : message.includes(leaf)
    if (!names)
      out.push(
        `${label}: the message does not name ${row.meant !== undefined ? `'${leaf}' and '${row.meant}'` : leaf}: ${message}`,
      )
    else if (row.says !== undefined && !message.includes(row.says))
      out.push(`${label}: expected "${row.says}", got: ${message}`)
  }
  return out
}

describe(`the options fuzz (seed ${SEED}; FUZZ_SEED=n for another)`, () => {
  it('throws at least 1,000 generated odd values, misspellings and unit mistakes', () => {
    const total = all.reduce((n, t) => n + t.odd.length + t.misses.length + t.seconds.length + t.earlier.length, 0)
    expect(total).toBeGreaterThanOrEqual(1_000)
    expect(all.map((t) => t.target.name)).toEqual(
      expect.arrayContaining([
        'airlockControl',
        'control.set',
        'throttle',
        'createLockServer',
        'createProxy',
        'createDashboard',
      ]),
    )
  })

  for (const { target, odd, misses, seconds, earlier } of all) {
    describe(target.name, () => {
      if (earlier.length > 0) {
        it(`${earlier.length} values an earlier run accepted (issue 42): each refused, saying the bound or the fix`, async () => {
          expect(await wrong(target, earlier)).toEqual([])
          if (target.specs.some(([o]) => o === 'busy.page')) {
            const err = await failure(() => target.make({ ...target.base, ...BOTH_FORMS }))
            expect(String(err)).toContain('busyPage and busy.page are one setting, given twice')
          }
        })
      }
      it(`${odd.length} odd values: each refused, naming the option`, async () => {
        expect(await wrong(target, odd)).toEqual([])
      })
      if (misses.length > 0) {
        it(`${misses.length} near-miss spellings: each refused, naming it and the option meant`, async () => {
          expect(await wrong(target, misses)).toEqual([])
        })
      }
      if (seconds.length > 0) {
        it(`${seconds.length} durations in seconds where milliseconds are meant: each refused with the likely intent`, async () => {
          expect(await wrong(target, seconds)).toEqual([])
        })
      }
    })
  }
})
