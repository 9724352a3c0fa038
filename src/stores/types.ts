/**
 * The one contract every store implements. A store keeps, per semaphore name, the live slots
 * (holders), an optional line of waiters, and a fencing counter. Every method is one atomic
 * decision (one Lua script on Redis), with time taken from the store's own clock.
 *
 * Stores are shared: one store serves any number of semaphores, gates and waiting rooms, told apart
 * by `name`. Custom stores are checked for this shape at startup (see `assertStore`).
 */
/**
 * How long a store remembers that a token left the line (`Store.leave`), in ms: longer than a poll
 * can take to arrive (a few poll intervals), short enough to cost nothing.
 */
export const LEFT_KEEP_MS = 10_000

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

  /**
   * Extend a live slot owned by `token` to `now + ttl`. Never re-creates an expired slot. The slot
   * then no longer counts against its client's share (see {@link ClientShare}).
   */
  refresh(name: string, token: string, ttl: number): Promise<RefreshResult>

  /** Free the live slot owned by `token`. `false` when it was expired, released or never existed. */
  release(name: string, token: string): Promise<boolean>

  /**
   * {@link Store.release}, telling how long the freed slot was held: `heldMs` from its grant to now
   * (the store's clock; `null` when the store cannot tell), or `false` when no live slot was freed.
   * Optional: without it the gate calls `release`, and a session pass given back early has no visit
   * length in the figures.
   */
  releaseHeld?(name: string, token: string): Promise<Released>

  /**
   * Leave the line. `false` when `token` was not waiting. Never touches a held slot. With
   * `keepOut` (and unless `token` holds a slot), `token` is also marked as left for
   * {@link LEFT_KEEP_MS}: an `acquire` with a `queue` that may admit (`admit` not `false`) for it
   * answers `absent` meanwhile, taking no place and no slot, so a poll already on its way when the
   * visitor left cannot take a new place. Stores that predate `keepOut` ignore it.
   */
  leave(name: string, token: string, keepOut?: boolean): Promise<boolean>

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

  /**
   * Optional: the local time (ms) the store last found that it may have lost its most recent
   * writes (a different server answering after a failover or a restart); `undefined` when it never
   * did or cannot tell. Semaphores grant no new slot for a `ttl` after it: every slot the loss may
   * have erased has expired by then, so no more than the limit are ever held.
   */
  lostAt?(): number | undefined

  /**
   * Optional (with {@link Store.status}): records one instance's status (a process's gate) for
   * `name` (`data`, opaque text), kept `ttl` ms unless written again. One round trip; the keys
   * expire, so instances that stop writing leave nothing behind. Resolves to the number of
   * instances whose statuses are live, this one included (a store that cannot tell: `undefined`).
   */
  writeStatus?(name: string, instance: string, data: string, ttl: number): Promise<number | undefined>
  /** @deprecated Renamed {@link Store.writeStatus} in 0.2: the gate still calls a custom store's `report` when it has no `writeStatus`, until 0.3. */
  report?(name: string, instance: string, data: string, ttl: number): Promise<number | undefined>

  /**
   * Optional (with {@link Store.writeStatus}): slots, the line, recent admissions from the line,
   * and the statuses of instances still within their ttl, as one decision (one round trip).
   */
  status?(name: string): Promise<StoreStatus>

  /**
   * Optional (with {@link Store.watchControl}): reads `name`'s live control record, or first
   * applies `patch` to it (a `null` value removes the field) as one atomic step that bumps its
   * version and tells every watcher. One round trip. Fields and values are opaque text here; the
   * control API (`airlockControl`) validates them, and readers ignore what they cannot parse.
   */
  control?(name: string, patch?: Readonly<Record<string, string | null>>): Promise<ControlRecord>

  /**
   * Optional (with {@link Store.control}): be told when `name`'s control record changes (best
   * effort, like {@link Store.subscribe}: readers keep a slow re-read as a safety net). Resolves
   * once the subscription is active; returns the unsubscribe function.
   */
  watchControl?(name: string, listener: () => void): Promise<() => void>

  /**
   * Optional, with {@link adaptCommit}: the fleet's adaptive limit of `name`, one figure for every
   * instance, moved by one judge from every instance's measurements. Adds one instance's window
   * (`report`) to the fleet's pending window and answers the limit (`initial` the first time) and
   * the estimator's saved state. At most once per `every` ms (the store's clock; see
   * {@link AdaptReport.every}) the caller is made the judge: the answer then carries the fleet's pending window (which starts afresh) and a
   * `turn`, and the caller commits the new limit and state with {@link adaptCommit}. One round trip.
   */
  adapt?(name: string, report: AdaptReport): Promise<AdaptAnswer>

  /**
   * Sets the fleet's adaptive limit (clamped to [min, max]) and the estimator's state, if `turn` is
   * still the latest judge's turn (else does nothing: a later judge went on without this one).
   * Resolves whether it was set. One round trip.
   */
  adaptCommit?(name: string, commit: AdaptCommit): Promise<boolean>

  /** Release connections and timers this store opened itself. Idempotent. */
  close(): Promise<void>
}

/** What {@link Store.adapt} takes: one instance's window, and the limit's bounds. */
export interface AdaptReport {
  /** Admitted requests that ended in the window, and those that failed. */
  samples: number
  failures: number
  /** Visitors turned away or queued in the window. */
  refused: number
  /** Their times as histogram buckets (see `latencyBucket`): [bucket, count] pairs. */
  buckets: readonly (readonly [number, number])[]
  min: number
  max: number
  /**
   * The figure when the store has none: the gate's `initial` at first, then the last figure the
   * instance saw (so a store that lost its data goes on from the figure in force, not from scratch).
   */
  initial: number
  /** The judging interval (ms): a window is judged once it is this long and holds `minSamples`
   * samples (or a failure), or once it is `4 x every` long whatever it holds. */
  every: number
  minSamples: number
}

/** When the fleet's pending window is judged (see {@link AdaptReport.every}); the Redis script does the same. */
export function judgeNow(
  age: number,
  samples: number,
  failures: number,
  r: Pick<AdaptReport, 'every' | 'minSamples'>,
): boolean {
  return age >= 4 * r.every || (age >= r.every && (samples >= r.minSamples || failures > 0))
}

/** What {@link Store.adapt} answers. */
export interface AdaptAnswer {
  /** The fleet's limit now. */
  limit: number
  /** The estimator's state as the last judge saved it (text), `null` before the first. */
  state: string | null
  /**
   * Set when the caller is to judge: the fleet's window since the last judging. `inside`: the most
   * live slots of `name` the store counted at the window's reports (`null` when it cannot tell).
   */
  judge?: {
    turn: number
    samples: number
    failures: number
    refused: number
    inside: number | null
    buckets: [number, number][]
  }
}

/** What {@link Store.adaptCommit} takes. */
export interface AdaptCommit {
  turn: number
  limit: number
  state: string
  min: number
  max: number
}

/** A control record as the store keeps it: its fields (text), its version, and the store's clock. */
export interface ControlRecord {
  fields: Record<string, string>
  /** 0 while nothing was ever set. */
  version: number
  /** The store's clock (ms). */
  now: number
}

/** What {@link Store.status} answers. */
export interface StoreStatus {
  /** Live slots in weight units. */
  held: number
  /** Waiters in line. */
  waiting: number
  /** Admissions from the line in the recent window (60 s), and the ms since the oldest (for an ETA). */
  admitted: number
  windowMs: number
  /** Reports of instances within their ttl: their id, what they reported, and when it lapses (store ms). */
  instances: { id: string; data: string; expiresAt: number }[]
  /** The store's clock (ms). */
  now: number
  /** What this call dropped as it went (slots expired, places lapsed); absent when nothing. */
  ended?: StoreEnded
}

/**
 * How a line behaves: the settings every API with a line shares. Documented once, here: the
 * waiting room (`createWaitingRoom`), the gate's `queue` option and the lock service take them as
 * options (each with its own defaults), and the store receives them with every line request.
 * Durations in ms.
 */
export interface QueueSettings {
  /**
   * `'fifo'`: admitted in order of arrival. `'random'`: a lottery: each admission draws uniformly
   * among those waiting at that moment (arriving early is no advantage).
   */
  order: 'fifo' | 'random'
  /** The line takes at most this many waiters; beyond it a newcomer is refused (`full`). 0: no cap. */
  maxLength: number
  /** A waiter not seen (no call for its place) for this long loses its place. */
  idleTimeout: number
  /**
   * When room frees, it is reserved for the next waiters in line (as many as fit), each for this
   * long; newcomers and later waiters cannot take it meanwhile. A waiter that does not come to
   * claim it in time loses its place.
   */
  claimWindow: number
  /**
   * A new place is lost after this long unless the waiter comes back; from its first sign of life
   * `idleTimeout` applies. Clients that never come back (they keep no cookies) then hold a place,
   * and any room reserved for it, for seconds rather than `idleTimeout`. 0: `idleTimeout` from the
   * start.
   */
  confirmTimeout: number
}

/** What {@link Store.releaseHeld} freed: `false` when no live slot. */
export type Released = false | { heldMs: number | null }

/** How a caller waits in line (only for {@link Store.acquire} with `queue`). */
export interface QueueRequest
  extends Omit<QueueSettings, 'confirmTimeout'>,
    Partial<Pick<QueueSettings, 'confirmTimeout'>> {
  /** `false`: only a sign of life and a position; never admit, never join (a poll). Default true. */
  admit?: boolean
  /**
   * The line is held (before a scheduled opening, or while every newcomer must queue): places are
   * kept and taken, but nobody is admitted, except a waiter room was reserved for before the hold.
   */
  hold?: boolean
  /**
   * A new place goes into the pre-queue: ahead of every place taken without it, ordered among the
   * pre-queue by this key (lowest first). Give each visitor an independent uniform random key in
   * [1, 2^52) and the pre-queue is admitted in uniformly random order. 0 or absent: arrival order.
   */
  shuffle?: number
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
  /**
   * At most this many admissions of `name` per minute, across every caller (a GCRA: evenly
   * spaced, in bursts of up to a second's worth, at least 2, so that steady demand loses no credit
   * to arrival jitter). Admissions the rate refuses are
   * answered as if the room were full (busy, or a place in line). 0 or absent: no cap.
   */
  admissionRate?: number
  /**
   * The caller forgets `token` if this call fails (it was made for this call, or for a wait that
   * the failure ends). A store that can give up on a call whose work may still happen afterwards
   * (a timeout while Redis is paused; a command re-sent after a reconnect; a reply lost with its
   * connection) must then free whatever the token holds, slot and place in line, as soon as it
   * can reach its backend again, so a stall never leaves capacity held by a token nobody has.
   * Stores whose calls cannot outlive their answer (the memory store) ignore it.
   */
  fresh?: boolean
  /**
   * The caller's client and its share (see {@link ClientShare}): a token new to `name` (holding no
   * slot, not in line) is refused with `client-share` when its client is over its share. Stores
   * that predate it ignore it (the gate then enforces no share).
   */
  client?: ClientShare
}

/**
 * One client's share of a semaphore, sent with each acquire of a token new to it. What a client
 * holds is counted from the tokens granted under its key: a slot until it is refreshed (the
 * holder came back: the gate confirms a pass with a refresh), released or lapsed; a place in line
 * until it is admitted (then it is an unconfirmed slot), left or lapsed.
 */
export interface ClientShare {
  /** The client (an address block, a user id), 1 to 200 characters of `[A-Za-z0-9._:~/-]`. */
  key: string
  /** At most this many unconfirmed slots and places in line at once. */
  places: number
  /** At most this many unconfirmed slots at once. */
  slots: number
  /** At most this many new slots and places a minute: a burst of that many, then evenly spaced (a GCRA). 0: no cap. */
  perMinute: number
}

/**
 * What a store call's housekeeping dropped (optional: stores that predate it leave it out; see
 * {@link AcquireResult} and {@link StoreStatus}). Each lapse is told once, by the call that dropped it.
 */
export interface StoreEnded {
  /** Slots whose time ran out. */
  expired: number
  /** How long each of (up to 64 of) those slots lived, from its grant to its expiry (ms, the store's clock). */
  visits: number[]
  /** Places in line that lapsed: idle past their timeout, or room reserved for them not claimed in time. */
  lapsed: number
}

export type AcquireResult = (
  | {
      status: 'acquired'
      /**
       * Increases with every acquisition of `name`, also across a store that lost its data (a
       * counter starts from the store's clock x 1000, so fences are large numbers).
       */
      fence: number
      /** Store-clock ms. */
      expiresAt: number
      now: number
      /**
       * Admitted from the line: how long the place had waited, from its arrival to now (ms, the
       * store's clock; absent when not admitted from the line or not known, as for a scheduled
       * opening's pre-queue places on Redis).
       */
      waited?: number
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
      /** The request's client is over its share ({@link AcquireRequest.client}); nothing was taken. */
      status: 'client-share'
      now: number
    }
  | {
      /**
       * A poll (`admit: false`) for a token that holds nothing and is not in line; or any line
       * request for a token kept out after leaving (`Store.leave` with `keepOut`).
       */
      status: 'absent'
      now: number
    }
) & {
  /** What this call dropped as it went (slots expired, places lapsed); absent when nothing. */
  ended?: StoreEnded
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
