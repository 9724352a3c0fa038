/**
 * The option objects of the gate's parts (the line and its proof-of-work door, each client's share,
 * the adaptive limit), declared apart from the code that settles them: the gate's public types
 * (types.ts) and that code both import them, and neither imports the other. A leaf of the gate:
 * types only, nothing from the gate's implementation files.
 */
import type { QueueSettings } from '../stores/types.js'
import type { BusyPage } from '../pages/busy.js'
import type { WaitingPage } from '../pages/waiting.js'

/**
 * The gate's `busy` option: the answer a newcomer gets when it is not let in (`503`, `Retry-After`,
 * the busy page or JSON): no free slot without a `queue`, the line full, the gate closed, the store
 * down with `onStoreError: 'closed'`, the client over its `clientShare`. Replaces the flat
 * `busyPage` and `retryAfter` options (deprecated aliases until 0.3; one setting given in both
 * forms is refused).
 */
export interface GateBusyOptions {
  /**
   * Your busy page: HTML, or a function of `{ retryAfter, request, nonce, language, reason }`
   * returning HTML (one that throws is logged and the built-in page sent). Default: the built-in
   * page, which waits a jittered `retryAfter` and tries again by itself.
   */
  page?: BusyPage
  /**
   * Seconds, sent as `Retry-After` and in the JSON body; the built-in page waits 0.5x..1.5x of it.
   * 1 to 3600. Default 5.
   */
  retryAfter?: number
}

/**
 * The gate's `queue` option: a fair waiting room in front of the site. Durations in ms. The line
 * settings ({@link QueueSettings}) default to: `order` `'fifo'`, `maxLength` 100,000 (beyond it
 * newcomers get the busy answer), `idleTimeout` 30,000 (a visitor whose page stopped polling),
 * `claimWindow` 10,000, `confirmTimeout` 3 x pollInterval, at least 5,000, at most idleTimeout.
 */
export interface GateQueueOptions extends Partial<QueueSettings> {
  /**
   * How often the waiting page polls while visible (jittered 0.75x..1.25x), and the `Retry-After`
   * of a queued answer. Default 2,000. Must leave room for a poll within `claimWindow` and `idleTimeout`.
   */
  pollInterval?: number
  /** A custom waiting page (a function of the place in line returning HTML). */
  page?: WaitingPage
  /**
   * A proof-of-work door before a new place or slot (off by default): `true`, or `{ difficulty,
   * maxDifficulty, ttl, failed: 'refuse' | 'shadow', noscriptDelay, noscriptRate }`. See docs/waiting-room.md "Bots".
   */
  challenge?: boolean | Partial<ChallengeSettings>
}

/** `queue.challenge` settled (challenge.ts, `challengeSettings`): every field set. */
export interface ChallengeSettings {
  /** Leading zero bits a calm line asks for (1 to 32). Default 17 (`DEFAULT_DIFFICULTY`). */
  difficulty: number
  /** The most bits `Challenges.difficultyFor` asks for under pressure. Default `difficulty + 4` (at most 32). */
  maxDifficulty: number
  /** How long a challenge can be solved (ms). Default 60 000. */
  ttl: number
  /**
   * What the gate does with a wrong, expired or replayed solution. `'refuse'` (default): no
   * place, a fresh challenge. `'shadow'`: the visitor is told it is queued but gets no real place,
   * so a script learns nothing from the answer.
   */
  failed: 'refuse' | 'shadow'
  /**
   * A visitor without JavaScript cannot solve: the challenge page reloads itself (meta refresh)
   * after this long, and the gate lets the visitor into the line once its ticket is at least this
   * old (ms). Waiting is the no-JavaScript visitor's proof of work. Default 15 000.
   */
  noscriptDelay: number
  /**
   * Visitors a second this instance lets in without a solution (the `noscriptDelay` path), ten
   * seconds' worth at once. A visitor past it is shown the challenge again (its page reloads after
   * `noscriptDelay`): clients that compute nothing get at most this many places a second however
   * many they are. `0`: none gets in without JavaScript. Default 1.
   */
  noscriptRate: number
}

/** The `clientShare` option. */
export interface ClientShareOptions {
  /**
   * At most this many places in line and unconfirmed slots at once, per client. Default 20: a
   * household or an office behind one address queues together; raise it where many people share
   * an address (a campus, a carrier NAT), or give `clientKey` a user id.
   */
  places?: number
  /**
   * At most this many unconfirmed slots at once (a slot stops counting once its pass is confirmed:
   * the browser came back with the cookie). Default: a quarter of the limit in force, at least 1.
   */
  slots?: number
  /** At most this many new slots and places a minute, per client (a burst of that many, then evenly spaced). Default 60. */
  perMinute?: number
}

/** The `history` option: how long the store keeps the gate's per-minute history. */
export interface GateHistoryOptions {
  /** Days each minute is kept (1 to 3650). Default 30. */
  days?: number
}

/** The adaptive limit's bounds (`limit: { min, max, initial? }`), settled. */
export interface AdaptiveSettings {
  min: number
  max: number
  initial: number
}
