import type { Signer } from '../base/signing.js'

/**
 * The gate's pass cookie.
 *
 * Value: `p1~<gate>~<token>~<expiresAt>~<p|f>~<mac>`
 * - `p1`: format version.
 * - `<gate>`: the gate's name; a pass of another gate is no pass here.
 * - `<token>`: the lease token of the visitor's slot in the store.
 * - `<expiresAt>`: when the pass ends (ms since the epoch, base 36, this server's clock).
 * - `p` = provisional (just admitted; the slot lives `provisionalTtl` until the visitor comes back
 *   with this cookie), `f` = full (the slot lives `passTtl`, and slides).
 * - `<mac>`: HMAC-SHA256 over all of the above and the context `airlock-pass` (see `signing.ts`).
 */
export const PASS_VERSION = 'p1'
/** Signing context of passes; a value signed for another purpose never verifies as a pass. */
export const PASS_CONTEXT = 'airlock-pass'
/** Longest pass value accepted before any crypto. Real ones are about 110 characters. */
export const PASS_MAX_LENGTH = 256

export interface PassFields {
  gate: string
  token: string
  expiresAt: number
  provisional: boolean
}

export function encodePass(signer: Signer, pass: PassFields): string {
  return signer.sign([PASS_VERSION, pass.gate, pass.token, pass.expiresAt.toString(36), pass.provisional ? 'p' : 'f'])
}

/** The pass in `value` if it is well formed and correctly signed (expiry not checked), else `null`. */
export function decodePass(signer: Signer, value: string): PassFields | null {
  const fields = signer.verify(value)
  if (fields?.length !== 5 || fields[0] !== PASS_VERSION) return null
  const [, gate, token, exp, flag] = fields as [string, string, string, string, string]
  if (!/^[0-9a-z]{1,11}$/.test(exp) || (flag !== 'p' && flag !== 'f') || token.length === 0) return null
  return { gate, token, expiresAt: parseInt(exp, 36), provisional: flag === 'p' }
}

/**
 * A bounded map of verified pass values. Each entry is trusted until its `validUntil` (at most the
 * re-check window); past that, `get` drops it. When full, the oldest insertion is evicted (entries are
 * short-lived, so insertion order approximates age). Only values whose HMAC verified are ever
 * inserted, so forged cookies cannot grow it.
 */
export class PassCache<E extends { validUntil: number }> {
  private readonly map = new Map<string, E>()

  constructor(readonly maxSize: number) {}

  get size(): number {
    return this.map.size
  }

  /** The entry for `value` if still valid at `now`. */
  get(value: string, now: number): E | undefined {
    const entry = this.map.get(value)
    if (entry === undefined) return undefined
    if (entry.validUntil > now) return entry
    this.map.delete(value)
    return undefined
  }

  set(value: string, entry: E): void {
    this.map.delete(value)
    if (this.map.size >= this.maxSize) {
      const oldest = this.map.keys().next()
      if (!oldest.done) this.map.delete(oldest.value)
    }
    this.map.set(value, entry)
  }

  delete(value: string): void {
    this.map.delete(value)
  }

  /** Drops every entry matching `test` (rare: an early release). */
  deleteWhere(test: (entry: E) => boolean): void {
    for (const [value, entry] of this.map) if (test(entry)) this.map.delete(value)
  }

  clear(): void {
    this.map.clear()
  }
}
