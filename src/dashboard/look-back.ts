/**
 * The dashboard's look back: the last hour, day or 30 days of a gate from the per-minute history
 * in the store (src/core/report.ts), a point a minute (hour, day) or an hour (30 days: its minutes
 * merged, so its percentiles come from the hour's merged histograms). Answers are kept briefly
 * (a tenth of a point's span, at least 10 s), so open pages cost the store a read now and then.
 */
import { summarize, type HistoryRow, type HistoryTotals } from '../core/report.js'
import { historyFor, LINE_FIELD, type MinuteRecord } from '../stores/history.js'
import type { Store } from '../stores/types.js'

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
  totals: HistoryTotals
}

const MAXIMA = new Set(['wm', 'vm', LINE_FIELD])

export class LookBacks {
  readonly #store: Store
  readonly #cache = new Map<string, { at: number; answer: Promise<LookBack> }>()

  constructor(store: Store) {
    this.#store = store
  }

  /** True when the store keeps a history to look back at. */
  get available(): boolean {
    return historyFor(this.#store) !== undefined
  }

  /** The look back of `name` over `range` (kept briefly: see the module doc). */
  get(name: string, range: LookBackRange): Promise<LookBack> {
    const key = `${range} ${name}`
    const now = Date.now()
    const kept = this.#cache.get(key)
    const { step } = LOOK_BACK_RANGES[range]
    if (kept && now - kept.at < Math.max(10_000, step * 6_000)) return kept.answer
    const answer = this.#read(name, range, now)
    this.#cache.set(key, { at: now, answer })
    answer.catch(() => this.#cache.delete(key))
    return answer
  }

  async #read(name: string, range: LookBackRange, now: number): Promise<LookBack> {
    const { minutes, step } = LOOK_BACK_RANGES[range]
    const last = Math.floor(now / 60_000)
    const first = last - minutes + 1
    const records = (await historyFor(this.#store)?.read(name, first, last)) ?? []
    const totals = summarize(name, first, last, records).totals
    const report = summarize(name, first, last, step === 1 ? records : merged(records, step))
    return {
      name,
      range,
      step,
      from: report.from,
      to: report.to,
      points: points(report.rows, first, last, step),
      totals,
    }
  }
}

/** A point every `step` minutes over the whole range (a point without visitors counts none), so a chart's x is time. */
function points(rows: readonly HistoryRow[], first: number, last: number, step: number): LookBackPoint[] {
  const byTime = new Map(rows.map((r) => [Date.parse(r.minute), r]))
  const out: LookBackPoint[] = []
  for (let m = Math.floor(first / step) * step; m <= last; m += step) {
    const t = m * 60_000
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
    for (const [f, n] of Object.entries(r.fields)) fields[f] = MAXIMA.has(f) ? Math.max(fields[f] ?? n, n) : (fields[f] ?? 0) + n
  }
  return [...groups].map(([minute, fields]) => ({ minute, fields }))
}
