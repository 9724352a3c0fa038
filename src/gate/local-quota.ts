/**
 * `onStoreError: 'local'` (the default): while the store fails or answers slower than
 * `storeTimeout`, the gate keeps a limit of its own instead of letting everyone in. It admits up to
 * this instance's quota: its part of the limit in force (the limit divided by the instances reporting to the
 * store; the whole limit when it is alone), and what this instance already let in counts against it:
 * request mode, every request in flight here (with a slot from the store or not); session mode,
 * the passes it gave that may still be out. So the site keeps serving at a safe rate, and the fleet
 * never lets more than the limit in, whatever the store does.
 *
 * A request let in locally holds no slot in the store, which cannot count it. Until the last of
 * them has ended, a slot the store grants is used only within the quota too (`roomForStoreSlot`):
 * the store and this instance are reconciled before the store alone decides again.
 */
import type { Lease } from '../core/semaphore.js'
import { OPEN_ADMIT, storeUnavailableAdmit } from './decisions.js'
import type { AdmitDecision, RequestSlot } from './types.js'

/** Session mode: passes given are counted in this many buckets of `passTtl` (an upper bound on those still out). */
const PASS_BUCKETS = 60

export class LocalQuota {
  #fleet = 1
  /** Request mode: admitted requests in flight here, with a store slot or not. */
  #inFlight = 0
  /** Requests in flight here let in without a store slot. */
  #local = 0
  /** Session mode: passes given here, by bucket of `passTtl / PASS_BUCKETS` ms (ring). */
  readonly #given = new Uint32Array(PASS_BUCKETS + 1)
  #givenAt = 0

  constructor(
    /** The limit in force (the fleet's). */
    private readonly limit: () => number,
    private readonly sessions: boolean,
    private readonly passTtl: number,
  ) {}

  /** How many instances report to the store (this one included), as the last report told. */
  set fleet(n: number) {
    if (Number.isInteger(n) && n >= 1) this.#fleet = n
  }

  get fleet(): number {
    return this.#fleet
  }

  /** This instance's quota of the limit in force: never more, summed over the fleet, than the limit. */
  get quota(): number {
    return Math.floor(this.limit() / this.#fleet)
  }

  /** Requests let in locally and still in flight. */
  get local(): number {
    return this.#local
  }

  /** What this instance has let in that counts against its quota now. */
  #used(now: number): number {
    return this.sessions ? this.#local + this.#givenOut(now) : this.#inFlight
  }

  /**
   * A request the store could not decide: a slot of the local quota (released when the request
   * ends, as a store slot is), or `undefined` when the quota is used up (busy).
   */
  admitLocal(now: number): RequestSlot | undefined {
    if (this.#used(now) >= this.quota) return undefined
    this.#local++
    this.#inFlight++
    let done: Promise<boolean> | undefined
    return {
      // Not a store token: nothing in the store to release.
      token: 'local',
      release: () => {
        if (done === undefined) {
          this.#local--
          this.#inFlight--
          done = Promise.resolve(true)
        }
        return done
      },
      // Nothing in the store to keep alive: the local quota counts it until it is released.
      hold: () => {},
    }
  }

  /**
   * The store could not decide, and `policy` is the gate's `onStoreError`: `'local'` admits within
   * the quota (a request's slot of it; a pass holder goes on, counted when its pass was given),
   * `'open'` admits, `'closed'` (or a quota used up) answers `undefined`: busy.
   */
  outage(policy: 'local' | 'open' | 'closed', holder: boolean, now: number): AdmitDecision | undefined {
    if (policy === 'open' || (policy === 'local' && holder)) return OPEN_ADMIT
    const slot = policy === 'local' ? this.admitLocal(now) : undefined
    return slot && storeUnavailableAdmit(slot)
  }

  /**
   * A slot the store just granted: `true` to use it; `false` (after giving it back) while requests
   * let in locally are still in flight and fill the quota, which the store cannot know of.
   */
  keeps(lease: Lease, onError: (err: unknown) => void): boolean {
    if (!this.full(Date.now())) return true
    void lease.release().catch(onError)
    return false
  }

  /**
   * True while requests let in locally are in flight and, with what else is in flight here, fill
   * the quota: then neither a slot the store grants nor one this process pools may be used (the
   * store counts neither the local ones, nor a pooled slot's next request on top of them).
   */
  full(now: number): boolean {
    return this.#local > 0 && this.#used(now) >= this.quota
  }

  /** Request mode: a request admitted with a store slot is in flight here until `left` (once, when its slot is freed). */
  entered(): void {
    this.#inFlight++
  }

  readonly left = (): void => {
    this.#inFlight--
  }

  /** Session mode: a pass was given now (it may be out until `passTtl` has passed). */
  passGiven(now: number): void {
    this.#roll(now)
    this.#given[this.#bucket(now)]!++
  }

  #bucket(now: number): number {
    return Math.floor(now / (this.passTtl / PASS_BUCKETS)) % this.#given.length
  }

  /** Clears the buckets that fell out of `passTtl` since the last call. */
  #roll(now: number): void {
    const width = this.passTtl / PASS_BUCKETS
    const from = Math.floor(this.#givenAt / width)
    const to = Math.floor(now / width)
    for (let b = from + 1; b <= Math.min(to, from + this.#given.length); b++) this.#given[b % this.#given.length] = 0
    this.#givenAt = Math.max(this.#givenAt, now)
  }

  #givenOut(now: number): number {
    this.#roll(now)
    let n = 0
    for (const c of this.#given) n += c
    return n
  }
}
