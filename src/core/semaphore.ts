import { randomBytes } from 'node:crypto'
import { defaultStore } from '../stores/memory.js'
import { assertStore } from '../stores/assert.js'
import type { AcquireResult, LeaseState, QueueRequest, Store } from '../stores/types.js'
import { runHolding, waitInLine } from './waiting.js'
import { AirlockError, optionError } from './errors.js'
import { describe, duration, knownKeys, optionsObject, positiveInteger, safeName, waitDuration } from './validate.js'

/** Options of {@link createSemaphore}. All durations in milliseconds. */
export interface SemaphoreOptions {
  /** Identifies the semaphore in its store; processes sharing a name share the slots. */
  name: string
  /** How many weight units may be held at once. */
  limit: number
  /** Life of a slot; a crashed holder's slot frees itself after this. */
  ttl: number
  /** Where slots live. Default: the process-wide memory store. */
  store?: Store
  /**
   * Blocking waiters re-check at least this often, as a safety net for a lost wake-up message
   * (and as their sign of life in line). Default 1000.
   */
  pollInterval?: number
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

export interface RunOptions extends AcquireOptions {
  /** How long to wait for a slot before throwing `ERR_AIRLOCK_TIMEOUT`. Default 0: try once. */
  timeout?: number
  signal?: AbortSignal
  /** Keep the lease alive while `fn` runs (refresh every `ttl / 3`). Default true. */
  autoRefresh?: boolean
}

/** What `run` hands to the job. */
export interface RunContext {
  lease: Lease
  /** Aborted with `ERR_AIRLOCK_LEASE_LOST` when the lease could not be kept alive. */
  signal: AbortSignal
}

/** A slot seen by its token, possibly from another process (a cookie or a ticket carries it). */
export interface LeaseHandle {
  readonly token: string
  /** Known once acquired or refreshed by this handle. */
  readonly fence: number | undefined
  /** Store-clock ms; known once acquired or refreshed by this handle. */
  readonly expiresAt: number | undefined
  /** Extends the slot to `now + ttl` (default: the semaphore's ttl). `false` if no longer owned. */
  refresh(ttl?: number): Promise<boolean>
  /** Frees the slot. `true` only if this call released a live slot; later calls return `false`. */
  release(): Promise<boolean>
  /** Asks the store: `'acquired' | 'expired' | 'released'`. */
  state(): Promise<LeaseState>
}

/** A slot this process acquired. */
export interface Lease extends LeaseHandle {
  readonly fence: number
  readonly expiresAt: number
}

export interface SemaphoreState {
  limit: number
  /** Live weight units. */
  held: number
  available: number
  /** Blocking waiters in line. */
  waiting: number
}

/** Line settings for blocking waiters; a crashed waiter stalls nobody for long. */
function blockingLine(pollInterval: number): QueueRequest {
  return { order: 'fifo', idleTimeout: pollInterval * 10, claimWindow: pollInterval * 3, maxLength: 0 }
}

let tokenPool = Buffer.alloc(0)
let tokenOffset = 0

/**
 * A new unguessable lease token (128 random bits, base64url). Bits are drawn from a 4 KB pool of
 * `crypto.randomBytes`, refilled when spent: one system call per 256 tokens, not per token.
 */
export function newToken(): string {
  if (tokenOffset + 16 > tokenPool.length) {
    tokenPool = randomBytes(4096)
    tokenOffset = 0
  }
  const token = tokenPool.toString('base64url', tokenOffset, tokenOffset + 16)
  tokenOffset += 16
  return token
}

class LeaseImpl implements LeaseHandle {
  fence: number | undefined
  expiresAt: number | undefined
  private released = false

  constructor(
    private readonly sem: Semaphore,
    readonly token: string,
    acquired?: { fence: number; expiresAt: number },
  ) {
    this.fence = acquired?.fence
    this.expiresAt = acquired?.expiresAt
  }

  async refresh(ttl: number = this.sem.ttl): Promise<boolean> {
    duration('ttl', ttl)
    if (this.released) return false
    const result = await this.sem.store.refresh(this.sem.name, this.token, ttl)
    if (!result.ok) return false
    this.fence = result.fence
    this.expiresAt = result.expiresAt
    return true
  }

  async release(): Promise<boolean> {
    if (this.released) return false
    const released = await this.sem.store.release(this.sem.name, this.token)
    this.released = true
    return released
  }

  state(): Promise<LeaseState> {
    return this.sem.store.leaseState(this.sem.name, this.token)
  }
}

/**
 * A distributed counting semaphore with leases. Create it with {@link createSemaphore}.
 */
export class Semaphore {
  readonly name: string
  readonly limit: number
  readonly ttl: number
  readonly store: Store
  readonly pollInterval: number

  constructor(options: SemaphoreOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`createSemaphore() needs an options object with name, limit and ttl, got ${describe(options)}`)
    }
    knownKeys('createSemaphore()', options, ['name', 'limit', 'ttl', 'store', 'pollInterval'])
    this.name = safeName('name', options.name)
    this.limit = positiveInteger('limit', options.limit)
    this.ttl = duration('ttl', options.ttl)
    this.pollInterval = duration('pollInterval', options.pollInterval ?? 1000)
    this.store = options.store === undefined ? defaultStore() : assertStore(options.store)
  }

  private weightOf(options: AcquireOptions | undefined): number {
    const weight = positiveInteger('weight', options?.weight ?? 1)
    if (weight > this.limit) optionError(`weight must be at most the limit (${this.limit}), got ${weight}`)
    return weight
  }

  /** Takes a slot if one is free right now (never waits). `null` when full or others are waiting. */
  async acquire(options: AcquireOptions = {}): Promise<Lease | null> {
    optionsObject('acquire()', options, ['weight'])
    const token = newToken()
    const result = await this.store.acquire(this.name, {
      token,
      limit: this.limit,
      ttl: this.ttl,
      weight: this.weightOf(options),
    })
    return result.status === 'acquired' ? this.leaseFrom(token, result) : null
  }

  /**
   * Waits in a fair FIFO line for a slot. Wakes on a release message (pub/sub on Redis), with a slow
   * poll every `pollInterval` (or at the next slot expiry, if sooner) as a safety net.
   * Resolves `null` on timeout; rejects with `signal.reason` on abort. Either way it leaves the line.
   */
  async acquireBlocking(options: BlockingOptions = {}): Promise<Lease | null> {
    knownKeys('acquireBlocking()', options, ['timeout', 'signal', 'weight'])
    const weight = this.weightOf(options)
    const timeout = waitDuration('timeout', options.timeout ?? Infinity)
    const token = newToken()
    const outcome = await waitInLine({
      store: this.store,
      name: this.name,
      request: { token, limit: this.limit, ttl: this.ttl, weight, queue: blockingLine(this.pollInterval) },
      deadline: Date.now() + timeout,
      signal: options.signal,
      pollInterval: this.pollInterval,
    })
    return outcome.status === 'acquired' ? this.leaseFrom(token, outcome) : null
  }

  /** The lease identified by `token`, e.g. from another process. */
  lease(token: string): LeaseHandle {
    if (typeof token !== 'string' || token.length === 0 || token.length > 200) {
      optionError(`token must be a non-empty string of at most 200 characters, got ${describe(token)}`)
    }
    return new LeaseImpl(this, token)
  }

  /**
   * Acquires (waiting up to `timeout`), runs `fn`, and always releases. Throws `ERR_AIRLOCK_TIMEOUT`
   * when not admitted. With `autoRefresh` (default) the lease is refreshed every `ttl / 3`; if that
   * fails, `context.signal` aborts with `ERR_AIRLOCK_LEASE_LOST` so the job can stop.
   */
  async run<T>(fn: (context: RunContext) => T | Promise<T>, options: RunOptions = {}): Promise<T> {
    knownKeys('run()', options, ['timeout', 'signal', 'weight', 'autoRefresh'])
    if (typeof fn !== 'function') optionError(`run() needs a function, got ${describe(fn)}`)
    const timeout = waitDuration('timeout', options.timeout ?? 0)
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
    return runHolding(lease, this.ttl, options.autoRefresh !== false, fn)
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

/** Creates a semaphore. Throws `ERR_AIRLOCK_OPTION` naming the first invalid option. */
export function createSemaphore(options: SemaphoreOptions): Semaphore {
  return new Semaphore(options)
}
