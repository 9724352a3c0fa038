/**
 * The report of a gate's history: `airlockReport({ store, name, from, to })` reads the minutes the
 * store kept (through the history storage beside it) and answers one row per minute and the
 * totals of the range, the percentiles of the range read from the merged histograms of its
 * minutes. `reportCsv` writes the same rows as CSV; the HTML page is src/pages/report.ts.
 */
import { optionError } from '../base/errors.js'
import { optionsObject, received, semaphoreName } from '../base/validate.js'
import { historyFor, LINE_FIELD, type MinuteRecord } from '../stores/history.js'
import { resolveStore } from '../stores/resolve.js'
import type { Store } from '../stores/types.js'
import { FIELDS } from './history.js'
import { quantile } from './histogram.js'

/** The causes a slot or pass ends by, in the order the report shows them. */
export const RELEASE_CAUSES = ['visitor', 'origin', 'expiry', 'operator'] as const

/** One minute of a gate, every instance's part added up. Durations in seconds (ms precision). */
export interface HistoryRow {
  /** The minute's start, ISO 8601 UTC (`2026-12-01T09:00:00.000Z`). */
  minute: string
  /** Visitors let in, and of them those who came from the line. */
  admitted: number
  admittedFromLine: number
  /** Visitors turned away with a busy answer, and by reason (`full`, `store-unavailable`, ...). */
  turnedAway: number
  turnedAwayBy: Record<string, number>
  /** Places in line that lapsed (their visitors stopped asking). */
  abandoned: number
  /** Slots or passes that ended, and by cause (`visitor`, `origin`, `expiry`, `operator`). */
  released: number
  releasedBy: Record<string, number>
  /** Visitors in line at the minute's end; `null` when no instance read it. */
  inLine: number | null
  /** Wait in line of the admitted from the line: median, 90th percentile, longest; `null` without any. */
  waitP50: number | null
  waitP90: number | null
  waitMax: number | null
  /** Visit (admission to the slot's end): median and 90th percentile; `null` without any. */
  visitP50: number | null
  visitP90: number | null
}

/** The range's figures: sums, and percentiles of the range's merged histograms. */
export interface HistoryTotals extends Omit<HistoryRow, 'minute' | 'inLine'> {
  /** Minutes that hold anything. */
  minutes: number
  /** The most in line at a minute's end. */
  inLineMax: number | null
  /** The most admitted in one minute. */
  admittedPeak: number
}

export interface HistoryReport {
  name: string
  /** The range asked for, ISO 8601 (whole minutes). */
  from: string
  to: string
  /** The minutes that hold anything, oldest first. */
  rows: HistoryRow[]
  totals: HistoryTotals
}

export interface ReportOptions {
  /** The gates' store. Default: the process-wide memory store. */
  store?: Store
  /** The gate's name (its `name` option). Default `'default'`. */
  name?: string
  /** The range: a Date, ms since the epoch or an ISO 8601 text. Default: 24 hours before `to`. */
  from?: Date | number | string
  /** Default: now. */
  to?: Date | number | string
}

const MINUTE = 60_000

/**
 * The history of gate `name` from `from` to `to`: a row per minute that holds anything, and the
 * totals. Reads through the store's history storage (a day of minutes per round trip on Redis).
 * @throws ERR_AIRLOCK_OPTION on bad options, or a store that keeps no history.
 */
export async function airlockReport(options: ReportOptions = {}): Promise<HistoryReport> {
  optionsObject('airlockReport()', options, ['store', 'name', 'from', 'to'])
  const store = resolveStore(options.store)
  const name = semaphoreName('name', options.name ?? 'default')
  const to = instant('to', options.to ?? Date.now())
  const from = instant('from', options.from ?? to - 24 * 3_600_000)
  if (from > to)
    optionError(`from must be before to (${new Date(to).toISOString()}), got ${new Date(from).toISOString()}`)
  const storage = historyFor(store)
  if (!storage)
    optionError(`store: the '${store.kind}' store keeps no history; report on the memory store or a Redis store`)
  const first = Math.floor(from / MINUTE)
  const last = Math.floor(to / MINUTE)
  if (last - first > 400 * 1440) optionError('from and to must be at most 400 days apart')
  return summarize(name, first, last, await storage.read(name, first, last))
}

function instant(option: string, value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : value
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > 8.64e15) {
    optionError(
      `${option} must be a Date, ms since the epoch or an ISO 8601 time (2026-12-01T09:00:00Z), got ${received(value)}`,
    )
  }
  return ms
}

/** Rows and totals from the minutes a storage answered (minute numbers `first`..`last`). */
export function summarize(name: string, first: number, last: number, records: readonly MinuteRecord[]): HistoryReport {
  const all = new Figures()
  const rows = records.map((r) => {
    const f = new Figures()
    f.take(r.fields)
    all.take(r.fields)
    return { minute: new Date(r.minute * MINUTE).toISOString(), ...f.row(), inLine: r.fields[LINE_FIELD] ?? null }
  })
  const inLine = rows.flatMap((r) => (r.inLine === null ? [] : [r.inLine]))
  return {
    name,
    from: new Date(first * MINUTE).toISOString(),
    to: new Date(last * MINUTE).toISOString(),
    rows,
    totals: {
      minutes: rows.length,
      ...all.row(),
      inLineMax: inLine.length > 0 ? Math.max(...inLine) : null,
      admittedPeak: Math.max(0, ...rows.map((r) => r.admitted)),
    },
  }
}

/** The figures of one minute or of several, merged: sums, histogram counts, maxima. */
class Figures {
  readonly sums = new Map<string, number>()
  readonly waits = new Map<number, number>()
  readonly visits = new Map<number, number>()
  waitMax: number | null = null
  visitMax: number | null = null

  take(fields: Readonly<Record<string, number>>): void {
    for (const [field, n] of Object.entries(fields)) {
      const hist = /^([wv])(\d+)$/.exec(field)
      if (hist) {
        const map = hist[1] === FIELDS.wait ? this.waits : this.visits
        map.set(Number(hist[2]), (map.get(Number(hist[2])) ?? 0) + n)
      } else if (field === FIELDS.waitMax) this.waitMax = Math.max(this.waitMax ?? n, n)
      else if (field === FIELDS.visitMax) this.visitMax = Math.max(this.visitMax ?? n, n)
      else if (field !== LINE_FIELD) this.sums.set(field, (this.sums.get(field) ?? 0) + n)
    }
  }

  row(): Omit<HistoryRow, 'minute' | 'inLine'> {
    const by = (prefix: string): Record<string, number> => {
      const out: Record<string, number> = {}
      for (const [field, n] of [...this.sums].sort(([a], [b]) => (a < b ? -1 : 1)))
        if (field.startsWith(prefix)) out[field.slice(prefix.length)] = n
      return out
    }
    const turnedAwayBy = by(FIELDS.turnedAway)
    const releasedBy = by(FIELDS.released)
    const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0)
    const s = (ms: number | null): number | null => (ms === null ? null : ms / 1000)
    return {
      admitted: this.sums.get(FIELDS.admitted) ?? 0,
      admittedFromLine: this.sums.get(FIELDS.admittedFromLine) ?? 0,
      turnedAway: sum(turnedAwayBy),
      turnedAwayBy,
      abandoned: this.sums.get(FIELDS.abandoned) ?? 0,
      released: sum(releasedBy),
      releasedBy,
      waitP50: s(quantile(this.waits, 0.5, this.waitMax)),
      waitP90: s(quantile(this.waits, 0.9, this.waitMax)),
      waitMax: s(this.waitMax),
      visitP50: s(quantile(this.visits, 0.5, this.visitMax)),
      visitP90: s(quantile(this.visits, 0.9, this.visitMax)),
    }
  }
}

/**
 * The report's rows as CSV (RFC 4180, a header line, `\r\n` endings): one column per figure, and
 * one per reason and cause met in the range (`turnedAway.full`, `released.expiry`); durations in
 * seconds; an empty cell where a figure is unknown; text cells quoted and never a formula.
 */
export function reportCsv(report: HistoryReport): string {
  const reasons = [...new Set(report.rows.flatMap((r) => Object.keys(r.turnedAwayBy)))].sort()
  const causes = [...new Set([...RELEASE_CAUSES, ...report.rows.flatMap((r) => Object.keys(r.releasedBy))])]
  const header = [
    'minute',
    'admitted',
    'admittedFromLine',
    'turnedAway',
    ...reasons.map((r) => `turnedAway.${r}`),
    'abandoned',
    'released',
    ...causes.map((c) => `released.${c}`),
    'inLine',
    'waitP50',
    'waitP90',
    'waitMax',
    'visitP50',
    'visitP90',
  ]
  const lines = report.rows.map((r) =>
    [
      r.minute,
      r.admitted,
      r.admittedFromLine,
      r.turnedAway,
      ...reasons.map((x) => r.turnedAwayBy[x] ?? 0),
      r.abandoned,
      r.released,
      ...causes.map((c) => r.releasedBy[c] ?? 0),
      r.inLine,
      r.waitP50,
      r.waitP90,
      r.waitMax,
      r.visitP50,
      r.visitP90,
    ]
      .map(csvCell)
      .join(','),
  )
  return `${[header.map(csvCell).join(','), ...lines].join('\r\n')}\r\n`
}

/**
 * One CSV cell: a number as it is, `null` empty; text quoted when it holds a comma, a quote or a
 * line break (RFC 4180), and a leading `'` before text a spreadsheet would run as a formula (`=`,
 * `+`, `-`, `@`, a tab or a carriage return first: OWASP's CSV injection advice). Reason and cause
 * names come from the store, where anyone with access to it may have written them.
 */
function csvCell(v: number | string | null): string {
  if (v === null) return ''
  if (typeof v === 'number') return String(v)
  const text = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}
