import { optionError } from '../base/errors.js'
import type { Semaphore } from './semaphore.js'
import { abortSignal, received, knownKeys, positiveInteger, waitDuration } from '../base/validate.js'

/** Options of {@link throttle}. Durations in milliseconds, at most 2^31 − 1 (a timer's limit), or `Infinity`. */
export interface ThrottleOptions {
  /**
   * The semaphore whose slots the calls take: its `limit` is how many calls may be inside at once,
   * across every process sharing its name and store. Its `ttl` bounds how long a crashed caller's
   * slot stays taken; a live call keeps its slot by refreshing it every `ttl / 3`.
   */
  semaphore: Semaphore
  /**
   * How long a call may wait for its turn before it rejects with `ERR_AIRLOCK_TIMEOUT` (and `fn`
   * never runs). `0`: try once, never wait. Default `Infinity`: wait as long as it takes.
   */
  timeout?: number
  /** Units of the semaphore's limit each call takes. Default 1. */
  weight?: number
  /**
   * Stops every waiting call: they reject with `signal.reason` and leave the line. Calls already
   * inside run to their end. An already aborted signal rejects every call at once.
   */
  signal?: AbortSignal
}

/** What {@link throttle} returns: `fn`'s parameters and `this`, always answering with a promise. */
export type Throttled<This, Args extends unknown[], R> = (this: This, ...args: Args) => Promise<Awaited<R>>

const THROTTLE_KEYS = ['semaphore', 'timeout', 'weight', 'signal'] as const

/**
 * Wraps `fn` so that at most `semaphore.limit` calls run at once (in weight units). Each call waits
 * its turn in the semaphore's fair FIFO line (woken by releases, no busy polling), runs `fn` with
 * the same `this` and arguments, and always releases its slot, whether `fn` returns, throws or
 * rejects. `fn`'s errors reach the caller unchanged.
 *
 * A call not admitted within `timeout` rejects with `AirlockError` `ERR_AIRLOCK_TIMEOUT` without
 * running `fn`. While `fn` runs its slot is refreshed every `ttl / 3`, so a slow call keeps it.
 *
 * ```ts
 * const erp = createSemaphore({ name: 'legacy-erp', limit: 4, ttl: 30_000, store })
 * const fetchInvoice = throttle(legacyErp.fetchInvoice.bind(legacyErp), { semaphore: erp, timeout: 10_000 })
 * await fetchInvoice('INV-42')   // never more than 4 inside legacyErp, across every process
 * ```
 *
 * @throws `ERR_AIRLOCK_OPTION` at once, naming the first invalid option.
 */
export function throttle<This, Args extends unknown[], R>(
  fn: (this: This, ...args: Args) => R,
  options: ThrottleOptions,
): Throttled<This, Args, R> {
  if (typeof fn !== 'function') optionError(`throttle() needs a function to wrap, got ${received(fn)}`)
  if (options === null || typeof options !== 'object') {
    optionError(`throttle() needs an options object with a semaphore, got ${received(options)}`)
  }
  knownKeys('throttle()', options, THROTTLE_KEYS)
  const semaphore = options.semaphore as unknown as Record<string, unknown> | undefined
  if (!semaphore || typeof semaphore.run !== 'function' || typeof semaphore.limit !== 'number') {
    optionError(
      `semaphore must be a semaphore from createSemaphore({ name, limit, ttl, store }), got ${received(semaphore)}`,
    )
  }
  const sem = options.semaphore
  const timeout = waitDuration('timeout', options.timeout ?? Infinity)
  const weight = positiveInteger('weight', options.weight ?? 1)
  if (weight > sem.limit) optionError(`weight must be at most the semaphore's limit (${sem.limit}), got ${weight}`)
  const signal = abortSignal('signal', options.signal)

  return function throttled(this: This, ...args: Args): Promise<Awaited<R>> {
    // run() awaits fn inside its own try: a synchronous throw becomes a rejection, and the slot is released.
    return sem.run(() => fn.apply(this, args) as Awaited<R> | Promise<Awaited<R>>, { timeout, weight, signal })
  }
}
