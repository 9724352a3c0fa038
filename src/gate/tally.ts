/**
 * The gate's account of its visitors, fanned out: the gate and its flows call one {@link Tally},
 * which calls every {@link VisitSink} the gate has: its own figures (`gate.status()`, see
 * figures.ts), the events on `node:diagnostics_channel` (which the Prometheus metrics follow), and
 * any sink added with `addVisitSink` (the per-minute history kept in the store).
 *
 * Who calls what, when:
 * - `admitted('slot', null)`: the gate, for every `admit` decision not from the line (gate.ts).
 * - `admitted('line', waitMs)`: session mode, a visitor let in from the line (session.ts); the
 *   wait is the store's (from taking the place to admission), else the ticket's age.
 * - `turnedAway(reason)`: the gate, for every `busy` decision (gate.ts).
 * - `abandoned(n)`: places the store dropped as they lapsed (told by the store call that dropped
 *   them, {@link Tally.ended}), and a visitor who left the line (`?__airlock=leave`).
 * - `released(by, visitMs)`: a request-mode slot at the request's end (`visitor`) or given back
 *   by the app or `Airlock-Command: release` (`origin`); a session pass given back by the app or
 *   the origin (`origin`, its visit unknown here: null) or shed by the adaptive limit (`operator`);
 *   slots that expired in the store (`expiry`, with how long they lived, told by the store call
 *   that dropped them).
 */
import type { StoreEnded } from '../stores/types.js'
import type { ReleasedBy, VisitSink } from './tally-types.js'

export type { ReleasedBy, VisitSink } from './tally-types.js'

/** Calls every sink it holds; a sink that throws is skipped (a sink must never break a decision). */
export class Tally implements VisitSink {
  readonly #sinks: VisitSink[]

  constructor(sinks: readonly VisitSink[] = []) {
    this.#sinks = [...sinks]
  }

  /** Adds a sink; returns the function that removes it. */
  add(sink: VisitSink): () => void {
    this.#sinks.push(sink)
    return () => {
      const i = this.#sinks.indexOf(sink)
      if (i >= 0) this.#sinks.splice(i, 1)
    }
  }

  admitted(from: 'slot' | 'line', waitMs: number | null): void {
    for (const s of this.#sinks) {
      try {
        s.admitted(from, waitMs)
      } catch {}
    }
  }

  turnedAway(reason: string): void {
    for (const s of this.#sinks) {
      try {
        s.turnedAway(reason)
      } catch {}
    }
  }

  abandoned(count: number): void {
    if (count <= 0) return
    for (const s of this.#sinks) {
      try {
        s.abandoned(count)
      } catch {}
    }
  }

  released(by: ReleasedBy, visitMs: number | null): void {
    for (const s of this.#sinks) {
      try {
        s.released(by, visitMs)
      } catch {}
    }
  }

  /** What a store call dropped: each expired slot a release `by: 'expiry'` (with its life when told), lapsed places abandoned. */
  ended(e: StoreEnded | undefined): void {
    if (e === undefined) return
    for (let i = 0; i < e.expired; i++) this.released('expiry', i < e.visits.length ? e.visits[i]! : null)
    this.abandoned(e.lapsed)
  }
}
