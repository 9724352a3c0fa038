/**
 * The gate's decision flows, framework-free: from a plain {@link RequestView} it decides whether a
 * request may reach the site. Options are resolved in options.ts, store calls guarded in guard.ts,
 * answers built in src/pages/answers.ts; the Fastify plugin and the Express middleware translate.
 */
import { newVisitorId, type EnterResult } from '../core/waiting-room.js'
import { createSemaphore, type Lease, type Semaphore, type SemaphoreState } from '../core/semaphore.js'
import { firstCookie, prefersJson } from '../base/http.js'
import { CONFIRMED, type GateResponse } from '../pages/answers.js'
import { GateAnswers } from './busy.js'
import { StoreGuard } from './guard.js'
import { LocalShare } from './local-share.js'
import { LossWatch } from './failover.js'
import { gateStatus, GateStats, Reporter } from './stats.js'
import { breakerChannel, decisionChannel, queueChannel, type DecisionEvent, type QueueEvent } from '../base/events.js'
import { GateLine } from './line.js'
import { childOptions, resolveGateOptions, warnRandomSecret, type GateSettings } from './options.js'
import { EffectiveLimit, type LimitSource } from './limit.js'
import { Adaptor, ADAPTIVE_WINDOW_MS, measureFrom } from './adaptive.js'
import { Steering, type Newcomers } from './steering.js'
import type { ControlState } from '../core/control.js'
import { liveGates } from './registry.js'
import { BYPASS, CONFIRM_LINK, CONFIRM_QUERY, holdsPass, releaseLate, releaseLateEntry, releaseLateTry } from './decisions.js'
import { clientShareKey, shareFor } from './client-share.js'
import type { DoorContext } from './door.js'
import type { ClientShare } from '../stores/types.js'
import { Passes } from './passes.js'
import { pooledSlot, requestSlot, SlotPool, type PooledSlot } from './slot-pool.js'
import type {
  AdmitDecision,
  BusyDecision,
  BypassDecision,
  GateDecision,
  GateLogger,
  GateOptions,
  GateStatus,
  RequestView,
} from './types.js'

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
  readonly store: GateSettings<Req>['store']
  readonly logger: GateLogger
  /** True when the secret is the random per-process one. */
  readonly randomSecret: boolean

  readonly #options: GateOptions<Req>
  readonly #s: GateSettings<Req>
  readonly #passes: Passes
  readonly #ref: WeakRef<Gate<never>>
  readonly #limit: EffectiveLimit
  readonly #steer: Steering
  readonly #adaptor: Adaptor | undefined
  /** The store unavailable (`onStoreError: 'local'`), or it lost its last writes (a failover). */
  readonly #share: LocalShare
  readonly #loss: LossWatch
  readonly #releaseError = (err: unknown): void => this.guard.logFailure(err, 'release')
  private readonly sem: Semaphore
  /** The waiting room (`queue`), request mode's reusable slots (`reuseWindow` > 0). */
  private readonly line: GateLine | undefined
  private readonly pool: SlotPool | undefined
  private readonly guard: StoreGuard
  private readonly stats: GateStats
  private readonly reporter: Reporter
  private readonly answers: GateAnswers<Req>

  constructor(options: GateOptions<Req> = {}) {
    const s = resolveGateOptions(options)
    this.#options = options
    this.#s = s
    this.name = s.name
    const limit = (this.#limit = new EffectiveLimit(s.limit))
    const liveLimit = (): number => limit.value
    const steer = (this.#steer = new Steering(s.name, s.store, s.logger, limit, s.control ? 5_000 : 0))
    const admissionRate = (): number | null => steer.rate
    ;({ mode: this.mode, passTtl: this.passTtl, provisionalTtl: this.provisionalTtl, recheckInterval: this.recheckInterval, ttl: this.ttl } = s)
    ;({ reuseWindow: this.reuseWindow, retryAfter: this.retryAfter, onStoreError: this.onStoreError, storeTimeout: this.storeTimeout } = s)
    ;({ store: this.store, logger: this.logger, randomSecret: this.randomSecret } = s)
    this.cookieName = s.cookie.name
    this.sem = createSemaphore({ name: s.name, limit: liveLimit, admissionRate, ttl: s.slotTtl, store: s.store })
    const stats = (this.stats = new GateStats(s.mode, liveLimit))
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
    const answers = (this.answers = new GateAnswers<Req>(s.name, s.logger, s.retryAfter, s.busyPage, s.nonce))
    this.line =
      s.queue === undefined
        ? undefined
        : new GateLine(s.name, s.queue, {
            limit: liveLimit,
            admissionRate,
            ttl: s.provisionalTtl,
            store: s.store,
            secrets: s.secrets,
            ticketCookieName: s.ticketCookieName,
            onPageError: answers.pageError('queue.page'),
          })
    this.pool =
      s.mode === 'request' && s.reuseWindow > 0
        ? new SlotPool(this.sem, {
            window: s.reuseWindow,
            confirmEvery: Math.min(1000, s.ttl / 4),
            onError: (err, op) => this.guard.logFailure(err, op),
            generation: () => limit.generation,
          })
        : undefined
    limit.onChange((now, previous) => void (now < previous && this.pool?.retire()))
    const share = (this.#share = new LocalShare(liveLimit, s.mode === 'session', s.passTtl))
    this.#loss = new LossWatch(s.store, s.name, s.logger, s.mode === 'session' ? Math.max(s.provisionalTtl, s.recheckInterval) : s.ttl)
    this.reporter = new Reporter(s.store, s.name, stats, s.reportInterval, (instances) => (share.fleet = instances))
    const onAdaptError = (err: unknown): void => this.guard.logFailure(err, 'adaptive limit')
    this.#adaptor = s.adaptive && new Adaptor(s.name, s.store, limit, s.adaptive, ADAPTIVE_WINDOW_MS, s.mode === 'session', onAdaptError, (d) => void this.release(d))
    if (s.control) this.ready = steer.start()
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
    return this.#steer.state
  }

  /** Settles once the gate read its live control (at once without `control`); until then it decides on its options. */
  readonly ready: Promise<void> = Promise.resolve()

  /**
   * A gate for some routes (its own `name`, so its own slots and cookie) that inherits this gate's
   * other options: store, secret, logger, pages, ... (Fastify's route-level `config.airlock`).
   */
  child(options: GateOptions<Req> & { name: string }): Gate<Req> {
    return new Gate<Req>(childOptions(this.#options, options, this.logger, this.randomSecret ? undefined : this.#s.secrets))
  }

  /**
   * Decides one request. Synchronous for pass holders found in the cache (no store call, no crypto);
   * a promise otherwise. Never rejects: store trouble is handled by `onStoreError`.
   */
  decide(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const d = this.decideNow(view)
    // Synchronous: no clock read on the hot path. A pass whose last request failed may wait first.
    if (!(d instanceof Promise)) return this.#adaptor?.holdBack(d)?.then((x) => this.decided(x, -1)) ?? this.decided(d, -1)
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

  /** Session mode: true when the adaptive limit learns from the response to `decision` (see `Adaptor.learnsFrom`). */
  measures(decision: GateDecision): boolean {
    return this.#adaptor?.learnsFrom(decision) ?? false
  }

  /** Counts a decision, and publishes it while `airlock:decision` has a subscriber (`t0` < 0: taken synchronously). */
  private decided<D extends GateDecision>(d: D, t0: number): D {
    this.stats.count(d)
    if (this.#adaptor && (d.kind === 'queued' || (d.kind === 'busy' && d.reason === 'full'))) this.#adaptor.refused()
    if (decisionChannel.hasSubscribers) {
      const reason = d.kind === 'admit' || d.kind === 'busy' ? d.reason : undefined
      const event: DecisionEvent = { gate: this.name, mode: this.mode, kind: d.kind, reason, durationMs: t0 < 0 ? 0 : performance.now() - t0 }
      decisionChannel.publish(event)
    }
    return d
  }

  private decideNow(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const s = this.#s
    if (s.confirm && view.url.endsWith(CONFIRM_QUERY)) return this.confirmRequest(view)
    if (s.bypass !== undefined && s.bypass.bypasses(view.url, view.routing)) return this.confirm(view)
    if (s.skip !== undefined && this.answers.userCall('skip', s.skip, view.request) === true) return this.confirm(view)
    if (this.#steer.passthrough) return BYPASS
    if (s.mode === 'request') return this.decideRequest(view)
    const value = firstCookie(view.headers.cookie, s.cookie.name)
    if (value !== undefined) {
      const cached = this.#passes.cached(value, Date.now())
      if (cached !== undefined) return cached
    }
    return this.decideSession(view, value !== undefined)
  }

  /** A request seen but not gated: never refused; a pass it carries is confirmed or slid when due (`Passes.confirm`). */
  confirm(view: RequestView<Req>): BypassDecision | Promise<BypassDecision> {
    return this.mode === 'request' ? BYPASS : this.#passes.confirm(view.headers.cookie, view.secure, this.storeTimeout)
  }

  /**
   * Ends what `decision` holds: a request-mode slot, or (session mode) the visitor's pass and its
   * slot. Send {@link clearCookie} with the response to forget the pass in the browser.
   * `true` when a live slot was freed. Never rejects.
   */
  async release(decision: GateDecision): Promise<boolean> {
    if (decision.kind === 'admit' && decision.slot) return decision.slot.release()
    if (!holdsPass(decision)) return false
    const token = decision.token
    this.#passes.forget(token)
    try {
      return await this.sem.lease(token).release()
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
    const status = await gateStatus(this.store, this.name, this.mode, this.limit, this.stats)
    return { ...status, limitSource: this.#limit.source, control: this.#steer.state, adaptive: this.#adaptor?.state ?? null }
  }

  /** This instance's circuit breaker: `'open'` while it answers without calling the store. */
  get breaker(): 'open' | 'closed' {
    return this.stats.breaker
  }

  /** Stops timers and forgets cached passes. Does not close the store (you own it). Idempotent. */
  async close(): Promise<void> {
    liveGates.delete(this.#ref)
    this.reporter.close()
    this.#steer.close()
    this.#adaptor?.close()
    this.guard.close()
    this.#passes.clear()
    await this.pool?.close()
  }

  // --- session mode -------------------------------------------------------------------------

  private async decideSession(view: RequestView<Req>, hasCookie: boolean): Promise<GateDecision> {
    const deadline = Date.now() + this.storeTimeout
    if (hasCookie) {
      const outcome = await this.#passes.check(view.headers.cookie, view.secure, deadline)
      if (typeof outcome === 'object') return 'error' in outcome ? this.storeFailed(view, outcome.error, true) : outcome
    }
    const newcomers = this.#steer.newcomers(Date.now())
    if (newcomers.kind === 'normal' && this.#loss.quarantined(Date.now())) return this.storeFailed(view, undefined)
    const client = this.clientOf(view)
    if (this.line !== undefined) return this.joinLine(this.line, view, deadline, newcomers, client)
    return newcomers.kind === 'normal' ? this.admitVisitor(view, deadline, client) : this.busy(view, 'closed')
  }

  /** The store's share request for the request's client (`clientShare`), if any. */
  private clientOf(view: RequestView<Req>): ClientShare | undefined {
    const { share, clientKey } = this.#s
    const key = share && clientShareKey(clientKey && this.answers.userCall('clientKey', clientKey, view.request), view.ip)
    return key ? shareFor(share!, key, this.limit) : undefined
  }

  /** The gate's own confirm request (`?__airlock=confirm`): `204`, with the confirmed pass. */
  private confirmRequest(view: RequestView<Req>): BypassDecision | Promise<BypassDecision> {
    const answer = (d: BypassDecision): BypassDecision => ({ kind: 'bypass', setCookie: d.setCookie, response: CONFIRMED })
    const d = this.confirm(view)
    return d instanceof Promise ? d.then(answer) : answer(d)
  }

  /** A visitor without a valid pass: a provisional slot and pass if one is free (and its client within its share), else busy. */
  private async admitVisitor(view: RequestView<Req>, deadline: number, client: ClientShare | undefined): Promise<GateDecision> {
    const t0 = Date.now()
    let got: Awaited<ReturnType<Semaphore['tryAcquire']>>
    try {
      got = await this.call(() => this.sem.tryAcquire({ client }), deadline, releaseLateTry)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    const lease = got.lease
    if (lease === null && got.refused === 'client-share') return this.busy(view, 'client-share')
    if (lease === null || !this.#share.keeps(lease, this.#releaseError)) return this.full(view)
    return this.admitWithPass(view, lease.token, 'slot', t0, undefined)
  }

  /**
   * Admitted to the slot `token` with a new provisional pass. A browser's page (a GET that prefers
   * HTML) also gets the `Link` to the confirm request, so the pass is confirmed even if the page
   * makes no other request.
   */
  private admitWithPass(
    view: RequestView<Req>,
    token: string,
    reason: 'slot' | 'line',
    issuedAt: number,
    response: GateResponse | undefined,
  ): AdmitDecision {
    const page = response === undefined && this.#s.confirm && view.method === 'GET' && !prefersJson(view.headers.accept)
    this.#share.passGiven(issuedAt)
    return {
      kind: 'admit',
      reason,
      token,
      setCookie: this.#passes.issue(token, issuedAt, view.secure),
      headers: page ? CONFIRM_LINK : undefined,
      response,
      slot: undefined,
    }
  }

  /**
   * With a `queue`: enters the line under the ticket's visitor id (or a new one). Admitted (the
   * line was empty and a slot free, or the visitor's turn came): a provisional pass bound to a slot
   * whose token is the visitor id. Queued: `202` and, for a new visitor, the ticket cookie.
   */
  private async joinLine(line: GateLine, view: RequestView<Req>, deadline: number, newcomers: Newcomers, client: ClientShare | undefined): Promise<GateDecision> {
    const t0 = Date.now()
    const ticketId = line.readTicket(view.headers.cookie, t0)
    const fresh = ticketId === undefined
    // Closed: nobody new in line; those in it keep their places (held) for the reopening.
    if (newcomers.kind === 'closed' && fresh) return this.busy(view, 'closed')
    // The proof-of-work door (`queue.challenge`) before a new place: a visitor id, or its answer.
    const door = fresh ? line.door?.decide(view.headers, t0, this.doorContext(line, view)) : undefined
    if (typeof door === 'object') return door
    const visitorId = ticketId ?? door ?? newVisitorId()
    const hold = newcomers.kind !== 'normal'
    const opening = newcomers.kind === 'hold' ? newcomers.opening : null
    let result: EnterResult
    try {
      // A new visitor admitted after the budget ran out never learns it: free that slot again.
      const enter = { fresh, hold, shuffle: opening !== null, client }
      result = await this.call(() => line.room.enter(visitorId, enter), deadline, fresh ? releaseLateEntry : undefined)
    } catch (err) {
      // A held line (queue-all, a scheduled opening) lets nobody in, whatever onStoreError says.
      if (!hold) return this.storeFailed(view, err)
      this.guard.logFailure(err, 'the line is held: busy')
      return this.busy(view, 'store-unavailable')
    }
    if (result.status === 'full') {
      this.queueEvent('full', null, result.waiting)
      return this.busy(view, 'full')
    }
    if (result.status === 'client-share') return this.busy(view, 'client-share')
    const poll = view.headers['x-airlock-poll'] !== undefined
    if (result.status === 'queued') {
      const place = line.place(result, opening)
      if (line.door) line.door.pressure.waiting = place.waiting // the line's length raises the door's difficulty
      this.queueEvent(ticketId === undefined ? 'enter' : 'wait', place.position, place.waiting)
      const ticket = `${line.ticketCookieName}=${line.ticket(visitorId, t0)}${this.#passes.secureTail(this.#s.cookie.tail, view.secure)}`
      return {
        kind: 'queued',
        ...place,
        setCookie: ticketId === undefined ? ticket : undefined,
        response: line.answers.queued(place, this.answers.request(view), poll),
      }
    }
    // The ticket stays: it names the visitor in this gate's line, and a place only exists in the store.
    if (ticketId !== undefined) this.queueEvent('admit', null, null)
    const response = poll ? line.answers.admitted() : undefined
    return this.admitWithPass(view, visitorId, ticketId === undefined ? 'slot' : 'line', t0, response)
  }

  private doorContext(line: GateLine, view: RequestView<Req>): DoorContext {
    const request = this.answers.request(view)
    const tail = this.#passes.secureTail(this.#s.cookie.tail, view.secure)
    const poll = view.headers['x-airlock-poll'] !== undefined
    return { request, cookie: (v) => `${line.door!.cookieName}=${v}${tail}`, busy: (r) => this.busy(view, r), queued: (p) => line.answers.queued(p, request, poll) }
  }

  // --- request mode -------------------------------------------------------------------------

  /** Request mode: a slot from the pool (synchronous), else one from the store. */
  private decideRequest(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const now = Date.now()
    if (this.#steer.newcomers(now).kind !== 'normal') return this.busy(view, 'closed')
    if (this.#share.full(now)) return this.busy(view, 'full')
    // With an admission rate every request counts: no slot reuse.
    const pooled = this.#steer.rate === null ? this.pool?.take(now) : undefined
    return pooled !== undefined ? this.admitRequest(pooled) : this.acquireRequest(view)
  }

  private async acquireRequest(view: RequestView<Req>): Promise<GateDecision> {
    const sentAt = Date.now()
    if (this.#loss.quarantined(sentAt)) return this.storeFailed(view, undefined)
    let lease: Lease | null
    try {
      lease = await this.call(() => this.sem.acquire(), sentAt + this.storeTimeout, releaseLate)
    } catch (err) {
      return this.storeFailed(view, err)
    }
    if (lease === null || !this.#share.keeps(lease, this.#releaseError)) return this.full(view)
    return this.admitRequest(this.pool?.slot(lease, sentAt) ?? pooledSlot(lease, sentAt))
  }

  private admitRequest(slot: PooledSlot): AdmitDecision {
    const token = slot.lease.token
    const measured = this.#adaptor && measureFrom(this.#adaptor, performance.now())
    this.#share.entered()
    const counted = requestSlot(slot, this.pool, this.#releaseError, measured, this.#share.left)
    return { kind: 'admit', reason: 'slot', token, setCookie: undefined, headers: undefined, response: undefined, slot: counted }
  }

  private busy(view: RequestView<Req>, reason: BusyDecision['reason']): BusyDecision {
    return this.answers.busy(view, reason)
  }

  private queueEvent(event: QueueEvent['event'], position: number | null, waiting: number | null): void {
    if (queueChannel.hasSubscribers) queueChannel.publish({ gate: this.name, event, position, waiting } satisfies QueueEvent)
  }

  /** One store call within what is left of the decision's budget (see {@link StoreGuard}). */
  private call<T>(op: () => Promise<T>, deadline: number, onLate?: (value: T) => void): Promise<T> {
    return this.guard.call(op, deadline, this.storeTimeout, onLate)
  }

  /** No slot: the site is full, or the store found it answers from another server meanwhile (a failover). */
  private full(view: RequestView<Req>): GateDecision {
    return this.#loss.quarantined(Date.now()) ? this.storeFailed(view, undefined) : this.busy(view, 'full')
  }

  /**
   * The store could not decide (`holder`: for a validly signed pass it could not re-check), or
   * (`err` undefined: not logged here) may have lost slots it counts as free: see `LocalShare.outage`.
   */
  private storeFailed(view: RequestView<Req>, err: unknown, holder = false): GateDecision {
    const policy = this.#s.onStoreError
    if (err !== undefined) this.guard.logFailure(err, policy === 'local' ? 'admitting within the local share' : policy === 'open' ? 'failing open' : 'failing closed')
    return this.#share.outage(policy, holder, Date.now()) ?? this.busy(view, 'store-unavailable')
  }
}

/**
 * Creates a gate. Validates every option now: throws `ERR_AIRLOCK_OPTION` with a sentence naming
 * the option and the fix.
 */
export function createGate<Req = unknown>(options?: GateOptions<Req>): Gate<Req> {
  return new Gate<Req>(options)
}
