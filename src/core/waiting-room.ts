import { resolveStore } from '../stores/resolve.js'
import type { AcquireResult, ClientShare, QueueRequest, QueueSettings, Store, StoreEnded } from '../stores/types.js'
import { QUEUE_KEYS, queueSettings, type QueueDefaults } from './queue.js'
import { AirlockError, optionError } from '../base/errors.js'
import { runHolding, waitInLine } from './waiting.js'
import type { Lease, LeaseHandle, RunContext, SemaphoreState } from './lease.js'
import { AdmittedLease, assertVisitorId, estimateWait } from './visitor.js'
import { createSemaphore, liveLimit, liveRate, type Semaphore } from './semaphore.js'
import {
  abortSignal,
  boolean,
  duration,
  inMs,
  knownKeys,
  notTinyMs,
  optionsObject,
  received,
  semaphoreName,
  waitDuration,
  type Duration,
} from '../base/validate.js'

export { assertVisitorId, estimateWait, MAX_VISITOR_ID_LENGTH, newVisitorId } from './visitor.js'

/**
 * Options of {@link createWaitingRoom}. All durations in milliseconds, at most 2^31 − 1 (a timer's
 * limit). The line settings ({@link QueueSettings}) default to: `order` `'fifo'`, `maxLength`
 * 100,000, `idleTimeout` 30,000 (keep it several times the interval at which your visitors call),
 * `claimWindow` 10,000, `confirmTimeout` 0 (set it when visitors come through HTTP and may keep no
 * cookies, as the gate's `queue` does).
 */
export interface WaitingRoomOptions extends Partial<QueueSettings> {
  /**
   * Identifies the room in its store; processes sharing a name share the slots and the line.
   * A room is a semaphore with a line: a {@link createSemaphore} of the same name and store shares
   * its slots, and its `acquire` answers busy while anyone is waiting in the room's line.
   */
  name: string
  /** How many visitors may be admitted (hold a slot) at once. A function is read on every decision (a live limit). */
  limit: number | (() => number)
  /** At most this many admissions per minute (see `SemaphoreOptions.admissionRate`). Default: no cap. */
  admissionRate?: number | (() => number | null)
  /**
   * Life of an admitted visitor's slot; refresh the lease to keep it, release it to free it early.
   * Milliseconds or `'30s'`; a bare number under 1000 is refused as a likely unit mistake.
   */
  ttl: Duration
  /** Where slots and the line live. Default: the process-wide memory store. Use Redis across processes. */
  store?: Store
  /**
   * How often `withAdmitted` re-checks the line when no wake-up message arrives (its safety net and
   * its sign of life). Default: the smallest of 1000, `idleTimeout / 3` and `claimWindow / 2`.
   */
  retryInterval?: number
}

/** What {@link WaitingRoom.withAdmitted} accepts. */
export interface WithAdmittedOptions {
  /** Give up after waiting this long in line, with `ERR_AIRLOCK_TIMEOUT`. Default `Infinity`. */
  timeout?: number
  /** Stop waiting: the promise rejects with `signal.reason` and the visitor leaves the line. */
  signal?: AbortSignal
  /** Keep the lease alive while `fn` runs (refresh every `ttl / 3`). Default true. */
  autoRefresh?: boolean
}

/** The visitor holds a slot. `lease.token` is the visitor id. */
export interface Admitted {
  status: 'admitted'
  lease: Lease
  /**
   * Admitted from the line just now: how long its place had waited (ms, the store's clock). Absent
   * when admitted without waiting, found admitted again, or when the store cannot tell.
   */
  waited?: number
}

/** The visitor waits in line. */
export interface Queued {
  status: 'queued'
  /** 1-based place in line, by arrival (in `'random'` order admission is drawn, so it says less). */
  position: number
  /** How many visitors are in line, this one included. */
  waiting: number
  /**
   * Estimated wait in ms: `position / rate`, rounded up. `null` while no rate is known.
   * See {@link Queued.rate}.
   */
  eta: number | null
  /**
   * Measured admissions from the line per second over the store's recent window (60 s): with `n`
   * admissions recorded in the window, the oldest of them `span` ms ago, `rate = (n - 1) / span`.
   * `null` until two admissions fall within the window.
   */
  rate: number | null
}

/** The line is at `maxLength`; the visitor got no place. */
export interface Full {
  status: 'full'
  waiting: number
}

/** The visitor's client (`EnterOptions.client`) is over its share; the visitor got no place. */
export interface OverShare {
  status: 'client-share'
}

/**
 * The visitor left the line a moment ago ({@link WaitingRoom.leave} with `keepOut`, within the
 * store's `LEFT_KEEP_MS`): it got no place and no slot, so a request already on its way when the visitor
 * left (the waiting page's poll) cannot put it back in line.
 */
export interface Left {
  status: 'left'
}

/**
 * What {@link WaitingRoom.enter} answers; `ended`: what the store dropped as it answered (slots
 * that expired, places that lapsed; see `StoreEnded`), for a gate's figures.
 */
export type EnterResult = (Admitted | Queued | Full | OverShare | Left) & { ended?: StoreEnded }

/** What {@link WaitingRoom.poll} answers: never admits, never joins. */
export type PollResult = Admitted | Queued | { status: 'absent' }

/** A snapshot of a room: admitted visitors (`held`), free slots, and the line's length. */
export type WaitingRoomState = SemaphoreState

/** What {@link WaitingRoom.status} answers. */
export interface WaitingRoomStatus extends SemaphoreState {
  /** Admissions from the line in the last minute; `null` when the store cannot tell. */
  admittedLastMinute: number | null
  /** Seconds a newcomer would wait; `null` while unknown. */
  eta: number | null
}

/** Line settings of a waiting room when not given. */
const ROOM_DEFAULTS: QueueDefaults = {
  order: 'fifo',
  maxLength: 100_000,
  idleTimeout: 30_000,
  claimWindow: 10_000,
  confirmTimeout: 0,
}

/** Options of {@link WaitingRoom.enter}. */
export interface EnterOptions {
  fresh?: boolean
  hold?: boolean
  shuffle?: boolean
  /** The visitor's client and its share: a new visitor over it gets `client-share`, no place (see `ClientShare`). */
  client?: ClientShare
}

/** A uniform random key in [1, 2^52): a pre-queue place's order (see `QueueRequest.shuffle`). */
function shuffleKey(): number {
  const [hi, lo] = crypto.getRandomValues(new Uint32Array(2)) as unknown as [number, number]
  return 1 + (((hi & 0xfffff) * 2 ** 32 + lo) % (2 ** 52 - 1))
}

/**
 * A fair waiting room: at most `limit` visitors admitted at once, the rest in one line shared by
 * every process on the store, admitted in arrival order (or by lottery). Create it with
 * {@link createWaitingRoom}.
 *
 * Every call is one store round trip (one Lua script on Redis) and O(log n) in the line's length.
 * A visitor keeps its place by calling `enter`, `getPosition` or `poll` at least every
 * `idleTimeout`; when slots free, they are reserved for the next visitors for `claimWindow`.
 */
export class WaitingRoom {
  readonly name: string
  readonly ttl: number
  readonly store: Store
  readonly order: 'fifo' | 'random'
  readonly maxLength: number
  readonly idleTimeout: number
  readonly claimWindow: number
  readonly confirmTimeout: number
  readonly retryInterval: number
  /**
   * The semaphore of the room's slots (same name and store): its `acquire` takes a slot only while
   * nobody waits in the room's line (it never jumps the line), without taking a place.
   */
  readonly semaphore: Semaphore
  private readonly line: QueueRequest
  private readonly poller: QueueRequest
  readonly #limit: () => number
  readonly #rate: () => number | null

  constructor(options: WaitingRoomOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`createWaitingRoom() needs an options object with name, limit and ttl, got ${received(options)}`)
    }
    knownKeys('createWaitingRoom()', options, [
      'name',
      'limit',
      'ttl',
      'store',
      ...QUEUE_KEYS,
      'retryInterval',
      'admissionRate',
    ])
    this.name = semaphoreName('name', options.name)
    this.#limit = liveLimit(options.limit)
    this.#rate = liveRate(options.admissionRate)
    this.ttl = notTinyMs('ttl', options.ttl, duration('ttl', options.ttl))
    const settings = queueSettings('', options, ROOM_DEFAULTS)
    this.order = settings.order
    this.maxLength = settings.maxLength
    this.idleTimeout = settings.idleTimeout
    this.claimWindow = settings.claimWindow
    this.confirmTimeout = settings.confirmTimeout
    const fallbackPoll = Math.max(1, Math.min(1000, Math.floor(this.idleTimeout / 3), Math.floor(this.claimWindow / 2)))
    this.retryInterval = duration('retryInterval', options.retryInterval ?? fallbackPoll)
    if (this.retryInterval >= this.idleTimeout) {
      optionError(
        `retryInterval must be below idleTimeout (${this.idleTimeout}), got ${this.retryInterval}: ` +
          'a waiter would lose its place between two polls',
      )
    }
    this.store = resolveStore(options.store)
    this.semaphore = createSemaphore({
      name: this.name,
      limit: this.#limit,
      ttl: inMs(this.ttl),
      store: this.store,
      admissionRate: this.#rate,
    })
    this.line = settings
    this.poller = { ...this.line, admit: false }
  }

  /** How many visitors may be admitted at once, now (a live limit is read each time). */
  get limit(): number {
    return this.#limit()
  }

  /**
   * Takes a slot if this visitor may have one now (the line is empty and a slot is free, or a slot
   * is reserved for the visitor), else takes a place at the back of the line, or keeps its
   * place if it already has one. Idempotent: entering again never gives a second place, and an
   * admitted visitor gets its live lease back. Also a sign of life.
   *
   * @param visitorId The visitor's stable id (see {@link assertVisitorId}); it becomes the lease
   *   token once admitted.
   * @param options.fresh The id is new (a visitor without a ticket yet) and you forget it if this
   *   call fails: a slot or place that a call given up on (a store timeout) took anyway is then
   *   freed as soon as the store answers again, instead of being held until it lapses.
   * @param options.hold The line is held (a scheduled opening, everyone queues): the visitor takes
   *   or keeps a place, but nobody is admitted (except one room was reserved for before the hold).
   * @param options.shuffle A new place goes into the pre-queue: ahead of every place taken without
   *   it, in uniformly random order among the pre-queue (arriving early is no advantage).
   * @param options.client The visitor's client and its share (see `ClientShare`): a visitor new to
   *   the room whose client already holds its share gets `{ status: 'client-share' }` and no place.
   */
  async enter(visitorId: string, options?: EnterOptions): Promise<EnterResult> {
    const token = assertVisitorId(visitorId)
    let line = this.line
    if (options !== undefined) {
      optionsObject('enter()', options, ['fresh', 'hold', 'shuffle', 'client'])
      for (const key of ['fresh', 'hold', 'shuffle'] as const) {
        if (options[key] !== undefined && typeof options[key] !== 'boolean')
          optionError(`${key} must be a boolean, got ${received(options[key])}`)
      }
      if (options.hold || options.shuffle)
        line = { ...line, hold: options.hold === true, shuffle: options.shuffle ? shuffleKey() : 0 }
    }
    const result = await this.ask(token, line, options?.fresh === true, options?.client)
    const answer: EnterResult | PollResult =
      result.status === 'full'
        ? { status: 'full', waiting: result.waiting }
        : result.status === 'client-share'
          ? { status: 'client-share' }
          : this.answer(token, result)
    // A line request that may admit is absent only for a visitor that just left.
    if (answer.status === 'absent')
      return result.ended === undefined ? { status: 'left' } : { status: 'left', ended: result.ended }
    if (answer.status === 'admitted' && result.status === 'acquired' && result.waited !== undefined)
      answer.waited = result.waited
    return result.ended === undefined ? answer : { ...answer, ended: result.ended }
  }

  /**
   * A sign of life that never admits and never joins: the visitor's state as {@link enter} would
   * report it, or `absent` when it is not in line and holds no slot (never entered, left, lost its
   * place, or its slot ended).
   */
  async poll(visitorId: string): Promise<PollResult> {
    const token = assertVisitorId(visitorId)
    return this.answer(token, await this.ask(token, this.poller))
  }

  /**
   * The visitor's 1-based place in line, or `null` when it is not in line (never entered, left,
   * lost its place, or already admitted). A sign of life; never admits: call {@link enter} for that.
   */
  async getPosition(visitorId: string): Promise<number | null> {
    const result = await this.poll(visitorId)
    return result.status === 'queued' ? result.position : null
  }

  /**
   * Leaves the line; those behind move up at once. `false` when the visitor was not in line. An
   * admitted visitor's slot is not touched: release its lease (or `room.lease(visitorId).release()`).
   *
   * @param options.keepOut For a few seconds after (the store's `LEFT_KEEP_MS`), {@link enter} with
   *   this id answers `{ status: 'left' }` and takes no place: a request already on its way when
   *   the visitor left (a page's poll) does not put it back in line. Default `false`: the id may
   *   enter again at once (at the back).
   */
  async leave(visitorId: string, options?: { keepOut?: boolean }): Promise<boolean> {
    if (options !== undefined) {
      optionsObject('leave()', options, ['keepOut'])
      if (options.keepOut !== undefined && typeof options.keepOut !== 'boolean')
        optionError(`keepOut must be a boolean, got ${received(options.keepOut)}`)
    }
    return this.store.leave(this.name, assertVisitorId(visitorId), options?.keepOut === true)
  }

  /**
   * The slot of an admitted visitor, by id, e.g. from another process or a ticket cookie:
   * refresh it, release it, or ask its state.
   */
  lease(visitorId: string): LeaseHandle {
    return this.semaphore.lease(assertVisitorId(visitorId))
  }

  /**
   * Waits in line for `visitorId` (waking on the store's head messages, with a poll every
   * `retryInterval` as a safety net and sign of life), then runs `fn` with the lease and always
   * releases it. Throws `ERR_AIRLOCK_TIMEOUT` (after leaving the line) when not admitted within
   * `timeout`, and rejects with `signal.reason` on abort. While `fn` runs the lease is refreshed
   * every `ttl / 3` (unless `autoRefresh: false`); if that fails, `context.signal` aborts with
   * `ERR_AIRLOCK_LEASE_LOST`.
   */
  async withAdmitted<T>(
    visitorId: string,
    fn: (context: RunContext) => T | Promise<T>,
    options: WithAdmittedOptions = {},
  ): Promise<T> {
    const token = assertVisitorId(visitorId)
    if (typeof fn !== 'function') optionError(`withAdmitted() needs a function, got ${received(fn)}`)
    optionsObject('withAdmitted()', options, ['timeout', 'signal', 'autoRefresh'])
    const timeout = waitDuration('timeout', options.timeout ?? Infinity)
    const signal = abortSignal('signal', options.signal)
    const autoRefresh = boolean('autoRefresh', options.autoRefresh ?? true)
    const lease = await this.waitAdmitted(token, timeout, signal)
    return runHolding(lease, this.ttl, autoRefresh, fn)
  }

  /**
   * Admitted visitors, the line, admissions from the line in the last minute (every process on the
   * store), and the wait a newcomer would see (seconds; 0 while a slot is free and nobody waits,
   * `null` while no rate is known). One store call.
   */
  async status(): Promise<WaitingRoomStatus> {
    if (typeof this.store.status !== 'function') {
      const state = await this.getState()
      return { ...state, admittedLastMinute: null, eta: state.waiting === 0 && state.available > 0 ? 0 : null }
    }
    const st = await this.store.status(this.name)
    const available = Math.max(0, this.limit - st.held)
    const { eta } = estimateWait(st.waiting + 1, st.admitted, st.windowMs)
    return {
      limit: this.limit,
      held: st.held,
      available,
      waiting: st.waiting,
      admittedLastMinute: st.admitted,
      eta: st.waiting === 0 && available > 0 ? 0 : eta === null ? null : Math.ceil(eta / 1000),
    }
  }

  /** Admitted visitors, free slots, and the line's length. */
  async getState(): Promise<WaitingRoomState> {
    const { held, waiting } = await this.store.state(this.name)
    return { limit: this.limit, held, available: Math.max(0, this.limit - held), waiting }
  }

  private async waitAdmitted(token: string, timeout: number, signal: AbortSignal | undefined): Promise<Lease> {
    const outcome = await waitInLine({
      store: this.store,
      name: this.name,
      request: { token, limit: this.limit, ttl: this.ttl, weight: 1, queue: this.line },
      refresh: () => ({ limit: this.limit, admissionRate: this.#rate() ?? undefined }),
      deadline: Date.now() + timeout,
      signal,
      retryInterval: this.retryInterval,
    })
    if (outcome.status === 'acquired') return new AdmittedLease(this.semaphore.lease(token), outcome)
    throw new AirlockError(
      'ERR_AIRLOCK_TIMEOUT',
      `waiting room '${this.name}' did not admit ${token} within ${timeout} ms` +
        (outcome.last.status === 'full' ? ` (the line was full at ${this.maxLength})` : ''),
    )
  }

  /** One store decision for this visitor: `line` to enter, `poller` to poll. */
  private ask(token: string, queue: QueueRequest, fresh = false, client?: ClientShare): Promise<AcquireResult> {
    const admissionRate = this.#rate() ?? undefined
    return this.store.acquire(this.name, {
      token,
      limit: this.limit,
      ttl: this.ttl,
      weight: 1,
      queue,
      fresh,
      admissionRate,
      client,
    })
  }

  private answer(token: string, result: AcquireResult): PollResult {
    switch (result.status) {
      case 'acquired':
        return { status: 'admitted', lease: new AdmittedLease(this.semaphore.lease(token), result) }
      case 'queued': {
        const { eta, rate } = estimateWait(result.position, result.admitted, result.windowMs)
        return { status: 'queued', position: result.position, waiting: result.waiting, eta, rate }
      }
      case 'absent':
        return { status: 'absent' }
      default:
        // 'busy' is only for callers without a line; 'full' is handled by enter (a poll never joins).
        throw new Error(`store ${this.store.kind} answered '${result.status}' to a line request (a store bug)`)
    }
  }
}

/**
 * Creates a waiting room. Throws `ERR_AIRLOCK_OPTION` naming the first invalid option.
 *
 * ```ts
 * const room = createWaitingRoom({ name: 'tickets', limit: 50, ttl: 60_000, store })
 * const r = await room.enter(visitorId)
 * if (r.status === 'queued') show(r.position, r.eta)
 * ```
 */
export function createWaitingRoom(options: WaitingRoomOptions): WaitingRoom {
  return new WaitingRoom(options)
}
