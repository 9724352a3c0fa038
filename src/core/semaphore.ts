import { resolveStore } from '../stores/resolve.js'
import type { AcquireResult, ClientShare, QueueRequest, Store, StoreEnded } from '../stores/types.js'
import { LeaseImpl, newToken, type Lease, type LeaseHandle, type RunContext, type SemaphoreState } from './lease.js'
import { runHolding, waitInLine } from './waiting.js'
import { AirlockError, optionError } from '../base/errors.js'
import {
  abortSignal,
  boolean,
  received,
  duration,
  knownKeys,
  notTinyMs,
  optionsObject,
  positiveInteger,
  productBound,
  semaphoreName,
  waitDuration,
  type Duration,
} from '../base/validate.js'

/**
 * What {@link Semaphore.tryAcquire} answers: a lease, or why not; `ended`: what the store dropped as
 * it answered (slots that expired, places that lapsed; see `StoreEnded`), for a gate's figures.
 */
export type TryAcquireResult = ({ lease: Lease } | { lease: null; refused: 'full' | 'client-share' }) & {
  ended?: StoreEnded
}

/** Options of {@link createSemaphore}. All durations in milliseconds, at most 2^31 − 1 (a timer's limit). */
export interface SemaphoreOptions {
  /** Identifies the semaphore in its store; processes sharing a name share the slots. */
  name: string
  /**
   * How many weight units may be held at once. A function is read on every acquire (a live limit:
   * lowering it never takes a slot from its holder, new acquires wait until fewer are held).
   */
  limit: number | (() => number)
  /**
   * Life of a slot; a crashed holder's slot frees itself after this. Milliseconds or text with a
   * unit (`'30s'`); a bare number under 1000 is refused as a likely unit mistake (write `'400ms'`).
   */
  ttl: Duration
  /**
   * At most this many acquisitions per minute across every process on the store (evenly spaced,
   * in bursts of up to a second's worth, at least 2); an acquisition the rate refuses waits or fails as if the
   * semaphore were full. A function is read on every acquire (`null`: no cap). Default: no cap.
   */
  admissionRate?: number | (() => number | null)
  /** Where slots live. Default: the process-wide memory store. */
  store?: Store
  /**
   * Blocking waiters re-check at least this often, as a safety net for a lost wake-up message
   * (and as their sign of life in line); a waiter unseen for 10× this loses its place, so it is at
   * most 214,748,364 (10× must fit a timer). Default 1000.
   */
  retryInterval?: number
}

export interface AcquireOptions {
  /** Units of the limit this slot takes. Default 1. */
  weight?: number
}

export interface BlockingOptions extends AcquireOptions {
  /** Give up (resolve `null`) after this long. Default `Infinity`. */
  timeout?: number
  /** Abort waiting; the promise rejects with `signal.reason`. */
  signal?: AbortSignal
}

export type { Lease, LeaseHandle, RunContext, SemaphoreState } from './lease.js'

export interface RunOptions extends AcquireOptions {
  /** How long to wait for a slot before throwing `ERR_AIRLOCK_TIMEOUT`. Default 0: try once. */
  timeout?: number
  signal?: AbortSignal
  /** Keep the lease alive while `fn` runs (refresh every `ttl / 3`). Default true. */
  autoRefresh?: boolean
}

/** A blocking waiter unseen for this many poll intervals loses its place in line. */
const IDLE_POLLS = 10

/** Line settings for blocking waiters; a crashed waiter stalls nobody for long. */
function blockingLine(retryInterval: number): QueueRequest {
  return { order: 'fifo', idleTimeout: retryInterval * IDLE_POLLS, claimWindow: retryInterval * 3, maxLength: 0 }
}

/**
 * A distributed counting semaphore with leases. Create it with {@link createSemaphore}.
 */
export class Semaphore {
  readonly name: string
  readonly ttl: number
  readonly store: Store
  readonly retryInterval: number
  readonly #limit: () => number
  readonly #rate: () => number | null

  constructor(options: SemaphoreOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`createSemaphore() needs an options object with name, limit and ttl, got ${received(options)}`)
    }
    knownKeys('createSemaphore()', options, ['name', 'limit', 'ttl', 'store', 'retryInterval', 'admissionRate'])
    this.name = semaphoreName('name', options.name)
    this.#limit = liveLimit(options.limit)
    this.#rate = liveRate(options.admissionRate)
    this.ttl = notTinyMs('ttl', options.ttl, duration('ttl', options.ttl))
    this.retryInterval = duration(
      'retryInterval',
      options.retryInterval ?? 1000,
      productBound(IDLE_POLLS, `a blocking waiter's idle timeout, ${IDLE_POLLS} × retryInterval,`),
    )
    this.store = resolveStore(options.store)
  }

  /** How many weight units may be held at once, now (a live limit is read each time). */
  get limit(): number {
    return this.#limit()
  }

  private weightOf(options: AcquireOptions | undefined): number {
    const weight = positiveInteger('weight', options?.weight ?? 1)
    if (weight > this.limit) optionError(`weight must be at most the limit (${this.limit}), got ${weight}`)
    return weight
  }

  /**
   * True while the store may have lost slots that have not all expired yet (`Store.lostAt`: a
   * failover or a restart erased the last writes): no new slot is granted for a `ttl` after the
   * loss, so the holders whose slots were erased (who learn it only at their next refresh) and the
   * new ones never add up to more than the limit.
   */
  quarantined(now = Date.now()): boolean {
    const lost = this.store.lostAt?.()
    return lost !== undefined && now - lost < this.ttl
  }

  /** Takes a slot if one is free right now (never waits). `null` when full, others are waiting, or {@link quarantined}. */
  async acquire(options: AcquireOptions = {}): Promise<Lease | null> {
    optionsObject('acquire()', options, ['weight'])
    return (await this.tryAcquire(options)).lease
  }

  /**
   * {@link acquire}, saying why not: `'full'` (full, others waiting, or {@link quarantined}) or
   * `'client-share'` (`options.client` is over its share; see `ClientShare`).
   */
  async tryAcquire(options: AcquireOptions & { client?: ClientShare } = {}): Promise<TryAcquireResult> {
    optionsObject('tryAcquire()', options, ['weight', 'client'])
    if (this.quarantined()) {
      this.weightOf(options)
      return { lease: null, refused: 'full' }
    }
    const token = newToken()
    const result = await this.store.acquire(this.name, {
      token,
      limit: this.limit,
      ttl: this.ttl,
      weight: this.weightOf(options),
      fresh: true,
      admissionRate: this.#rate() ?? undefined,
      client: options.client,
    })
    const ended = result.ended === undefined ? undefined : { ended: result.ended }
    if (result.status === 'acquired') return { lease: this.leaseFrom(token, result), ...ended }
    return { lease: null, refused: result.status === 'client-share' ? 'client-share' : 'full', ...ended }
  }

  /**
   * Waits in a fair FIFO line for a slot. Wakes on a release message (pub/sub on Redis), with a slow
   * poll every `retryInterval` (or at the next slot expiry, if sooner) as a safety net.
   * Resolves `null` on timeout; rejects with `signal.reason` on abort. Either way it leaves the line.
   */
  async acquireBlocking(options: BlockingOptions = {}): Promise<Lease | null> {
    optionsObject('acquireBlocking()', options, ['timeout', 'signal', 'weight'])
    const weight = this.weightOf(options)
    const timeout = waitDuration('timeout', options.timeout ?? Infinity)
    abortSignal('signal', options.signal)
    const deadline = Date.now() + timeout
    // After a loss, wait out the quarantine first (see `quarantined`).
    while (this.quarantined()) {
      const left = Math.min(this.store.lostAt!()! + this.ttl, deadline) - Date.now()
      if (Date.now() >= deadline) return null
      await new Promise((r) => setTimeout(r, Math.max(1, Math.min(left, this.retryInterval))))
      options.signal?.throwIfAborted()
    }
    const token = newToken()
    const outcome = await waitInLine({
      store: this.store,
      name: this.name,
      request: {
        token,
        limit: this.limit,
        ttl: this.ttl,
        weight,
        queue: blockingLine(this.retryInterval),
        fresh: true,
        admissionRate: this.#rate() ?? undefined,
      },
      refresh: () => ({ limit: this.limit, admissionRate: this.#rate() ?? undefined }),
      deadline,
      signal: options.signal,
      retryInterval: this.retryInterval,
    })
    return outcome.status === 'acquired' ? this.leaseFrom(token, outcome) : null
  }

  /** The lease identified by `token`, e.g. from another process. */
  lease(token: string): LeaseHandle {
    if (typeof token !== 'string' || token.length === 0 || token.length > 200) {
      optionError(`token must be a non-empty string of at most 200 characters, got ${received(token)}`)
    }
    return new LeaseImpl(this, token)
  }

  /**
   * Acquires (waiting up to `timeout`), runs `fn`, and always releases. Throws `ERR_AIRLOCK_TIMEOUT`
   * when not admitted. With `autoRefresh` (default) the lease is refreshed every `ttl / 3`; if that
   * fails, `context.signal` aborts with `ERR_AIRLOCK_LEASE_LOST` so the job can stop.
   */
  async run<T>(fn: (context: RunContext) => T | Promise<T>, options: RunOptions = {}): Promise<T> {
    if (typeof fn !== 'function') optionError(`run() needs a function, got ${received(fn)}`)
    optionsObject('run()', options, ['timeout', 'signal', 'weight', 'autoRefresh'])
    const timeout = waitDuration('timeout', options.timeout ?? 0)
    abortSignal('signal', options.signal)
    const autoRefresh = boolean('autoRefresh', options.autoRefresh ?? true)
    const lease =
      timeout === 0 && !options.signal
        ? await this.acquire({ weight: options.weight })
        : await this.acquireBlocking({ timeout, signal: options.signal, weight: options.weight })
    if (!lease) {
      throw new AirlockError(
        'ERR_AIRLOCK_TIMEOUT',
        `semaphore '${this.name}' had no free slot within ${timeout} ms (limit ${this.limit})`,
      )
    }
    return runHolding(lease, this.ttl, autoRefresh, fn)
  }

  /** Live slots in weight units, and blocking waiters. */
  async getState(): Promise<SemaphoreState> {
    const { held, waiting } = await this.store.state(this.name)
    return { limit: this.limit, held, available: Math.max(0, this.limit - held), waiting }
  }

  /** Drops every slot (all holders' refreshes fail from now on) and wakes the head of the line. */
  forceReleaseAll(): Promise<number> {
    return this.store.forceReleaseAll(this.name)
  }

  private leaseFrom(token: string, result: Extract<AcquireResult, { status: 'acquired' }>): Lease {
    return new LeaseImpl(this, token, result) as Lease
  }
}

/**
 * A limit option as a function: a number is checked now; a function is checked to be one, and what
 * it returns is checked on each read (a bad value throws `ERR_AIRLOCK_OPTION` from that call).
 */
export function liveLimit(limit: number | (() => number)): () => number {
  if (typeof limit !== 'function') {
    const fixed = positiveInteger('limit', limit)
    return () => fixed
  }
  return () => positiveInteger('limit()', limit())
}

/** An `admissionRate` option as a function (`null`: no cap), checked like {@link liveLimit}. */
export function liveRate(rate: number | (() => number | null) | undefined): () => number | null {
  if (rate === undefined || rate === null) return () => null
  if (typeof rate !== 'function') {
    const fixed = positiveInteger('admissionRate', rate)
    return () => fixed
  }
  return () => {
    const r = rate()
    return r === null ? null : positiveInteger('admissionRate()', r)
  }
}

/** Creates a semaphore. Throws `ERR_AIRLOCK_OPTION` naming the first invalid option. */
export function createSemaphore(options: SemaphoreOptions): Semaphore {
  return new Semaphore(options)
}
