/** The Redis store's decision replies decoded into the Store contract's answers. */
import { decodeEnded, decodeReply, REPLIES } from './lua/boundary.js'
import type { AcquireResult } from './types.js'

/** The numbers of `reply` from `reply[at]` on, as the fields `names` in that order (a status's, an adaptive judge's turn). */
export function numbersAt<K extends string>(
  reply: readonly unknown[],
  at: number,
  names: readonly K[],
): Record<K, number> {
  const out = {} as Record<K, number>
  names.forEach((name, i) => {
    out[name] = Number(reply[at + i])
  })
  return out
}

/** A reply's negative "none" as `null`. */
export function orNull(n: number): number | null {
  return n < 0 ? null : n
}

/**
 * The acquire answer at `reply[at]` (`line`, which only batches answer, is not one); `ended`: what
 * the call dropped follows it (a single decision's reply).
 */
export function acquireResult(reply: readonly number[], at = 0, ended = true): AcquireResult {
  const r = decodeReply(reply, at)
  let result: AcquireResult
  switch (r.status) {
    case 'acquired':
      result = { status: 'acquired', fence: r.fence, expiresAt: r.expiresAt, now: r.now }
      if (r.waited >= 0) result.waited = r.waited
      break
    case 'busy':
      result = { status: 'busy', now: r.now, nextExpiry: orNull(r.nextExpiry) }
      break
    case 'queued':
      result = {
        status: 'queued',
        position: r.position,
        waiting: r.waiting,
        now: r.now,
        nextExpiry: orNull(r.nextExpiry),
        admitted: r.admitted,
        windowMs: r.windowMs,
      }
      break
    case 'full':
      result = { status: 'full', waiting: r.waiting, now: r.now }
      break
    case 'absent':
      result = { status: 'absent', now: r.now }
      break
    case 'share':
      result = { status: 'client-share', now: r.now }
      break
    default:
      throw new Error(`acquire script answered ${r.status}`)
  }
  if (ended) {
    const e = decodeEnded(reply, at + 1 + REPLIES[r.status].fields.length)
    if (e !== undefined) result.ended = e
  }
  return result
}
