/**
 * The gate's side of a store that lost its last writes (`Store.lostAt`: a failover, a restart):
 * one error-level log per loss, and the quarantine in which the store's count is not trusted:
 * newcomers are decided as in a store outage (`onStoreError`: by default within the instance's
 * share of the limit, counting what it let in, which it knows without the store). It lasts a slot's
 * `ttl` in request mode (a request whose slot was erased may still be running); in session mode the
 * longer of `provisionalTtl` and `recheckInterval`, the longest a cached pass goes unchecked (a
 * visitor whose slot was erased is let in from the cache until then).
 */
import type { Store } from '../stores/types.js'
import type { GateLogger } from './types.js'

export class LossWatch {
  #seen: number | undefined

  constructor(
    private readonly store: Store,
    private readonly name: string,
    private readonly logger: GateLogger,
    /** How long after a loss no newcomer is admitted (ms). */
    private readonly quarantine: number,
  ) {}

  /** True while a loss is recent; the first call after each loss logs it. Cheap: one call to the store's getter. */
  quarantined(now: number): boolean {
    const lost = this.store.lostAt?.()
    if (lost === undefined) return false
    if (lost !== this.#seen) {
      this.#seen = lost
      this.logger[this.logger.error ? 'error' : 'warn']!(
        { gate: this.name, quarantineMs: this.quarantine },
        `airlock-shield: the store of '${this.name}' answers from a different Redis (a failover or a restart): its last writes may be lost; for ${this.quarantine} ms, until every slot that may have been lost has expired, newcomers are decided as in a store outage`,
      )
    }
    return now - lost < this.quarantine
  }
}
