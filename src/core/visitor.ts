/**
 * A waiting room's visitor: its id (checked, or a new unguessable one), the wait it is told
 * (estimateWait, from the admissions the store measured), and its admitted slot (AdmittedLease).
 */
import { optionError } from '../base/errors.js'
import { received, type Duration } from '../base/validate.js'
import type { LeaseState } from '../stores/types.js'
import { newToken, type Lease, type LeaseHandle } from './lease.js'

/** The longest visitor id accepted. */
export const MAX_VISITOR_ID_LENGTH = 128
const VISITOR_ID = /^[A-Za-z0-9._:~-]+$/

/**
 * Checks a visitor id: 1 to 128 characters of letters, digits, `.`, `_`, `:`, `~` or `-` (so a
 * base64url token, a UUID or `user:42` fit, and the id is safe in a Redis key and a cookie).
 * Throws `ERR_AIRLOCK_OPTION` otherwise.
 */
export function assertVisitorId(visitorId: unknown): string {
  if (
    typeof visitorId !== 'string' ||
    visitorId.length === 0 ||
    visitorId.length > MAX_VISITOR_ID_LENGTH ||
    !VISITOR_ID.test(visitorId)
  ) {
    optionError(
      `visitorId must be 1 to ${MAX_VISITOR_ID_LENGTH} characters of letters, digits, '.', '_', ':', '~' or '-', ` +
        `got ${visitorId === undefined || typeof visitorId === 'string' ? describeId(visitorId) : received(visitorId)}`,
    )
  }
  return visitorId
}

function describeId(value: string | undefined): string {
  if (typeof value === 'string' && value.length > 40) return `a string of ${value.length} characters`
  return received(value)
}

/**
 * A new unguessable visitor id (128 random bits, base64url). The visitor id is also the admitted
 * lease's token, so whoever knows it can release that slot: use this (or another secret id) when
 * ids travel in cookies or URLs.
 */
export function newVisitorId(): string {
  return newToken()
}

/**
 * Estimated wait (ms) for `position` given `admitted` admissions in the last `windowMs` ms, or
 * `null` while fewer than two admissions are known. The first admission of the window marks its
 * start, so `admitted - 1` of them fall in the `windowMs` span: `rate = (admitted - 1) / windowMs`
 * and `eta = position / rate`, rounded up.
 */
export function estimateWait(
  position: number,
  admitted: number,
  windowMs: number,
): { eta: number | null; rate: number | null } {
  if (admitted < 2 || windowMs <= 0) return { eta: null, rate: null }
  const perMs = (admitted - 1) / windowMs
  return { eta: Math.ceil(position / perMs), rate: perMs * 1000 }
}

/** The admitted slot, seen through the semaphore's lease handle (which tracks refreshes). */
export class AdmittedLease implements Lease {
  constructor(
    private readonly handle: LeaseHandle,
    private readonly acquired: { fence: number; expiresAt: number },
  ) {}

  get token(): string {
    return this.handle.token
  }

  get fence(): number {
    return this.handle.fence ?? this.acquired.fence
  }

  get expiresAt(): number {
    return this.handle.expiresAt ?? this.acquired.expiresAt
  }

  refresh(ttl?: Duration): Promise<boolean> {
    return this.handle.refresh(ttl)
  }

  release(): Promise<boolean> {
    return this.handle.release()
  }

  state(): Promise<LeaseState> {
    return this.handle.state()
  }
}
