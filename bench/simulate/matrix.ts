/**
 * The simulator's matrix and its bars: every backend x every arrival schedule x N instances, and
 * how a cell is judged (the same bars as the real bench's, docs/simulate.md). Used by the command
 * (bench/simulate.ts) and by the smoke test that runs a small matrix in `npm test`.
 */
import { TUNING } from '../../src/core/adaptive.js'
import type { BackendKind } from './backends.js'
import { type CellResult, DEFAULTS, runCell, type Schedule, type SimSettings } from './run.js'

export interface BackendRow {
  label: string
  kind: BackendKind
  phases: number[]
  /**
   * Only slows past C, never fails (a queue in front of the workers, work shared): "under the new
   * capacity" then means within the latency tolerance of it (the limit at most C x 1.15), the
   * estimator's contract; one request queued in ten is 10 % slower, which no latency signal can tell
   * from the host's noise (docs/simulate.md).
   */
  slowsOnly?: boolean
}

export const BACKENDS: BackendRow[] = [
  { label: 'worker pool', kind: 'pool', phases: [30, 10, 40], slowsOnly: true },
  { label: 'fast cliff', kind: 'cliff', phases: [30, 10, 40] },
  { label: 'slow failure', kind: 'slow', phases: [30, 10, 40] },
  { label: 'gradual slowdown', kind: 'gradual', phases: [30, 10, 40], slowsOnly: true },
  { label: 'capacity halved, recovered', kind: 'cliff', phases: [40, 20, 40] },
]
export const SCHEDULES: Schedule[] = ['steady', 'ramp', 'spike']
export const INSTANCES = [1, 2, 8, 32]

/**
 * Failed handler runs at most 1 %, goodput at least 0.9 of the ideal (the perfect limit's in the
 * same cell: the same clients and overheads, the live limit set to C at each change), p99 of good
 * requests at most 2x unloaded, under a dropped capacity within 1 s.
 */
export const BARS = { failures: 0.01, goodput: 0.9, p99: 2, underMs: 1_000 }

export interface Judged extends CellResult {
  label: string
  /** The same cell under the perfect limit: its goodput per phase is the ideal. */
  perfect: number[]
  /** The bars this cell misses, in words (empty: all met). */
  misses: string[]
}

/** The bars a cell misses, per phase; `ideal`: the perfect limit's goodput per phase. */
export function judge(r: CellResult, ideal: number[]): string[] {
  const misses: string[] = []
  r.phases.forEach((p, i) => {
    const at = `C=${p.capacity}`
    const goodput = p.goodput / ideal[i]!
    if (p.failureRate > BARS.failures) misses.push(`${at}: failures ${(100 * p.failureRate).toFixed(2)} %`)
    if (goodput < BARS.goodput) misses.push(`${at}: goodput ${goodput.toFixed(2)} of the ideal`)
    if (p.p99 > BARS.p99 * r.unloadedMs) misses.push(`${at}: p99 ${p.p99.toFixed(0)} ms`)
    if (p.under !== undefined && (p.under === null || p.under > BARS.underMs))
      misses.push(`${at}: under C after ${p.under === null ? 'never' : `${p.under} ms`}`)
  })
  return misses
}

export interface MatrixOptions {
  backends?: BackendRow[]
  schedules?: Schedule[]
  instances?: number[]
  seed?: number
  settings?: SimSettings
}

/** Runs every cell, one after the other (each on its own clock, the same figures every run). */
export async function runMatrix(o: MatrixOptions = {}): Promise<Judged[]> {
  const out: Judged[] = []
  for (const b of o.backends ?? BACKENDS)
    for (const schedule of o.schedules ?? SCHEDULES)
      for (const instances of o.instances ?? INSTANCES) {
        const under = b.slowsOnly === true ? TUNING.tolerance : 1
        const cell = { backend: b.kind, phases: b.phases, schedule, instances, seed: o.seed ?? 1, under }
        const r = await runCell({ ...cell, shield: 'adaptive' }, o.settings ?? DEFAULTS)
        const perfect = (await runCell({ ...cell, shield: 'perfect' }, o.settings ?? DEFAULTS)).phases.map(
          (p) => p.goodput,
        )
        out.push({ ...r, label: b.label, perfect, misses: judge(r, perfect) })
      }
  return out
}
