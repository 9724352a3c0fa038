/**
 * Where the lock service keeps resource definitions and each selector's data. Locks themselves live
 * in the semaphore store (they are leases); this is the durable part: a definition per resource and
 * a JSON document per (resource, selector), kept until the resource is deleted. A write lands only
 * while the writer holds the selector's lock, and never over a write of a later holder: the check
 * and the write are one atomic step (one Lua script on Redis, one synchronous step in memory).
 *
 * It lives beside the stores because that check reads the store's own slots (the Redis store's keys
 * and Lua, the memory store's `liveFence`): the lock service (src/lock-server/) reaches the stores
 * only through this module and the Store contract. The storages are public through
 * `airlock-shield/lock-server`.
 */
import { createHash } from 'node:crypto'
import { optionError } from '../base/errors.js'
import { received, duration, knownKeys, safeName } from '../base/validate.js'
import type { MemoryStore } from './memory.js'
import { isRedisStore, keyBase } from './redis.js'
import { luaScript, RedisCaller } from './redis-calls.js'
import type { RedisClient, RedisClientLike } from './redis-client.js'
import { redisClientLike } from './redis-clients.js'
import { KEY_SUFFIXES } from './lua/prelude.js'
import type { Store } from './types.js'

/** A resource as defined with `POST /resource`. */
export interface ResourceDefinition {
  /** Life of a lock on one of its selectors, in seconds (the lease's ttl). */
  timeout: number
}

/** The lock a write must hold: the selector's semaphore (on the lock service's store) and the ticket. */
export interface WriteLock {
  semaphore: string
  ticket: string
}

/**
 * `written`; `not-found` (the resource does not exist); `not-holder` (the ticket does not hold a
 * live lock); `stale` (a holder with a later fence wrote this selector since).
 */
export type WriteOutcome = 'written' | 'not-found' | 'not-holder' | 'stale'

/**
 * Durable storage for the lock service: resource definitions and selector data. Every method is
 * one atomic step. `memoryResources(store)` and `redisResources({ client })` implement it; the lock
 * service picks the one that matches its semaphore store unless you pass your own.
 */
export interface ResourceStorage {
  /** A short label for logs (`'memory'`, `'redis'`). */
  readonly kind: string
  /** Creates the resource, or updates its definition. Resolves `true` when it was created. */
  define(name: string, definition: ResourceDefinition): Promise<boolean>
  /** The resource's definition, or `null` when it does not exist. */
  get(name: string): Promise<ResourceDefinition | null>
  /** Deletes the resource and the data of every selector. `false` when it did not exist. */
  delete(name: string): Promise<boolean>
  /** The JSON text stored for a selector, or `null` when none was written. */
  read(name: string, selector: string): Promise<string | null>
  /**
   * Stores JSON text for a selector, replacing what was there, only while `lock.ticket` holds a live
   * lock of `lock.semaphore`, and only if no holder with a later fence wrote it since; checked in
   * the same atomic step as the write, so a write delayed past its lock's expiry never lands.
   */
  write(name: string, selector: string, json: string, lock: WriteLock): Promise<WriteOutcome>
}

/**
 * The semaphore of the lock on (resource, selector): a grouped name, so on Redis the lock's keys
 * share the resource's hash tag (one Cluster slot) with its definition and data. Names and
 * selectors may contain `:` and are up to 64 characters, so both are digested.
 */
export function lockSemaphore(resource: string, selector: string): string {
  return `${resourceGroup(resource)}/${digest(selector)}`
}

function resourceGroup(resource: string): string {
  return `lock.${digest(resource)}`
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 24)
}

/** Resource storage in this process's memory, beside a memory store's locks. */
export class MemoryResources implements ResourceStorage {
  readonly kind = 'memory'
  private readonly resources = new Map<
    string,
    { definition: ResourceDefinition; data: Map<string, { json: string; fence: number }> }
  >()

  constructor(private readonly store: MemoryStore) {}

  async define(name: string, definition: ResourceDefinition): Promise<boolean> {
    const existing = this.resources.get(name)
    if (existing) {
      existing.definition = { ...definition }
      return false
    }
    this.resources.set(name, { definition: { ...definition }, data: new Map() })
    return true
  }

  async get(name: string): Promise<ResourceDefinition | null> {
    const found = this.resources.get(name)
    return found ? { ...found.definition } : null
  }

  async delete(name: string): Promise<boolean> {
    return this.resources.delete(name)
  }

  async read(name: string, selector: string): Promise<string | null> {
    return this.resources.get(name)?.data.get(selector)?.json ?? null
  }

  async write(name: string, selector: string, json: string, lock: WriteLock): Promise<WriteOutcome> {
    // One synchronous step: nothing else runs between the lease check and the write.
    const found = this.resources.get(name)
    if (!found) return 'not-found'
    const fence = this.store.liveFence(lock.semaphore, lock.ticket)
    if (fence === null) return 'not-holder'
    const last = found.data.get(selector)
    if (last && last.fence > fence) return 'stale'
    found.data.set(selector, { json, fence })
    return 'written'
  }
}

/** Creates resource storage in this process's memory (lost when the process ends), for a memory store's locks. */
export function memoryResources(store: MemoryStore): MemoryResources {
  return new MemoryResources(store)
}

export interface RedisResourcesOptions {
  /** The client, as `redisStore`'s (ioredis, iovalkey or node-redis; standalone or Cluster); you own it and close it. */
  client: RedisClient
  /** Key prefix: the same as the lock service's `redisStore`. Default `'airlock'`. */
  prefix?: string
  /** Budget for one call (ms) before it rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`. Default 1000. */
  commandTimeout?: number
}

/**
 * The write: KEYS def, data, and the lock's :h and :m; ARGV selector, ticket, json. Server time.
 * Returns 1 written, 0 no resource, -1 not a live holder, -2 a later fence wrote already.
 */
const WRITE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not exp or tonumber(exp) <= now then return -1 end
local fence = string.match(redis.call('HGET', KEYS[4], ARGV[2]) or '', '^%d+,(%d+)$')
if not fence then return -1 end
local last = redis.call('HGET', KEYS[2], '#fence:' .. ARGV[1])
if last and tonumber(last) > tonumber(fence) then return -2 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3], '#fence:' .. ARGV[1], fence)
return 1`

const WRITE_SCRIPT = luaScript(WRITE, 4)
/** KEYS def, data (one slot): deletes both in one atomic step; 1 when the definition existed. */
const DELETE_SCRIPT = luaScript(
  `local existed = redis.call('EXISTS', KEYS[1])\nredis.call('DEL', KEYS[1], KEYS[2])\nreturn existed`,
  2,
)
const WRITE_OUTCOMES: Record<number, WriteOutcome> = { 1: 'written', 0: 'not-found', [-1]: 'not-holder', [-2]: 'stale' }

/**
 * Resource storage on Redis, beside the semaphores. Per resource, under the hash tag of its locks
 * (`{<prefix>:lock.<digest>}`, one Cluster slot): `:def`, a hash with the definition (`name`,
 * `timeout`), and `:data`, a hash of selector → JSON text (and `#fence:<selector>` → the fence of
 * the lock that wrote it). No expiry: data is kept until the resource is deleted.
 */
export class RedisResources implements ResourceStorage {
  readonly kind = 'redis'
  readonly client: RedisClient
  readonly prefix: string
  readonly commandTimeout: number
  readonly #redis: RedisClientLike
  private readonly caller: RedisCaller

  constructor(options: RedisResourcesOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`redisResources() needs an options object with a client, got ${received(options)}`)
    }
    knownKeys('redisResources()', options, ['client', 'prefix', 'commandTimeout'])
    this.#redis = redisClientLike(options.client)
    this.client = options.client
    this.prefix = safeName('prefix', options.prefix ?? 'airlock')
    this.commandTimeout = duration('commandTimeout', options.commandTimeout ?? 1000)
    this.caller = new RedisCaller(this.#redis, this.commandTimeout)
  }

  /** The definition key and the data key of a resource (its locks' hash tag). */
  keys(name: string): [def: string, data: string] {
    const tag = `{${this.prefix}:${resourceGroup(name)}}`
    return [`${tag}:def`, `${tag}:data`]
  }

  async define(name: string, definition: ResourceDefinition): Promise<boolean> {
    const [def] = this.keys(name)
    // HSET answers how many fields were new: 2 when the definition did not exist.
    return (
      (await this.caller.call(() =>
        this.#redis.command(def, ['HSET', def, 'name', name, 'timeout', String(definition.timeout)]),
      )) === 2
    )
  }

  async get(name: string): Promise<ResourceDefinition | null> {
    const [def] = this.keys(name)
    const timeout = (await this.caller.call(() => this.#redis.command(def, ['HGET', def, 'timeout']))) as string | null
    return timeout === null ? null : { timeout: Number(timeout) }
  }

  async delete(name: string): Promise<boolean> {
    const [def, data] = this.keys(name)
    // Same slot, one script (EXISTS then DEL): the definition is what tells whether the resource existed.
    return (await this.caller.call(() => this.caller.eval(DELETE_SCRIPT, [def, data]))) === 1
  }

  async read(name: string, selector: string): Promise<string | null> {
    const [, data] = this.keys(name)
    return this.caller.call(() => this.#redis.command(data, ['HGET', data, selector])) as Promise<string | null>
  }

  async write(name: string, selector: string, json: string, lock: WriteLock): Promise<WriteOutcome> {
    const [def, data] = this.keys(name)
    const [holders, meta] = lockKeys(this.prefix, lock.semaphore)
    const reply = await this.caller.call(() =>
      this.caller.eval(WRITE_SCRIPT, [def, data, holders, meta, selector, lock.ticket, json]),
    )
    return WRITE_OUTCOMES[reply as number] ?? 'not-holder'
  }
}

/** A lock's holders (`:h`, token → expiry) and slot meta (`:m`, token → "weight,fence") keys. */
function lockKeys(prefix: string, semaphore: string): [holders: string, meta: string] {
  const base = keyBase(prefix, semaphore)
  return [`${base}:${KEY_SUFFIXES[0]}`, `${base}:${KEY_SUFFIXES[1]}`]
}

/** Creates resource storage on Redis (the same clients as `redisStore`, standalone or Cluster). */
export function redisResources(options: RedisResourcesOptions): RedisResources {
  return new RedisResources(options)
}

/** Resource storage per memory store, so a service re-created on the same store finds its data. */
const memoryResourcesByStore = new WeakMap<object, ResourceStorage>()

/**
 * The storage matching a store: on a Redis store's client (same prefix and budget), or one memory
 * storage per memory store; `undefined` for any other store (its storage must be given).
 */
export function resourcesFor(store: Store): ResourceStorage | undefined {
  if (isRedisStore(store)) {
    return redisResources({ client: store.client, prefix: store.prefix, commandTimeout: store.commandTimeout })
  }
  if (store.kind === 'memory' && typeof (store as Partial<MemoryStore>).liveFence === 'function') {
    let resources = memoryResourcesByStore.get(store)
    if (!resources) {
      resources = memoryResources(store as MemoryStore)
      memoryResourcesByStore.set(store, resources)
    }
    return resources
  }
  return undefined
}
