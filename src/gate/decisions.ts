/**
 * Decision values and small helpers shared by the gate's flows and the adapters.
 */
import type { EnterResult } from '../core/waiting-room.js'
import type { Lease } from '../core/semaphore.js'
import type { AdmitDecision, BypassDecision, GateDecision, PassDecision, RequestSlot } from './types.js'

const noop = (): void => {}

/** Not gated: on to the route. */
export const BYPASS: BypassDecision = Object.freeze({ kind: 'bypass', setCookie: undefined, response: undefined })

/** Admitted while the store could not answer: to `slot` (the instance's local quota), or without one (`onStoreError: 'open'`). */
export function storeUnavailableAdmit(slot: RequestSlot | undefined): AdmitDecision {
  return {
    kind: 'admit',
    reason: 'store-unavailable',
    token: undefined,
    setCookie: undefined,
    headers: undefined,
    response: undefined,
    slot,
  }
}

/** Admitted without a slot: the store failed and `onStoreError` is `'open'`. */
export const OPEN_ADMIT: AdmitDecision = Object.freeze(storeUnavailableAdmit(undefined))

/** The query of the gate's own confirm request; the admitting page links to it (`Link: rel=prefetch`). */
export const CONFIRM_QUERY = '?__airlock=confirm'
export const CONFIRM_LINK = Object.freeze({ link: `<${CONFIRM_QUERY}>; rel=prefetch` })

/** True when `decision` holds a visitor's pass (session mode): ending it frees its slot and clears the cookie. */
export function holdsPass(decision: GateDecision): decision is (AdmitDecision | PassDecision) & { token: string } {
  return (
    (decision.kind === 'pass' || (decision.kind === 'admit' && decision.slot === undefined)) &&
    decision.token !== undefined
  )
}

/** A bypass decision that sets `setCookie` (a confirmed or slid pass), if any. */
export function bypassWith(setCookie: string | undefined): BypassDecision {
  return setCookie === undefined ? BYPASS : { kind: 'bypass', setCookie, response: undefined }
}

/** Frees a slot a new visitor was admitted to after its decision had already given up on it. */
export function releaseLateEntry(result: EnterResult): void {
  if (result.status === 'admitted') result.lease.release().catch(noop)
}

/** Releases a slot acquired after its decision had already given up on it. */
export function releaseLate(lease: Lease | null): void {
  lease?.release().catch(noop)
}

/** {@link releaseLate} for `Semaphore.tryAcquire`'s answer. */
export function releaseLateTry(result: { lease: Lease | null }): void {
  releaseLate(result.lease)
}

/**
 * Calls a user-supplied `skip` or `nonce` function. One that throws is treated as answering
 * `undefined` (not skipped, no nonce) and logged once per gate (`warned`), so a bug there never
 * turns into a 500 nor lets a request bypass the gate.
 */
export function guardedCall<R, T>(
  option: 'skip' | 'nonce' | 'clientKey',
  fn: (request: R) => T,
  request: R,
  warned: Set<string>,
  logger: { warn(obj: object, msg?: string): void },
  gate: string,
): T | undefined {
  try {
    return fn(request)
  } catch (err) {
    if (!warned.has(option)) {
      warned.add(option)
      logger.warn({ err, gate }, `airlock-shield: the ${option} option threw; treating it as undefined`)
    }
    return undefined
  }
}
