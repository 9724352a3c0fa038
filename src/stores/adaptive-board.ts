/**
 * The fleet's adaptive limit of one name, in process: what the memory store keeps per name (and a
 * gate keeps for itself when its store has no `adapt`). The Redis store does the same in Lua (the
 * ADAPT and ADAPT_COMMIT scripts); the shared contract suite holds both to it.
 */
import { judgeNow, type AdaptAnswer, type AdaptCommit, type AdaptReport } from './types.js'

export class AdaptiveBoard {
  #limit: number | undefined
  #state: string | null = null
  #turn = 0
  #judgedAt = -Infinity
  #samples = 0
  #failures = 0
  #refused = 0
  #inside: number | null = null
  readonly #buckets = new Map<number, number>()

  /** {@link Store.adapt} at the store's time `now` (ms), with `held` live slots of the name now (`null`: unknown). */
  report(r: AdaptReport, now: number, held: number | null): AdaptAnswer {
    this.#limit ??= r.initial
    if (held !== null) this.#inside = Math.max(this.#inside ?? 0, held)
    this.#samples += r.samples
    this.#failures += r.failures
    this.#refused += r.refused
    for (const [i, c] of r.buckets) this.#buckets.set(i, (this.#buckets.get(i) ?? 0) + c)
    if (!judgeNow(now - this.#judgedAt, this.#samples, this.#failures, r))
      return { limit: this.#limit, state: this.#state }
    const judge = {
      turn: ++this.#turn,
      samples: this.#samples,
      failures: this.#failures,
      refused: this.#refused,
      inside: this.#inside,
      buckets: [...this.#buckets],
    }
    this.#judgedAt = now
    this.#samples = this.#failures = this.#refused = 0
    this.#inside = null
    this.#buckets.clear()
    return { limit: this.#limit, state: this.#state, judge }
  }

  /** {@link Store.adaptCommit}. */
  commit(c: AdaptCommit): boolean {
    if (c.turn !== this.#turn) return false
    this.#limit = Math.min(c.max, Math.max(c.min, c.limit))
    this.#state = c.state
    return true
  }
}
