/**
 * The minute in progress of one gate, and the one that just ended, read from its instances' live
 * counters. The per-minute history in the store has a minute only once it ended (each instance adds
 * its part 1 to 5 s later, src/core/history.ts), so the look back (look-back.ts) takes its newest
 * minutes from here until the store has them.
 *
 * A minute's figures are how much each instance's counters grew since the minute began, as the
 * sampler read them (once per interval, from the reports the instances write every second):
 * admitted, admitted from the line, turned away (by reason where the counters tell it:
 * `client-share`, `challenge`, `challenge-failed`; the rest `other`), abandoned, and the line at
 * the last reading. No waits nor visits: those are in the store once the minute ended. A dashboard
 * started within a minute counts that minute from its first reading; an instance first seen later
 * started later, so it counts from zero.
 */
import { FIELDS } from '../core/history.js'
import type { GateCounters } from '../gate/status-types.js'
import { LINE_FIELD, type MinuteRecord } from '../stores/history.js'

/** A minute as the store would hold it (its counters), from the live counters. */
export interface LiveMinute extends MinuteRecord {
  /** True for the minute in progress; false for the one that just ended, as last read. */
  open: boolean
  /** Store ms from which it counts: the minute's start, or later when the dashboard began within it. */
  since: number
}

/** The counters a minute is made of. */
const COUNTED = [
  'admitted',
  'admittedFromLine',
  'abandoned',
  'busy',
  'clientShare',
  'challenged',
  'challengeFailed',
] as const
type Counts = Record<(typeof COUNTED)[number], number>

const MINUTE = 60_000
/** An instance not seen for this long is forgotten (seen again, it counts as a new one). */
const FORGET_MS = 10 * MINUTE

const ZERO: Counts = {
  admitted: 0,
  admittedFromLine: 0,
  abandoned: 0,
  busy: 0,
  clientShare: 0,
  challenged: 0,
  challengeFailed: 0,
}

/** Follows one gate's instances minute by minute (see the module doc). */
export class LiveMinutes {
  #minute: number | undefined
  #since = 0
  #readings = 0
  /** Each instance's counters when the open minute began (or when first read, see the module doc). */
  #base = new Map<string, Counts>()
  /** Each instance's counters at its last reading within the open minute. */
  #read = new Map<string, Counts>()
  /** Every instance's last counters and when they were read (store ms). */
  readonly #known = new Map<string, { counts: Counts; at: number }>()
  #waiting = 0
  #ended: LiveMinute | undefined

  /** One reading: the store's clock (ms), the instances' reports, the line's length. */
  take(at: number, instances: readonly { id: string; counters: GateCounters }[], waiting: number): void {
    const minute = Math.floor(at / MINUTE)
    if (this.#minute !== undefined && minute < this.#minute) return // the store's clock went back: keep the minute
    if (minute !== this.#minute) {
      const first = this.#minute === undefined
      this.#ended = !first && minute === this.#minute! + 1 ? this.#figures(false) : undefined
      this.#base = new Map([...this.#known].map(([id, k]) => [id, k.counts]))
      this.#read = new Map()
      this.#since = first ? at : minute * MINUTE
      this.#minute = minute
    }
    for (const i of instances) {
      const counts = pick(i.counters)
      // In the first reading: there before the dashboard. Later: new (a running instance always has a report).
      if (!this.#base.has(i.id)) this.#base.set(i.id, this.#readings === 0 ? counts : ZERO)
      this.#read.set(i.id, counts)
      this.#known.set(i.id, { counts, at })
    }
    for (const [id, k] of this.#known) if (at - k.at > FORGET_MS) this.#known.delete(id)
    this.#waiting = waiting
    this.#readings++
  }

  /** The minute that just ended (until the next one begins) and the minute in progress, oldest first. */
  minutes(): LiveMinute[] {
    if (this.#minute === undefined) return []
    const open = this.#figures(true)
    return this.#ended ? [this.#ended, open] : [open]
  }

  #figures(open: boolean): LiveMinute {
    const grew = { ...ZERO }
    for (const [id, now] of this.#read) {
      const base = this.#base.get(id) ?? ZERO
      for (const k of COUNTED) grew[k] += Math.max(0, now[k] - base[k])
    }
    const other = Math.max(0, grew.busy - grew.clientShare - grew.challenged - grew.challengeFailed)
    const fields: Record<string, number> = {}
    const put = (field: string, n: number): void => {
      if (n > 0) fields[field] = n
    }
    put(FIELDS.admitted, grew.admitted)
    put(FIELDS.admittedFromLine, grew.admittedFromLine)
    put(FIELDS.abandoned, grew.abandoned)
    put(`${FIELDS.turnedAway}client-share`, grew.clientShare)
    put(`${FIELDS.turnedAway}challenge`, grew.challenged)
    put(`${FIELDS.turnedAway}challenge-failed`, grew.challengeFailed)
    put(`${FIELDS.turnedAway}other`, other)
    fields[LINE_FIELD] = this.#waiting
    return { minute: this.#minute!, fields, open, since: this.#since }
  }
}

function pick(c: GateCounters): Counts {
  const out = { ...ZERO }
  for (const k of COUNTED) out[k] = Number.isFinite(c[k]) ? c[k] : 0
  return out
}
