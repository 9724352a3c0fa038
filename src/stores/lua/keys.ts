/**
 * The keys every script of the Redis store receives, and the constants of their lifetimes (the
 * Lua functions the scripts share are in prelude.ts, the client shares' in shares.ts).
 *
 * Keys of one semaphore share the hash tag `{<prefix>:<name>}` so Redis Cluster keeps them on one
 * slot. Every script receives all of them in KEYS, in this order:
 *
 *  1 `:h`  sorted set, lease token -> expiry (ms, server time)
 *  2 `:m`  hash, lease token -> "weight,fence"; `#used` = live weight units; `#far` = the time up to
 *          which `:h` and `:m` are known to carry an expiry (so most calls skip PEXPIRE). `:m`
 *          exists exactly while a slot is held (it is deleted when `#used` drops to 0).
 *  3 `:f`  fencing counter (INCR, never below the clock x 1000; kept at least FENCE_KEEP_MS after last use)
 *  4 `:q`  sorted set, the line: waiter token -> arrival number (never below the clock x 1000, so
 *          number / 1000 is when the place was taken; a pre-queue place: shuffle - PRE_QUEUE_BASE)
 *  5 `:s`  sorted set, waiter token -> time it loses its place unless seen again
 *  6 `:qm` hash, waiter token -> "weight,claimWindow"; `#rw` = weight units reserved for waiters;
 *          `#o` = the line's order ('f' fifo, 'r' random)
 *  7 `:r`  sorted set, reservations: waiter token -> time the room held for it lapses
 *  8 `:n`  arrival counter of the line (seeded from the clock x 1000, like the fencing counter)
 *  9 `:a`  sorted set, recent admissions from the line (token -> time), for the ETA
 * 10 `:x`  sorted set, recent releases (token -> time), for leaseState
 * 11 `:is` sorted set, instances that reported (instance id -> time their report lapses)
 * 12 `:ic` hash, instance id -> its report (opaque text)
 * 13 `:rt` the admission rate's theoretical arrival time (GCRA, ms), while a rate is in force
 * 14 `:ctl` hash, the live control record (operator's fields; `#v` = version). No expiry: it is
 *          configuration, removed only by clearing every field.
 * 15 `:ad` hash, the fleet's adaptive limit: `l` the limit; `st` the estimator's state (text);
 *          `at`, `turn` when the last judge was chosen and its number; `ws`, `wf`, `wr` and `b<i>`
 *          the fleet's pending window (samples, failures, refused, latency histogram). Kept an hour.
 * 16 `:e`  hash, the server that granted the last slot: `id` its replication id (`master_replid`),
 *          `q` the time until which no slot is granted after it changed (see server_changed). Kept
 *          as long as the fencing counter.
 * 17 `:cs` hash, per-client shares: client key -> "tat|token|token|..." (the GCRA time of its new
 *          slots and places, then the tokens granted under it that may still hold something)
 * 18 `:ct` hash, token -> its client key (while the token is in that client's record)
 * 19 `:cx` sorted set, client key -> when its record is looked at again (the sweep)
 * 20 `:lt` sorted set, tokens that left the line (LEAVE) -> when the mark lapses (LEFT_KEEP_MS
 *          later): ACQUIRE gives them no place and no slot meanwhile. Expires LEFT_KEEP_MS after the last leave.
 *
 * Time is always `redis.call('TIME')`. Every key gets an expiry, so an idle semaphore leaves
 * nothing behind but its fencing counter (which expires after FENCE_KEEP_MS of disuse) and the
 * short list of recent releases.
 */

/** Key suffixes in KEYS order. */
export const KEY_SUFFIXES = [
  'h',
  'm',
  'f',
  'q',
  's',
  'qm',
  'r',
  'n',
  'a',
  'x',
  'is',
  'ic',
  'rt',
  'ctl',
  'ad',
  'e',
  'cs',
  'ct',
  'cx',
  'lt',
] as const

/** Pre-queue places score `shuffle - PRE_QUEUE_BASE`: below every arrival number, in key order. */
export const PRE_QUEUE_BASE = 2 ** 52

export const FENCE_KEEP_MS = 30 * 24 * 3600 * 1000
export const ADMISSION_WINDOW_MS = 60_000
export const RELEASED_MEMORY = 1000
/** Most visit durations one reply lists (`StoreEnded.visits`). */
export const ENDED_VISITS = 64
export const RELEASED_KEEP_MS = 3_600_000
export { LEFT_KEEP_MS } from '../types.js'
/** Extra life given to keys past the farthest expiry they hold. */
export const KEY_SLACK_MS = 60_000
