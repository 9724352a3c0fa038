/**
 * A gate instance's part of the per-minute history: it counts what its gate tells it (a visit sink:
 * admitted, turned away, abandoned, released) into the current minute, and adds each minute to the
 * store once it has ended (one round trip a minute, and one at close), where every instance's part
 * adds up to the fleet's minute. What a minute holds (the fields, see {@link FIELDS}):
 * counters the parts add (admitted, from the line, turned away by reason, abandoned, released by
 * cause), the waits and visits as histogram counts (src/core/histogram.ts: merged by adding,
 * percentiles read from the sum), their maxima (the largest part wins), and the line's length at
 * the minute's end (the store's own count when the minute is added; with several instances the
 * largest of their readings, all taken within seconds of the minute's end).
 */
import type { HistoryStorage, MinutePart } from '../stores/history.js'
import { BUCKETS, bucketOf } from './histogram.js'

/** The field names of a minute. */
export const FIELDS = {
  admitted: 'a',
  admittedFromLine: 'al',
  /** `t.<reason>`: turned away with that reason. */
  turnedAway: 't.',
  abandoned: 'ab',
  /** `r.<cause>`: released by that cause. */
  released: 'r.',
  /** `w<bucket>`: waits in line of the admitted from the line; `wm` the longest (ms). */
  wait: 'w',
  waitMax: 'wm',
  /** `v<bucket>`: visits (admission to the slot's end); `vm` the longest (ms). */
  visit: 'v',
  visitMax: 'vm',
} as const

/** Minutes kept in the process while the store cannot take them (two hours): older ones are dropped. */
const MAX_PENDING = 120
const MINUTE = 60_000

interface Part {
  add: Record<string, number>
  max: Record<string, number>
}

export interface TallyOptions {
  /** Where the minutes go. */
  storage: HistoryStorage
  /** The gate's name. */
  name: string
  /** How long the store keeps each minute (ms). */
  keepMs: number
  /** Told when adding minutes to the store failed (they are kept and sent with the next minute). */
  onError?: (err: unknown) => void
  /** The clock (ms). Default `Date.now`. */
  now?: () => number
  /** Flush each minute by itself (a timer a few seconds after each minute ends). Default true. */
  timer?: boolean
}

/** A reason or a cause as a field name's tail: letters, digits, `-` and `_` only. */
function tail(text: string): string {
  return (text.replace(/[^A-Za-z0-9_-]/g, '_') || '_').slice(0, 30)
}

/**
 * `prefix` + {@link tail}, made once per text: a request-mode gate releases a slot on every request,
 * and a regular expression and a new string each time were most of what counting it cost.
 */
function fieldsOf(prefix: string): (text: string) => string {
  const made = new Map<string, string>()
  return (text) => {
    let name = made.get(text)
    if (name === undefined) {
      name = `${prefix}${tail(text)}`
      if (made.size < 64) made.set(text, name)
    }
    return name
  }
}
const releasedField = fieldsOf(FIELDS.released)
const turnedAwayField = fieldsOf(FIELDS.turnedAway)
const WAIT_FIELDS = Array.from({ length: BUCKETS }, (_, i) => `${FIELDS.wait}${i}`)
const VISIT_FIELDS = Array.from({ length: BUCKETS }, (_, i) => `${FIELDS.visit}${i}`)

/** Counts one instance's minutes and adds them to the store (see the module doc). Calls never throw. */
export class MinuteTally {
  readonly #o: TallyOptions
  readonly #now: () => number
  readonly #pending = new Map<number, Part>()
  #timer: NodeJS.Timeout | undefined
  #sending: Promise<void> = Promise.resolve()
  #closed = false

  constructor(options: TallyOptions) {
    this.#o = options
    this.#now = options.now ?? Date.now
    if (options.timer !== false) this.#schedule()
  }

  admitted(from: 'slot' | 'line', waitMs: number | null): void {
    const part = this.#part()
    bump(part.add, FIELDS.admitted, 1)
    if (from !== 'line') return
    bump(part.add, FIELDS.admittedFromLine, 1)
    if (waitMs !== null && Number.isFinite(waitMs) && waitMs >= 0) {
      bump(part.add, WAIT_FIELDS[bucketOf(waitMs)]!, 1)
      part.max[FIELDS.waitMax] = Math.max(part.max[FIELDS.waitMax] ?? 0, Math.round(waitMs))
    }
  }

  turnedAway(reason: string): void {
    bump(this.#part().add, turnedAwayField(reason), 1)
  }

  abandoned(count: number): void {
    if (count > 0 && Number.isSafeInteger(count)) bump(this.#part().add, FIELDS.abandoned, count)
  }

  released(by: string, visitMs: number | null): void {
    const part = this.#part()
    bump(part.add, releasedField(by), 1)
    if (visitMs !== null && Number.isFinite(visitMs) && visitMs >= 0) {
      bump(part.add, VISIT_FIELDS[bucketOf(visitMs)]!, 1)
      part.max[FIELDS.visitMax] = Math.max(part.max[FIELDS.visitMax] ?? 0, Math.round(visitMs))
    }
  }

  /**
   * Adds the minutes that ended (`all`: every minute, the current one too) to the store, in one
   * call. The last ended minute is sent even when it counted nothing, so the store records the
   * line at its end. Minutes the store did not take stay pending for the next call. Never rejects.
   */
  flush(all = false): Promise<void> {
    this.#sending = this.#sending.then(() => this.#send(all))
    return this.#sending
  }

  /** Stops the timer and adds every pending minute (the current one too). Idempotent; never rejects. */
  close(): Promise<void> {
    if (this.#closed) return this.#sending
    this.#closed = true
    clearTimeout(this.#timer)
    return this.flush(true)
  }

  async #send(all: boolean): Promise<void> {
    const current = Math.floor(this.#now() / MINUTE)
    const minutes = [...this.#pending.keys()].filter((m) => all || m < current).sort((a, b) => a - b)
    const parts: MinutePart[] = minutes.map((minute) => ({ minute, ...this.#pending.get(minute)! }))
    for (const m of minutes) this.#pending.delete(m)
    const lastEnded = all ? current : current - 1
    if ((parts.at(-1)?.minute ?? -1) < lastEnded) parts.push({ minute: lastEnded, add: {}, max: {} })
    try {
      await this.#o.storage.add(this.#o.name, parts, this.#o.keepMs)
    } catch (err) {
      for (const p of parts) merge(this.#part(p.minute), p)
      this.#o.onError?.(err)
    }
  }

  /** The part of `minute` (default: now), dropping the oldest when too many are pending. */
  #part(minute = Math.floor(this.#now() / MINUTE)): Part {
    let part = this.#pending.get(minute)
    if (part) return part
    if (this.#pending.size >= MAX_PENDING) this.#pending.delete(Math.min(...this.#pending.keys()))
    this.#pending.set(minute, (part = { add: {}, max: {} }))
    return part
  }

  /** The next flush: 1 to 5 s after the minute ends (spread over the fleet). */
  #schedule(): void {
    const now = this.#now()
    const delay = MINUTE - (now % MINUTE) + 1000 + Math.floor(Math.random() * 4000)
    this.#timer = setTimeout(() => {
      void this.flush().then(() => {
        if (!this.#closed) this.#schedule()
      })
    }, delay).unref()
  }
}

function bump(fields: Record<string, number>, field: string, n: number): void {
  fields[field] = (fields[field] ?? 0) + n
}

function merge(into: Part, part: Pick<MinutePart, 'add' | 'max'>): void {
  for (const [f, n] of Object.entries(part.add)) bump(into.add, f, n)
  for (const [f, n] of Object.entries(part.max)) into.max[f] = Math.max(into.max[f] ?? n, n)
}
