/**
 * The simulator's backends, modelled as queues on the virtual clock: each takes `work` ms a request
 * while at most C are inside, C following the phases. Past C:
 *
 * - `pool`: a PHP-FPM-like worker pool of C workers and a listen queue as deep as the pool; a
 *   request waits for a worker in FIFO order, and one that finds the queue full gets a 502 at once.
 * - `cliff` (a fast cliff): the (C+1)th request inside fails at once with a 500 (a pool that throws).
 * - `slow` (a slow failure): every request inside past C adds a quarter of `work` to a new one's
 *   time; one that would take over 3 x `work` fails with a 500 after 3 x `work`.
 * - `gradual`: the work is shared past C (latency grows, throughput does not); over 10 x `work`, a
 *   500 after 10 x `work`.
 *
 * `slow`, `cliff` and `gradual` are bench/adaptive/backend.ts's three, the same rules, so the
 * simulator can be set beside the real box's rows (calibration, docs/simulate.md).
 */
import type { VirtualClock } from './clock.js'

export type BackendKind = 'pool' | 'cliff' | 'slow' | 'gradual'

export interface Backend {
  /** A request arrives now; `done(status)` is called (on the clock) when its answer leaves. */
  submit(done: (status: number) => void): void
  /** Requests inside now (working or waiting for a worker). */
  readonly inside: number
  /** The capacity C now. */
  capacity(): number
}

export interface BackendSettings {
  kind: BackendKind
  /** C, one per phase. */
  phases: number[]
  /** When the first phase starts (ms on the clock); before it, the first phase's C. */
  start: number
  phaseMs: number
  /** Time of a request at or under C (ms). */
  work: number
  /** A request's time varies by up to this much (ms): timers fire late, a process is busy. */
  jitter: number
}

export function backend(clock: VirtualClock, random: () => number, s: BackendSettings): Backend {
  const capacity = (): number =>
    s.phases[Math.min(s.phases.length - 1, Math.max(0, Math.floor((clock.now - s.start) / s.phaseMs)))]!
  const work = (): number => s.work + random() * s.jitter
  if (s.kind === 'pool') return pool(clock, capacity, work)
  let inside = 0
  return {
    capacity,
    get inside() {
      return inside
    },
    submit(done) {
      const c = capacity()
      const n = inside + 1
      if (s.kind === 'cliff' && n > c) return clock.after(0.05, () => done(500))
      const base = work()
      const [ms, timeout] =
        s.kind === 'cliff'
          ? [base, Infinity]
          : s.kind === 'gradual'
            ? [(base * Math.max(c, n)) / c, 10 * s.work]
            : [base * (1 + Math.max(0, n - c) / 4), 3 * s.work]
      const fails = ms > timeout
      inside++
      clock.after(fails ? timeout : ms, () => {
        inside--
        done(fails ? 500 : 200)
      })
    },
  }
}

/** C workers and a FIFO queue as deep as C: a 502 at once when it is full. */
function pool(clock: VirtualClock, capacity: () => number, work: () => number): Backend {
  let busy = 0
  const queue: (() => void)[] = []
  const start = (done: (status: number) => void): void => {
    busy++
    clock.after(work(), () => {
      busy--
      done(200)
      // A worker is free: the next in the queue (while the pool, perhaps shrunk, has room).
      while (queue.length > 0 && busy < capacity()) queue.shift()!()
    })
  }
  return {
    capacity,
    get inside() {
      return busy + queue.length
    },
    submit(done) {
      const c = capacity()
      if (busy < c && queue.length === 0) start(done)
      else if (queue.length < c) queue.push(() => start(done))
      else clock.after(0.05, () => done(502))
    },
  }
}
