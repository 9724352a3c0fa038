/**
 * Stable error codes. Each one is documented in `docs/errors.md`.
 *
 * - `ERR_AIRLOCK_OPTION`: an option is invalid; thrown at creation time.
 * - `ERR_AIRLOCK_TIMEOUT`: not admitted within the allowed time (`run`).
 * - `ERR_AIRLOCK_STORE_UNAVAILABLE`: the store did not answer within its budget.
 * - `ERR_AIRLOCK_LEASE_LOST`: a lease could not be kept alive (`run` with `autoRefresh`).
 * - `ERR_AIRLOCK_CLOSED`: the store was closed.
 * - `ERR_AIRLOCK_PEER_MISSING`: an optional peer dependency this feature needs is not installed.
 */
export type AirlockErrorCode =
  | 'ERR_AIRLOCK_OPTION'
  | 'ERR_AIRLOCK_TIMEOUT'
  | 'ERR_AIRLOCK_STORE_UNAVAILABLE'
  | 'ERR_AIRLOCK_LEASE_LOST'
  | 'ERR_AIRLOCK_CLOSED'
  | 'ERR_AIRLOCK_PEER_MISSING'

/** The one error class this package throws. Check `err.code`, never the message. */
export class AirlockError extends Error {
  override readonly name = 'AirlockError'
  readonly code: AirlockErrorCode

  constructor(code: AirlockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** True when `err` is an {@link AirlockError}, optionally with the given code. */
export function isAirlockError(err: unknown, code?: AirlockErrorCode): err is AirlockError {
  return err instanceof AirlockError && (code === undefined || err.code === code)
}

/** Throws `ERR_AIRLOCK_OPTION` with a sentence naming the option. */
export function optionError(message: string): never {
  throw new AirlockError('ERR_AIRLOCK_OPTION', message)
}
