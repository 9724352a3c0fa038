/**
 * A virtual clock for the fleet simulator: a discrete-event queue (a binary heap ordered by time,
 * then by the order events were scheduled, so a run is the same every time) and a seeded random
 * source. Time is in milliseconds and moves only from event to event: a simulated hour takes as
 * long as its events take to run.
 *
 * Code under test that awaits (the adaptive gate's `tick` awaits the store) goes on in microtasks;
 * an event scheduled with `settles: true` resolves such a promise, and the run lets the microtasks
 * drain before the next event, as Node's event loop would.
 */

interface Event {
  t: number
  seq: number
  run: () => void
  settles: boolean
}

export class VirtualClock {
  #now = 0
  #seq = 0
  /** Events run so far. */
  events = 0
  readonly #heap: Event[] = []

  /** The virtual time (ms). */
  get now(): number {
    return this.#now
  }

  /** Runs `run` at virtual time `t` (never before now). */
  at(t: number, run: () => void, settles = false): void {
    const e: Event = { t: Math.max(t, this.#now), seq: this.#seq++, run, settles }
    const h = this.#heap
    h.push(e)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!before(e, h[p]!)) break
      h[i] = h[p]!
      i = p
    }
    h[i] = e
  }

  /** Runs `run` `ms` from now. */
  after(ms: number, run: () => void, settles = false): void {
    this.at(this.#now + ms, run, settles)
  }

  /** `setInterval` on the virtual clock, first run `offset` (`ms`) from now; answers the stop. */
  repeat(run: () => void, ms: number, offset = ms): () => void {
    let stopped = false
    const next = (t: number): void =>
      this.at(t, () => {
        if (stopped) return
        run()
        next(t + ms)
      })
    next(this.#now + offset)
    return () => {
      stopped = true
    }
  }

  /** A promise that resolves with `value()` `ms` from now (a store's answer after its round trip). */
  answer<T>(ms: number, value: () => T): Promise<T> {
    return new Promise((resolve) => this.after(ms, () => resolve(value()), true))
  }

  /** Runs every event up to virtual time `until` (ms); the clock stops there. */
  async run(until: number): Promise<void> {
    const h = this.#heap
    while (h.length > 0 && h[0]!.t <= until) {
      const e = this.#pop()
      this.#now = e.t
      this.events++
      e.run()
      if (e.settles) await new Promise((resolve) => setImmediate(resolve))
    }
    this.#now = until
  }

  #pop(): Event {
    const h = this.#heap
    const top = h[0]!
    const last = h.pop()!
    if (h.length > 0) {
      let i = 0
      const n = h.length
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const r = l + 1
        const c = r < n && before(h[r]!, h[l]!) ? r : l
        if (!before(h[c]!, last)) break
        h[i] = h[c]!
        i = c
      }
      h[i] = last
    }
    return top
  }
}

const before = (a: Event, b: Event): boolean => a.t < b.t || (a.t === b.t && a.seq < b.seq)

/** A seeded random source (mulberry32): numbers in [0, 1), the same for the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
