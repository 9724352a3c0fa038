/**
 * Helpers the contract's cases share. Not exported by `airlock-shield/testing` (the barrel,
 * index.ts): the cases import them from here.
 */
import type { QueueRequest } from '../stores/types.js'

/** The line settings most cases use. */
export const LINE: QueueRequest = { order: 'fifo', idleTimeout: 5_000, claimWindow: 5_000, maxLength: 0 }

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
