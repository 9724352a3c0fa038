import type { Signer } from '../base/signing.js'

/**
 * The gate's waiting-room ticket cookie: a visitor's place in line.
 *
 * Value: `t1~<gate>~<visitorId>~<issuedAt>~<mac>`
 * - `t1`: format version.
 * - `<gate>`: the gate's name; a ticket of another gate is no ticket here (a fresh place at the back).
 * - `<visitorId>`: the visitor's id in the line; once admitted it becomes the slot's lease token.
 * - `<issuedAt>`: when the ticket was made (ms since the epoch, base 36, this server's clock).
 * - `<mac>`: HMAC-SHA256 over all of the above and the context `airlock-ticket` (see `signing.ts`),
 *   so a pass never verifies as a ticket nor the other way round.
 *
 * The ticket only names a place: whether that place still exists (the visitor may have stopped
 * polling for `idleTimeout`) is the store's answer. A forged, tampered, foreign or too old ticket
 * is simply no ticket: the visitor gets a fresh place at the back, never a better one.
 */
export const TICKET_VERSION = 't1'
/** Signing context of tickets. */
export const TICKET_CONTEXT = 'airlock-ticket'
/** Longest ticket value accepted before any crypto. Real ones are about 90 characters. */
export const TICKET_MAX_LENGTH = 256
/** A ticket older than this is no ticket (a day: nobody waits in line that long). */
export const TICKET_MAX_AGE_MS = 24 * 3600 * 1000

export interface TicketFields {
  gate: string
  visitorId: string
  issuedAt: number
}

export function encodeTicket(signer: Signer, ticket: TicketFields): string {
  return signer.sign([TICKET_VERSION, ticket.gate, ticket.visitorId, ticket.issuedAt.toString(36)])
}

/**
 * The visitor id of a well-formed, correctly signed ticket of gate `gate` issued within
 * {@link TICKET_MAX_AGE_MS} before `now` (and not in the future by more than a minute), else `null`.
 */
export function decodeTicket(signer: Signer, value: string, gate: string, now: number): string | null {
  return readTicketValue(signer, value, gate, now)?.visitorId ?? null
}

/** {@link decodeTicket}, with the ticket's fields. */
export function readTicketValue(signer: Signer, value: string, gate: string, now: number): TicketFields | null {
  const fields = signer.verify(value)
  if (fields?.length !== 4 || fields[0] !== TICKET_VERSION || fields[1] !== gate) return null
  const [, , visitorId, issued] = fields as [string, string, string, string]
  if (visitorId.length === 0 || !/^[0-9a-z]{1,11}$/.test(issued)) return null
  const issuedAt = parseInt(issued, 36)
  if (issuedAt > now + 60_000 || now - issuedAt > TICKET_MAX_AGE_MS) return null
  return { gate, visitorId, issuedAt }
}
