import { describe, expect, it } from 'vitest'
import { createSigner, MIN_SECRET_BYTES, secretList } from '../../src/base/signing.js'
import { isAirlockError } from '../../src/base/errors.js'

const A = 'a'.repeat(32)
const B = 'b'.repeat(40)

describe('signer', () => {
  it('round-trips fields and refuses any change', () => {
    const s = createSigner({ secrets: A, context: 'test' })
    const v = s.sign(['x', 'y.z', '12:3-4_5'])
    expect(v).toMatch(/^x~y\.z~12:3-4_5~[A-Za-z0-9_-]{43}$/)
    expect(s.verify(v)).toEqual(['x', 'y.z', '12:3-4_5'])
    for (let i = 0; i < v.length; i++) {
      const c = v[i] === 'A' ? 'B' : 'A'
      expect(s.verify(v.slice(0, i) + c + v.slice(i + 1))).toBeNull()
    }
    expect(s.verify(`${v}x`)).toBeNull()
    expect(s.verify(v.slice(0, -1))).toBeNull()
  })

  it('signs with the first secret and accepts every secret (rotation)', () => {
    const old = createSigner({ secrets: A, context: 'test' })
    const rotated = createSigner({ secrets: [B, A], context: 'test' })
    const fresh = createSigner({ secrets: B, context: 'test' })
    const v = old.sign(['k'])
    expect(rotated.verify(v)).toEqual(['k'])
    expect(fresh.verify(v)).toBeNull()
    expect(fresh.verify(rotated.sign(['k']))).toEqual(['k'])
  })

  it('binds the context: a value of one purpose never verifies for another', () => {
    const pass = createSigner({ secrets: A, context: 'airlock-pass' })
    const ticket = createSigner({ secrets: A, context: 'airlock-ticket' })
    expect(ticket.verify(pass.sign(['a', 'b']))).toBeNull()
  })

  it('rejects oversized, mis-encoded and non-string values without throwing', () => {
    const s = createSigner({ secrets: A, context: 'test', maxLength: 100 })
    const v = s.sign(['x'])
    for (const bad of [
      undefined,
      null,
      42,
      {},
      '',
      '~',
      'x~',
      `${v} `,
      `${v}\n`,
      v.replace('~', '%7E'),
      'ü'.repeat(10),
      'x'.repeat(101),
    ]) {
      expect(s.verify(bad)).toBeNull()
    }
    // Every base64url spelling of the same MAC bytes but the canonical one is refused.
    const last = v.at(-1)!
    const sibling = String.fromCharCode(last.charCodeAt(0) ^ 1)
    expect(s.verify(v.slice(0, -1) + sibling)).toBeNull()
  })

  it('refuses fields outside the alphabet and secrets shorter than 32 bytes', () => {
    const s = createSigner({ secrets: A, context: 'test' })
    expect(() => s.sign(['a~b'])).toThrow(/signed field/)
    expect(() => s.sign(['a b'])).toThrow(/signed field/)
    expect(() => createSigner({ secrets: 'short', context: 'test' })).toThrow(
      /^secrets must be at least 32 bytes, got 5/,
    )
    try {
      secretList('secret', [A, 'x'.repeat(31)])
      expect.unreachable()
    } catch (err) {
      expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
      expect((err as Error).message).toMatch(/^secret\[1\] must be at least 32 bytes, got 31/)
    }
    expect(() => secretList('secret', [])).toThrow(/non-empty array/)
    expect(() => secretList('secret', 42)).toThrow(/secret must be a string/)
    expect(MIN_SECRET_BYTES).toBe(32)
    // 32 bytes of UTF-8 is enough even with fewer characters.
    expect(secretList('secret', 'é'.repeat(16))).toHaveLength(1)
  })
})
