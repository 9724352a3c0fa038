import { optionError } from './errors.js'

/** Renders a received value for an error message (`got 0`, `got "abc"`). */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value)
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** `name` must be a positive integer (1, 2, …). */
export function positiveInteger(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    optionError(`${option} must be a positive integer, got ${describe(value)}`)
  }
  return value
}

/** `name` must be a non-negative integer (0, 1, …). */
export function nonNegativeInteger(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    optionError(`${option} must be a non-negative integer, got ${describe(value)}`)
  }
  return value
}

/** A duration in milliseconds: a positive integer. */
export function duration(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    optionError(`${option} must be a positive number of milliseconds, got ${describe(value)}`)
  }
  return value
}

/** A non-negative duration in milliseconds, or `Infinity`. */
export function waitDuration(option: string, value: unknown): number {
  if (value === Infinity) return Infinity
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    optionError(`${option} must be a non-negative number of milliseconds or Infinity, got ${describe(value)}`)
  }
  return value
}

/** A non-empty name made of characters safe in a Redis key and a cookie. */
export function safeName(option: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9._:-]{1,64}$/.test(value)) {
    optionError(
      `${option} must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-', got ${describe(value)}`,
    )
  }
  return value
}

/** One of the allowed string values. */
export function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    optionError(`${option} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${describe(value)}`)
  }
  return value as T
}

/** `options` must be an object with only `allowed` keys (e.g. a method's options). */
export function optionsObject(what: string, options: unknown, allowed: readonly string[]): void {
  if (options === null || typeof options !== 'object') {
    optionError(`${what} options must be an object, got ${describe(options)}`)
  }
  knownKeys(what, options, allowed)
}

/** Rejects option keys the caller did not mean (typos such as `limt`). */
export function knownKeys(what: string, options: object, allowed: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      optionError(`${what} has no option '${key}'; known options are ${allowed.join(', ')}`)
    }
  }
}
