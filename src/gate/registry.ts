/**
 * The gates of this process, weakly held: what metrics and the dashboard read at scrape time.
 * It knows a gate only through {@link OpenGate} (what a reader of the registry uses), so it imports
 * nothing of gate.ts, which registers each gate here.
 */
import type { ControlState } from '../core/control.js'
import type { GateStatus } from './types.js'

/** What the registry's readers use of a gate (a `Gate` is one). */
export interface OpenGate {
  readonly name: string
  /** The live control this instance applies. */
  readonly control: ControlState
  /** This instance's circuit breaker. */
  readonly breaker: 'open' | 'closed'
  /** The gate's cluster-wide state (one store call). */
  status(): Promise<GateStatus>
}

/** Every gate of this process not yet closed (weakly held): what metrics read at scrape time. */
export const liveGates = new Set<WeakRef<OpenGate>>()

/** The gates of this process that are not closed, oldest first. */
export function openGates(): OpenGate[] {
  const out: OpenGate[] = []
  for (const ref of liveGates) {
    const gate = ref.deref()
    if (gate === undefined) liveGates.delete(ref)
    else out.push(gate)
  }
  return out
}
