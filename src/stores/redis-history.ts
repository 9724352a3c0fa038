/**
 * The per-minute history on Redis, beside the Redis store: one hash per gate and minute,
 * `{<prefix>:<name>}:hm:<minute>` (the gate's hash tag: one Cluster slot), each written with an
 * expiry. An instance adds its part of the minutes it saw in one script call (one round trip);
 * a read takes a day of minutes per call.
 */
import { optionError } from '../base/errors.js'
import { duration, knownKeys, received, safeName } from '../base/validate.js'
import { HISTORY_ADD, HISTORY_READ } from './lua/history.js'
import { KEY_SUFFIXES } from './lua/keys.js'
import { LINE_FIELD, type HistoryStorage, type MinutePart, type MinuteRecord } from './history-types.js'
import { keyBase, redisClientOption } from './redis.js'
import { RedisCaller, type RedisClient } from './redis-calls.js'

export interface RedisHistoryOptions {
  /** An ioredis `Redis` or `Cluster` client; you own it and close it. */
  client: RedisClient
  /** Key prefix: the same as the gates' `redisStore`. Default `'airlock'`. */
  prefix?: string
  /** Budget for one call (ms) before it rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`. Default 1000. */
  commandTimeout?: number
}

/** Minutes read per script call: a day. */
const READ_CHUNK = 1440

export class RedisHistory implements HistoryStorage {
  readonly kind = 'redis'
  readonly prefix: string
  readonly #client: RedisClient
  readonly #caller: RedisCaller

  constructor(options: RedisHistoryOptions) {
    if (options === null || typeof options !== 'object') optionError(`redisHistory() needs an options object with a client, got ${received(options)}`)
    knownKeys('redisHistory()', options, ['client', 'prefix', 'commandTimeout'])
    this.#client = redisClientOption(options.client)
    this.prefix = safeName('prefix', options.prefix ?? 'airlock')
    this.#caller = new RedisCaller(this.#client, duration('commandTimeout', options.commandTimeout ?? 1000))
  }

  /** The hash of one minute of gate `name`. */
  key(name: string, minute: number): string {
    return `${keyBase(this.prefix, name)}:hm:${minute}`
  }

  async add(name: string, parts: readonly MinutePart[], keepMs: number): Promise<void> {
    if (parts.length === 0) return
    const line = `${keyBase(this.prefix, name)}:${KEY_SUFFIXES[3]}`
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
      const replies = (await this.#caller.call(() => this.#caller.eval({ ...HISTORY_READ, numKeys: keys.length }, keys))) as string[][]
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

/** Creates the history storage on Redis (ioredis client, standalone or Cluster). */
export function redisHistory(options: RedisHistoryOptions): RedisHistory {
  return new RedisHistory(options)
}
