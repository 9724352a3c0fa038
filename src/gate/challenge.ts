import { createHash } from 'node:crypto'
import { optionError } from '../base/errors.js'
import { createSigner, type Signer } from '../base/signing.js'
import { received, duration, knownKeys, oneOf } from '../base/validate.js'
import { newToken } from '../core/lease.js'
import { SOLUTION_HEADER } from '../pages/challenge.js'
import type { ChallengeSettings } from './option-types.js'

export { SOLUTION_HEADER }
export type { ChallengeSettings } from './option-types.js'

/**
 * The waiting room's proof-of-work challenge (`queue: { challenge: true }`): before a new visitor
 * gets a place in line, its browser finds a counter whose SHA-256 with a signed challenge starts
 * with `difficulty` zero bits: a second of work for one visitor, a real cost for a script that
 * wants thousands of places.
 *
 * Challenge (a header value and a cookie value as is): `c1~<gate>~<visitor>~<difficulty>~<expiresAt>~<id>~<mac>`
 * - `c1`: format version.
 * - `<gate>`: the gate's name; a challenge of another gate is no challenge here.
 * - `<visitor>`: the first 96 bits of SHA-256(visitorId), base64url: binds the challenge to one
 *   visitor without showing the visitor id (a lease token once admitted) in the page.
 * - `<difficulty>`: the leading zero bits required (decimal).
 * - `<expiresAt>`: ms since the epoch, base 36, this server's clock.
 * - `<id>`: 128 random bits, base64url: the challenge's identity, burnt once solved.
 * - `<mac>`: HMAC-SHA256 with the context `airlock-challenge` (see `signing.ts`).
 *
 * Solution, the header `X-Airlock-Solution: <challenge> <nonce>`: the challenge as issued, one
 * space, and the nonce, a decimal counter of 1 to 16 digits, such that
 * SHA-256(`<challenge>:<nonce>`) (UTF-8) starts with `<difficulty>` zero bits.
 */

/** Signing context of challenges: a challenge never verifies as a pass or a ticket. */
export const CHALLENGE_CONTEXT = 'airlock-challenge'
/** Format version, the challenge's first field. */
export const CHALLENGE_VERSION = 'c1'
/** Longest challenge accepted before any crypto. Real ones are about 100 characters plus the gate's name. */
export const CHALLENGE_MAX_LENGTH = 256
/** Longest solution accepted before any crypto: a challenge, a space and 16 digits. */
export const SOLUTION_MAX_LENGTH = CHALLENGE_MAX_LENGTH + 17
/** Most burnt challenge ids kept in one process (see {@link Challenges.verify}). */
export const USED_MAX = 100_000
/** New places a second, and people in line, under which the line is calm (no extra difficulty). */
export const CALM = { newPerSecond: 10, waiting: 1000 } as const

/**
 * The default difficulty: bits whose median solve in headless Chromium on a 2-core server is well
 * under a second (`npx tsx bench/challenge.ts` measures it).
 */
export const DEFAULT_DIFFICULTY = 17

const KEYS = ['difficulty', 'maxDifficulty', 'ttl', 'failed', 'noscriptDelay', 'noscriptRate'] as const

function bits(option: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 32) {
    optionError(`${option} must be an integer from ${min} to 32 (leading zero bits), got ${received(value)}`)
  }
  return value
}

/**
 * Settles `queue.challenge`: `undefined` or `false` is off (undefined), `true` the defaults, an
 * object `{ difficulty, maxDifficulty, ttl, failed, noscriptDelay, noscriptRate }` overrides some of them.
 * Throws `ERR_AIRLOCK_OPTION` with a sentence naming the option.
 */
export function challengeSettings(option: unknown): ChallengeSettings | undefined {
  if (option === undefined || option === false) return undefined
  const o: Record<string, unknown> = option === true ? {} : (option as Record<string, unknown>)
  if (option !== true && (option === null || typeof option !== 'object' || Array.isArray(option))) {
    optionError(`queue.challenge must be true, false or an object { difficulty, ttl, ... }, got ${received(option)}`)
  }
  knownKeys('queue.challenge', o, KEYS)
  const difficulty = bits('queue.challenge.difficulty', o.difficulty ?? DEFAULT_DIFFICULTY, 1)
  return {
    difficulty,
    maxDifficulty: bits('queue.challenge.maxDifficulty', o.maxDifficulty ?? Math.min(32, difficulty + 4), difficulty),
    ttl: duration('queue.challenge.ttl', o.ttl ?? 60_000),
    failed: oneOf('queue.challenge.failed', o.failed ?? 'refuse', ['refuse', 'shadow']),
    noscriptDelay: duration('queue.challenge.noscriptDelay', o.noscriptDelay ?? 15_000),
    noscriptRate: rate('queue.challenge.noscriptRate', o.noscriptRate ?? 1),
  }
}

function rate(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1_000_000) {
    optionError(
      `${option} must be a number of visitors a second, 0 or more (0: none gets in without JavaScript), got ${received(value)}`,
    )
  }
  return value
}

/** What {@link Challenges.verify} found. Only `'ok'` earns a place. */
export type ChallengeVerdict = 'ok' | 'missing' | 'invalid' | 'expired' | 'replayed'

/** A challenge as issued, for the page or the JSON answer. */
export interface IssuedChallenge {
  challenge: string
  difficulty: number
  /** ms since the epoch. */
  expiresAt: number
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()
const visitorTag = (visitorId: string): string => sha256(visitorId).toString('base64url', 0, 12)
const NONCE = /^[0-9]{1,16}$/
const DIFFICULTY = /^[1-9][0-9]?$/
const EXPIRY = /^[0-9a-z]{1,11}$/

/**
 * Issues and checks one gate's challenges: `gate` is the gate's name, `secrets` its secrets (the
 * first signs, every one verifies: rotation), `settings` from {@link challengeSettings}.
 */
export class Challenges {
  private readonly signer: Signer
  /** Burnt challenge ids and their expiry, oldest first. */
  private readonly used = new Map<string, number>()

  constructor(
    private readonly gate: string,
    secrets: readonly string[],
    private readonly settings: ChallengeSettings,
  ) {
    if (!/^[A-Za-z0-9._:-]{1,64}$/.test(gate))
      optionError(`a challenge's gate name must be a safe name, got ${received(gate)}`)
    this.signer = createSigner({ secrets, context: CHALLENGE_CONTEXT, maxLength: CHALLENGE_MAX_LENGTH })
  }

  /**
   * A new challenge for `visitorId` at `difficulty` bits (rounded into 1..32; not a number: the
   * settings' `difficulty`), valid for the `ttl` from `now`.
   */
  issue(visitorId: string, now: number, difficulty: number): IssuedChallenge {
    const wanted = Number.isFinite(difficulty) ? Math.round(difficulty) : this.settings.difficulty
    const bitsWanted = Math.min(32, Math.max(1, wanted))
    const expiresAt = now + this.settings.ttl
    const fields = [
      CHALLENGE_VERSION,
      this.gate,
      visitorTag(visitorId),
      String(bitsWanted),
      expiresAt.toString(36),
      newToken(),
    ]
    return { challenge: this.signer.sign(fields), difficulty: bitsWanted, expiresAt }
  }

  /**
   * Checks a solution (`<challenge> <nonce>`, the {@link SOLUTION_HEADER}'s value) of `visitorId`
   * at `now`. Never throws. O(1): a length and alphabet check, one HMAC (per secret), one SHA-256.
   *
   * - `'missing'`: no solution (undefined or empty).
   * - `'invalid'`: malformed, forged, of another gate or visitor, or the hash falls short.
   * - `'expired'`: a genuine challenge past its expiry.
   * - `'replayed'`: a genuine solution this process already accepted.
   *
   * Replays: an accepted challenge's id is kept until its expiry in this process, so it is
   * accepted once. Ids leave the oldest first once expired (an id may stay up to one `ttl` after
   * its expiry when challenges are solved out of order: bounded, and harmless since expired ones are
   * refused anyway), and at {@link USED_MAX} ids the oldest is forgotten early, so memory stays
   * under about 10 MB under any flood; a forgotten id could be accepted again. Across processes (and
   * after a forgotten id) a replay gains nothing, since the challenge is bound to one visitor id and
   * a visitor id has one place in line: replaying only asks again for the place it has.
   */
  verify(visitorId: string, solution: string | undefined, now: number): ChallengeVerdict {
    if (solution === undefined || solution === '') return 'missing'
    if (typeof solution !== 'string' || solution.length > SOLUTION_MAX_LENGTH || typeof visitorId !== 'string')
      return 'invalid'
    const space = solution.indexOf(' ')
    if (space < 0 || !NONCE.test(solution.slice(space + 1))) return 'invalid'
    const challenge = solution.slice(0, space)
    const fields = this.signer.verify(challenge)
    if (fields?.length !== 6) return 'invalid'
    const [version, gate, visitor, difficulty, expiry, id] = fields as [string, string, string, string, string, string]
    if (version !== CHALLENGE_VERSION || gate !== this.gate || visitor !== visitorTag(visitorId)) return 'invalid'
    if (!DIFFICULTY.test(difficulty) || Number(difficulty) > 32 || !EXPIRY.test(expiry)) return 'invalid'
    const expiresAt = parseInt(expiry, 36)
    if (!(now <= expiresAt)) return 'expired'
    if (leadingZeroBits(sha256(`${challenge}:${solution.slice(space + 1)}`)) < Number(difficulty)) return 'invalid'
    this.forgetExpired(now)
    if (this.used.has(id)) return 'replayed'
    if (this.used.size >= USED_MAX) this.used.delete(this.used.keys().next().value as string)
    this.used.set(id, expiresAt)
    return 'ok'
  }

  /** How many challenge ids are held against replays now (for tests and metrics). */
  get usedCount(): number {
    return this.used.size
  }

  /**
   * The difficulty for a new challenge under `pressure`: `difficulty` while the line is calm, one
   * bit more for each doubling of new places a second above {@link CALM}.newPerSecond (10/s:
   * 20/s is +1, 40/s +2) and one more for each doubling of the line's length above
   * {@link CALM}.waiting (1,000: 2,000 is +1), at most `maxDifficulty`. Pure; a non-finite or
   * negative figure counts as calm, an infinite one as the most.
   */
  difficultyFor(pressure: { newPerSecond: number; waiting: number }): number {
    const { difficulty, maxDifficulty } = this.settings
    const more = doublings(pressure.newPerSecond, CALM.newPerSecond) + doublings(pressure.waiting, CALM.waiting)
    return Math.min(maxDifficulty, difficulty + more)
  }

  private forgetExpired(now: number): void {
    for (const [id, expiresAt] of this.used) {
      if (expiresAt >= now) return
      this.used.delete(id)
    }
  }
}

/** Whole doublings of `value` above `calm`: 0 below `calm * 2` (and for NaN or a negative), 1 from `calm * 2`, ... */
function doublings(value: number, calm: number): number {
  if (value === Infinity) return 32
  return value >= calm * 2 ? Math.floor(Math.log2(value / calm)) : 0
}

/** Leading zero bits of a digest. */
export function leadingZeroBits(digest: Uint8Array): number {
  let n = 0
  for (const byte of digest) {
    if (byte !== 0) return n + Math.clz32(byte) - 24
    n += 8
  }
  return n
}
