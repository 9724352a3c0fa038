import { describe, expect, it } from 'vitest'
import { createSigner } from '../../src/base/signing.js'
import { decodePass, encodePass, PASS_CONTEXT, PassCache } from '../../src/gate/pass.js'

const signer = createSigner({ secrets: 'k'.repeat(32), context: PASS_CONTEXT })

describe('pass cookie format', () => {
  it('encodes version, gate, token, expiry and the provisional flag', () => {
    const v = encodePass(signer, {
      gate: 'shop.v2',
      token: 'tok_-123',
      expiresAt: 1_700_000_000_000,
      provisional: true,
    })
    expect(v).toMatch(/^p1~shop\.v2~tok_-123~[0-9a-z]+~p~[A-Za-z0-9_-]{43}$/)
    expect(decodePass(signer, v)).toEqual({
      gate: 'shop.v2',
      token: 'tok_-123',
      expiresAt: 1_700_000_000_000,
      provisional: true,
    })
    const f = encodePass(signer, { gate: 'g', token: 't', expiresAt: 5, provisional: false })
    expect(decodePass(signer, f)?.provisional).toBe(false)
  })

  it('refuses well-signed values that are not passes', () => {
    expect(decodePass(signer, signer.sign(['p2', 'g', 't', '1', 'f']))).toBeNull()
    expect(decodePass(signer, signer.sign(['p1', 'g', 't', '1', 'x']))).toBeNull()
    expect(decodePass(signer, signer.sign(['p1', 'g', 't', 'ZZ', 'f']))).toBeNull()
    expect(decodePass(signer, signer.sign(['p1', 'g', '', '1', 'f']))).toBeNull()
    expect(decodePass(signer, signer.sign(['p1', 'g', 't', '1']))).toBeNull()
    expect(decodePass(signer, `p1~g~t~1~f~${'A'.repeat(43)}`)).toBeNull()
  })
})

describe('PassCache', () => {
  it('serves entries until validUntil, then drops them', () => {
    const c = new PassCache<{ validUntil: number; n: number }>(10)
    c.set('a', { validUntil: 100, n: 1 })
    expect(c.get('a', 99)?.n).toBe(1)
    expect(c.get('a', 100)).toBeUndefined()
    expect(c.size).toBe(0)
  })

  it('is bounded: the oldest insertion goes first', () => {
    const c = new PassCache<{ validUntil: number }>(3)
    for (const k of ['a', 'b', 'c', 'd', 'e']) c.set(k, { validUntil: Infinity })
    expect(c.size).toBe(3)
    expect(c.get('a', 0)).toBeUndefined()
    expect(c.get('b', 0)).toBeUndefined()
    expect(c.get('e', 0)).toBeDefined()
    c.deleteWhere((_e) => true)
    expect(c.size).toBe(0)
  })
})
