import { defaultStore } from '../stores/memory.js'
import { assertStore } from '../stores/assert.js'
import type { AcquireResult, LeaseState, QueueRequest, Store } from '../stores/types.js'
import { AirlockError, optionError } from './errors.js'
import { runHolding, waitInLine } from './waiting.js'
import { createSemaphore, newToken, type Lease, type LeaseHandle, type RunContext, type Semaphore } from './semaphore.js'
import {
  describe,
  duration,
  knownKeys,
  nonNegativeInteger,
  oneOf,
  positiveInteger,
  safeName,
  waitDuration,
} from './validate.js'

/** Options of {@link createWaitingRoom}. All durations in milliseconds. */
export interface WaitingRoomOptions {
  /**
   * Identifies the room in its store; processes sharing a name share the slots and the line.
   * A room is a semaphore with a line: a {@link createSemaphore} of the same name and store shares
   * its slots, and its `acquire` answers busy while anyone is waiting in the room's line.
   */
  name: string
  /** How many visitors may be admitted (hold a slot) at once. */
  limit: number
  /** Life of an admitted visitor's slot; refresh the lease to keep it, release it to free it early. */
  ttl: number
  /** Where slots and the line live. Default: the process-wide memory store. Use Redis across processes. */
  store?: Store
  /**
   * `'fifo'` (default): admitted in order of arrival. `'random'`: a lottery, each admission draws
   * uniformly among the visitors waiting at that moment (positions then only tell the order of
   * arrival, not of admission).
   */
  order?: 'fifo' | 'random'
  /** The line takes at most this many visitors; beyond it `enter` answers `full`. 0: no cap. Default 100,000. */
  maxLength?: number
  /**
   * A waiter not seen (no `enter`, `getPosition` or `poll`) for this long loses its place.
   * Default 30,000. Keep it several times the interval at which your visitors poll.
   */
  idleTimeout?: number
  /**
   * When slots free, they are reserved for the next visitors in line (as many as fit), each for
   * this long; newcomers and later waiters cannot take them meanwhile. A visitor that does not come
   * to claim its slot in time loses its place. Default 10,000. Keep it above your visitors' poll
   * interval.
   */
  claimWindow?: number
  /**
   * A new place is lost after this long unless the visitor comes back (calls `enter`, `poll` or
   * `getPosition` again); from then on `idleTimeout` applies. Set it when visitors come through
   * HTTP (the gate's `queue` does): clients that keep no cookies take a new place on every request
   * and never come back, and their places (and any room freed while they are at the front) would
   * otherwise be held for a whole `idleTimeout`. Default 0: `idleTimeout` from the start.
   */
  confirmTimeout?: number
  /**
   * How often `withAdmitted` re-checks the line when no wake-up message arrives (its safety net and
   * its sign of life). Default: the smallest of 1000, `idleTimeout / 3` and `claimWindow / 2`.
   */
  pollInterval?: number
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

/** What {@link WaitingRoom.enter} answers. */
export type EnterResult = Admitted | Queued | Full

/** What {@link WaitingRoom.poll} answers: never admits, never joins. */
export type PollResult = Admitted | Queued | { status: 'absent' }

/** A snapshot of a room. */
export interface WaitingRoomState {
  limit: number
  /** Admitted visitors holding a live slot. */
  held: number
  /** Free slots (they may be reserved for the head of the line). */
  available: number
  /** Visitors in line. */
  waiting: number
}

/** The longest visitor id accepted. */
export const MAX_VISITOR_ID_LENGTH = 128
const VISITOR_ID = /^[A-Za-z0-9._:~-]+$/

/**
 * Checks a visitor id: 1 to 128 characters of letters, digits, `.`, `_`, `:`, `~` or `-` (so a
 * base64url token, a UUID or `user:42` fit, and the id is safe in a Redis key and a cookie).
 * Throws `ERR_AIRLOCK_OPTION` otherwise.
 */
export function assertVisitorId(visitorId: unknown): string {
  if (
    typeof visitorId !== 'string' ||
    visitorId.length === 0 ||
    visitorId.length > MAX_VISITOR_ID_LENGTH ||
    !VISITOR_ID.test(visitorId)
  ) {
    optionError(
      `visitorId must be 1 to ${MAX_VISITOR_ID_LENGTH} characters of letters, digits, '.', '_', ':', '~' or '-', ` +
        `got ${visitorId === undefined || typeof visitorId === 'string' ? describeId(visitorId) : describe(visitorId)}`,
    )
  }
  return visitorId
}

function describeId(value: string | undefined): string {
  if (typeof value === 'string' && value.length > 40) return `a string of ${value.length} characters`
  return describe(value)
}

/**
 * A new unguessable visitor id (128 random bits, base64url). The visitor id is also the admitted
 * lease's token, so whoever knows it can release that slot: use this (or another secret id) when
 * ids travel in cookies or URLs.
 */
export function newVisitorId(): string {
  return newToken()
}

/**
 * Estimated wait (ms) for `position` given `admitted` admissions in the last `windowMs` ms, or
 * `null` while fewer than two admissions are known. The first admission of the window marks its
 * start, so `admitted - 1` of them fall in the `windowMs` span: `rate = (admitted - 1) / windowMs`
 * and `eta = position / rate`, rounded up.
 */
export function estimateWait(
  position: number,
  admitted: number,
  windowMs: number,
): { eta: number | null; rate: number | null } {
  if (admitted < 2 || windowMs <= 0) return { eta: null, rate: null }
  const perMs = (admitted - 1) / windowMs
  return { eta: Math.ceil(position / perMs), rate: perMs * 1000 }
}

/** The admitted slot, seen through the semaphore's lease handle (which tracks refreshes). */
class AdmittedLease implements Lease {
  constructor(
    private readonly handle: LeaseHandle,
    private readonly acquired: { fence: number; expiresAt: number },
  ) {}

  get token(): string {
    return this.handle.token
  }

  get fence(): number {
    return this.handle.fence ?? this.acquired.fence
  }

  get expiresAt(): number {
    return this.handle.expiresAt ?? this.acquired.expiresAt
  }

  refresh(ttl?: number): Promise<boolean> {
    return this.handle.refresh(ttl)
  }

  release(): Promise<boolean> {
    return this.handle.release()
  }

  state(): Promise<LeaseState> {
    return this.handle.state()
  }
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
  readonly limit: number
  readonly ttl: number
  readonly store: Store
  readonly order: 'fifo' | 'random'
  readonly maxLength: number
  readonly idleTimeout: number
  readonly claimWindow: number
  readonly confirmTimeout: number
  readonly pollInterval: number
  private readonly sem: Semaphore
  private readonly line: QueueRequest
  private readonly poller: QueueRequest

  constructor(options: WaitingRoomOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`createWaitingRoom() needs an options object with name, limit and ttl, got ${describe(options)}`)
    }
    knownKeys('createWaitingRoom()', options, [
      'name',
      'limit',
      'ttl',
      'store',
      'order',
      'maxLength',
      'idleTimeout',
      'claimWindow',
      'confirmTimeout',
      'pollInterval',
    ])
    this.name = safeName('name', options.name)
    this.limit = positiveInteger('limit', options.limit)
    this.ttl = duration('ttl', options.ttl)
    this.order = oneOf('order', options.order ?? 'fifo', ['fifo', 'random'] as const)
    this.maxLength = nonNegativeInteger('maxLength', options.maxLength ?? 100_000)
    this.idleTimeout = duration('idleTimeout', options.idleTimeout ?? 30_000)
    this.claimWindow = duration('claimWindow', options.claimWindow ?? 10_000)
    this.confirmTimeout = nonNegativeInteger('confirmTimeout', options.confirmTimeout ?? 0)
    if (this.confirmTimeout > this.idleTimeout) {
      optionError(`confirmTimeout must be at most idleTimeout (${this.idleTimeout}), got ${this.confirmTimeout}`)
    }
    const fallbackPoll = Math.max(1, Math.min(1000, Math.floor(this.idleTimeout / 3), Math.floor(this.claimWindow / 2)))
    this.pollInterval = duration('pollInterval', options.pollInterval ?? fallbackPoll)
    if (this.pollInterval >= this.idleTimeout) {
      optionError(
        `pollInterval must be below idleTimeout (${this.idleTimeout}), got ${this.pollInterval}: ` +
          'a waiter would lose its place between two polls',
      )
    }
    this.store = options.store === undefined ? defaultStore() : assertStore(options.store)
    this.sem = createSemaphore({ name: this.name, limit: this.limit, ttl: this.ttl, store: this.store })
    this.line = {
      order: this.order,
      idleTimeout: this.idleTimeout,
      claimWindow: this.claimWindow,
      maxLength: this.maxLength,
      confirmTimeout: this.confirmTimeout,
    }
    this.poller = { ...this.line, admit: false }
  }

  /**
   * Takes a slot if this visitor may have one now (the line is empty and a slot is free, or a slot
   * is reserved for the visitor), else takes a place at the back of the line, or keeps its
   * place if it already has one. Idempotent: entering again never gives a second place, and an
   * admitted visitor gets its live lease back. Also a sign of life.
   *
   * @param visitorId The visitor's stable id (see {@link assertVisitorId}); it becomes the lease
   *   token once admitted.
   */
  async enter(visitorId: string): Promise<EnterResult> {
    const token = assertVisitorId(visitorId)
    const result = await this.ask(token, this.line)
    if (result.status === 'full') return { status: 'full', waiting: result.waiting }
    const answer = this.answer(token, result)
    if (answer.status === 'absent') throw new Error(`store ${this.store.kind} answered 'absent' to enter (a store bug)`)
    return answer
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
   */
  async leave(visitorId: string): Promise<boolean> {
    return this.store.leave(this.name, assertVisitorId(visitorId))
  }

  /**
   * The slot of an admitted visitor, by id, e.g. from another process or a ticket cookie:
   * refresh it, release it, or ask its state.
   */
  lease(visitorId: string): LeaseHandle {
    return this.sem.lease(assertVisitorId(visitorId))
  }

  /**
   * Waits in line for `visitorId` (waking on the store's head messages, with a poll every
   * `pollInterval` as a safety net and sign of life), then runs `fn` with the lease and always
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
    if (typeof fn !== 'function') optionError(`withAdmitted() needs a function, got ${describe(fn)}`)
    if (options === null || typeof options !== 'object') {
      optionError(`withAdmitted() options must be an object, got ${describe(options)}`)
    }
    knownKeys('withAdmitted()', options, ['timeout', 'signal', 'autoRefresh'])
    const timeout = waitDuration('timeout', options.timeout ?? Infinity)
    const lease = await this.waitAdmitted(token, timeout, options.signal)
    return runHolding(lease, this.ttl, options.autoRefresh !== false, fn)
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
      deadline: Date.now() + timeout,
      signal,
      pollInterval: this.pollInterval,
    })
    if (outcome.status === 'acquired') return new AdmittedLease(this.sem.lease(token), outcome)
    throw new AirlockError(
      'ERR_AIRLOCK_TIMEOUT',
      `waiting room '${this.name}' did not admit ${token} within ${timeout} ms` +
        (outcome.last.status === 'full' ? ` (the line was full at ${this.maxLength})` : ''),
    )
  }

  /** One store decision for this visitor: `line` to enter, `poller` to poll. */
  private ask(token: string, queue: QueueRequest): Promise<AcquireResult> {
    return this.store.acquire(this.name, { token, limit: this.limit, ttl: this.ttl, weight: 1, queue })
  }

  private answer(token: string, result: AcquireResult): PollResult {
    switch (result.status) {
      case 'acquired':
        return { status: 'admitted', lease: new AdmittedLease(this.sem.lease(token), result) }
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
