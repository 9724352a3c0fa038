/**
 * Where the lock service keeps resource definitions and each selector's data. Locks themselves live
 * in the semaphore store (they are leases); this is the plain, durable part: a definition per
 * resource and a JSON document per (resource, selector), kept until the resource is deleted.
 */
import { AirlockError, optionError } from '../core/errors.js'
import { describe, duration, knownKeys, safeName } from '../core/validate.js'
import { redisClientOption, type RedisClient } from '../stores/redis.js'

/** A resource as defined with `POST /resource`. */
export interface ResourceDefinition {
  /** Life of a lock on one of its selectors, in seconds (the lease's ttl). */
  timeout: number
}

/**
 * Durable storage for the lock service: resource definitions and selector data. Every method is
 * one atomic step. `memoryResources()` and `redisResources({ client })` implement it; the lock
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
   * Stores JSON text for a selector, replacing what was there. `false` (and nothing written) when
   * the resource does not exist, e.g. it was deleted meanwhile.
   */
  write(name: string, selector: string, json: string): Promise<boolean>
}

/** Resource storage in this process's memory: what `memoryStore()` users get. */
export class MemoryResources implements ResourceStorage {
  readonly kind = 'memory'
  private readonly resources = new Map<string, { definition: ResourceDefinition; data: Map<string, string> }>()

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
    return this.resources.get(name)?.data.get(selector) ?? null
  }

  async write(name: string, selector: string, json: string): Promise<boolean> {
    const found = this.resources.get(name)
    if (!found) return false
    found.data.set(selector, json)
    return true
  }
}

/** Creates resource storage in this process's memory (lost when the process ends). */
export function memoryResources(): MemoryResources {
  return new MemoryResources()
}

export interface RedisResourcesOptions {
  /** An ioredis `Redis` or `Cluster` client; you own it and close it. */
  client: RedisClient
  /** Key prefix, as for `redisStore`. Default `'airlock'`. */
  prefix?: string
  /** Budget for one call (ms) before it rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`. Default 1000. */
  commandTimeout?: number
}

/** Writes only while the resource exists, so a write racing a delete cannot resurrect its data. */
const WRITE_IF_DEFINED = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`

const WRITE_COMMAND = 'airlockResourceWriteV1'

/**
 * Resource storage on Redis, beside the semaphores. Per resource `<name>`, two keys under one hash
 * tag (one Cluster slot): `{<prefix>:resource:<name>}:def`, a hash with the definition
 * (`timeout`), and `{<prefix>:resource:<name>}:data`, a hash of selector → JSON text. They carry no
 * expiry: data is kept until the resource is deleted, across restarts of the service.
 */
export class RedisResources implements ResourceStorage {
  readonly kind = 'redis'
  readonly client: RedisClient
  readonly prefix: string
  readonly commandTimeout: number

  constructor(options: RedisResourcesOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`redisResources() needs an options object with a client, got ${describe(options)}`)
    }
    knownKeys('redisResources()', options, ['client', 'prefix', 'commandTimeout'])
    this.client = redisClientOption(options.client)
    this.prefix = safeName('prefix', options.prefix ?? 'airlock')
    this.commandTimeout = duration('commandTimeout', options.commandTimeout ?? 1000)
    if (typeof (this.client as unknown as Record<string, unknown>)[WRITE_COMMAND] !== 'function') {
      this.client.defineCommand(WRITE_COMMAND, { numberOfKeys: 2, lua: WRITE_IF_DEFINED })
    }
  }

  /** The definition key and the data key of a resource (one hash tag). */
  keys(name: string): [def: string, data: string] {
    const tag = `{${this.prefix}:resource:${name}}`
    return [`${tag}:def`, `${tag}:data`]
  }

  async define(name: string, definition: ResourceDefinition): Promise<boolean> {
    const [def] = this.keys(name)
    // HSET answers how many fields were new: 1 when the definition did not exist.
    return (await this.send(() => this.client.hset(def, 'timeout', String(definition.timeout)))) === 1
  }

  async get(name: string): Promise<ResourceDefinition | null> {
    const [def] = this.keys(name)
    const timeout = await this.send(() => this.client.hget(def, 'timeout'))
    return timeout === null ? null : { timeout: Number(timeout) }
  }

  async delete(name: string): Promise<boolean> {
    const [def, data] = this.keys(name)
    // Same slot, one atomic DEL; the definition is what tells whether the resource existed.
    const [[, existed], [, deleted]] = (await this.send(() =>
      this.client.multi().exists(def).del(def, data).exec(),
    )) as [[unknown, number], [unknown, number]]
    return existed === 1 && deleted >= 1
  }

  async read(name: string, selector: string): Promise<string | null> {
    const [, data] = this.keys(name)
    return this.send(() => this.client.hget(data, selector))
  }

  async write(name: string, selector: string, json: string): Promise<boolean> {
    const [def, data] = this.keys(name)
    const fn = (this.client as unknown as Record<string, (...args: string[]) => Promise<number>>)[WRITE_COMMAND]!
    return (await this.send(() => fn.call(this.client, def, data, selector, json))) === 1
  }

  /**
   * Sends a command only on a connected client (never into ioredis' offline queue, where a write
   * answered as failed could still land later), and rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`
   * when no answer comes within `commandTimeout`.
   */
  private async send<T>(command: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.commandTimeout
    await this.ready(deadline)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(unavailable(`redis did not answer within ${this.commandTimeout} ms`)),
        Math.max(1, deadline - Date.now()),
      )
    })
    try {
      return await Promise.race([command(), late])
    } catch (err) {
      throw err instanceof AirlockError ? err : unavailable(`redis command failed: ${(err as Error)?.message}`, err)
    } finally {
      clearTimeout(timer)
    }
  }

  private async ready(deadline: number): Promise<void> {
    const status = this.client.status
    if (status === 'ready' || status === 'wait') return
    if (status === 'end' || status === 'close') throw unavailable(`redis connection is ${status}`)
    await new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(
        () => {
          this.client.off('ready', onReady)
          reject(unavailable(`redis not ready within ${this.commandTimeout} ms (status ${this.client.status})`))
        },
        Math.max(1, deadline - Date.now()),
      )
      this.client.once('ready', onReady)
    })
  }
}

/** Creates resource storage on Redis (ioredis client, standalone or Cluster). */
export function redisResources(options: RedisResourcesOptions): RedisResources {
  return new RedisResources(options)
}

function unavailable(message: string, cause?: unknown): AirlockError {
  return new AirlockError('ERR_AIRLOCK_STORE_UNAVAILABLE', message, { cause })
}
