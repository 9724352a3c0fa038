/**
 * The per-minute history a store keeps for each gate (see src/core/history.ts for what the figures
 * mean): what an instance adds for one minute, what a minute holds once every instance added its
 * part, and the storage's contract. Figures are opaque here: counters the instances' parts add up
 * (the fleet's sum), and figures of which the minute keeps the largest. Types only.
 */

/** One instance's part of one minute. Field names are 1 to 40 characters of `[A-Za-z0-9._-]`; values are integers. */
export interface MinutePart {
  /** The minute: ms since the epoch / 60,000, rounded down (the instance's clock). */
  minute: number
  /** Counters added to the minute's (so the minute holds the fleet's sum). */
  add: Readonly<Record<string, number>>
  /** Figures of which the minute keeps the largest any instance sent. */
  max: Readonly<Record<string, number>>
}

/** A minute as the storage holds it: its number and its fields (every instance's parts merged). */
export interface MinuteRecord {
  minute: number
  fields: Record<string, number>
}

/**
 * Where a store keeps its gates' minutes. `historyFor(store)` picks the one beside the memory store
 * (in the process) or the Redis store (on its server, one hash a minute, every key with an expiry).
 */
export interface HistoryStorage {
  /** A short label for logs (`'memory'`, `'redis'`). */
  readonly kind: string
  /**
   * Adds `parts` to the minutes of gate `name` as one atomic step (one round trip on Redis), and
   * keeps each minute written `keepMs` from now. The last part's minute also keeps, in field
   * {@link LINE_FIELD}, the largest of its value and the length of `name`'s line now (the store's
   * own count): flushed just after its minute ends, that is the line at the minute's end.
   */
  add(name: string, parts: readonly MinutePart[], keepMs: number): Promise<void>
  /** The minutes of `name` from `from` to `to` (minute numbers, both included) that hold anything, oldest first. */
  read(name: string, from: number, to: number): Promise<MinuteRecord[]>
}

/** The field that holds the line's length at the minute's end. */
export const LINE_FIELD = 'q'

/** What a field name may be (a bound on what a minute can hold, and safe in any key or CSV). */
export const FIELD_NAME = /^[A-Za-z0-9._-]{1,40}$/
