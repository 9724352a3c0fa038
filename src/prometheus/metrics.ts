/**
 * `airlock-shield/prometheus`: the gate's metrics for Prometheus, on `prom-client` (an optional
 * peer: `npm install prom-client`).
 *
 * ```ts
 * import { register } from 'prom-client'
 * import { airlockMetrics } from 'airlock-shield/prometheus'
 * airlockMetrics()                                     // into prom-client's default registry
 * app.get('/metrics', async (_req, reply) => reply.type(register.contentType).send(await register.metrics()))
 * ```
 *
 * Counters and the store latency histogram follow the events on `node:diagnostics_channel`; the
 * gauges (slots held, limit, the line, admissions per minute, ETA, breaker) are read at scrape time
 * from every open gate of this process, cluster-wide where its store knows (one store call per gate,
 * at most once per `statusCacheMs`). Metric names and labels: docs/observability.md.
 */
import diagnostics from 'node:diagnostics_channel'
import type { Registry } from 'prom-client'
import { loadPeer } from '../base/peer.js'
import { optionError } from '../base/errors.js'
import type { BreakerEvent, ChallengeEvent, ControlEvent, DecisionEvent, FailoverEvent, QueueEvent, ReleaseEvent, StoreEvent } from '../base/events.js'
import { CONTROL_MODES } from '../core/control.js'
import { received, durationOrZero, knownKeys } from '../base/validate.js'
import { openGates } from '../gate/registry.js'
import type { GateStatus } from '../gate/types.js'

export interface AirlockMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's default registry. */
  registry?: Registry
  /** Prefix of every metric name. Default `'airlock_'`. */
  prefix?: string
  /** Buckets of the store latency histogram, in seconds. Default from 0.5 ms to 1 s. */
  buckets?: readonly number[]
  /** A gate's status is read from its store at most this often (ms) however often Prometheus scrapes. Default 1000. */
  statusCacheMs?: number
}

/** What {@link airlockMetrics} returns: `stop()` unsubscribes and removes the metrics from the registry. */
export interface AirlockMetrics {
  stop(): void
}

const DEFAULT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

/**
 * Registers airlock's metrics (see the module doc) and starts following its events.
 * @throws `ERR_AIRLOCK_OPTION` naming a bad option.
 */
export function airlockMetrics(options: AirlockMetricsOptions = {}): AirlockMetrics {
  if (options === null || typeof options !== 'object') optionError(`airlockMetrics() options must be an object, got ${received(options)}`)
  knownKeys('airlockMetrics()', options, ['registry', 'prefix', 'buckets', 'statusCacheMs'])
  // Loaded here, not imported: a process that never calls this never needs prom-client (the CLI bundles this).
  const client = loadPeer<typeof import('prom-client')>('prom-client', 'airlockMetrics()')
  const registry = options.registry ?? client.register
  if (typeof registry?.registerMetric !== 'function') optionError(`registry must be a prom-client Registry, got ${received(options.registry)}`)
  const prefix = options.prefix ?? 'airlock_'
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) {
    optionError(`prefix must be a Prometheus metric name prefix such as 'airlock_', got ${received(prefix)}`)
  }
  const buckets = options.buckets ?? DEFAULT_BUCKETS
  if (!Array.isArray(buckets) || buckets.some((b) => typeof b !== 'number' || !(b > 0))) {
    optionError(`buckets must be an array of positive numbers (seconds), got ${received(buckets)}`)
  }
  const cacheMs = durationOrZero('statusCacheMs', options.statusCacheMs ?? 1000)
  const registers = [registry]
  // Each metric's name, as registered: the one list stop() removes.
  const registered: string[] = []
  const named = (name: string): string => {
    registered.push(`${prefix}${name}`)
    return `${prefix}${name}`
  }
  /** A counter the event handlers below increment. */
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new client.Counter<L>({ name: named(name), help, labelNames, registers })

  // Decisions are on every request's path: counted in plain numbers, handed to prom-client at scrape
  // time (a prom-client inc hashes its labels on every call).
  const decisionCounts = new Map<string, Map<string, { kind: string; reason: string; n: number }>>()
  new client.Counter({
    name: named('decisions_total'),
    help: 'Gate decisions, by gate, kind (bypass, pass, admit, busy, queued) and reason.',
    labelNames: ['gate', 'kind', 'reason'] as const,
    registers,
    collect() {
      this.reset()
      for (const [gate, byKind] of decisionCounts) for (const c of byKind.values()) this.inc({ gate, kind: c.kind, reason: c.reason }, c.n)
    },
  })
  const queueEvents = counter('queue_events_total', "Events of a gate's waiting room: enter (a new place), wait (a poll), admit (from the line), full (refused).", ['gate', 'event'] as const)
  const storeDuration = new client.Histogram({
    name: named('store_duration_seconds'),
    help: 'Store calls (Redis scripts), by store, operation and outcome (ok, error).',
    labelNames: ['store', 'operation', 'outcome'] as const,
    buckets: [...buckets],
    registers,
  })
  const controlChanges = counter('control_changes_total', "Live control changes: set (by airlockControl in this process), applied (by this process's gates).", ['gate', 'event'] as const)
  const breakerChanges = counter('breaker_transitions_total', "A gate's circuit breaker opening or closing.", ['gate', 'state'] as const)
  const failovers = counter('store_failovers_total', 'A store found a different Redis server answering (a failover, a restart): its last writes may be lost.', ['store', 'reason'] as const)

  const commandReleases = counter('command_releases_total', "Visitors whose slot or pass the origin or the app gave back with the response header Airlock-Command: release.", ['gate'] as const)

  const challenges = counter('challenges_total', "The waiting room's proof-of-work door, by outcome: issued, solved, noscript (let in after the slower door's wait), refused, shadowed.", ['gate', 'outcome'] as const)
  const solveSeconds = new client.Histogram({
    name: named('challenge_solve_seconds'),
    help: "From a new visitor's first challenge to its solution (page load, solve and the request that brings it).",
    labelNames: ['gate'] as const,
    buckets: [0.25, 0.5, 1, 2, 3, 5, 10, 20, 60],
    registers,
  })
  const difficulty = new client.Gauge({
    name: named('challenge_difficulty'),
    help: 'Leading zero bits of the last challenge issued (it rises with new places a second and the length of the line).',
    labelNames: ['gate'] as const,
    registers,
  })

  // Gauges, read at scrape time from the open gates of this process (one store call per gate, cached).
  const cache = new Map<string, { at: number; status: Promise<GateStatus | null> }>()
  const statusOf = (gate: ReturnType<typeof openGates>[number]): Promise<GateStatus | null> => {
    const hit = cache.get(gate.name)
    if (hit && Date.now() - hit.at < cacheMs) return hit.status
    const status = gate.status().catch(() => null) // a store outage: the gauges of that gate are left out
    cache.set(gate.name, { at: Date.now(), status })
    return status
  }
  const gates = (): ReturnType<typeof openGates> => {
    const byName = new Map<string, ReturnType<typeof openGates>[number]>()
    for (const g of openGates()) if (!byName.has(g.name)) byName.set(g.name, g)
    return [...byName.values()]
  }
  const gauge = (name: string, help: string, read: (s: GateStatus) => number | null) =>
    new client.Gauge({
      name: named(name),
      help,
      labelNames: ['gate'] as const,
      registers,
      async collect() {
        this.reset()
        for (const gate of gates()) {
          const status = await statusOf(gate)
          const value = status === null ? null : read(status)
          if (value !== null) this.set({ gate: gate.name }, value)
        }
      },
    })
  gauge('slots_held', 'Slots held in the store, by every instance (cluster-wide).', (s) => s.held)
  gauge('limit', "The gate's limit.", (s) => s.limit)
  gauge('queue_length', 'Visitors waiting in line (cluster-wide).', (s) => s.waiting)
  gauge('admissions_per_minute', 'Admissions in the last minute, summed over the instances that report.', (s) => s.admittedLastMinute)
  gauge('eta_seconds', 'The wait a newcomer would see (absent while unknown).', (s) => s.eta)
  gauge('instances', 'Instances of the gate that reported recently.', (s) => s.instances.length)
  gauge('admission_rate_per_minute', 'The live admission rate in force (absent when none).', (s) => s.control.admissionRate)
  gauge('adaptive_limit', "The adaptive limit's figure for the fleet (absent when off).", (s) => s.adaptive?.limit ?? null)
  gauge('adaptive_latency_baseline_ms', "The adaptive limit's no-load latency estimate, ms.", (s) => s.adaptive?.baseline ?? null)
  gauge('adaptive_latency_recent_ms', "The adaptive limit's last judged window's 95th percentile latency, ms.", (s) => s.adaptive?.recent ?? null)
  new client.Gauge({
    name: named('control_mode'),
    help: `1 for the live control's mode in force on this instance (${CONTROL_MODES.join(', ')}), else 0.`,
    labelNames: ['gate', 'mode'] as const,
    registers,
    collect() {
      this.reset()
      for (const gate of gates()) for (const mode of CONTROL_MODES) this.set({ gate: gate.name, mode }, gate.control.mode === mode ? 1 : 0)
    },
  })
  new client.Gauge({
    name: named('breaker_open'),
    help: "1 while this instance's circuit breaker is open (the store is not called), else 0.",
    labelNames: ['gate'] as const,
    registers,
    collect() {
      this.reset()
      for (const gate of gates()) this.set({ gate: gate.name }, gate.breaker === 'open' ? 1 : 0)
    },
  })

  // Children cached by their labels: the decision counter is on every request's path.
  const onDecision = (m: unknown): void => {
    const e = m as DecisionEvent
    let byKind = decisionCounts.get(e.gate)
    if (byKind === undefined) decisionCounts.set(e.gate, (byKind = new Map()))
    // Without a reason (pass, bypass, queued) the kind is the key: no string is built.
    const key = e.reason === undefined ? e.kind : `${e.kind}:${e.reason}`
    const c = byKind.get(key)
    if (c === undefined) byKind.set(key, { kind: e.kind, reason: e.reason ?? '', n: 1 })
    else c.n++
  }
  const onStore = (m: unknown): void => {
    const e = m as StoreEvent
    storeDuration.labels(e.store, e.operation, e.ok ? 'ok' : 'error').observe(e.durationMs / 1000)
  }
  /** A channel's handler that counts each event under the labels it reads from it. */
  const counting =
    <E>(c: { labels(...values: string[]): { inc(): void } }, labels: (e: E) => string[]) =>
    (m: unknown): void =>
      c.labels(...labels(m as E)).inc()
  const onBreaker = counting<BreakerEvent>(breakerChanges, (e) => [e.gate, e.state])
  const onQueue = counting<QueueEvent>(queueEvents, (e) => [e.gate, e.event])
  const onControl = counting<ControlEvent>(controlChanges, (e) => [e.gate, e.event])
  const onFailover = counting<FailoverEvent>(failovers, (e) => [e.store, e.reason])
  const onRelease = counting<ReleaseEvent>(commandReleases, (e) => [e.gate])
  const onChallenge = (m: unknown): void => {
    const e = m as ChallengeEvent
    challenges.labels(e.gate, e.outcome).inc()
    if (e.outcome === 'issued') difficulty.labels(e.gate).set(e.difficulty)
    if (e.outcome === 'solved') solveSeconds.labels(e.gate).observe(e.ms / 1000)
  }
  const subscriptions: [string, (m: unknown) => void][] = [
    ['airlock:challenge', onChallenge],
    ['airlock:release', onRelease],
    ['airlock:failover', onFailover],
    ['airlock:control', onControl],
    ['airlock:decision', onDecision],
    ['airlock:store', onStore],
    ['airlock:breaker', onBreaker],
    ['airlock:queue', onQueue],
  ]
  for (const [channel, fn] of subscriptions) diagnostics.subscribe(channel, fn)

  return {
    stop() {
      for (const [channel, fn] of subscriptions) diagnostics.unsubscribe(channel, fn)
      for (const name of registered) registry.removeSingleMetric(name)
    },
  }
}
