/**
 * What one gate instance counts: its decisions, admissions over the last minute, the latency of its
 * store calls, its breaker. It writes them into the store (its status) at most once per `statusInterval`, so a
 * cluster-wide status (and the dashboard) can show every instance.
 */
import { hostname } from 'node:os'
import { estimateWait } from '../core/waiting-room.js'
import type { Store } from '../stores/types.js'
import type { GateDecision, GateStatus } from './types.js'
import type { GateCounters, InstanceStatus } from './status-types.js'
import { VisitFigures } from './figures.js'
import type { StoreEnded } from '../stores/types.js'

let sequence = 0
const SAMPLES = 256

/** Counters of an instance that has decided nothing yet. */
export function zeroCounters(): GateCounters {
  return {
    admitted: 0,
    busy: 0,
    queued: 0,
    pass: 0,
    bypass: 0,
    storeErrors: 0,
    clientShare: 0,
    challenged: 0,
    challengeFailed: 0,
    admittedFromLine: 0,
    abandoned: 0,
    released: { visitor: 0, origin: 0, expiry: 0, operator: 0 },
  }
}

export class GateStats {
  readonly id: string
  readonly counters: GateCounters = zeroCounters()
  /** The visit sink behind `counters`' visit figures and the recent waits and visits (see tally.ts). */
  readonly visits = new VisitFigures(this.counters)
  breaker: 'open' | 'closed' = 'closed'
  /** Admissions per second over the last minute: a ring indexed by second. */
  private readonly perSecond = new Uint32Array(60)
  private ringSecond = 0
  private readonly latencies = new Float64Array(SAMPLES)
  private latencyCount = 0

  constructor(
    private readonly mode: 'session' | 'request',
    private readonly limit: () => number,
  ) {
    this.id = `${hostname()}:${process.pid}:${++sequence}`
  }

  /** Counts one decision. */
  count(d: GateDecision): void {
    switch (d.kind) {
      case 'admit':
        this.counters.admitted++
        this.admission(Date.now())
        break
      case 'pass':
        this.counters.pass++
        break
      case 'busy':
        this.counters.busy++
        if (d.reason === 'client-share') this.counters.clientShare++
        else if (d.reason === 'challenge') this.counters.challenged++
        else if (d.reason === 'challenge-failed') this.counters.challengeFailed++
        break
      case 'queued':
        this.counters.queued++
        break
      default:
        this.counters.bypass++
    }
  }

  /** One store call: its duration, and whether it failed. */
  storeCall(ms: number, ok: boolean): void {
    this.latencies[this.latencyCount++ % SAMPLES] = ms
    if (!ok) this.counters.storeErrors++
  }

  admittedLastMinute(now: number): number {
    this.advance(Math.floor(now / 1000))
    let sum = 0
    for (const n of this.perSecond) sum += n
    return sum
  }

  status(now: number): InstanceStatus {
    const n = Math.min(this.latencyCount, SAMPLES)
    const sorted = Array.from(this.latencies.subarray(0, n)).sort((a, b) => a - b)
    const at = (q: number): number | null =>
      n === 0 ? null : Math.round(sorted[Math.min(n - 1, Math.floor(q * n))]! * 100) / 100
    return {
      id: this.id,
      host: hostname(),
      pid: process.pid,
      mode: this.mode,
      limit: this.limit(),
      counters: { ...this.counters, released: { ...this.counters.released } },
      admittedLastMinute: this.admittedLastMinute(now),
      storeLatencyMs: { p50: at(0.5), p99: at(0.99) },
      ...this.visits.figures(now),
      breaker: this.breaker,
      at: now,
    }
  }

  private admission(now: number): void {
    const second = Math.floor(now / 1000)
    this.advance(second)
    this.perSecond[second % 60]!++
  }

  /** Clears the seconds that passed since the ring was last moved. */
  private advance(second: number): void {
    if (second <= this.ringSecond) return
    const gap = Math.min(60, second - this.ringSecond)
    for (let i = 1; i <= gap; i++) this.perSecond[(this.ringSecond + i) % 60] = 0
    this.ringSecond = second
  }
}

/** An instance's status read back from the store (`null` when it is not one). */
export function parseStatus(data: string): InstanceStatus | null {
  try {
    const r = JSON.parse(data) as InstanceStatus
    return typeof r === 'object' && r !== null && typeof r.id === 'string' && typeof r.counters === 'object' ? r : null
  } catch {
    return null
  }
}

/** The store's `writeStatus`, or the name a custom store written before 0.2 has for it (`report`). */
function writerOf(store: Store): Store['writeStatus'] {
  return store.writeStatus ?? store.report
}

/** Writes an instance's status into its store every `interval` ms (at most one in flight). */
export class StatusWriter {
  // #private: a gate must stay JSON.stringify-able (a Timeout is circular) and print no internals
  readonly #timer: NodeJS.Timeout | undefined
  #busy = false

  constructor(
    private readonly store: Store,
    private readonly name: string,
    private readonly stats: GateStats,
    private readonly interval: number,
    /** Told how many instances write their status (this one included), when the store tells. */
    private readonly onFleet?: (instances: number) => void,
  ) {
    if (interval > 0 && writerOf(store) !== undefined)
      this.#timer = setInterval(() => void this.write(), interval).unref()
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer)
  }

  /** A write that fails is only counted: the next one will tell. */
  private async write(): Promise<void> {
    if (this.#busy) return
    this.#busy = true
    try {
      const instances = await writerOf(this.store)!.call(
        this.store,
        this.name,
        this.stats.id,
        JSON.stringify(this.stats.status(Date.now())),
        Math.max(3 * this.interval, 2000),
      )
      if (typeof instances === 'number') this.onFleet?.(instances)
    } catch {
      this.stats.storeCall(0, false)
    } finally {
      this.#busy = false
    }
  }
}

/** A gate's state as its store alone knows it: what any process can read, gate or not (the dashboard). */
export interface ClusterStatus {
  name: string
  /** The largest limit the instances report (`null` when none reports). */
  limit: number | null
  held: number
  waiting: number
  /** Admissions in the last minute, summed over the instances that report. */
  admittedLastMinute: number
  /** Seconds a newcomer would wait: 0 while a slot is free and nobody waits; `null` while unknown. */
  eta: number | null
  /** Instances within their reports' ttl. */
  instances: InstanceStatus[]
  /** The store's clock (ms). */
  at: number
}

/** {@link ClusterStatus} of gate `name` in `store` (one store call; `onEnded` is told what it dropped, see `StoreEnded`). */
export async function clusterStatus(
  store: Store,
  name: string,
  limit?: number,
  onEnded?: (e: StoreEnded | undefined) => void,
): Promise<ClusterStatus> {
  let held: number
  let waiting: number
  let etaMs: number | null = null
  let at = Date.now()
  let instances: InstanceStatus[] = []
  if (typeof store.status === 'function') {
    const st = await store.status(name)
    onEnded?.(st.ended)
    ;({ held, waiting } = st)
    etaMs = estimateWait(waiting + 1, st.admitted, st.windowMs).eta
    at = st.now
    instances = st.instances.flatMap((i) => {
      const r = parseStatus(i.data)
      return r === null ? [] : [r]
    })
  } else {
    ;({ held, waiting } = await store.state(name))
  }
  const reported = instances.length > 0 ? Math.max(...instances.map((i) => i.limit)) : null
  const max = limit ?? reported
  return {
    name,
    limit: max,
    held,
    waiting,
    admittedLastMinute: instances.reduce((sum, i) => sum + i.admittedLastMinute, 0),
    eta: max !== null && held < max && waiting === 0 ? 0 : etaMs === null ? null : Math.ceil(etaMs / 1000),
    instances,
    at,
  }
}

/** A gate's cluster-wide status from its store, this instance first with its latest figures (see `Gate.status`). */
export async function gateStatus(
  store: Store,
  name: string,
  mode: 'session' | 'request',
  limit: number,
  stats: GateStats,
  onEnded?: (e: StoreEnded | undefined) => void,
): Promise<Omit<GateStatus, 'limitSource' | 'control' | 'adaptive'>> {
  const own = { ...stats.status(Date.now()), self: true }
  const cluster = await clusterStatus(store, name, limit, onEnded)
  const others = cluster.instances.filter((i) => i.id !== own.id).map((i) => ({ ...i, self: false }))
  const instances = [own, ...others]
  return {
    name,
    mode,
    limit,
    held: cluster.held,
    available: Math.max(0, limit - cluster.held),
    waiting: cluster.waiting,
    admittedLastMinute: instances.reduce((sum, i) => sum + i.admittedLastMinute, 0),
    eta: cluster.eta,
    instances,
    at: cluster.at,
  }
}
