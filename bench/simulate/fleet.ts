/**
 * The simulated fleet: N gates on one store, each the real adaptive limit (src/gate/adaptive.ts's
 * AdaptiveGate, which runs the real estimator, src/core/adaptive.ts) feeding the real
 * EffectiveLimit, and the store's fleet figure kept by the real AdaptiveBoard (what the memory
 * store keeps per name, and the Redis store's ADAPT scripts mirror). What is modelled is only what
 * lies between them: the store's round trip, and its count of live slots (the acquire script's
 * `held < limit`, atomic at the store).
 *
 * A request-mode slot, as the real gate takes it: acquired at the store (the limit this instance
 * has in force), measured from admission to the end of the handler, released when the handler
 * ends, or, for a failed request, a good request's time after its admission (`keepFailed`).
 */
import { AdaptiveGate, ADAPTIVE_WINDOW_MS } from '../../src/gate/adaptive.js'
import { EffectiveLimit } from '../../src/gate/limit.js'
import { AdaptiveBoard } from '../../src/stores/adaptive-board.js'
import type { Store } from '../../src/stores/types.js'
import type { VirtualClock } from './clock.js'

export interface FleetSettings {
  instances: number
  min: number
  max: number
  /** The store's round trip (ms): a script call answers this long after it is sent. */
  storeRtt: number
}

export interface SimGate {
  readonly limit: EffectiveLimit
  readonly adaptive: AdaptiveGate
}

export class Fleet {
  readonly gates: SimGate[]
  /** Live slots at the store. */
  held = 0
  /** Gate errors (a broken store answer would show here; none is expected). */
  readonly errors: unknown[] = []
  readonly #board = new AdaptiveBoard()

  constructor(
    private readonly clock: VirtualClock,
    random: () => number,
    private readonly s: FleetSettings,
  ) {
    const store = {
      adapt: (_name, report) =>
        // The script runs half a round trip after the call, and answers half a round trip later.
        clock.answer(s.storeRtt, () => this.#board.report(report, clock.now - s.storeRtt / 2, this.held)),
      adaptCommit: (_name, commit) => clock.answer(s.storeRtt, () => this.#board.commit(commit)),
    } as Pick<Store, 'adapt' | 'adaptCommit'> as Store
    this.gates = Array.from({ length: s.instances }, () => {
      const limit = new EffectiveLimit(s.min)
      // Each instance's windows start at its own moment (the instances did not start together).
      const offset = random() * ADAPTIVE_WINDOW_MS
      const adaptive = new AdaptiveGate({
        name: 'sim',
        store,
        limit,
        settings: { min: s.min, max: s.max, initial: s.min },
        window: ADAPTIVE_WINDOW_MS,
        sessions: false,
        onError: (err) => this.errors.push(err),
        clock: { now: () => clock.now, repeat: (tick, ms) => clock.repeat(tick, ms, offset) },
      })
      return { limit, adaptive }
    })
  }

  /** The most any instance lets in now (its limit in force: the fleet's figure, or its own brake). */
  get limit(): number {
    let most = 0
    for (const g of this.gates) most = Math.max(most, g.limit.value)
    return most
  }

  /**
   * Asks gate `i` for a slot: `answer(true)` half a round trip after the store took it (the
   * decision is the store's, at the limit gate `i` has in force when it asks).
   */
  acquire(i: number, answer: (admitted: boolean) => void): void {
    const gate = this.gates[i]!
    const limit = gate.limit.value
    this.clock.after(this.s.storeRtt / 2, () => {
      const admitted = this.held < limit
      if (admitted) this.held++
      else gate.adaptive.refused()
      this.clock.after(this.s.storeRtt / 2, () => answer(admitted))
    })
  }

  /** Gate `i`'s admitted request ended after `ms` (`failed`: a 5xx); its slot is freed as the real gate frees it. */
  ended(i: number, ms: number, failed: boolean): void {
    const adaptive = this.gates[i]!.adaptive
    adaptive.measured(ms, failed)
    const keep = failed ? adaptive.keepFailed(ms) : 0
    this.clock.after(keep + this.s.storeRtt / 2, () => this.held--)
  }

  close(): void {
    for (const g of this.gates) g.adaptive.close()
  }
}
