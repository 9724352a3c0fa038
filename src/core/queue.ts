/** Line settings given as options: one validator for the waiting room, the gate's queue and the lock service. */
import { optionError } from '../base/errors.js'
import { duration, durationOrZero, nonNegativeInteger, oneOf } from '../base/validate.js'
import type { QueueSettings } from '../stores/types.js'

export type { QueueSettings } from '../stores/types.js'

/** The option keys of {@link QueueSettings}. */
export const QUEUE_KEYS = ['order', 'maxLength', 'idleTimeout', 'claimWindow', 'confirmTimeout'] as const

/** Defaults of {@link queueSettings}; `confirmTimeout`'s may depend on the settled durations. */
export type QueueDefaults = Omit<QueueSettings, 'confirmTimeout'> & {
  confirmTimeout: number | ((settled: { idleTimeout: number; claimWindow: number }) => number)
}

/**
 * Checks line settings given as options, over `defaults`. `prefix` is how the caller's options
 * name them in messages (`'queue.'` for the gate's, `''` for the waiting room's):
 * `queue.idleTimeout must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got 0`.
 */
export function queueSettings(prefix: string, input: Partial<QueueSettings>, defaults: QueueDefaults): QueueSettings {
  const order = oneOf(`${prefix}order`, input.order ?? defaults.order, ['fifo', 'random'] as const)
  const maxLength = nonNegativeInteger(`${prefix}maxLength`, input.maxLength ?? defaults.maxLength)
  const idleTimeout = duration(`${prefix}idleTimeout`, input.idleTimeout ?? defaults.idleTimeout)
  const claimWindow = duration(`${prefix}claimWindow`, input.claimWindow ?? defaults.claimWindow)
  const fallback = defaults.confirmTimeout
  const confirmTimeout = durationOrZero(
    `${prefix}confirmTimeout`,
    input.confirmTimeout ?? (typeof fallback === 'function' ? fallback({ idleTimeout, claimWindow }) : fallback),
  )
  if (confirmTimeout > idleTimeout) {
    optionError(`${prefix}confirmTimeout must be at most ${prefix}idleTimeout (${idleTimeout}), got ${confirmTimeout}`)
  }
  return { order, maxLength, idleTimeout, claimWindow, confirmTimeout }
}
