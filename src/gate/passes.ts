/**
 * Session mode's passes: issuing them, verifying a request's pass cookies, checking a pass's slot
 * against the store (upgrading a provisional pass, sliding one that is half used), and the bounded
 * cache of verified passes that makes the pass holder's request a map lookup.
 */
import type { Semaphore } from '../core/semaphore.js'
import { cookieValues, firstCookie } from '../base/http.js'
import { BYPASS, bypassWith } from './decisions.js'
import { createSigner, type Signer } from '../base/signing.js'
import type { CookieSettings } from './options.js'
import {
  decodePass,
  encodePass,
  PASS_CONTEXT,
  PASS_MAX_LENGTH,
  PASS_VERSION,
  PassCache,
  type PassFields,
} from './pass.js'
import type { BypassDecision, PassDecision } from './types.js'

/** A pass checked against the store: live (a decision), `'dead'` (no pass), or the store failed. */
export type PassOutcome = PassDecision | 'dead' | { error: unknown }

interface CacheEntry {
  validUntil: number
  decision: PassDecision
}

export interface PassSettings {
  gate: string
  passTtl: number
  provisionalTtl: number
  recheckInterval: number
  cacheSize: number
  cookie: CookieSettings
  /** The gate's guarded store call (budget, breaker). */
  call: <T>(op: () => Promise<T>, deadline: number) => Promise<T>
}

export class Passes {
  readonly #signer: Signer
  private readonly cache: PassCache<CacheEntry>
  private readonly inflight = new Map<string, Promise<PassOutcome>>()
  /** Full passes verified on a request the gate does not gate, until they fall due (see {@link confirm}). */
  private readonly notDue: PassCache<{ validUntil: number; token: string }>

  constructor(
    private readonly s: PassSettings,
    secrets: readonly string[],
    private readonly sem: Semaphore,
  ) {
    this.#signer = createSigner({ secrets, context: PASS_CONTEXT, maxLength: PASS_MAX_LENGTH })
    this.cache = new PassCache(s.cacheSize)
    this.notDue = new PassCache(s.cacheSize)
  }

  /** The decision cached for exactly this cookie value, while within its window: no crypto, no store. */
  cached(value: string, now: number): PassDecision | undefined {
    return this.cache.get(value, now)?.decision
  }

  /**
   * The first valid pass among the request's cookies of this gate (a browser may send several),
   * checked against the store. `'none'` when none is valid. With `onlyIfDue`, a full pass that
   * needs no sliding is `'not-due'` without a store call (a request the gate does not gate).
   */
  async check(
    header: string | string[] | undefined,
    secure: boolean,
    deadline: number,
    onlyIfDue = false,
  ): Promise<PassOutcome | 'none' | 'not-due'> {
    for (const value of cookieValues(header, this.s.cookie.name)) {
      const now = Date.now()
      const cached = this.cached(value, now)
      if (cached) return cached
      const pass = this.valid(value, now)
      if (pass === null) continue
      if (onlyIfDue && !pass.provisional && pass.expiresAt - now >= this.s.passTtl / 2) return 'not-due'
      const outcome = await this.shared(value, pass, secure, deadline)
      if (outcome !== 'dead') return outcome
    }
    return 'none'
  }

  /**
   * A request the gate sees but does not gate (a bypassed path, `skip`, a route opted out, a 404):
   * never refused, but a pass it carries is confirmed (a provisional pass becomes a full one) or
   * slid when due, so a visitor whose page only fetches ungated assets keeps its slot. Synchronous
   * unless a pass needs its store call; then the store's trouble only means no new cookie.
   */
  confirm(
    header: string | string[] | undefined,
    secure: boolean,
    storeTimeout: number,
  ): BypassDecision | Promise<BypassDecision> {
    const value = firstCookie(header, this.s.cookie.name)
    if (value === undefined) return BYPASS
    const now = Date.now()
    const cached = this.cached(value, now)
    if (cached !== undefined) return bypassWith(cached.setCookie)
    if (this.notDue.get(value, now) !== undefined) return BYPASS
    // A full pass not yet due for sliding needs nothing here: verified once (one HMAC), then a lookup
    // until it falls due, with no promise (an asset or a 404 a pass holder asks for stays synchronous).
    const pass = this.valid(value, now)
    if (pass !== null && !pass.provisional && pass.expiresAt - now >= this.s.passTtl / 2) {
      this.notDue.set(value, { validUntil: pass.expiresAt - this.s.passTtl / 2, token: pass.token })
      return BYPASS
    }
    return this.check(header, secure, Date.now() + storeTimeout, true).then((o) =>
      typeof o === 'object' && !('error' in o) ? bypassWith(o.setCookie) : BYPASS,
    )
  }

  /** A new provisional pass for the slot `token`: its `Set-Cookie` value. */
  issue(token: string, issuedAt: number, secure: boolean): string {
    const { gate, provisionalTtl } = this.s
    return this.cookie(
      encodePass(this.#signer, { gate, token, expiresAt: issuedAt + provisionalTtl, provisional: true }),
      provisionalTtl,
      secure,
    )
  }

  /** Forgets cached passes of `token` (its slot was released here). */
  forget(token: string): void {
    this.cache.deleteWhere((e) => e.decision.token === token)
    this.notDue.deleteWhere((e) => e.token === token)
  }

  /** A `Set-Cookie` value that removes the pass cookie. */
  clearCookie(secure: boolean): string {
    return `${this.s.cookie.name}=${this.secureTail(this.s.cookie.clearTail, secure)}`
  }

  /** Cookie attributes for another cookie of this gate (the waiting room's ticket). */
  secureTail(tail: string, secure: boolean): string {
    const setting = this.s.cookie.secure
    return setting === true || (setting === 'auto' && secure) ? `${tail}; Secure` : tail
  }

  clear(): void {
    this.cache.clear()
    this.notDue.clear()
    this.inflight.clear()
  }

  private cookie(value: string, life: number, secure: boolean): string {
    return `${this.s.cookie.name}=${value}${this.secureTail(`${this.s.cookie.tail}; Max-Age=${Math.ceil(life / 1000)}`, secure)}`
  }

  /**
   * The pass in a cookie value when it is correctly signed, of this gate, and unexpired. Its shape,
   * gate and written expiry are read before the HMAC, so junk and expired values cost no crypto.
   */
  private valid(value: string, now: number): PassFields | null {
    const f = value.split('~', 7)
    if (f.length !== 6 || f[0] !== PASS_VERSION || f[1] !== this.s.gate || !(parseInt(f[3]!, 36) > now)) return null
    const pass = decodePass(this.#signer, value)
    return pass === null || pass.gate !== this.s.gate || pass.expiresAt <= now ? null : pass
  }

  /** {@link checkPass}, shared by concurrent requests carrying the same pass. */
  private shared(value: string, pass: PassFields, secure: boolean, deadline: number): Promise<PassOutcome> {
    let pending = this.inflight.get(value)
    if (pending === undefined) {
      pending = this.checkPass(value, pass, secure, deadline)
      this.inflight.set(value, pending)
      void pending.finally(() => this.inflight.delete(value))
    }
    return pending
  }

  /** Checks (and if due, upgrades or slides) a verified, unexpired pass against the store. */
  private async checkPass(value: string, pass: PassFields, secure: boolean, deadline: number): Promise<PassOutcome> {
    const t0 = Date.now()
    const { gate, passTtl, recheckInterval, call } = this.s
    try {
      const lease = this.sem.lease(pass.token)
      if (pass.provisional || pass.expiresAt - t0 < passTtl / 2) {
        if (!(await call(() => lease.refresh(passTtl), deadline))) return 'dead'
        const expiresAt = t0 + passTtl
        const renewed = encodePass(this.#signer, { gate, token: pass.token, expiresAt, provisional: false })
        this.cache.set(renewed, {
          validUntil: Math.min(t0 + recheckInterval, expiresAt - passTtl / 2),
          decision: { kind: 'pass', token: pass.token, setCookie: undefined, response: undefined },
        })
        // Requests still carrying the old value (sent before the new cookie arrived) pass and get it again.
        const decision: PassDecision = {
          kind: 'pass',
          token: pass.token,
          setCookie: this.cookie(renewed, passTtl, secure),
          response: undefined,
        }
        this.cache.set(value, { validUntil: Math.min(t0 + recheckInterval, pass.expiresAt), decision })
        return decision
      }
      if ((await call(() => lease.state(), deadline)) !== 'acquired') return 'dead'
      const decision: PassDecision = { kind: 'pass', token: pass.token, setCookie: undefined, response: undefined }
      this.cache.set(value, { validUntil: Math.min(t0 + recheckInterval, pass.expiresAt - passTtl / 2), decision })
      return decision
    } catch (error) {
      return { error }
    }
  }
}
