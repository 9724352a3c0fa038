/**
 * The gate, framework-free: from a plain {@link RequestView} it decides whether a request may reach
 * the site. This façade takes what every mode shares (bypass, skip, the confirm request, counting
 * and publishing decisions, the adaptive limit's hold-back); each mode's flow is its own module
 * (session.ts, request.ts, their common refusals in flow.ts). Options are resolved in options.ts,
 * store calls guarded in guard.ts, answers built in src/pages/answers.ts; the Fastify plugin and
 * the Express middleware translate.
 */
import { createSemaphore, type Semaphore, type SemaphoreState } from '../core/semaphore.js'
import { confirmedAnswer, type GateResponse } from '../pages/answers.js'
import { GateAnswers } from './busy.js'
import { StoreGuard } from '../core/guard.js'
import { LocalQuota } from './local-quota.js'
import { LossWatch } from './failover.js'
import { gateStatus, GateStats, StatusWriter } from './stats.js'
import { breakerChannel, decisionChannel, type DecisionEvent } from '../base/events.js'
import { childOptions, resolveGateOptions, warnRandomSecret, type GateSettings } from './options.js'
import { EffectiveLimit, type LimitSource } from './limit.js'
import { AdaptiveGate, ADAPTIVE_WINDOW_MS } from './adaptive.js'
import { ControlInForce } from './live-control.js'
import type { ControlState } from '../core/control.js'
import { liveGates } from './registry.js'
import { MinuteTally } from '../core/history.js'
import { isAirlockError } from '../base/errors.js'
import { historyFor } from '../stores/history.js'
import { BYPASS, CONFIRM_QUERY, holdsPass } from './decisions.js'
import { Passes } from './passes.js'
import type { Flow, GateParts } from './flow.js'
import { SessionFlow } from './session.js'
import { RequestFlow } from './request.js'
import { Tally, type ReleasedBy, type VisitSink } from './tally.js'
import { VisitEvents } from './figures.js'
import type { BypassDecision, GateDecision, GateLogger, GateOptions, GateStatus, RequestView } from './types.js'

export type * from './types.js'
export { GATE_OPTION_KEYS } from './types.js'
export { CONFIRM_QUERY, holdsPass } from './decisions.js'
export { openGates } from './registry.js'

/**
 * A framework-free gate. Create with {@link createGate}; route-level gates with {@link Gate.child}.
 * Its secrets are private (not even `util.inspect` shows them).
 */
export class Gate<Req = unknown> {
  readonly name: string
  readonly mode: 'session' | 'request'
  readonly passTtl: number
  readonly provisionalTtl: number
  readonly recheckInterval: number
  /** Request mode: how long a slot may live if its handler never ends. */
  readonly ttl: number
  /** Request mode: how long a finished request's slot waits for the next one (0: no reuse). */
  readonly reuseWindow: number
  readonly retryAfter: number
  readonly onStoreError: 'local' | 'open' | 'closed'
  readonly storeTimeout: number
  readonly cookieName: string
  /** The waiting room's ticket cookie (its door's is this name and `_door`). */
  readonly ticketCookieName: string
  readonly store: GateSettings<Req>['store']
  readonly logger: GateLogger
  /** True when the secret is the random per-process one. */
  readonly randomSecret: boolean

  readonly #options: GateOptions<Req>
  readonly #s: GateSettings<Req>
  readonly #passes: Passes
  readonly #ref: WeakRef<Gate<never>>
  /** The confirm request's `204`, made on the first one. */
  #confirmed: GateResponse | undefined
  readonly #limit: EffectiveLimit
  readonly #control: ControlInForce
  readonly #adaptor: AdaptiveGate | undefined
  /** The gate's account of its visitors: every sink it has (see tally.ts). */
  readonly #tally: Tally
  /** This gate's mode's decision flow (session.ts or request.ts). */
  readonly #flow: Flow<Req>
  readonly #history: MinuteTally | undefined
  private readonly sem: Semaphore
  private readonly guard: StoreGuard
  private readonly stats: GateStats
  private readonly reporter: StatusWriter
  private readonly answers: GateAnswers<Req>

  constructor(options: GateOptions<Req> = {}) {
    const s = resolveGateOptions(options)
    this.#options = options
    this.#s = s
    this.name = s.name
    const limit = (this.#limit = new EffectiveLimit(s.limit))
    const liveLimit = (): number => limit.value
    const control = (this.#control = new ControlInForce(s.name, s.store, s.logger, limit, s.control ? 5_000 : 0))
    const admissionRate = (): number | null => control.rate
    ;({
      mode: this.mode,
      passTtl: this.passTtl,
      provisionalTtl: this.provisionalTtl,
      recheckInterval: this.recheckInterval,
      ttl: this.ttl,
    } = s)
    ;({ reuseWindow: this.reuseWindow, onStoreError: this.onStoreError, storeTimeout: this.storeTimeout } = s)
    this.retryAfter = s.busy.retryAfter
    ;({ store: this.store, logger: this.logger, randomSecret: this.randomSecret } = s)
    this.cookieName = s.cookie.name
    this.ticketCookieName = s.ticketCookieName
    this.sem = createSemaphore({ name: s.name, limit: liveLimit, admissionRate, ttl: s.slotTtl, store: s.store })
    const stats = (this.stats = new GateStats(s.mode, liveLimit))
    const tally = (this.#tally = new Tally([stats.visits, new VisitEvents(s.name)]))
    tallies.set(this as unknown as Gate<never>, tally)
    this.guard = new StoreGuard({
      name: s.name,
      budgetName: 'storeTimeout',
      logger: s.logger,
      policy: s.onStoreError,
      probe: () => s.store.state(s.name),
      probeTimeout: s.storeTimeout,
      onCall: (ms, ok) => stats.storeCall(ms, ok),
      onBreaker: (open) => {
        stats.breaker = open ? 'open' : 'closed'
        if (breakerChannel.hasSubscribers) breakerChannel.publish({ gate: s.name, state: stats.breaker })
      },
    })
    this.#passes = new Passes(
      {
        gate: s.name,
        passTtl: s.passTtl,
        provisionalTtl: s.provisionalTtl,
        recheckInterval: s.recheckInterval,
        cacheSize: s.cacheSize,
        cookie: s.cookie,
        call: (op, deadline) => this.guard.call(op, deadline, s.storeTimeout),
      },
      s.secrets,
      this.sem,
    )
    const answers = (this.answers = new GateAnswers<Req>(s))
    const quota = new LocalQuota(liveLimit, s.mode === 'session', s.passTtl)
    const loss = new LossWatch(
      s.store,
      s.name,
      s.logger,
      s.mode === 'session' ? Math.max(s.provisionalTtl, s.recheckInterval) : s.ttl,
    )
    const parts: GateParts<Req> = {
      s,
      sem: this.sem,
      guard: this.guard,
      answers,
      limit,
      liveLimit,
      admissionRate,
      control,
      quota,
      loss,
      tally,
    }
    // The session flow checks the queue's options (its line), so it is built before any timer starts.
    const session = s.mode === 'session' ? new SessionFlow<Req>(parts, this.#passes) : undefined
    this.reporter = new StatusWriter(s.store, s.name, stats, s.statusInterval, (instances) => (quota.fleet = instances))
    const onAdaptError = (err: unknown): void => this.guard.logFailure(err, 'adaptive limit')
    this.#adaptor =
      s.adaptive &&
      new AdaptiveGate({
        name: s.name,
        store: s.store,
        limit,
        settings: s.adaptive,
        window: ADAPTIVE_WINDOW_MS,
        sessions: s.mode === 'session',
        onError: onAdaptError,
        revoke: (d) => void this.release(d, 'operator'),
      })
    this.#flow = session ?? new RequestFlow<Req>(parts, this.#adaptor)
    if (s.control) this.ready = control.start()
    if (s.history) {
      // A store closed before its gates: the last minute is lost, as the caller chose.
      const onError = (err: unknown): void =>
        void (isAirlockError(err, 'ERR_AIRLOCK_CLOSED') || this.guard.logFailure(err, 'history'))
      this.#history = new MinuteTally({
        storage: historyFor(s.store)!,
        name: s.name,
        keepMs: s.history.days * 86_400_000,
        onError,
      })
      this.#tally.add(this.#history)
    }
    this.#ref = new WeakRef(this as unknown as Gate<never>)
    liveGates.add(this.#ref)
    warnRandomSecret(s)
  }

  /** The limit in force now: the configured one, unless a live control or the adaptive limit changed it. */
  get limit(): number {
    return this.#limit.value
  }

  /** Where {@link limit} comes from now. */
  get limitSource(): LimitSource {
    return this.#limit.source
  }

  /** The live control this instance applies (see `airlockControl`); `version` 0 when never set. */
  get control(): ControlState {
    return this.#control.state
  }

  /** Settles once the gate read its live control (at once without `control`); until then it decides on its options. */
  readonly ready: Promise<void> = Promise.resolve()

  /**
   * A gate for some routes (its own `name`, so its own slots and cookie) that inherits this gate's
   * other options: store, secret, logger, pages, ... (Fastify's route-level `config.airlock`).
   */
  child(options: GateOptions<Req> & { name: string }): Gate<Req> {
    return new Gate<Req>(
      childOptions(this.#options, options, this.logger, this.randomSecret ? undefined : this.#s.secrets),
    )
  }

  /**
   * Decides one request. Synchronous for pass holders found in the cache (no store call, no crypto);
   * a promise otherwise. Never rejects: store trouble is handled by `onStoreError`.
   */
  decide(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const d = this.decideNow(view)
    // Synchronous: no clock read on the hot path. A pass whose last request failed may wait first.
    if (!(d instanceof Promise))
      return this.#adaptor?.holdBack(d)?.then((x) => this.decided(x, -1)) ?? this.decided(d, -1)
    const t0 = decisionChannel.hasSubscribers ? performance.now() : -1
    const adaptor = this.#adaptor // only a gate with the adaptive limit holds a pass back: no extra tick for the others
    return (adaptor ? d.then((x) => adaptor.holdBack(x) ?? x) : d).then((decision) => this.decided(decision, t0))
  }

  /** Session mode, from the adapters: the response to `decision` ended after `ms` (`failed`: 5xx, thrown); request mode measures at the slot's release. */
  measure(ms: number, failed: boolean, decision?: GateDecision): void {
    this.#adaptor?.measured(ms, failed, decision)
  }

  /** True with an adaptive limit (`limit: { min, max }`): the adapters then report response times. */
  get adaptive(): boolean {
    return this.#adaptor !== undefined
  }

  /** Session mode: true when the adaptive limit learns from the response to `decision` (see `AdaptiveGate.learnsFrom`). */
  measures(decision: GateDecision): boolean {
    return this.#adaptor?.learnsFrom(decision) ?? false
  }

  /** Tells `sink` of every visitor from now on (see tally.ts: what is told, when); returns the function that removes it. */
  addVisitSink(sink: VisitSink): () => void {
    return this.#tally.add(sink)
  }

  /** Counts a decision, and publishes it while `airlock:decision` has a subscriber (`t0` < 0: taken synchronously). */
  private decided<D extends GateDecision>(d: D, t0: number): D {
    this.stats.count(d)
    // Admissions from the line are told by the session flow, with their wait.
    if (d.kind === 'admit' && d.reason !== 'line') this.#tally.admitted('slot', null)
    else if (d.kind === 'busy') this.#tally.turnedAway(d.reason)
    if (this.#adaptor && (d.kind === 'queued' || (d.kind === 'busy' && d.reason === 'full'))) this.#adaptor.refused()
    if (decisionChannel.hasSubscribers) {
      const reason = d.kind === 'admit' || d.kind === 'busy' ? d.reason : undefined
      const event: DecisionEvent = {
        gate: this.name,
        mode: this.mode,
        kind: d.kind,
        reason,
        durationMs: t0 < 0 ? 0 : performance.now() - t0,
      }
      decisionChannel.publish(event)
    }
    return d
  }

  private decideNow(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const s = this.#s
    if (s.confirm && view.url.endsWith(CONFIRM_QUERY)) return this.confirmRequest(view)
    if (s.bypass?.bypasses(view.url, view.routing)) return this.confirm(view)
    if (s.skip !== undefined && this.answers.userCall('skip', s.skip, view.request) === true) return this.confirm(view)
    if (this.#control.passthrough) return BYPASS
    return this.#flow.decide(view)
  }

  /** A request seen but not gated: never refused; a pass it carries is confirmed or slid when due (`Passes.confirm`). */
  confirm(view: RequestView<Req>): BypassDecision | Promise<BypassDecision> {
    return this.mode === 'request' ? BYPASS : this.#passes.confirm(view.headers.cookie, view.secure, this.storeTimeout)
  }

  /** The gate's own confirm request (`?__airlock=confirm`): `204`, with the confirmed pass. */
  private confirmRequest(view: RequestView<Req>): BypassDecision | Promise<BypassDecision> {
    const confirmed = (this.#confirmed ??= confirmedAnswer(this.name))
    const answer = (d: BypassDecision): BypassDecision => ({
      kind: 'bypass',
      setCookie: d.setCookie,
      response: confirmed,
    })
    const d = this.confirm(view)
    return d instanceof Promise ? d.then(answer) : answer(d)
  }

  /**
   * Ends what `decision` holds: a request-mode slot, or (session mode) the visitor's pass and its
   * slot. Send {@link clearCookie} with the response to forget the pass in the browser.
   * `true` when a live slot was freed. Never rejects. (`by`: who ended it, for the figures; the app
   * or the origin unless the gate says otherwise.)
   */
  async release(decision: GateDecision, by: ReleasedBy = 'origin'): Promise<boolean> {
    if (decision.kind === 'admit' && decision.slot) return (decision.slot as InternalSlot).release(false, by)
    if (!holdsPass(decision)) return false
    const token = decision.token
    this.#passes.forget(token)
    try {
      const { store, name } = this.sem
      const freed = store.releaseHeld
        ? await store.releaseHeld(name, token)
        : (await store.release(name, token)) && { heldMs: null }
      if (freed) this.#tally.released(by, freed.heldMs)
      return freed !== false
    } catch (err) {
      this.guard.logFailure(err, 'release')
      return false
    }
  }

  /** A `Set-Cookie` value that removes the pass cookie. */
  clearCookie(secure: boolean): string {
    return this.#passes.clearCookie(secure)
  }

  /** Live slots of this gate in its store. */
  state(): Promise<SemaphoreState> {
    return this.sem.getState()
  }

  /**
   * The gate's state across every instance: slots held and the line in the store, admissions in
   * the last minute, the wait a newcomer would see, and each instance that reported recently with
   * its own counters (this one first, with its latest figures). One store call.
   */
  async status(): Promise<GateStatus> {
    const status = await gateStatus(this.store, this.name, this.mode, this.limit, this.stats, (e) =>
      this.#tally.ended(e),
    )
    return {
      ...status,
      limitSource: this.#limit.source,
      control: this.#control.state,
      adaptive: this.#adaptor?.state ?? null,
    }
  }

  /** This instance's circuit breaker: `'open'` while it answers without calling the store. */
  get breaker(): 'open' | 'closed' {
    return this.stats.breaker
  }

  /** Stops timers and forgets cached passes. Does not close the store (you own it). Idempotent. */
  async close(): Promise<void> {
    liveGates.delete(this.#ref)
    this.reporter.close()
    this.#control.close()
    this.#adaptor?.close()
    this.guard.close()
    this.#passes.clear()
    await this.#flow.close()
    // The last minute goes to the store, within the store budget (a store already gone costs no more).
    if (this.#history)
      await Promise.race([this.#history.close(), new Promise((r) => setTimeout(r, this.storeTimeout).unref())])
  }
}

/** The gates' tallies, for {@link addVisitSink}. */
const tallies = new WeakMap<Gate<never>, Tally>()

/** A request-mode slot's release as the gate calls it: with who ended it (see slot-pool.ts `requestSlot`). */
type InternalSlot = { release(failed: boolean, by: ReleasedBy): Promise<boolean> }

/**
 * Internal (the per-minute history): adds a sink to everything `gate` tells of its visitors (see
 * tally.ts: what calls it, when). Returns the function that removes it.
 */
export function addVisitSink(gate: Gate<never> | Gate<unknown>, sink: VisitSink): () => void {
  const tally = tallies.get(gate as Gate<never>)
  if (tally === undefined) throw new TypeError('addVisitSink() needs a gate made by createGate()')
  return tally.add(sink)
}

/**
 * Creates a gate. Validates every option now: throws `ERR_AIRLOCK_OPTION` with a sentence naming
 * the option and the fix.
 */
export function createGate<Req = unknown>(options?: GateOptions<Req>): Gate<Req> {
  return new Gate<Req>(options)
}
