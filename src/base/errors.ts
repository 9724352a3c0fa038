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

/**
 * The brand every AirlockError carries. A registered symbol, so errors made by another copy of this
 * package in the same process (its ESM and CJS builds, or two versions) are recognized too.
 */
const BRAND = Symbol.for('airlock-shield.error')

/** The one error class this package throws. Check `err.code`, never the message. */
export class AirlockError extends Error {
  override readonly name = 'AirlockError'
  readonly code: AirlockErrorCode

  constructor(code: AirlockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    Object.defineProperty(this, BRAND, { value: true })
  }

  /** `err instanceof AirlockError` holds for errors of any copy of the package (brand check). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return branded(value)
  }
}

/**
 * True when `err` is an {@link AirlockError}, optionally with the given code. A brand check, not
 * `instanceof` of one class: it also holds for errors thrown by another copy of the package.
 */
export function isAirlockError(err: unknown, code?: AirlockErrorCode): err is AirlockError {
  return branded(err) && (code === undefined || (err as AirlockError).code === code)
}

function branded(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true
}

/** Throws `ERR_AIRLOCK_OPTION` with a sentence naming the option. */
export function optionError(message: string): never {
  throw new AirlockError('ERR_AIRLOCK_OPTION', message)
}

const warned = new Set<string>()

/**
 * A warning the operator must see whatever the framework's logger does: emitted once per process
 * and code through `process.emitWarning` (Node prints it on stderr: `(node:123) [AIRLOCK_NO_SECRET]
 * AirlockWarning: ...`), with a link to its entry in docs/errors.md. The caller logs it too.
 */
export function warnOnce(code: string, message: string): void {
  if (warned.has(code)) return
  warned.add(code)
  process.emitWarning(`${message} (docs/errors.md#${code.toLowerCase()})`, { type: 'AirlockWarning', code })
}
