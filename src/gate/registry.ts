/** The gates of this process, weakly held: what metrics and the dashboard read at scrape time. */
import type { Gate } from './gate.js'

/** Every gate of this process not yet closed (weakly held): what metrics read at scrape time. */
export const liveGates = new Set<WeakRef<Gate<never>>>()

/** The gates of this process that are not closed, oldest first. */
export function openGates(): Gate<unknown>[] {
  const out: Gate<unknown>[] = []
  for (const ref of liveGates) {
    const gate = ref.deref()
    if (gate === undefined) liveGates.delete(ref)
    else out.push(gate as unknown as Gate<unknown>)
  }
  return out
}
