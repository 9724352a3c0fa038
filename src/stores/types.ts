/**
 * The one contract every store implements. A store keeps, per semaphore name, the live slots
 * (holders), an optional line of waiters, and a fencing counter. Every method is one atomic
 * decision (one Lua script on Redis), with time taken from the store's own clock.
 *
 * Stores are shared: one store serves any number of semaphores, gates and waiting rooms, told apart
 * by `name`. Custom stores are checked for this shape at startup (see `assertStore`).
 */
export interface Store {
  /** A short label for logs and errors (`'memory'`, `'redis'`). */
  readonly kind: string

  /**
   * Try to take a slot for `token`, or (with `queue`) take or keep a place in line.
   *
   * - A token that already holds a live slot gets it back unchanged (idempotent).
   * - While the line is not empty, only waiters for whom room is reserved may take a slot; a caller
   *   without `queue` gets `busy`, a caller with `queue` is placed at the back (or keeps its place).
   * - Free room is reserved for the next waiters, as many as fit (in arrival order, or drawn
   *   uniformly at random among those waiting with `order: 'random'`), each for its `claimWindow`;
   *   a waiter that lets its window pass loses its place. A waiter that does not fit stops the
   *   round, so no one overtakes it.
   * - Waiters not seen for their `idleTimeout` lose their place; a new place taken with
   *   `confirmTimeout` is lost after that shorter time unless the waiter comes back (so places taken
   *   by clients that never come back, and any room reserved for them, are freed quickly).
   */
  acquire(name: string, request: AcquireRequest): Promise<AcquireResult>

  /** Extend a live slot owned by `token` to `now + ttl`. Never re-creates an expired slot. */
  refresh(name: string, token: string, ttl: number): Promise<RefreshResult>

  /** Free the live slot owned by `token`. `false` when it was expired, released or never existed. */
  release(name: string, token: string): Promise<boolean>

  /** Leave the line. `false` when `token` was not waiting. Never touches a held slot. */
  leave(name: string, token: string): Promise<boolean>

  /** What the store knows of one token. */
  leaseState(name: string, token: string): Promise<LeaseState>

  /** Live slots in weight units, and how many are waiting in line. */
  state(name: string): Promise<{ held: number; waiting: number }>

  /** Drop every slot of `name` (the line is kept, and its head is woken). Returns how many. */
  forceReleaseAll(name: string): Promise<number>

  /**
   * Be told when room may be yours in `name`'s line. The listener receives a waiter's token (so
   * only its owner needs to retry): a waiter room was just reserved for, or the first waiter
   * without a reservation after a release. Delivery is best effort: callers keep a slow
   * poll as a safety net. Resolves once the subscription is active; returns the unsubscribe function.
   */
  subscribe(name: string, listener: (headToken: string) => void): Promise<() => void>

  /** Release connections and timers this store opened itself. Idempotent. */
  close(): Promise<void>
}

/** How a caller waits in line (only for {@link Store.acquire} with `queue`). */
export interface QueueRequest {
  /** `'fifo'`: by arrival. `'random'`: a lottery among current waiters. */
  order: 'fifo' | 'random'
  /** A waiter not seen for this long (ms) loses its place. */
  idleTimeout: number
  /** How long (ms) room stays reserved for this waiter once it is its turn. */
  claimWindow: number
  /**
   * A new place is lost after this long (ms) unless the waiter comes back (calls again), so the
   * places of clients that never come back (they keep no cookies) go quickly. After the first
   * sign of life, `idleTimeout` applies. `0` or absent: `idleTimeout` from the start.
   */
  confirmTimeout?: number
  /** The line takes no more than this many waiters; 0 means no cap. */
  maxLength: number
  /** `false`: only a sign of life and a position; never admit, never join (a poll). Default true. */
  admit?: boolean
}

export interface AcquireRequest {
  /** The slot's owner: a random, unguessable token. In line, the waiter's id is the same token. */
  token: string
  /** Capacity in weight units. */
  limit: number
  /** Life of a new slot in ms. */
  ttl: number
  /** Units this slot takes. */
  weight: number
  /** Wait in line if not admitted now. */
  queue?: QueueRequest
}

export type AcquireResult =
  | {
      status: 'acquired'
      /** Monotonically increasing per name. */
      fence: number
      /** Store-clock ms. */
      expiresAt: number
      now: number
    }
  | {
      status: 'busy'
      now: number
      /** Earliest store-clock time a current slot expires, if any. */
      nextExpiry: number | null
    }
  | {
      status: 'queued'
      /** 1-based place in line, in arrival order. */
      position: number
      /** How many are in line. */
      waiting: number
      now: number
      nextExpiry: number | null
      /**
       * Admissions of the line's head recorded in the recent window (60 s), and the ms since the
       * oldest of them (for an ETA). Direct admissions while nobody waits are not counted.
       */
      admitted: number
      windowMs: number
    }
  | {
      /** The line is at `maxLength`. */
      status: 'full'
      waiting: number
      now: number
    }
  | {
      /** A poll (`admit: false`) for a token that holds nothing and is not in line. */
      status: 'absent'
      now: number
    }

export type RefreshResult = { ok: true; expiresAt: number; fence: number } | { ok: false }

/** `'released'` is reported for recent releases; an unknown token reads as `'expired'`. */
export type LeaseState = 'acquired' | 'expired' | 'released'

/** Methods a custom store must have; checked at startup with a clear error. */
export const STORE_METHODS = [
  'acquire',
  'refresh',
  'release',
  'leave',
  'leaseState',
  'state',
  'forceReleaseAll',
  'subscribe',
  'close',
] as const satisfies readonly (keyof Store)[]
