/**
 * The limit a gate applies right now. Three sources, strongest first: the operator's live limit
 * (`airlockControl().set({ limit })`, every instance within a second), an adaptive estimate (when
 * the gate learns its limit), and the configured `limit` option. Every store call reads it, so a
 * change applies from the next decision on; lowering it never takes a slot from its holder.
 */
export type LimitSource = 'configured' | 'control' | 'adaptive'

export class EffectiveLimit {
  #control: number | null = null
  #adaptive: number | null = null
  #generation = 0
  readonly #listeners = new Set<(limit: number, previous: number) => void>()

  constructor(readonly configured: number) {}

  /** The limit in force. */
  get value(): number {
    return this.#control ?? this.#adaptive ?? this.configured
  }

  /** The operator's live limit, `null` when none is set. */
  get control(): number | null {
    return this.#control
  }

  /** Where {@link value} comes from. */
  get source(): LimitSource {
    return this.#control !== null ? 'control' : this.#adaptive !== null ? 'adaptive' : 'configured'
  }

  /** Bumped each time the limit goes down: slots taken before it may be more than the limit allows. */
  get generation(): number {
    return this.#generation
  }

  /** The operator's live limit (`null`: cleared). */
  setControl(limit: number | null): void {
    this.#set(() => (this.#control = limit))
  }

  /** The adaptive estimate (`null`: none). */
  setAdaptive(limit: number | null): void {
    this.#set(() => (this.#adaptive = limit))
  }

  /** Told of every change of {@link value}; returns the unsubscribe function. */
  onChange(listener: (limit: number, previous: number) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #set(change: () => void): void {
    const previous = this.value
    change()
    const limit = this.value
    if (limit === previous) return
    if (limit < previous) this.#generation++
    for (const listener of this.#listeners) listener(limit, previous)
  }
}
