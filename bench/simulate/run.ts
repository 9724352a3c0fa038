/**
 * One cell of the fleet simulator: a backend, an arrival schedule and N gates, on the virtual clock.
 * Clients behave as bench/adaptive.ts's: each sends requests back to back through its instance (a
 * load balancer spreads connections round robin), a 5xx is retried at once, a busy 503 after 50-150
 * ms. Before the load, one client sends 20 requests one at a time (the unloaded time, as the real
 * bench measures it; the gate learns its first baseline from them as it does there).
 *
 * Figures per phase, counted from `settleMs` after each change, as the real bench counts them:
 * goodput against the ideal (C x seconds / work), failed handler runs (5xx) against all handler
 * runs, the p99 of good requests against the unloaded time; and after a capacity drop, how long
 * until the limit every instance has in force was at or under the new C.
 */
import { backend, type BackendKind } from './backends.js'
import { seeded, VirtualClock } from './clock.js'
import { Fleet } from './fleet.js'

export type Schedule = 'steady' | 'ramp' | 'spike'

/** The unloaded requests run before the load, which starts this long (ms) into the clock. */
export const WARM_MS = 2_000

export interface Cell {
  backend: BackendKind
  phases: number[]
  schedule: Schedule
  instances: number
  /**
   * `adaptive`: `limit: { min, max }`; `perfect`: the live limit set to C at each change (the ideal
   * to compare with); `static`: the live limit at the highest C throughout (a guess that floods
   * when C drops: what the bars must catch).
   */
  shield: 'adaptive' | 'perfect' | 'static'
  seed: number
  /** "Under the capacity" is a limit at most C x this (1: at most C; see BackendRow.slowsOnly). */
  under?: number
}

export interface SimSettings {
  phaseMs: number
  work: number
  jitter: number
  /** Client to gate, one way (ms). */
  net: number
  /** Gate to backend, one way (ms). */
  backendNet: number
  storeRtt: number
  /**
   * The host's own noise, fitted to the real box (docs/simulate.md, "Calibration"); all 0: a quiet
   * host. Each response waits an exponentially distributed extra time before its gate sees it (a
   * busy core, a garbage collection, the event loop behind), whose mean is redrawn every `every` ms
   * per instance: `mean` x X^`shape` ms, X exponentially distributed (shape 1: an exponential; 2: a
   * lower median and a longer tail): the host is busier for a while, then less, as a real one is,
   * and its windows' 95th percentiles spread as the real box's do. `client`:
   * the load generator's own delay (ms, exponential), on the client's clock only.
   */
  noise: { mean: number; every: number; shape: number; client: number }
  /** Clients of the steady schedule (the ramp reaches twice this, the spike adds five times it to a quarter of it). */
  clients: number
  min: number
  max: number
  settleMs: number
  /** Timeline points every this many ms. */
  sampleMs: number
}

export const DEFAULTS: SimSettings = {
  phaseMs: 12_000,
  work: 50,
  jitter: 2,
  net: 0.5,
  backendNet: 0.5,
  storeRtt: 0.5,
  // One instance on the real box, fitted under a perfect limit (docs/simulate.md, "Calibration").
  noise: { mean: 2.5, every: 150, shape: 1, client: 3 },
  clients: 200,
  min: 2,
  max: 200,
  settleMs: 2_000,
  sampleMs: 50,
}

/**
 * The noise of two instances on the real box's 2 cores beside Redis, the backend and the load
 * generator (the bench's two-instance row), fitted as DEFAULTS.noise is: far busier than one.
 */
export const CROWDED_NOISE: SimSettings['noise'] = { mean: 3, every: 200, shape: 2, client: 3 }

export interface PhaseResult {
  capacity: number
  goodput: number
  runs: number
  failures: number
  failureRate: number
  p99: number
  /** After a drop of capacity: ms until every instance's limit was at or under C (x `cell.under`; `null`: never; absent: not a drop). */
  under?: number | null
}

export interface CellResult extends Omit<Cell, 'phases'> {
  /** C, one per phase. */
  capacities: number[]
  unloadedMs: number
  phases: PhaseResult[]
  /**
   * Timeline: [t (ms), limit in force (most of any instance), inside the backend, failures since the
   * last point, the last judged window's 95th percentile against the baseline (0: none yet)].
   */
  timeline: [number, number, number, number, number][]
  /** Events the clock ran. */
  events: number
}

/** [start, end) of each client (ms from the load's start). */
function clients(schedule: Schedule, s: SimSettings, total: number): [number, number][] {
  const n = s.clients
  if (schedule === 'steady') return Array.from({ length: n }, () => [0, total])
  // A hug's ramp: twice the clients, arriving evenly over the first 10 s.
  if (schedule === 'ramp') return Array.from({ length: 2 * n }, (_, i) => [(i / (2 * n)) * 10_000, total])
  // A spike: a quarter of the clients throughout, and five times as many for 4 s from mid first phase.
  const from = s.phaseMs / 2
  return [
    ...Array.from({ length: n / 4 }, (): [number, number] => [0, total]),
    ...Array.from({ length: 5 * n }, (_, i): [number, number] => [from + i / 100, from + 4_000]),
  ]
}

/** Runs one cell; `watch` is handed the clock first (to trace a cell: bench/simulate.ts TRACE=). */
export async function runCell(
  cell: Cell,
  s: SimSettings = DEFAULTS,
  watch?: (clock: VirtualClock) => void,
): Promise<CellResult> {
  const clock = new VirtualClock()
  watch?.(clock)
  const random = seeded(cell.seed)
  const fleet = new Fleet(clock, random, { instances: cell.instances, min: s.min, max: s.max, storeRtt: s.storeRtt })
  const total = s.phaseMs * cell.phases.length
  const back = backend(clock, random, {
    kind: cell.backend,
    phases: cell.phases,
    start: WARM_MS,
    phaseMs: s.phaseMs,
    work: s.work,
    jitter: s.jitter,
  })
  const phaseAt = (t: number): number => Math.min(cell.phases.length - 1, Math.max(0, Math.floor(t / s.phaseMs)))
  const counted = cell.phases.map(() => ({ good: [] as number[], failures: 0 }))
  let failuresSince = 0
  const record = (sent: number, status: number): void => {
    const t = clock.now - WARM_MS
    if (status >= 500) failuresSince++
    const p = phaseAt(t)
    if (t < 0 || t - p * s.phaseMs < s.settleMs) return
    if (status === 200) counted[p]!.good.push(clock.now - sent)
    else if (status >= 500) counted[p]!.failures++
  }

  const exp = (mean: number): number => (mean > 0 ? -Math.log(1 - random()) * mean : 0)
  // Each instance's noise: a response reaching instance g waits delay[g]() ms.
  const delay = fleet.gates.map(() => {
    const draw = (): number => s.noise.mean * exp(1) ** s.noise.shape
    let level = draw()
    if (s.noise.mean > 0) clock.repeat(() => (level = draw()), s.noise.every, random() * s.noise.every)
    return (): number => exp(level)
  })

  /** One request of client `c` through instance `g`; `then(status)` when its answer is back. */
  const send = (g: number, then: (status: number, ms: number) => void): void => {
    const sent = clock.now
    clock.after(s.net, () =>
      fleet.acquire(g, (admitted) => {
        if (!admitted) return clock.after(s.net, () => then(503, clock.now - sent))
        const admittedAt = clock.now
        clock.after(s.backendNet, () =>
          back.submit((status) =>
            clock.after(s.backendNet + delay[g]!(), () => {
              fleet.ended(g, clock.now - admittedAt, status >= 500)
              clock.after(s.net + exp(s.noise.client), () => {
                record(sent, status)
                then(status, clock.now - sent)
              })
            }),
          ),
        )
      }),
    )
  }

  // The unloaded time: one client, 20 requests one at a time.
  const unloaded: number[] = []
  const warm = (): void =>
    send(0, (_status, ms) => {
      unloaded.push(ms)
      if (unloaded.length < 20) warm()
    })
  warm()

  // The clients, each on its instance (round robin), from its start to its end.
  clients(cell.schedule, s, total).forEach(([from, to], c) => {
    const g = c % cell.instances
    const loop = (): void => {
      if (clock.now - WARM_MS >= to) return
      send(g, (status) => (status === 503 ? clock.after(50 + random() * 100, loop) : loop()))
    }
    clock.at(WARM_MS + from, loop)
  })

  // The perfect limit: the live limit set to C on every instance at each change.
  if (cell.shield === 'static')
    clock.at(0, () => {
      for (const gate of fleet.gates) gate.limit.setControl(Math.max(...cell.phases))
    })
  if (cell.shield === 'perfect')
    for (const [p, c] of cell.phases.entries())
      clock.at(p === 0 ? 0 : WARM_MS + p * s.phaseMs, () => {
        for (const gate of fleet.gates) gate.limit.setControl(c)
      })

  const timeline: CellResult['timeline'] = []
  const under: (number | null)[] = cell.phases.map(() => null)
  clock.repeat(
    () => {
      const t = clock.now - WARM_MS
      if (t < 0) return
      const { recent, baseline } = fleet.gates[0]!.adaptive.state
      const ratio = recent !== null && baseline !== null ? Math.round((100 * recent) / baseline) / 100 : 0
      timeline.push([t, fleet.limit, back.inside, failuresSince, ratio])
      failuresSince = 0
      const p = phaseAt(t)
      if (under[p] === null && fleet.limit <= cell.phases[p]! * (cell.under ?? 1)) under[p] = t - p * s.phaseMs
    },
    s.sampleMs,
    0,
  )

  await clock.run(WARM_MS + total)
  fleet.close()
  if (fleet.errors.length > 0) throw fleet.errors[0]

  const unloadedMs = median(unloaded)
  return {
    ...cell,
    capacities: cell.phases,
    unloadedMs,
    events: clock.events,
    timeline,
    phases: cell.phases.map((capacity, p) => {
      const { good, failures } = counted[p]!
      const runs = good.length + failures
      const seconds = (s.phaseMs - s.settleMs) / 1000
      const drop = p > 0 && capacity < cell.phases[p - 1]!
      return {
        capacity,
        goodput: good.length / ((capacity * seconds * 1000) / s.work),
        runs,
        failures,
        failureRate: failures / Math.max(1, runs),
        p99: quantile(good, 0.99),
        ...(drop ? { under: under[p] } : {}),
      }
    }),
  }
}

const median = (xs: number[]): number => quantile(xs, 0.5)

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return 0
  const sorted = Float64Array.from(xs).sort()
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
