/**
 * A store guard: every store call a request makes runs within a time budget; after a few failures
 * in a row a circuit breaker stops calling the store (so a dead Redis does not cost the budget on
 * every request) and probes it in the background until it answers; failures are logged at most
 * once per interval. Used by the gate and the lock service.
 */
import { AirlockError, warnOnce } from '../base/errors.js'
import { withinBudget } from '../base/budget.js'

/** After this many consecutive store failures, stop calling the store until a probe succeeds. */
export const BREAKER_THRESHOLD = 3
/** How often an open breaker probes the store (ms). */
export const BREAKER_PROBE_MS = 1000
/** Store failures are logged at most once per this interval (ms). */
export const STORE_LOG_INTERVAL_MS = 10_000

/** A pino-shaped logger: objects first (`log.warn({ err, gate }, 'message')`). */
export interface GuardLogger {
  warn(obj: object, msg?: string): void
  info?(obj: object, msg?: string): void
}

export interface StoreGuardOptions {
  /** Named in logs (`{ gate: name }`). */
  name: string
  /** What the budget is called in errors (`storeTimeout`). */
  budgetName: string
  logger: GuardLogger
  /** A cheap store call the open breaker uses to tell the store is back. */
  probe: () => Promise<unknown>
  /** The probe's budget (ms). */
  probeTimeout: number
  /** Named in failure logs (`policy`), e.g. the gate's `onStoreError`. */
  policy?: string
  /** The breaker opened (`true`) or closed again (`false`). */
  onBreaker?: (open: boolean) => void
  /** Which errors of a call are the store's failures (default: all); others pass through uncounted. */
  isFailure?: (err: unknown) => boolean
  /** Told each call's duration (ms) and whether the store failed it. */
  onCall?: (ms: number, ok: boolean) => void
}

export class StoreGuard {
  private failures = 0
  private open = false
  private probeTimer: NodeJS.Timeout | undefined
  private lastLogAt = -Infinity
  private suppressed = 0
  private closed = false
  private readonly openError: AirlockError

  constructor(private readonly options: StoreGuardOptions) {
    this.openError = new AirlockError(
      'ERR_AIRLOCK_STORE_UNAVAILABLE',
      'the store is unavailable (circuit open after repeated failures; probing for recovery)',
    )
  }

  /** True while the breaker is open (store calls fail at once). */
  get breakerOpen(): boolean {
    return this.open
  }

  /**
   * Runs one store call within what is left of a budget that ends at `deadline` (`budget` ms long,
   * for messages). Fails at once while the breaker is open. `onLate` receives a result that arrives
   * after the budget ran out (to undo what it took).
   */
  async call<T>(op: () => Promise<T>, deadline: number, budget: number, onLate?: (value: T) => void): Promise<T> {
    if (this.open) throw this.openError
    // A budget used up before the store was even asked (a long GC pause, the process descheduled
    // on a starved box, a slow `clientKey`) says the process was busy, not the store: it is asked
    // all the same, and the budget's end is acted on after the next poll for I/O, as for any call.
    // An answer by then (the memory store's at once, a prompt Redis's) still wins.
    const left = Math.max(0, deadline - Date.now())
    const t0 = performance.now()
    try {
      const value = await withinBudget(op(), left, () => this.timeout(budget), onLate)
      this.failures = 0
      this.options.onCall?.(performance.now() - t0, true)
      return value
    } catch (err) {
      const failure = this.options.isFailure?.(err) ?? true
      if (failure) this.failed()
      else this.failures = 0
      this.options.onCall?.(performance.now() - t0, !failure)
      throw err
    }
  }

  /** Logs a store failure at most once per {@link STORE_LOG_INTERVAL_MS} (with how many were not logged). */
  logFailure(err: unknown, what: string): void {
    const now = Date.now()
    if (now - this.lastLogAt < STORE_LOG_INTERVAL_MS) {
      this.suppressed++
      return
    }
    this.lastLogAt = now
    const suppressed = this.suppressed
    this.suppressed = 0
    this.options.logger.warn(
      { err, gate: this.options.name, policy: this.options.policy, suppressed },
      `airlock-shield: store unavailable (${what})`,
    )
    // Also on stderr, once per process: the app may run with its logger off.
    warnOnce(
      'AIRLOCK_STORE_UNAVAILABLE',
      `airlock-shield: the store of gate '${this.options.name}' is unavailable (${what}): ${String((err as Error | undefined)?.message ?? err)}`,
    )
  }

  /** Stops the probe. Idempotent. */
  close(): void {
    this.closed = true
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = undefined
  }

  private timeout(budget: number): AirlockError {
    return new AirlockError(
      'ERR_AIRLOCK_STORE_UNAVAILABLE',
      `the store did not answer within ${this.options.budgetName} (${budget} ms)`,
    )
  }

  private failed(): void {
    if (++this.failures >= BREAKER_THRESHOLD && !this.open && !this.closed) {
      this.open = true
      this.options.onBreaker?.(true)
      this.scheduleProbe()
    }
  }

  private scheduleProbe(): void {
    this.probeTimer = setTimeout(() => void this.probe(), BREAKER_PROBE_MS)
    this.probeTimer.unref?.()
  }

  private async probe(): Promise<void> {
    this.probeTimer = undefined
    if (this.closed) return
    try {
      await withinBudget(this.options.probe(), this.options.probeTimeout, () => this.timeout(this.options.probeTimeout))
      if (this.closed) return
      this.open = false
      this.failures = 0
      this.suppressed = 0
      this.lastLogAt = -Infinity
      this.options.onBreaker?.(false)
      this.options.logger.info?.({ gate: this.options.name }, 'airlock-shield: store available again')
    } catch {
      if (!this.closed) this.scheduleProbe()
    }
  }
}
