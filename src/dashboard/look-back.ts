/**
 * The dashboard's look back: the last hour, day or 30 days of a gate from the per-minute history
 * in the store (src/core/report.ts), a point a minute (hour, day) or an hour (30 days: its minutes
 * merged, so its percentiles come from the hour's merged histograms). What the store answered is
 * kept briefly (a tenth of a point's span, at least 10 s), so open pages cost the store a read now
 * and then. The minute in progress, which the store has only once it ended, and the one that ended
 * seconds ago come from the instances' live counters (live-minutes.ts), merged into every answer:
 * the point that holds the minute in progress has its figures so far, marked `open`.
 */
import { FIELDS } from '../core/history.js'
import { summarize, type HistoryRow, type HistoryTotals } from '../core/report.js'
import { historyFor, LINE_FIELD, type MinuteRecord } from '../stores/history.js'
import type { Store } from '../stores/types.js'
import type { LiveMinute } from './live-minutes.js'

/** The look-back ranges: their length and the minutes a point stands for. */
export const LOOK_BACK_RANGES = {
  hour: { minutes: 60, step: 1 },
  day: { minutes: 1440, step: 1 },
  '30d': { minutes: 30 * 1440, step: 60 },
} as const

export type LookBackRange = keyof typeof LOOK_BACK_RANGES

/** One point of a look back: figures of `step` minutes from `t` (ms). Durations in seconds; `null`: none measured. */
export interface LookBackPoint {
  t: number
  admitted: number
  turnedAway: number
  abandoned: number
  /** The most in line at the end of one of its minutes. */
  inLine: number | null
  waitP50: number | null
  waitP90: number | null
  visitP50: number | null
  /** Present (true) on the point that holds the minute in progress: its figures so far. */
  open?: true
}

/** What `GET <dashboard>/history?name=&range=` answers. */
export interface LookBack {
  name: string
  range: LookBackRange
  /** Minutes per point. */
  step: number
  from: string
  to: string
  points: LookBackPoint[]
  /** `t` of the point that holds the minute in progress (its figures so far), else `null`. */
  open: number | null
  /** Every point added up (the minute in progress too). */
  totals: HistoryTotals
}

/** Where the minute in progress comes from: the dashboard's sampler. */
export interface LiveSource {
  liveMinutes(name: string): readonly LiveMinute[]
}

const MAXIMA = new Set(['wm', 'vm', LINE_FIELD])
const MINUTE = 60_000
/** A minute is in the store this long after its end: every instance adds its part 1 to 5 s after it. */
const SETTLE_MS = 10_000

/** A look back from the store's minutes alone, and the newest of those minutes (what live ones merge with). */
interface Stored {
  answer: LookBack
  recent: Map<number, Readonly<Record<string, number>>>
}

export class LookBacks {
  readonly #store: Store
  readonly #live: LiveSource | undefined
  readonly #cache = new Map<string, { at: number; stored: Promise<Stored> }>()

  /** Looks back in `store`'s history; the minutes it does not have yet come from `live`. */
  constructor(store: Store, live?: LiveSource) {
    this.#store = store
    this.#live = live
  }

  /** True when the store keeps a history to look back at. */
  get available(): boolean {
    return historyFor(this.#store) !== undefined
  }

  /** The look back of `name` over `range` (the store's part kept briefly: see the module doc). */
  async get(name: string, range: LookBackRange): Promise<LookBack> {
    const key = `${range} ${name}`
    const now = Date.now()
    let kept = this.#cache.get(key)
    if (!kept || now - kept.at >= Math.max(10_000, LOOK_BACK_RANGES[range].step * 6_000)) {
      const read = { at: now, stored: this.#read(name, range, now) }
      this.#cache.set(key, (kept = read))
      read.stored.catch(() => this.#cache.get(key) === read && this.#cache.delete(key))
    }
    return withLive(await kept.stored, this.#live?.liveMinutes(name) ?? [], now, kept.at)
  }

  async #read(name: string, range: LookBackRange, now: number): Promise<Stored> {
    const { minutes, step } = LOOK_BACK_RANGES[range]
    const last = Math.floor(now / MINUTE)
    const first = last - minutes + 1
    const records = (await historyFor(this.#store)?.read(name, first, last)) ?? []
    const totals = summarize(name, first, last, records).totals
    const report = summarize(name, first, last, step === 1 ? records : merged(records, step))
    const recent = new Map(records.filter((r) => r.minute >= last - 2).map((r) => [r.minute, r.fields]))
    return {
      answer: {
        name,
        range,
        step,
        from: report.from,
        to: report.to,
        points: points(report.rows, first, last, step),
        open: null,
        totals,
      },
      recent,
    }
  }
}

/**
 * The stored look back as of `now`, with the live minutes the store may not have had when it was
 * read (`readAt`, up to the settling time after their end) merged in: each such minute's counters
 * are the larger of the store's part and the live figure, turned away by reason from whichever
 * counts more, and the difference is added to its point and the totals (waits and visits stay the
 * store's). The point that holds the minute in progress is marked `open`.
 */
function withLive(stored: Stored, live: readonly LiveMinute[], now: number, readAt: number): LookBack {
  const { answer, recent } = stored
  const span = answer.step * MINUTE
  const last = Math.floor(now / MINUTE)
  const first = last - LOOK_BACK_RANGES[answer.range].minutes + 1
  const pointOf = (minute: number): number => Math.floor(minute / answer.step) * span
  // The points as of now: a point older than the range dropped, the newest added empty.
  const points = answer.points.filter((p) => p.t >= pointOf(first)).map((p) => ({ ...p }))
  for (let t = (points.at(-1)?.t ?? pointOf(first) - span) + span; t <= pointOf(last); t += span) {
    points.push({
      t,
      admitted: 0,
      turnedAway: 0,
      abandoned: 0,
      inLine: null,
      waitP50: null,
      waitP90: null,
      visitP50: null,
    })
  }
  const totals = { ...answer.totals, turnedAwayBy: { ...answer.totals.turnedAwayBy } }
  let open: number | null = null
  for (const m of live) {
    if (m.minute < first || m.minute > last) continue
    if (m.open) open = pointOf(m.minute)
    if (readAt >= (m.minute + 1) * MINUTE + SETTLE_MS) continue
    const before = recent.get(m.minute) ?? {}
    const after = mergeLive(before, m.fields)
    const grew = (f: string): number => (after[f] ?? 0) - (before[f] ?? 0)
    const away = turnedAway(after) - turnedAway(before)
    const point = points.find((p) => p.t === pointOf(m.minute))
    if (point) {
      point.admitted += grew(FIELDS.admitted)
      point.turnedAway += away
      point.abandoned += grew(FIELDS.abandoned)
      if (after[LINE_FIELD] !== undefined) point.inLine = Math.max(point.inLine ?? 0, after[LINE_FIELD])
    }
    totals.admitted += grew(FIELDS.admitted)
    totals.admittedFromLine += grew(FIELDS.admittedFromLine)
    totals.abandoned += grew(FIELDS.abandoned)
    totals.turnedAway += away
    for (const [fields, sign] of [
      [before, -1],
      [after, 1],
    ] as const) {
      for (const [f, n] of Object.entries(fields)) {
        if (!f.startsWith(FIELDS.turnedAway)) continue
        const reason = f.slice(FIELDS.turnedAway.length)
        totals.turnedAwayBy[reason] = (totals.turnedAwayBy[reason] ?? 0) + sign * n
        if (totals.turnedAwayBy[reason] === 0) delete totals.turnedAwayBy[reason]
      }
    }
    if (after[LINE_FIELD] !== undefined) totals.inLineMax = Math.max(totals.inLineMax ?? 0, after[LINE_FIELD])
    totals.admittedPeak = Math.max(totals.admittedPeak, after[FIELDS.admitted] ?? 0)
    if (!recent.has(m.minute)) totals.minutes++
  }
  return {
    ...answer,
    from: new Date(first * MINUTE).toISOString(),
    to: new Date(last * MINUTE).toISOString(),
    points: points.map((p) => (p.t === open ? { ...p, open: true } : p)),
    open,
    totals,
  }
}

/** A minute's fields with the live figures merged in (see {@link withLive}). */
function mergeLive(
  stored: Readonly<Record<string, number>>,
  live: Readonly<Record<string, number>>,
): Record<string, number> {
  const fields = { ...stored }
  for (const f of [FIELDS.admitted, FIELDS.admittedFromLine, FIELDS.abandoned, LINE_FIELD]) {
    if (live[f] !== undefined) fields[f] = Math.max(fields[f] ?? 0, live[f])
  }
  if (turnedAway(live) > turnedAway(fields)) {
    for (const f of Object.keys(fields)) if (f.startsWith(FIELDS.turnedAway)) delete fields[f]
    for (const [f, n] of Object.entries(live)) if (f.startsWith(FIELDS.turnedAway)) fields[f] = n
  }
  return fields
}

function turnedAway(fields: Readonly<Record<string, number>>): number {
  let n = 0
  for (const [f, v] of Object.entries(fields)) if (f.startsWith(FIELDS.turnedAway)) n += v
  return n
}

/** A point every `step` minutes over the whole range (a point without visitors counts none), so a chart's x is time. */
function points(rows: readonly HistoryRow[], first: number, last: number, step: number): LookBackPoint[] {
  const byTime = new Map(rows.map((r) => [Date.parse(r.minute), r]))
  const out: LookBackPoint[] = []
  for (let m = Math.floor(first / step) * step; m <= last; m += step) {
    const t = m * MINUTE
    const r = byTime.get(t)
    out.push({
      t,
      admitted: r?.admitted ?? 0,
      turnedAway: r?.turnedAway ?? 0,
      abandoned: r?.abandoned ?? 0,
      inLine: r?.inLine ?? null,
      waitP50: r?.waitP50 ?? null,
      waitP90: r?.waitP90 ?? null,
      visitP50: r?.visitP50 ?? null,
    })
  }
  return out
}

/** Minutes merged `step` by `step`: counters and histogram counts added, maxima kept. */
function merged(records: readonly MinuteRecord[], step: number): MinuteRecord[] {
  const groups = new Map<number, Record<string, number>>()
  for (const r of records) {
    const at = Math.floor(r.minute / step) * step
    let fields = groups.get(at)
    if (!fields) groups.set(at, (fields = {}))
    for (const [f, n] of Object.entries(r.fields))
      fields[f] = MAXIMA.has(f) ? Math.max(fields[f] ?? n, n) : (fields[f] ?? 0) + n
  }
  return [...groups].map(([minute, fields]) => ({ minute, fields }))
}
