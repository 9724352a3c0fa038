/**
 * Leases: a slot seen by its token (a handle, from anywhere), a slot this process acquired, and
 * the state of a semaphore's slots. Shared by the semaphore, the waiting room and the waits.
 */
import { randomBytes } from 'node:crypto'
import { duration, type Duration } from '../base/validate.js'
import type { LeaseState, Store } from '../stores/types.js'

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
  refresh(ttl?: Duration): Promise<boolean>
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

/**
 * Slots and the line of a semaphore or waiting room, in weight units (a waiting room's visitors
 * each weigh 1).
 */
export interface SemaphoreState {
  limit: number
  /** Live weight units. */
  held: number
  /** Free units (they may be reserved for the head of the line). */
  available: number
  /** Waiters in line. */
  waiting: number
}

/** What a lease needs of the semaphore that owns it. */
export interface LeaseOwner {
  readonly name: string
  readonly ttl: number
  readonly store: Store
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

/** A lease by token, on the semaphore (name, ttl, store) that owns it. */
export class LeaseImpl implements LeaseHandle {
  fence: number | undefined
  expiresAt: number | undefined
  private released = false

  constructor(
    private readonly sem: LeaseOwner,
    readonly token: string,
    acquired?: { fence: number; expiresAt: number },
  ) {
    this.fence = acquired?.fence
    this.expiresAt = acquired?.expiresAt
  }

  async refresh(given?: Duration): Promise<boolean> {
    const ttl = given === undefined ? this.sem.ttl : duration('ttl', given)
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
