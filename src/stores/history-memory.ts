/**
 * The per-minute history beside the memory store: in this process (lost when it ends), the same
 * figures and the same lifetimes as on Redis, for one process's gates.
 */
import { LINE_FIELD, type HistoryStorage, type MinutePart, type MinuteRecord } from './history-types.js'
import type { Store } from './types.js'

interface Kept {
  fields: Record<string, number>
  /** Local ms after which the minute is dropped. */
  until: number
}

export class MemoryHistory implements HistoryStorage {
  readonly kind = 'memory'
  readonly #gates = new Map<string, Map<number, Kept>>()

  constructor(private readonly store: Pick<Store, 'state'>) {}

  async add(name: string, parts: readonly MinutePart[], keepMs: number): Promise<void> {
    // Read first, then change the minutes in one synchronous step (nothing runs in between).
    const { waiting } = await this.store.state(name)
    const now = Date.now()
    let minutes = this.#gates.get(name)
    if (!minutes) this.#gates.set(name, (minutes = new Map()))
    this.#drop(minutes, now)
    parts.forEach((part, i) => {
      const last = i === parts.length - 1
      let kept = minutes.get(part.minute)
      const empty = Object.keys(part.add).length === 0 && Object.keys(part.max).length === 0
      if (!kept && empty && !(last && waiting > 0)) return
      if (!kept) minutes.set(part.minute, (kept = { fields: {}, until: 0 }))
      for (const [field, n] of Object.entries(part.add)) kept.fields[field] = (kept.fields[field] ?? 0) + n
      for (const [field, n] of Object.entries(part.max)) kept.fields[field] = Math.max(kept.fields[field] ?? n, n)
      if (last) kept.fields[LINE_FIELD] = Math.max(kept.fields[LINE_FIELD] ?? waiting, waiting)
      kept.until = now + keepMs
    })
  }

  async read(name: string, from: number, to: number): Promise<MinuteRecord[]> {
    const minutes = this.#gates.get(name)
    if (!minutes) return []
    this.#drop(minutes, Date.now())
    return [...minutes]
      .filter(([minute]) => minute >= from && minute <= to)
      .sort(([a], [b]) => a - b)
      .map(([minute, kept]) => ({ minute, fields: { ...kept.fields } }))
  }

  #drop(minutes: Map<number, Kept>, now: number): void {
    for (const [minute, kept] of minutes) if (kept.until <= now) minutes.delete(minute)
  }
}
