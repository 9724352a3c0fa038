/**
 * A gate's side of the live control (src/core/control.ts): it keeps the control in force in memory,
 * so decisions read it without a store call, and follows the store's record: pushed through the
 * store's pub/sub (`watchControl`), re-read every `rereadEvery` as a safety net. A record that does
 * not parse is ignored field by field, with one warning per bad value, never a crash.
 */
import { controlChannel, type ControlEvent } from '../base/events.js'
import { decodeControl, stateFields, UNSTEERED, type ControlState } from '../core/control.js'
import type { Store } from '../stores/types.js'
import type { EffectiveLimit } from './limit.js'
import type { GateLogger } from './types.js'

/** What a gate does with a visitor who holds no pass, now. */
export type Newcomers =
  | { kind: 'normal' }
  /** Busy answer: nobody new in. */
  | { kind: 'closed' }
  /** Take or keep a place in a held line; `opening` for a scheduled opening's pre-queue. */
  | { kind: 'hold'; opening: Opening | null }

/** A scheduled opening: `at` as the operator set it (epoch ms), `in` the ms left by the store's clock. */
export interface Opening {
  at: number
  in: number
}

const NORMAL: Newcomers = Object.freeze({ kind: 'normal' })
const CLOSED: Newcomers = Object.freeze({ kind: 'closed' })
const HOLD: Newcomers = Object.freeze({ kind: 'hold', opening: null })

export class ControlInForce {
  #state: ControlState = UNSTEERED
  /** Store clock minus local clock at the last read (ms): opening times are the store's. */
  #skew = 0
  #timer: NodeJS.Timeout | undefined
  #unwatch: (() => void) | undefined
  #closed = false
  #reading: Promise<void> | undefined
  readonly #warned = new Set<string>()

  constructor(
    private readonly name: string,
    private readonly store: Store,
    private readonly logger: GateLogger,
    private readonly limit: EffectiveLimit,
    private readonly rereadEvery: number,
  ) {}

  /** True when the store keeps control records (else the gate runs on its options alone). */
  get enabled(): boolean {
    return typeof this.store.control === 'function'
  }

  /** The control in force on this instance. */
  get state(): ControlState {
    return this.#state
  }

  /** `passthrough`: the gate gates nothing. */
  get passthrough(): boolean {
    return this.#state.mode === 'passthrough'
  }

  /** The admission rate in force (per minute), or `null`. */
  get rate(): number | null {
    return this.#state.admissionRate
  }

  /** What to do with a visitor who holds no pass, at local time `now`. */
  newcomers(now: number): Newcomers {
    const s = this.#state
    if (s.version === 0) return NORMAL
    const storeNow = now + this.#skew
    if (s.closesAt !== null && storeNow >= s.closesAt.getTime()) return CLOSED
    if (s.opensAt !== null && storeNow < s.opensAt.getTime())
      return { kind: 'hold', opening: { at: s.opensAt.getTime(), in: s.opensAt.getTime() - storeNow } }
    if (s.mode === 'closed') return CLOSED
    if (s.mode === 'queue-all') return HOLD
    return NORMAL
  }

  /**
   * Follows the record: subscribes first (so no change between the two is missed), then reads it.
   * Resolves after the first read (a failed one is retried by the slow re-read).
   */
  async start(): Promise<void> {
    if (!this.enabled) return
    this.#timer = setInterval(() => void this.read(), this.rereadEvery).unref()
    try {
      const unwatch = await this.store.watchControl?.(this.name, () => void this.read())
      if (this.#closed) unwatch?.()
      else this.#unwatch = unwatch
    } catch (err) {
      this.warnOnce(
        'watch',
        { err, gate: this.name },
        `airlock-shield: cannot watch the control of '${this.name}'; re-reading it every ${this.rereadEvery} ms`,
      )
    }
    await this.read()
  }

  /** Re-reads the record (one in flight at a time). */
  read(): Promise<void> {
    if (this.#closed || !this.enabled) return Promise.resolve()
    this.#reading ??= this.store.control!(this.name)
      .then(
        (record) => {
          if (this.#closed) return undefined
          this.#skew = record.now - Date.now()
          // Version 0 is a record that was never set; clearing fields keeps the version. A gate
          // that knew a version and reads none lost the record with the store's data.
          if (record.version === 0 && this.#state.version > 0) return this.restore()
          return this.apply(
            decodeControl(record, (field, value) =>
              this.warnOnce(
                `${field}=${value}`,
                { gate: this.name, field, value },
                `airlock-shield: ignoring the control record's ${field} of '${this.name}': ${JSON.stringify(value)} is not valid`,
              ),
            ),
          )
        },
        (err: unknown) =>
          this.warnOnce(
            'read',
            { err, gate: this.name },
            `airlock-shield: cannot read the control of '${this.name}'; keeping version ${this.#state.version}`,
          ),
      )
      .finally(() => (this.#reading = undefined))
    return this.#reading
  }

  /**
   * The record vanished with the store's data (a Redis restarted empty, a failover that lost the
   * last writes, a `FLUSHDB`): keep the control in force (a closed gate must not reopen by itself),
   * write it back with a version above the one it had, and say so.
   */
  private async restore(): Promise<void> {
    const known = this.#state
    this.logger[this.logger.error ? 'error' : 'warn']!(
      {
        gate: this.name,
        version: known.version,
        mode: known.mode,
        limit: known.limit,
        admissionRate: known.admissionRate,
      },
      `airlock-shield: the live control of '${this.name}' (version ${known.version}) is gone from the store (data lost: a restart, a failover, a flush); keeping it in force and writing it back`,
    )
    if (controlChannel.hasSubscribers) {
      controlChannel.publish({
        gate: this.name,
        event: 'restored',
        by: known.updatedBy,
        version: known.version,
        patch: undefined,
        state: { ...known },
      } satisfies ControlEvent)
    }
    // '#v' first, so the written-back record's version is above every version the fleet has seen.
    const fields = { '#v': String(known.version), ...stateFields(known) }
    try {
      const record = await this.store.control!(this.name, fields)
      if (!this.#closed && record.version > known.version) this.apply(decodeControl(record, () => {}))
    } catch (err) {
      this.warnOnce(
        'restore',
        { err, gate: this.name },
        `airlock-shield: cannot write back the control of '${this.name}'; keeping version ${known.version} in force`,
      )
    }
  }

  private apply(next: ControlState): void {
    const previous = this.#state
    if (next.version === previous.version && next.version !== 0) return
    this.#state = next
    this.limit.setControl(next.limit)
    if (next.version === previous.version) return
    this.logger.info?.(
      {
        gate: this.name,
        version: next.version,
        by: next.updatedBy,
        mode: next.mode,
        limit: next.limit,
        admissionRate: next.admissionRate,
      },
      `airlock-shield: applying control version ${next.version} of '${this.name}'`,
    )
    if (controlChannel.hasSubscribers) {
      controlChannel.publish({
        gate: this.name,
        event: 'applied',
        by: next.updatedBy,
        version: next.version,
        patch: undefined,
        state: { ...next },
      } satisfies ControlEvent)
    }
  }

  private warnOnce(key: string, obj: object, msg: string): void {
    if (this.#warned.has(key)) return
    this.#warned.add(key)
    this.logger.warn(obj, msg)
  }

  close(): void {
    this.#closed = true
    if (this.#timer) clearInterval(this.#timer)
    this.#unwatch?.()
  }
}
