/**
 * Live control of a gate, kept in the store: one record per gate name that every instance applies
 * within a second. The operator's levers: a live `limit`, a `mode` (normal, queue-all, closed,
 * passthrough), an `admissionRate` (new visitors per minute across the fleet), and a scheduled
 * opening (`opensAt`, `closesAt`). Framework-free: the gate applies a {@link ControlState}
 * (src/gate/live-control.ts); the CLI and the dashboard change it through {@link airlockControl}.
 */
import { controlChannel, type ControlEvent } from '../base/events.js'
import { optionError } from '../base/errors.js'
import { received, optionsObject, semaphoreName } from '../base/validate.js'
import { resolveStore } from '../stores/resolve.js'
import type { ControlRecord, Store } from '../stores/types.js'

/** How new visitors are treated. Pass holders carry on in every mode. */
export const CONTROL_MODES = ['normal', 'queue-all', 'closed', 'passthrough'] as const
export type ControlMode = (typeof CONTROL_MODES)[number]

/** A gate's live control, as every instance applies it. */
export interface ControlState {
  /** Overrides the configured (or adaptive) limit; `null`: not overridden. */
  limit: number | null
  /**
   * `'normal'`; `'queue-all'`: every new visitor takes a place in line and the line is held
   * (nobody new is admitted; order is kept; needs the waiting room, else it acts as `'closed'`);
   * `'closed'`: new visitors get the busy answer; `'passthrough'`: no gating at all.
   */
  mode: ControlMode
  /** At most this many new visitors admitted per minute across the fleet; `null`: no cap. */
  admissionRate: number | null
  /**
   * Before this time new visitors wait (a countdown page with the waiting room, else the busy
   * answer); at it, everyone who arrived before is admitted in uniformly random order, and later
   * arrivals queue behind them in arrival order.
   */
  opensAt: Date | null
  /** From this time on the gate acts as `'closed'`. */
  closesAt: Date | null
  /** When the record last changed, and who changed it (as given to `set`). */
  updatedAt: Date | null
  updatedBy: string | null
  /** Bumped by every change; 0 while nothing was ever set. */
  version: number
}

/** A change to apply: `null` clears a field (back to the gate's own option). Absent fields are kept. */
export interface ControlPatch {
  limit?: number | null
  mode?: ControlMode | null
  admissionRate?: number | null
  /** A `Date`, an ISO 8601 string, or ms since the epoch. */
  opensAt?: Date | string | number | null
  closesAt?: Date | string | number | null
}

/** The state of a gate nobody has steered. */
export const UNSTEERED: ControlState = Object.freeze({
  limit: null,
  mode: 'normal',
  admissionRate: null,
  opensAt: null,
  closesAt: null,
  updatedAt: null,
  updatedBy: null,
  version: 0,
})

const PATCH_KEYS = ['limit', 'mode', 'admissionRate', 'opensAt', 'closesAt'] as const
/** Largest live limit or rate: well inside Lua's and JSON's exact integers. */
const MAX_COUNT = 1_000_000_000

/** Checks a patch (throws `ERR_AIRLOCK_OPTION` naming the field) and turns it into the record's fields. */
export function encodePatch(patch: ControlPatch, by: string, now: number): Record<string, string | null> {
  optionsObject('control.set()', patch, PATCH_KEYS)
  const fields: Record<string, string | null> = {}
  if (patch.limit !== undefined) fields.limit = patch.limit === null ? null : String(count('limit', patch.limit))
  if (patch.admissionRate !== undefined) {
    fields.rate = patch.admissionRate === null ? null : String(count('admissionRate', patch.admissionRate))
  }
  if (patch.mode !== undefined) {
    if (patch.mode !== null && !CONTROL_MODES.includes(patch.mode)) {
      optionError(`mode must be one of ${CONTROL_MODES.join(', ')} (or null to clear), got ${received(patch.mode)}`)
    }
    fields.mode = patch.mode === null || patch.mode === 'normal' ? null : patch.mode
  }
  const opens = patch.opensAt === undefined ? undefined : time('opensAt', patch.opensAt)
  const closes = patch.closesAt === undefined ? undefined : time('closesAt', patch.closesAt)
  if (opens != null && closes != null && closes <= opens) {
    optionError(
      `closesAt must be after opensAt, got opensAt ${new Date(opens).toISOString()} and closesAt ${new Date(closes).toISOString()}`,
    )
  }
  if (opens !== undefined) fields.opensAt = opens === null ? null : String(opens)
  if (closes !== undefined) fields.closesAt = closes === null ? null : String(closes)
  if (Object.keys(fields).length === 0) optionError(`control.set() needs at least one of ${PATCH_KEYS.join(', ')}`)
  fields.by = by.slice(0, 200)
  fields.at = String(now)
  return fields
}

/**
 * The record's fields that received `state` (every field it sets; the ones it leaves to the gate's
 * options absent): what a gate writes back when the record vanished with the store's data.
 */
export function stateFields(state: ControlState): Record<string, string> {
  const fields: Record<string, string> = {}
  if (state.limit !== null) fields.limit = String(state.limit)
  if (state.admissionRate !== null) fields.rate = String(state.admissionRate)
  if (state.mode !== 'normal') fields.mode = state.mode
  if (state.opensAt !== null) fields.opensAt = String(state.opensAt.getTime())
  if (state.closesAt !== null) fields.closesAt = String(state.closesAt.getTime())
  if (state.updatedBy !== null) fields.by = state.updatedBy
  if (state.updatedAt !== null) fields.at = String(state.updatedAt.getTime())
  return fields
}

function count(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_COUNT) {
    optionError(`${field} must be a whole number from 1 to ${MAX_COUNT} (or null to clear), got ${received(value)}`)
  }
  return value
}

/** An ISO 8601 date, or date and time with seconds optional and a zone (`Z`, `+01:00`) or none. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/
/** 2000-01-01T00:00:00Z: an earlier time is a unit mistake (seconds given as milliseconds, or `0`). */
const Y2K = 946_684_800_000

function time(field: string, value: unknown): number | null {
  if (value === null) return null
  const text = typeof value === 'string' && ISO_TIME.test(value.trim()) ? value.trim() : undefined
  const ms =
    value instanceof Date
      ? value.getTime()
      : text !== undefined
        ? Date.parse(text)
        : typeof value === 'number'
          ? value
          : NaN
  if (!Number.isFinite(ms) || ms > 8.64e15) {
    optionError(
      `${field} must be a Date, an ISO 8601 time (2026-12-01T09:00:00Z) or ms since the epoch (or null to clear), got ${received(value)}`,
    )
  }
  if (ms < Y2K) {
    const seconds =
      typeof value === 'number' && value > 1e8
        ? `; ${value} looks like seconds since the epoch: that is ${new Date(value * 1000).toISOString()} in milliseconds (${value * 1000})`
        : ''
    optionError(
      `${field} is before 2000 (${received(value)} is ${new Date(ms).toISOString()}): times are ms since the epoch, a Date or an ISO 8601 time${seconds}`,
    )
  }
  return Math.round(ms)
}

/**
 * The state a record says. A field that does not parse (a hand-edited record) is ignored: `bad`
 * is told its name and text, and the field reads as unset.
 */
export function decodeControl(record: ControlRecord, bad: (field: string, value: string) => void): ControlState {
  const f = record.fields
  const num = (field: string, min: number, max: number): number | null => {
    const text = f[field]
    if (text === undefined) return null
    const n = Number(text)
    if (text.trim() !== '' && Number.isInteger(n) && n >= min && n <= max) return n
    bad(field, text)
    return null
  }
  const date = (field: string): Date | null => {
    const n = num(field, 0, 8.64e15)
    return n === null ? null : new Date(n)
  }
  let mode: ControlMode = 'normal'
  if (f.mode !== undefined) {
    if ((CONTROL_MODES as readonly string[]).includes(f.mode)) mode = f.mode as ControlMode
    else bad('mode', f.mode)
  }
  return {
    limit: num('limit', 1, MAX_COUNT),
    mode,
    admissionRate: num('rate', 1, MAX_COUNT),
    opensAt: date('opensAt'),
    closesAt: date('closesAt'),
    updatedAt: date('at'),
    updatedBy: f.by ?? null,
    version: record.version,
  }
}

/** Options of {@link airlockControl}. */
export interface LiveControlOptions {
  /** The gate's `name` (default `'default'`). */
  name?: string
  /** The gates' store (a memory store steers only gates of this process). Default: the process-wide memory store. */
  store?: Store
  /** Who changes things, for the log and the record (`set`'s `by` wins). Default `'api'`. */
  by?: string
  /** Told of every change (`info`). */
  logger?: { info?(obj: object, msg?: string): void; warn(obj: object, msg?: string): void }
}

/** Reads and changes a gate's live control; see {@link airlockControl}. */
export interface LiveControl {
  readonly name: string
  /** The control in force (one store call). */
  get(): Promise<ControlState>
  /** Applies `patch` on every instance (within a second); resolves the new state. */
  set(patch: ControlPatch, options?: { by?: string }): Promise<ControlState>
  /** Clears every field: the gates go back to their own options. */
  clear(options?: { by?: string }): Promise<ControlState>
  /** Told of each change (best effort: re-read with `get` if you must not miss one). */
  watch(listener: (state: ControlState) => void): Promise<() => void>
}

/**
 * The live control of gate `name` in `store`: what every instance of that gate applies within a
 * second, without a restart. Every change is logged (who, what, when) and published on the
 * `airlock:control` diagnostics channel.
 *
 * @example
 * const control = airlockControl({ name: 'shop', store })
 * await control.set({ limit: 3 })            // every instance, within a second
 * await control.set({ mode: 'closed' })      // nobody new; pass holders carry on
 * await control.set({ opensAt: '2026-12-01T09:00:00Z', mode: null })
 */
export function airlockControl(options: LiveControlOptions = {}): LiveControl {
  optionsObject('airlockControl()', options, ['name', 'store', 'by', 'logger'])
  const name = semaphoreName('name', options.name ?? 'default')
  const store = resolveStore(options.store)
  if (typeof store.control !== 'function') {
    optionError(
      `the ${store.kind} store has no live control (Store.control): use the memory or Redis store, or add control() to yours`,
    )
  }
  const by = options.by ?? 'api'
  if (typeof by !== 'string' || by.length === 0) optionError(`by must be a non-empty string, got ${received(by)}`)
  const logger = options.logger
  const quiet = (): void => {}
  const read = (record: ControlRecord): ControlState => decodeControl(record, quiet)
  const change = async (patch: ControlPatch, who: string | undefined): Promise<ControlState> => {
    const author = who ?? by
    const fields = encodePatch(patch, author, Date.now())
    const state = read(await store.control!(name, fields))
    logger?.info?.(
      { gate: name, by: author, patch, version: state.version },
      `airlock-shield: control of '${name}' changed by ${author}: ${summary(patch)}`,
    )
    if (controlChannel.hasSubscribers) {
      controlChannel.publish({
        gate: name,
        event: 'set',
        by: author,
        version: state.version,
        patch: { ...patch },
        state: { ...state },
      } satisfies ControlEvent)
    }
    return state
  }
  return {
    name,
    get: async () => read(await store.control!(name)),
    set: (patch, o) => change(patch, o?.by),
    clear: (o) => change({ limit: null, mode: null, admissionRate: null, opensAt: null, closesAt: null }, o?.by),
    watch: async (listener) => {
      const refresh = (): void => {
        store.control!(name).then((r) => listener(read(r)), quiet)
      }
      return typeof store.watchControl === 'function' ? store.watchControl(name, refresh) : quiet
    },
  }
}

/** `limit=3 mode=closed` for a log line. */
export function summary(patch: ControlPatch): string {
  return Object.entries(patch)
    .map(([k, v]) => `${k}=${v instanceof Date ? v.toISOString() : v === null ? 'cleared' : String(v)}`)
    .join(' ')
}
