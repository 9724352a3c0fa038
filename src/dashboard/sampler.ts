/**
 * What the operator's dashboard shows, sampled once a second per gate name from the store (one
 * `clusterStatus` call per name per second, however many pages are open), kept for 15 minutes so
 * a page opened now shows the recent past at once. The live control is followed by the store's
 * push (`watchControl`), not polled.
 */
import { decodeControl, UNSTEERED, type ControlState } from '../core/control.js'
import { clusterStatus, type ClusterStatus } from '../gate/stats.js'
import type { InstanceStatus } from '../gate/status-types.js'
import type { Store } from '../stores/types.js'
import { LiveMinutes, type LiveMinute } from './live-minutes.js'

/** One second of one gate, as the page draws it. No secret, no visitor data. */
export interface Sample {
  /** Store clock (ms). */
  t: number
  held: number
  limit: number | null
  waiting: number
  /** Admissions and busy answers per second over the last sample, summed over instances. */
  admittedPerSecond: number
  busyPerSecond: number
  eta: number | null
  /** Worst p50 and p99 store latency (ms) any instance reports. */
  storeP50: number | null
  storeP99: number | null
  /** Instances whose breaker is open. */
  breakersOpen: number
  instances: number
}

/** The latest view of one gate: its last sample, its instances, and the control in force. */
export interface GateView {
  name: string
  sample: Sample | null
  instances: Pick<
    InstanceStatus,
    'id' | 'host' | 'pid' | 'mode' | 'limit' | 'counters' | 'admittedLastMinute' | 'storeLatencyMs' | 'breaker'
  >[]
  control: ControlState
  /** The last sample failed (the store did not answer): the message, else `null`. */
  error: string | null
}

export interface SamplerOptions {
  store: Store
  names: readonly string[]
  /** ms between samples (default 1000). */
  interval?: number
  /** Samples kept per gate (default 900: 15 minutes at 1 s). */
  keep?: number
}

export class Sampler {
  readonly names: readonly string[]
  readonly #store: Store
  readonly #interval: number
  readonly #keep: number
  readonly #history = new Map<string, Sample[]>()
  readonly #views = new Map<string, GateView>()
  readonly #previous = new Map<string, Map<string, { admitted: number; busy: number }>>()
  readonly #live = new Map<string, LiveMinutes>()
  readonly #listeners = new Set<(views: GateView[]) => void>()
  readonly #unwatch: (() => void)[] = []
  #timer: NodeJS.Timeout | undefined
  #closed = false
  #busy = false

  constructor(options: SamplerOptions) {
    this.#store = options.store
    this.names = [...options.names]
    this.#interval = options.interval ?? 1000
    this.#keep = options.keep ?? 900
    for (const name of this.names) {
      this.#history.set(name, [])
      this.#live.set(name, new LiveMinutes())
      this.#views.set(name, { name, sample: null, instances: [], control: UNSTEERED, error: null })
    }
  }

  /** Starts sampling (first sample now) and following the live control. */
  async start(): Promise<void> {
    this.#timer = setInterval(() => void this.tick(), this.#interval).unref()
    const store = this.#store
    if (typeof store.control === 'function') {
      for (const name of this.names) {
        const read = (): Promise<void> =>
          store.control!(name).then(
            (record) => this.setView(name, { control: decodeControl(record, () => {}) }),
            () => {},
          )
        const unwatch = await store.watchControl?.(name, () => void read()).catch(() => undefined)
        if (unwatch) this.#unwatch.push(unwatch)
        await read()
      }
    }
    await this.tick()
  }

  /** The last 15 minutes of `name`. */
  history(name: string): readonly Sample[] {
    return this.#history.get(name) ?? []
  }

  /**
   * The minute in progress of `name` (and the one that just ended), from its instances' counters
   * as sampled: what the store's per-minute history does not hold yet (see live-minutes.ts).
   */
  liveMinutes(name: string): readonly LiveMinute[] {
    return this.#live.get(name)?.minutes() ?? []
  }

  views(): GateView[] {
    return this.names.map((n) => this.#views.get(n)!)
  }

  /** Told after every sample round and every control change; returns the unsubscribe function. */
  subscribe(listener: (views: GateView[]) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Takes one sample of every gate (one store call each); skipped while the previous is in flight. */
  async tick(): Promise<void> {
    if (this.#busy || this.#closed) return
    this.#busy = true
    try {
      await Promise.all(this.names.map((name) => this.sampleOne(name)))
    } finally {
      this.#busy = false
    }
    this.emit()
  }

  private async sampleOne(name: string): Promise<void> {
    let status: ClusterStatus
    try {
      status = await clusterStatus(this.#store, name)
    } catch (err) {
      this.setView(name, { error: (err as Error)?.message ?? String(err) }, false)
      return
    }
    const before = this.#previous.get(name) ?? new Map<string, { admitted: number; busy: number }>()
    const now = new Map<string, { admitted: number; busy: number }>()
    let admitted = 0
    let busy = 0
    for (const i of status.instances) {
      const c = { admitted: i.counters.admitted, busy: i.counters.busy }
      const p = before.get(i.id)
      if (p) {
        admitted += Math.max(0, c.admitted - p.admitted)
        busy += Math.max(0, c.busy - p.busy)
      }
      now.set(i.id, c)
    }
    this.#previous.set(name, now)
    this.#live.get(name)!.take(status.at, status.instances, status.waiting)
    const history = this.#history.get(name)!
    const last = history.at(-1)
    const seconds = last ? Math.max(0.001, (status.at - last.t) / 1000) : 1
    const worst = (pick: (i: InstanceStatus) => number | null): number | null => {
      const xs = status.instances.map(pick).filter((x): x is number => x !== null)
      return xs.length === 0 ? null : Math.max(...xs)
    }
    const sample: Sample = {
      t: status.at,
      held: status.held,
      limit: status.limit,
      waiting: status.waiting,
      admittedPerSecond: Math.round((admitted / seconds) * 10) / 10,
      busyPerSecond: Math.round((busy / seconds) * 10) / 10,
      eta: status.eta,
      storeP50: worst((i) => i.storeLatencyMs.p50),
      storeP99: worst((i) => i.storeLatencyMs.p99),
      breakersOpen: status.instances.filter((i) => i.breaker === 'open').length,
      instances: status.instances.length,
    }
    history.push(sample)
    if (history.length > this.#keep) history.splice(0, history.length - this.#keep)
    const instances = status.instances.map(
      ({ id, host, pid, mode, limit, counters, admittedLastMinute, storeLatencyMs, breaker }) => ({
        id,
        host,
        pid,
        mode,
        limit,
        counters,
        admittedLastMinute,
        storeLatencyMs,
        breaker,
      }),
    )
    this.setView(name, { sample, instances, error: null }, false)
  }

  private setView(name: string, patch: Partial<GateView>, emit = true): void {
    this.#views.set(name, { ...this.#views.get(name)!, ...patch })
    if (emit) this.emit()
  }

  private emit(): void {
    const views = this.views()
    for (const l of this.#listeners) l(views)
  }

  close(): void {
    this.#closed = true
    if (this.#timer) clearInterval(this.#timer)
    for (const u of this.#unwatch.splice(0)) u()
    this.#listeners.clear()
  }
}
