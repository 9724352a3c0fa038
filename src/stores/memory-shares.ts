/**
 * The memory store's per-client shares of one semaphore name: the same bookkeeping as the Redis
 * store's `:cs`/`:ct`/`:cx` keys (see lua/prelude.ts), in maps.
 */
import type { ClientShare } from './types.js'

/** Where a token stands, as the caller's slots and line see it. */
export type Standing = 'slot' | 'place' | 'none'

interface Record {
  /** The GCRA's theoretical arrival time for new slots and places (ms). */
  tat: number
  tokens: Set<string>
  /** When the record is looked at again by the sweep. */
  lapse: number
}

/** How soon the sweep looks again at a record past its time whose tokens still hold something. */
const RECHECK_MS = 5_000

export class ClientShares {
  private readonly records = new Map<string, Record>()
  private readonly owner = new Map<string, string>()

  get empty(): boolean {
    return this.records.size === 0
  }

  /**
   * True when `share.key` may take one more slot (`slot`) or place: under its places, its slots
   * and its rate. Drops the client's tokens that hold nothing any more.
   */
  allows(share: ClientShare, now: number, standing: (token: string) => Standing): boolean {
    const r = this.records.get(share.key)
    if (r === undefined) return true
    if (share.perMinute > 0 && r.tat - now > (60_000 / share.perMinute) * (share.perMinute - 1)) return false
    let slots = 0
    let total = 0
    for (const token of r.tokens) {
      const s = standing(token)
      if (s === 'none') {
        r.tokens.delete(token)
        this.owner.delete(token)
        continue
      }
      total++
      if (s === 'slot') slots++
    }
    return total < share.places && slots < share.slots
  }

  /** Counts `token`, just granted a slot or a place, against `share.key`; `keep`: how long it may hold it without a sign. */
  take(share: ClientShare, token: string, now: number, keep: number): void {
    let r = this.records.get(share.key)
    if (r === undefined) this.records.set(share.key, (r = { tat: 0, tokens: new Set(), lapse: 0 }))
    if (share.perMinute > 0) r.tat = Math.max(r.tat, now) + 60_000 / share.perMinute
    r.tokens.add(token)
    this.owner.set(token, share.key)
    // Re-inserted, so the map stays roughly in order of lapse (keep is the same for a gate's calls;
    // a record out of order is only forgotten a little later).
    this.records.delete(share.key)
    r.lapse = Math.max(r.tat, now + keep)
    this.records.set(share.key, r)
  }

  /** `token` no longer counts (its slot was refreshed: the holder came back). */
  drop(token: string): void {
    const key = this.owner.get(token)
    if (key === undefined) return
    this.owner.delete(token)
    this.records.get(key)?.tokens.delete(token)
  }

  /** Forgets records past their lapse that hold nothing (a few per call); looks again later at those that still do. */
  sweep(now: number, standing: (token: string) => Standing): void {
    for (let i = 0; i < 8; i++) {
      const first = this.records.entries().next()
      if (first.done) return
      const [key, r] = first.value
      if (r.lapse > now) return
      this.records.delete(key)
      for (const token of r.tokens) {
        if (standing(token) === 'none') {
          r.tokens.delete(token)
          this.owner.delete(token)
        }
      }
      if (r.tokens.size > 0 || r.tat > now) {
        r.lapse = Math.max(r.tat, now + RECHECK_MS)
        this.records.set(key, r)
      }
    }
  }
}
