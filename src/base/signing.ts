import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { optionError } from './errors.js'
import { received, optionsObject, positiveInteger } from './validate.js'

/**
 * Signed, tamper-evident strings for cookies (gate passes, waiting-room tickets).
 *
 * A signed value is `field~field~...~mac`, where `mac` is the base64url HMAC-SHA256 of
 * `context~field~...~field` under a secret. Fields are plain text limited to `[A-Za-z0-9._:-]`, so a
 * value needs no escaping in a cookie, a header or a URL. The `context` (e.g. `'airlock-pass'`) is
 * signed but not sent: a value signed for one purpose never verifies for another.
 *
 * Key rotation: sign with the first secret, verify against every secret. Verification rejects
 * anything longer than `maxLength` or not made of the allowed characters before any crypto, and
 * compares MACs in constant time.
 */
export interface Signer {
  /** Signs the fields. Throws `ERR_AIRLOCK_OPTION` on a field with a character outside `[A-Za-z0-9._:-]`. */
  sign(fields: readonly string[]): string
  /** The fields of a value this signer (with any of its secrets) signed, or `null`. Never throws. */
  verify(value: unknown): string[] | null
}

export interface SignerOptions {
  /** One secret or several (rotation: the first signs, all verify). Each at least 32 bytes. */
  secrets: string | readonly string[]
  /** Signed along with the fields (never sent), so values of one purpose never pass for another. */
  context: string
  /** Values longer than this are rejected before any crypto. Default 512. */
  maxLength?: number
}

/** Separator between fields; not in the field alphabet nor in base64url. */
export const SEPARATOR = '~'
/** Minimum secret length in bytes (UTF-8). */
export const MIN_SECRET_BYTES = 32
const FIELD = /^[A-Za-z0-9._:-]*$/
const VALUE = /^[A-Za-z0-9._:~-]+$/
/** base64url of a 32-byte HMAC-SHA256: 43 characters. */
const MAC_LENGTH = 43

/**
 * Checks and normalises a `secret` option: a string or a non-empty array of strings, each at least
 * 32 bytes. Returns the list, first one signing.
 */
export function secretList(option: string, value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value]
  if (list.length === 0) optionError(`${option} must be a string or a non-empty array of strings, got an empty array`)
  for (const [i, s] of list.entries()) {
    const where = Array.isArray(value) ? `${option}[${i}]` : option
    if (typeof s !== 'string') {
      optionError(`${where} must be a string of at least ${MIN_SECRET_BYTES} bytes, got ${received(s)}`)
    }
    const bytes = Buffer.byteLength(s, 'utf8')
    if (bytes < MIN_SECRET_BYTES) {
      optionError(
        `${where} must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes}; ` +
          `generate one with: node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"`,
      )
    }
  }
  return list as string[]
}

/** A random secret (for a process that was given none). */
export function randomSecret(): string {
  return randomBytes(32).toString('base64url')
}

/** Creates a {@link Signer}. Throws `ERR_AIRLOCK_OPTION` on a bad secret. */
export function createSigner(options: SignerOptions): Signer {
  optionsObject('createSigner()', options, ['secrets', 'context', 'maxLength'])
  const keys = secretList('secrets', options.secrets).map((s) => Buffer.from(s, 'utf8'))
  const context: unknown = options.context
  const maxLength = positiveInteger('maxLength', options.maxLength ?? 512)
  if (typeof context !== 'string' || !FIELD.test(context)) {
    optionError(`context must be a string of [A-Za-z0-9._:-], got ${received(context)}`)
  }

  const mac = (key: Buffer, payload: string): Buffer =>
    createHmac('sha256', key).update(context).update(SEPARATOR).update(payload).digest()

  return {
    sign(fields) {
      for (const f of fields) {
        if (typeof f !== 'string' || !FIELD.test(f)) {
          optionError(`a signed field must use only [A-Za-z0-9._:-], got ${received(f)}`)
        }
      }
      const payload = fields.join(SEPARATOR)
      return `${payload}${SEPARATOR}${mac(keys[0]!, payload).toString('base64url')}`
    },

    verify(value) {
      if (typeof value !== 'string' || value.length > maxLength || !VALUE.test(value)) return null
      const cut = value.lastIndexOf(SEPARATOR)
      if (cut < 0 || value.length - cut - 1 !== MAC_LENGTH) return null
      const payload = value.slice(0, cut)
      // Compare the text, not decoded bytes: base64url has several spellings of the last bits.
      const given = Buffer.from(value.slice(cut + 1), 'latin1')
      let ok = false
      for (const key of keys) {
        // Check every key so timing does not tell which one matched.
        if (timingSafeEqual(Buffer.from(mac(key, payload).toString('base64url'), 'latin1'), given)) ok = true
      }
      return ok ? payload.split(SEPARATOR) : null
    },
  }
}
