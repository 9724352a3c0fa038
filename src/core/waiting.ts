/**
 * Waiting in a store's line and keeping a lease alive: shared by the semaphore's
 * `acquireBlocking`/`run` and the waiting room's `withAdmitted`.
 */
import type { AcquireRequest, AcquireResult, Store } from '../stores/types.js'
import { AirlockError } from '../base/errors.js'
import type { Lease, RunContext } from './lease.js'

export type Acquired = Extract<AcquireResult, { status: 'acquired' }>

export interface WaitInLine {
  store: Store
  name: string
  /** The request to repeat; must carry `queue`. Its token is the waiter's id. */
  request: AcquireRequest
  /** Live values read again before each try (a live limit, an admission rate). */
  refresh?: () => Pick<AcquireRequest, 'limit' | 'admissionRate'>
  /** Client-clock ms after which waiting stops. */
  deadline: number
  signal?: AbortSignal
  /** The safety-net poll (and sign of life in line). */
  retryInterval: number
}

/**
 * Waits in `name`'s line until admitted (resolves the acquired result) or until `deadline`
 * (resolves `{ status: 'timeout', last }`). Sleeps until a wake-up message names this waiter, the next
 * slot expiry, or `retryInterval`, whichever comes first. Rejects with `signal.reason` on abort.
 * Leaves the line whenever it stops without a slot.
 */
export async function waitInLine(w: WaitInLine): Promise<Acquired | { status: 'timeout'; last: AcquireResult }> {
  const { store, name, request, signal } = w
  signal?.throwIfAborted()
  const waker = new Waker()
  const unsubscribe = await store
    .subscribe(name, (head) => {
      if (head === request.token) waker.wake()
    })
    .catch(() => () => {}) // no wake-ups: the safety poll still serves
  const onAbort = (): void => waker.wake()
  signal?.addEventListener('abort', onAbort, { once: true })
  let inLine = false
  try {
    for (;;) {
      signal?.throwIfAborted()
      const result = await store.acquire(name, w.refresh ? { ...request, ...w.refresh() } : request)
      if (result.status === 'acquired') {
        inLine = false
        return result
      }
      inLine = result.status === 'queued'
      const left = w.deadline - Date.now()
      if (left <= 0) return { status: 'timeout', last: result }
      await waker.sleep(Math.min(left, w.retryInterval, untilExpiry(result)))
    }
  } finally {
    signal?.removeEventListener('abort', onAbort)
    unsubscribe()
    if (inLine) await store.leave(name, request.token).catch(() => {})
  }
}

/**
 * Runs `fn` holding `lease`: refreshes it every `ttl / 3` unless `autoRefresh` is false (aborting
 * the job's signal with `ERR_AIRLOCK_LEASE_LOST` if a refresh fails), and always releases it.
 * A failed release is not the job's failure: the slot then frees itself after ttl.
 */
export async function runHolding<T>(
  lease: Lease,
  ttl: number,
  autoRefresh: boolean,
  fn: (context: RunContext) => T | Promise<T>,
): Promise<T> {
  const lost = new AbortController()
  const keeper = autoRefresh ? keepAlive(lease, ttl, lost) : undefined
  try {
    return await fn({ lease, signal: lost.signal })
  } finally {
    keeper?.stop()
    await lease.release().catch(() => {})
  }
}

/** ms until the earliest slot expires (a crashed holder frees room without any message). */
function untilExpiry(result: AcquireResult): number {
  if ((result.status === 'busy' || result.status === 'queued') && result.nextExpiry !== null) {
    return Math.max(1, result.nextExpiry - result.now + 1)
  }
  return Infinity
}

/** A sleep that a wake-up (or an abort) cuts short; a wake-up while awake skips the next sleep. */
class Waker {
  private pending: (() => void) | undefined
  private woken = false

  wake(): void {
    this.woken = true
    this.pending?.()
  }

  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.pending = undefined
        this.woken = false
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.pending = done
    })
  }
}

/** Refreshes `lease` every ttl/3 until stopped; aborts `lost` when a refresh fails. */
function keepAlive(lease: Lease, ttl: number, lost: AbortController): { stop(): void } {
  let stopped = false
  const every = Math.max(1, Math.floor(ttl / 3))
  const tick = async (): Promise<void> => {
    let ok = false
    let cause: unknown
    try {
      ok = await lease.refresh(ttl)
    } catch (err) {
      cause = err
    }
    if (stopped) return
    if (ok) {
      timer = setTimeout(tick, every).unref()
      return
    }
    lost.abort(new AirlockError('ERR_AIRLOCK_LEASE_LOST', `lease ${lease.token} could not be refreshed`, { cause }))
  }
  let timer: NodeJS.Timeout = setTimeout(tick, every).unref()
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
