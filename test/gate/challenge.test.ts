/**
 * The proof-of-work challenge (src/gate/challenge.ts): `queue.challenge` settings, issue and
 * verify (a real solve), every way a solution is refused (and that verify never throws), the
 * replay set's bound, and the difficulty rule under pressure.
 */
import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { solvingNonce, wrongNonce } from '../helpers/pow.js'
import { isAirlockError } from '../../src/base/errors.js'
import {
  CALM,
  Challenges,
  challengeSettings,
  DEFAULT_DIFFICULTY,
  leadingZeroBits,
  SOLUTION_MAX_LENGTH,
  USED_MAX,
  type ChallengeSettings,
} from '../../src/gate/challenge.js'

const SECRET = 'challenge-test-secret-at-least-32-bytes'
const OTHER_SECRET = 'another-challenge-secret-of-32-bytes-or-more'
const now = 1_750_000_000_000
const settings = (over: Partial<ChallengeSettings> = {}): ChallengeSettings => ({
  ...challengeSettings(true)!,
  ...over,
})

const solve = solvingNonce
const miss = wrongNonce

function optionMessage(option: unknown): string {
  try {
    challengeSettings(option)
  } catch (err) {
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    return (err as Error).message
  }
  throw new Error(`no error for ${JSON.stringify(option)}`)
}

describe('queue.challenge settings', () => {
  it('off for undefined and false; defaults for true; an object overrides some', () => {
    expect(challengeSettings(undefined)).toBeUndefined()
    expect(challengeSettings(false)).toBeUndefined()
    expect(challengeSettings(true)).toEqual({
      difficulty: DEFAULT_DIFFICULTY,
      maxDifficulty: DEFAULT_DIFFICULTY + 4,
      ttl: 60_000,
      failed: 'refuse',
      noscriptDelay: 15_000,
      noscriptRate: 1,
    })
    expect(challengeSettings({ difficulty: 10, failed: 'shadow', ttl: 5000, noscriptDelay: 1000 })).toEqual({
      difficulty: 10,
      maxDifficulty: 14,
      ttl: 5000,
      failed: 'shadow',
      noscriptDelay: 1000,
      noscriptRate: 1,
    })
    expect(challengeSettings({ difficulty: 30 })!.maxDifficulty).toBe(32)
    expect(challengeSettings({ difficulty: 12, maxDifficulty: 12 })!.maxDifficulty).toBe(12)
  })

  it('throws ERR_AIRLOCK_OPTION naming the option and the fix', () => {
    expect(optionMessage({ difficulty: 40 })).toBe(
      'queue.challenge.difficulty must be an integer from 1 to 32 (leading zero bits), got 40',
    )
    expect(optionMessage({ difficulty: 0 })).toMatch(
      /^queue\.challenge\.difficulty must be an integer from 1 to 32.*got 0$/,
    )
    expect(optionMessage({ difficulty: 12.5 })).toMatch(/difficulty .*got 12\.5$/)
    expect(optionMessage({ difficulty: '16' })).toMatch(/difficulty .*got "16"$/)
    expect(optionMessage({ difficulty: 16, maxDifficulty: 15 })).toBe(
      'queue.challenge.maxDifficulty must be an integer from 16 to 32 (leading zero bits), got 15',
    )
    expect(optionMessage({ maxDifficulty: 33 })).toMatch(/^queue\.challenge\.maxDifficulty .*got 33$/)
    expect(optionMessage({ ttl: 0 })).toBe(
      "queue.challenge.ttl must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got 0",
    )
    expect(optionMessage({ noscriptDelay: -1 })).toMatch(
      /^queue\.challenge\.noscriptDelay must be a positive number of milliseconds/,
    )
    expect(optionMessage({ noscriptRate: -1 })).toMatch(
      /^queue\.challenge\.noscriptRate must be a number of visitors a second, 0 or more \(0: none gets in without JavaScript\), got -1$/,
    )
    expect(optionMessage({ noscriptRate: Number.NaN })).toMatch(/noscriptRate .*got NaN$/)
    expect(optionMessage({ failed: 'block' })).toBe(
      "queue.challenge.failed must be one of 'refuse', 'shadow', got \"block\"",
    )
    expect(optionMessage({ dificulty: 12 })).toMatch(
      /^queue\.challenge has no option 'dificulty' \(did you mean 'difficulty'\?\); known options are difficulty, maxDifficulty/,
    )
    expect(optionMessage('yes')).toMatch(/^queue\.challenge must be true, false or an object .*got "yes"$/)
    expect(optionMessage(null)).toMatch(/got null$/)
    expect(optionMessage([16])).toMatch(/got an array$/)
  })
})

describe('Challenges: issue and verify', () => {
  const challenges = new Challenges('shop', [SECRET], settings({ ttl: 60_000 }))

  it('a challenge is a header and cookie value binding gate, difficulty and expiry, without the visitor id', () => {
    const issued = challenges.issue('visitor-1', now, 8)
    expect(issued.difficulty).toBe(8)
    expect(issued.expiresAt).toBe(now + 60_000)
    // Cookie octets and header value characters: no space, quote, comma, semicolon or backslash.
    expect(issued.challenge).toMatch(/^c1~shop~[A-Za-z0-9_-]{16}~8~[0-9a-z]+~[A-Za-z0-9_-]{22}~[A-Za-z0-9_-]{43}$/)
    expect(issued.challenge).not.toContain('visitor-1')
    expect(issued.challenge.length).toBeLessThan(150)
    expect(challenges.issue('visitor-1', now, 8).challenge).not.toBe(issued.challenge) // 16 random bytes each
    expect(challenges.issue('v', now, 99).difficulty).toBe(32)
    expect(challenges.issue('v', now, 0).difficulty).toBe(1)
    expect(challenges.issue('v', now, Number.NaN).difficulty).toBe(DEFAULT_DIFFICULTY)
  })

  it('accepts a real solve at 8 bits once, then says replayed', () => {
    const { challenge } = challenges.issue('visitor-1', now, 8)
    const nonce = solve(challenge, 8)
    expect(challenges.verify('visitor-1', `${challenge} ${nonce}`, now + 1000)).toBe('ok')
    expect(challenges.verify('visitor-1', `${challenge} ${nonce}`, now + 2000)).toBe('replayed')
    // Another nonce of the same challenge is the same challenge: burnt too.
    let other = Number(nonce) + 1
    while (leadingZeroBits(createHash('sha256').update(`${challenge}:${other}`).digest()) < 8) other++
    expect(challenges.verify('visitor-1', `${challenge} ${other}`, now + 2000)).toBe('replayed')
  })

  it('refuses: missing, wrong visitor, other gate, other secret, expired, short hash, tampered, malformed, too long', () => {
    const c = new Challenges('shop', [SECRET], settings())
    const { challenge, expiresAt } = c.issue('visitor-1', now, 8)
    const nonce = solve(challenge, 8)
    const good = `${challenge} ${nonce}`
    expect(c.verify('visitor-1', undefined, now)).toBe('missing')
    expect(c.verify('visitor-1', '', now)).toBe('missing')
    expect(c.verify('visitor-2', good, now)).toBe('invalid')
    expect(new Challenges('other', [SECRET], settings()).verify('visitor-1', good, now)).toBe('invalid')
    expect(new Challenges('shop', [OTHER_SECRET], settings()).verify('visitor-1', good, now)).toBe('invalid')
    expect(c.verify('visitor-1', good, expiresAt + 1)).toBe('expired')
    expect(c.verify('visitor-1', `${challenge} ${miss(challenge, 8)}`, now)).toBe('invalid')
    // A lower difficulty written into the challenge breaks its signature.
    expect(c.verify('visitor-1', `${challenge.replace('~8~', '~1~')} ${nonce}`, now)).toBe('invalid')
    expect(c.verify('visitor-1', `${challenge.slice(0, -1)}${challenge.endsWith('A') ? 'B' : 'A'} ${nonce}`, now)).toBe(
      'invalid',
    )
    for (const bad of [
      challenge, // no nonce
      `${challenge}  ${nonce}`, // two spaces
      `${challenge} ${nonce} `,
      `${challenge} -${nonce}`,
      `${challenge} ${nonce}.0`,
      `${challenge} 0x1`,
      `${challenge} ${'1'.repeat(17)}`, // 17 digits
      `${challenge}:${nonce}`,
      ` ${nonce}`,
      `${challenge} ${nonce}`.padEnd(SOLUTION_MAX_LENGTH + 1, '0'),
      'x'.repeat(100_000),
    ]) {
      expect(c.verify('visitor-1', bad, now), bad.slice(0, 80)).toBe('invalid')
    }
    // Unexpired to the millisecond; nothing above was burnt, so the good one still passes once.
    expect(c.verify('visitor-1', good, expiresAt)).toBe('ok')
  })

  it('a challenge signed with an older secret still verifies during a rotation', () => {
    const old = new Challenges('shop', [OTHER_SECRET], settings())
    const { challenge } = old.issue('v', now, 6)
    const rotated = new Challenges('shop', [SECRET, OTHER_SECRET], settings())
    expect(rotated.verify('v', `${challenge} ${solve(challenge, 6)}`, now)).toBe('ok')
  })

  it('never throws and never says ok on garbage: 1,000 random strings, mutations of a good solution, other types', () => {
    const c = new Challenges('shop', [SECRET], settings())
    const { challenge } = c.issue('v', now, 4)
    const good = `${challenge} ${solve(challenge, 4)}`
    const alphabet = 'c1~shop0123456789abcdefABCDEF_-.: \u00e9\u{1F600}\u0000\n"'
    const verdicts = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const len = Math.floor(Math.random() * 400)
      let s = ''
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(Math.random() * alphabet.length)]
      // Mutations of the signed challenge (another nonce can be a genuine solution: 1 in 16 at 4 bits).
      const mutated = [...good]
      mutated[Math.floor(Math.random() * challenge.length)] = alphabet[Math.floor(Math.random() * alphabet.length)]!
      const variants = [
        s,
        mutated.join(''),
        randomBytes(i % 300).toString('latin1'),
        good.slice(0, Math.floor(Math.random() * good.length)),
      ]
      for (const v of variants) {
        if (v === good) continue
        const verdict = c.verify('v', v, now)
        verdicts.add(verdict)
        expect(['invalid', 'missing']).toContain(verdict)
      }
    }
    expect(verdicts.has('invalid')).toBe(true)
    for (const v of [null, 42, {}, [], ['a b'], Symbol.iterator, () => 1]) {
      expect(() => c.verify('v', v as unknown as string, now)).not.toThrow()
      expect(c.verify('v', v as unknown as string, now)).not.toBe('ok')
    }
    expect(c.verify(undefined as unknown as string, good, now)).toBe('invalid')
    expect(c.verify('v', good, Number.NaN)).toBe('expired')
    expect(c.verify('v', good, now)).toBe('ok')
  })

  it('rejects a bad gate name at construction', () => {
    expect(() => new Challenges('a b', [SECRET], settings())).toThrow(/gate name/)
    expect(() => new Challenges('shop', ['short'], settings())).toThrow(/at least 32 bytes/)
  })
})

describe('Challenges: the replay set stays bounded', () => {
  it('forgets burnt ids once expired', () => {
    const c = new Challenges('shop', [SECRET], settings({ ttl: 1000 }))
    for (let i = 0; i < 50; i++) {
      const { challenge } = c.issue(`v${i}`, now, 1)
      expect(c.verify(`v${i}`, `${challenge} ${solve(challenge, 1)}`, now)).toBe('ok')
    }
    expect(c.usedCount).toBe(50)
    const { challenge } = c.issue('late', now + 5000, 1)
    expect(c.verify('late', `${challenge} ${solve(challenge, 1)}`, now + 5000)).toBe('ok')
    expect(c.usedCount).toBe(1)
  })

  it(`holds at most ${USED_MAX} ids: the oldest is forgotten first`, () => {
    const c = new Challenges('shop', [SECRET], settings({ ttl: 3_600_000 }))
    const first = c.issue('first', now, 1).challenge
    const firstSolution = `${first} ${solve(first, 1)}`
    expect(c.verify('first', firstSolution, now)).toBe('ok')
    let ok = 0
    for (let i = 1; i <= USED_MAX; i++) {
      const { challenge } = c.issue('v', now, 1)
      if (c.verify('v', `${challenge} ${solve(challenge, 1)}`, now) === 'ok') ok++
    }
    expect(ok).toBe(USED_MAX)
    expect(c.usedCount).toBe(USED_MAX)
    // Forgotten early: accepted again, which only asks again for visitor 'first''s one place.
    expect(c.verify('first', firstSolution, now)).toBe('ok')
  }, 60_000)
})

describe('Challenges: difficulty under pressure', () => {
  const c = new Challenges('shop', [SECRET], settings({ difficulty: 16, maxDifficulty: 20 }))
  const at = (newPerSecond: number, waiting: number) => c.difficultyFor({ newPerSecond, waiting })

  it('starts at difficulty when calm; +1 bit per doubling of new places a second above 10/s and of the line above 1,000', () => {
    expect(CALM).toEqual({ newPerSecond: 10, waiting: 1000 })
    expect(at(0, 0)).toBe(16)
    expect(at(19.9, 1999)).toBe(16)
    expect(at(20, 0)).toBe(17)
    expect(at(40, 0)).toBe(18)
    expect(at(79, 0)).toBe(18)
    expect(at(0, 2000)).toBe(17)
    expect(at(0, 4000)).toBe(18)
    expect(at(20, 2000)).toBe(18)
    expect(at(40, 4000)).toBe(20)
    expect(at(1e9, 1e9)).toBe(20) // capped at maxDifficulty
    expect(at(Infinity, 0)).toBe(20)
    expect(at(Number.NaN, -5)).toBe(16)
    expect(at(-100, Number.NaN)).toBe(16)
  })

  it('is pure: the same pressure always gives the same bits', () => {
    expect(at(40, 4000)).toBe(at(40, 4000))
    expect(
      new Challenges('x', [SECRET], settings({ difficulty: 3, maxDifficulty: 3 })).difficultyFor({
        newPerSecond: 1e6,
        waiting: 1e6,
      }),
    ).toBe(3)
  })
})

describe('leadingZeroBits', () => {
  it('counts bits, not bytes', () => {
    expect(leadingZeroBits(Uint8Array.from([0x80]))).toBe(0)
    expect(leadingZeroBits(Uint8Array.from([0x01]))).toBe(7)
    expect(leadingZeroBits(Uint8Array.from([0, 0, 0x10]))).toBe(19)
    expect(leadingZeroBits(new Uint8Array(4))).toBe(32)
  })
})
