import { describe, expect, it } from 'vitest'
import { createSigner } from '../../src/base/signing.js'
import { decodeTicket, encodeTicket, TICKET_CONTEXT, TICKET_MAX_AGE_MS } from '../../src/gate/ticket.js'
import { PASS_CONTEXT } from '../../src/gate/pass.js'

const SECRET = 'ticket-test-secret-at-least-32-bytes-long'
const signer = createSigner({ secrets: SECRET, context: TICKET_CONTEXT })
const now = Date.now()

describe('waiting-room tickets', () => {
  it('round-trips the visitor id for its own gate', () => {
    const value = encodeTicket(signer, { gate: 'tickets', visitorId: 'abc_DEF-123', issuedAt: now })
    expect(value).toMatch(/^t1~tickets~abc_DEF-123~[0-9a-z]+~[A-Za-z0-9_-]{43}$/)
    expect(decodeTicket(signer, value, 'tickets', now)).toBe('abc_DEF-123')
  })

  it('is no ticket for another gate, another secret, another purpose, when tampered, too old or from the future', () => {
    const value = encodeTicket(signer, { gate: 'tickets', visitorId: 'abc', issuedAt: now })
    expect(decodeTicket(signer, value, 'other', now)).toBeNull()
    const stranger = createSigner({ secrets: 'another-secret-that-is-at-least-32-bytes', context: TICKET_CONTEXT })
    expect(decodeTicket(stranger, value, 'tickets', now)).toBeNull()
    const passSigner = createSigner({ secrets: SECRET, context: PASS_CONTEXT })
    expect(decodeTicket(passSigner, value, 'tickets', now)).toBeNull()
    expect(decodeTicket(signer, value.replace('~abc~', '~abd~'), 'tickets', now)).toBeNull()
    expect(decodeTicket(signer, value, 'tickets', now + TICKET_MAX_AGE_MS + 1)).toBeNull()
    const future = encodeTicket(signer, { gate: 'tickets', visitorId: 'abc', issuedAt: now + 3_600_000 })
    expect(decodeTicket(signer, future, 'tickets', now)).toBeNull()
    for (const junk of ['', 'x', '~~~~', 'A'.repeat(300), `t1~tickets~~0~${'A'.repeat(43)}`]) {
      expect(decodeTicket(signer, junk, 'tickets', now)).toBeNull()
    }
  })
})
