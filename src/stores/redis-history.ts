/**
 * The per-minute history on Redis, beside the Redis store: one hash per gate and minute,
 * `{<prefix>:<name>}:hm:<minute>` (the gate's hash tag: one Cluster slot), each written with an
 * expiry. An instance adds its part of the minutes it saw in one script call (one round trip);
 * a read takes a day of minutes per call.
 */
import { HISTORY_ADD, HISTORY_READ } from './lua/history.js'
import { KEY_SUFFIXES } from './lua/keys.js'
import { LINE_FIELD, type HistoryStorage, type MinutePart, type MinuteRecord } from './history-types.js'
import { RedisCaller, type RedisClient } from './redis-calls.js'

/** Minutes read per script call: a day. */
const READ_CHUNK = 1440

/**
 * Made by the Redis store (`RedisStore.historyStorage()`, so the root entry, which reaches
 * `historyFor`, never loads this module nor ioredis's types): its client, budget, and the hash tag
 * of a gate's keys (`keyBase`).
 */
export class RedisHistory implements HistoryStorage {
  readonly kind = 'redis'
  readonly #caller: RedisCaller
  readonly #base: (name: string) => string

  constructor(client: RedisClient, commandTimeout: number, base: (name: string) => string) {
    this.#caller = new RedisCaller(client, commandTimeout)
    this.#base = base
  }

  /** The hash of one minute of gate `name`. */
  key(name: string, minute: number): string {
    return `${this.#base(name)}:hm:${minute}`
  }

  async add(name: string, parts: readonly MinutePart[], keepMs: number): Promise<void> {
    if (parts.length === 0) return
    const line = `${this.#base(name)}:${KEY_SUFFIXES[3]}`
    const keys = [line, ...parts.map((p) => this.key(name, p.minute))]
    const args: (string | number)[] = [keepMs, LINE_FIELD]
    for (const p of parts) {
      const adds = Object.entries(p.add)
      const maxima = Object.entries(p.max)
      args.push(adds.length, maxima.length, ...adds.flat(), ...maxima.flat())
    }
    await this.#caller.call(() => this.#caller.eval({ ...HISTORY_ADD, numKeys: keys.length }, [...keys, ...args]))
  }

  async read(name: string, from: number, to: number): Promise<MinuteRecord[]> {
    const out: MinuteRecord[] = []
    for (let start = from; start <= to; start += READ_CHUNK) {
      const minutes: number[] = []
      for (let m = start; m <= Math.min(to, start + READ_CHUNK - 1); m++) minutes.push(m)
      const keys = minutes.map((m) => this.key(name, m))
      const replies = (await this.#caller.call(() =>
        this.#caller.eval({ ...HISTORY_READ, numKeys: keys.length }, keys),
      )) as string[][]
      replies.forEach((flat, i) => {
        if (flat.length === 0) return
        const fields: Record<string, number> = {}
        for (let j = 0; j + 1 < flat.length; j += 2) fields[String(flat[j])] = Number(flat[j + 1])
        out.push({ minute: minutes[i]!, fields })
      })
    }
    return out
  }
}
