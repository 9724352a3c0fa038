/**
 * What `airlock hug` counts: every answer by who gave it (the shield, by its `Airlock` header's
 * kind and reason, or the origin), the visitors' states (trying, in line, on the site), page
 * latencies and waits, second by second for the live line and the report, and in total for the
 * summary and the exit status.
 */

/** One second of the run (its figures, and the states at its end). */
export interface HugSecond {
  /** Seconds since the start (the second that ended). */
  t: number
  arrived: number
  /** Admissions: visitors let in (first origin page, or the line's admitted poll) and flood requests let through. */
  admitted: number
  busy: number
  queued: number
  challenged: number
  originErrors: number
  noAnswer: number
  gaveUp: number
  /** Visitors in line, and on the site (admitted, not yet gone): the most at once during the second. */
  inLine: number
  onSite: number
  /** Pages the origin served the visitors this second: p50, p99 (ms). */
  pageP50: number | null
  pageP99: number | null
  /** Waits (arrival to admission) of the visitors admitted this second: p50, p99 (ms). */
  waitP50: number | null
  waitP99: number | null
}

/** Percentiles of a set of durations (ms; `null` when empty). */
export interface Spread {
  count: number
  p50: number | null
  p90: number | null
  p99: number | null
  max: number | null
}

/** The counts of answers, by who gave them. */
export interface AnswerCounts {
  /** Every answer (and every request that got none). */
  requests: number
  /** Admissions (see {@link HugSecond.admitted}). */
  admitted: number
  /** The shield's busy answers (`503`), and by reason. */
  busy: number
  busyBy: Record<string, number>
  /** The line's answers (`202`, polls included). */
  queued: number
  /** The door's challenges (`202`). */
  challenged: number
  /** Confirm requests answered (`204`). */
  confirmed: number
  /** Pages the origin served (not the shield). */
  pages: number
  /** `5xx` the shield did not send (no `Airlock` header, or the proxy's `origin-error`), and by status. */
  originErrors: number
  originErrorsBy: Record<string, number>
  /** Requests that got no answer: refused connections, resets, timeouts. */
  noAnswer: number
}

export const emptyCounts = (): AnswerCounts => ({
  requests: 0,
  admitted: 0,
  busy: 0,
  busyBy: {},
  queued: 0,
  challenged: 0,
  confirmed: 0,
  pages: 0,
  originErrors: 0,
  originErrorsBy: {},
  noAnswer: 0,
})

/** The value at `q` (0..1) of sorted `values` (nearest rank). */
function at(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null
  return values[Math.min(values.length - 1, Math.max(0, Math.ceil(q * values.length) - 1))]!
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b)
  const r = (v: number | null): number | null => (v === null ? null : Math.round(v * 10) / 10)
  return {
    count: sorted.length,
    p50: r(at(sorted, 0.5)),
    p90: r(at(sorted, 0.9)),
    p99: r(at(sorted, 0.99)),
    max: r(at(sorted, 1)),
  }
}

const bump = (by: Record<string, number>, key: string): void => {
  by[key] = (by[key] ?? 0) + 1
}

/** The running tally: totals (crowd and flood apart), the states, and the open second. */
export class HugTally {
  readonly crowd = emptyCounts()
  readonly flood = emptyCounts()
  readonly pages: number[] = []
  readonly waits: number[] = []
  arrived = 0
  admittedFromLine = 0
  gaveUp = 0
  /** Visitors refused while browsing (their pass no longer good). */
  turnedAwayInside = 0
  inLine = 0
  onSite = 0
  inLineMax = 0
  onSiteMax = 0
  readonly timeline: HugSecond[] = []
  #second = this.#fresh(0)
  #secondPages: number[] = []
  #secondWaits: number[] = []

  #fresh(t: number): HugSecond {
    const [inLine, onSite] = [this.inLine, this.onSite]
    return {
      t,
      arrived: 0,
      admitted: 0,
      busy: 0,
      queued: 0,
      challenged: 0,
      originErrors: 0,
      noAnswer: 0,
      gaveUp: 0,
      inLine,
      onSite,
      pageP50: null,
      pageP99: null,
      waitP50: null,
      waitP99: null,
    }
  }

  /** Counts an answer (`flood`: of the raw flood) as the shield's or the origin's. */
  answer(flood: boolean, status: number, kind: string | undefined, reason: string | undefined): void {
    const c = flood ? this.flood : this.crowd
    c.requests++
    if (kind === undefined || kind === 'origin-error') {
      if (status >= 500) {
        c.originErrors++
        bump(c.originErrorsBy, String(status))
        this.#second.originErrors++
      } else if (kind === undefined) c.pages++
      return
    }
    if (kind === 'busy') {
      c.busy++
      bump(c.busyBy, reason ?? 'unknown')
      this.#second.busy++
    } else if (kind === 'queued') {
      c.queued++
      this.#second.queued++
    } else if (kind === 'challenge') {
      c.challenged++
      this.#second.challenged++
    } else if (kind === 'confirmed') c.confirmed++
  }

  noAnswer(flood: boolean): void {
    const c = flood ? this.flood : this.crowd
    c.requests++
    c.noAnswer++
    this.#second.noAnswer++
  }

  /** An admission: a visitor let in after `wait` ms (`fromLine`: by the line), or a flood request let through. */
  admitted(flood: boolean, wait?: number, fromLine = false): void {
    ;(flood ? this.flood : this.crowd).admitted++
    this.#second.admitted++
    if (wait === undefined) return
    if (fromLine) this.admittedFromLine++
    this.waits.push(wait)
    this.#secondWaits.push(wait)
  }

  page(ms: number): void {
    this.pages.push(ms)
    this.#secondPages.push(ms)
  }

  arrive(): void {
    this.arrived++
    this.#second.arrived++
  }

  giveUp(): void {
    this.gaveUp++
    this.#second.gaveUp++
  }

  /** Moves a visitor's state by `d` (+1 in, -1 out). */
  line(d: 1 | -1): void {
    this.inLine += d
    if (this.inLine > this.inLineMax) this.inLineMax = this.inLine
    if (this.inLine > this.#second.inLine) this.#second.inLine = this.inLine
  }

  site(d: 1 | -1): void {
    this.onSite += d
    if (this.onSite > this.onSiteMax) this.onSiteMax = this.onSite
    if (this.onSite > this.#second.onSite) this.#second.onSite = this.onSite
  }

  /** Closes the open second `t` and opens the next one. */
  tick(t: number): HugSecond {
    const s = this.#second
    const pages = spread(this.#secondPages)
    const waits = spread(this.#secondWaits)
    Object.assign(s, { t, pageP50: pages.p50, pageP99: pages.p99, waitP50: waits.p50, waitP99: waits.p99 })
    this.timeline.push(s)
    this.#second = this.#fresh(t + 1)
    this.#secondPages = []
    this.#secondWaits = []
    return s
  }
}
