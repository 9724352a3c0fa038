import { AirlockError, optionError } from '../base/errors.js'
import { timedStoreCall } from '../base/events.js'
import { received, duration, knownKeys, nonNegativeInteger, safeName } from '../base/validate.js'
import { acquireResult, numbersAt } from './redis-replies.js'
import {
  BATCH_REPLY_WIDTH,
  decodeEnded,
  decodeReply,
  LEASE_CODES,
  packArgs,
  type ArgSpec,
  type ArgValues,
} from './lua/boundary.js'
import * as scripts from './lua/scripts.js'
import { Leftovers, RedisCaller, type GiveUp } from './redis-calls.js'
import type { RedisClient, RedisClientLike } from './redis-client.js'
import { redisClientLike } from './redis-clients.js'
import { batch, type Batch } from './redis-batch.js'
import { RedisChannels } from './redis-pubsub.js'
import { ServerWatch } from './redis-server.js'
import { RedisHistory } from './redis-history.js'
import type {
  AcquireRequest,
  AcquireResult,
  AdaptAnswer,
  AdaptCommit,
  AdaptReport,
  ControlRecord,
  LeaseState,
  RefreshResult,
  Released,
  Store,
  StoreStatus,
} from './types.js'

export type { IoRedisClient, NodeRedisClient, RedisClient } from './redis-client.js'

export interface RedisStoreOptions<C extends RedisClient = RedisClient> {
  /**
   * The client you already have, standalone or Cluster: an ioredis `Redis` or `Cluster` (ioredis 5
   * or 6, or iovalkey), or a node-redis (`redis` 5 or 6) client from `createClient()` or cluster
   * from `createCluster()`, which you connect (`await client.connect()`). Told apart by shape, no
   * wrapper needed. The store never closes it; you do. It opens one more connection for pub/sub
   * (`duplicate()`), which it closes.
   */
  client: C
  /**
   * Budget for one store call (ms), after which it rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`
   * instead of waiting on the client's offline queue or a dead connection. Default 1000.
   */
  commandTimeout?: number
  /** Key prefix; keys look like `{<prefix>:<name>}:h`. Default `'airlock'`. */
  prefix?: string
  /**
   * Replicas that must acknowledge each new slot (`WAIT`) before it is granted, so a failover to
   * one of them cannot lose it. A slot they do not acknowledge within `replicaTimeout` is given
   * back (busy): with fewer replicas up than this, nothing is granted. Default 0 (asynchronous
   * replication: a failover may lose the last grants, see docs/stores.md). Not on a Cluster client.
   */
  replicas?: number
  /** How long a grant waits for the replicas' acknowledgement (ms). Default: half of `commandTimeout`. */
  replicaTimeout?: number
}

const LEASE_STATES = new Map<number, LeaseState>(
  Object.entries(LEASE_CODES).map(([state, code]) => [code, state as LeaseState]),
)

/**
 * The hash tag of a semaphore's keys, `{<prefix>:<name>}`; for a grouped name `group/member`,
 * `{<prefix>:<group>}:<member>` (the group's Cluster slot). Its keys are this plus `:<suffix>`.
 */
export function keyBase(prefix: string, name: string): string {
  const slash = name.indexOf('/')
  return slash < 0 ? `{${prefix}:${name}}` : `{${prefix}:${name.slice(0, slash)}}:${name.slice(slash + 1)}`
}

/** The brand of Redis stores: registered, so stores made by another copy of the package are recognized. */
const BRAND = Symbol.for('airlock-shield.store.redis')

/** True for a Redis store, also one made by another copy of this package (its ESM or CJS build). */
export function isRedisStore(store: unknown): store is RedisStore {
  return typeof store === 'object' && store !== null && (store as Record<symbol, unknown>)[BRAND] === true
}

/**
 * A store on Redis (standalone or Cluster, Redis >= 6.2; Valkey too), on an ioredis, iovalkey or
 * node-redis client. Each operation is one Lua script sent
 * with EVALSHA (EVAL the first time, and after a `SCRIPT FLUSH` or a restart), so every decision is
 * a single round trip that uses the server's clock.
 */
export class RedisStore<C extends RedisClient = RedisClient> implements Store {
  readonly kind = 'redis'
  readonly [BRAND] = true
  /** The client given (yours to close). */
  readonly client: C
  /** The one interface the store talks to, whichever client it is (see redis-client.ts). */
  readonly #redis: RedisClientLike
  readonly commandTimeout: number
  readonly prefix: string
  /** Replicas that acknowledge each grant (`WAIT`), and how long a grant waits for them (ms). */
  readonly replicas: number
  readonly replicaTimeout: number
  /** The `WAIT` the grants answered in this tick share (it covers every write the connection made before it). */
  #replicaWait: Promise<number> | undefined
  /** The subscriber connection: wake-ups and control versions (see redis-pubsub.ts). */
  private readonly channels: RedisChannels
  private readonly caller: RedisCaller
  private readonly leftovers: Leftovers
  private readonly acquireBatches = new Map<string, Batch<AcquireRequest, AcquireResult | null>>()
  private readonly releaseBatches = new Map<string, Batch<string, Released>>()
  private closed = false
  /** Which server answers: a different one means the last writes may be lost (see redis-server.ts). */
  readonly #server: ServerWatch

  constructor(options: RedisStoreOptions<C>) {
    if (options === null || typeof options !== 'object') {
      optionError(`redisStore() needs an options object with a client, got ${received(options)}`)
    }
    const o = options as unknown as Record<string, unknown>
    if (typeof o.evalsha === 'function' || typeof o.sendCommand === 'function') {
      optionError('redisStore() takes an options object: write redisStore({ client: redis }), not redisStore(redis)')
    }
    knownKeys('redisStore()', options, ['client', 'commandTimeout', 'prefix', 'replicas', 'replicaTimeout'])
    this.#redis = redisClientLike(options.client)
    this.client = options.client
    this.commandTimeout = duration('commandTimeout', options.commandTimeout ?? 1000)
    this.prefix = safeName('prefix', options.prefix ?? 'airlock')
    this.replicas = nonNegativeInteger('replicas', options.replicas ?? 0)
    this.replicaTimeout = duration(
      'replicaTimeout',
      options.replicaTimeout ?? Math.max(1, Math.floor(this.commandTimeout / 2)),
    )
    if (this.replicas > 0 && this.#redis.isCluster) {
      optionError(
        'replicas is not supported on a Cluster client (WAIT cannot be sent to the shard of a key); leave it at 0',
      )
    }
    if (this.replicas > 0 && this.replicaTimeout >= this.commandTimeout) {
      optionError(`replicaTimeout must be below commandTimeout (${this.commandTimeout} ms), got ${this.replicaTimeout}`)
    }
    this.caller = new RedisCaller(this.#redis, this.commandTimeout)
    this.channels = new RedisChannels(this.#redis, this.caller.deadlines, this.commandTimeout)
    this.#server = new ServerWatch(this.#redis, this.prefix)
    this.leftovers = new Leftovers((name, tokens) =>
      this.run(scripts.ABANDON, name, { channel: this.channel(name) }, tokens),
    )
  }

  /**
   * All keys of one semaphore, under one hash tag, in the scripts' KEYS order: `{<prefix>:<name>}:h`,
   * or for a grouped name `group/member`, `{<prefix>:<group>}:<member>:h` (the group's slot).
   */
  keys(name: string): string[] {
    const base = this.base(name)
    return scripts.ACQUIRE.keys.map((suffix) => `${base}:${suffix}`)
  }

  /** The pub/sub channel that wakes waiters of `name`. */
  channel(name: string): string {
    return `${this.base(name)}:wake`
  }

  private base(name: string): string {
    return keyBase(this.prefix, name)
  }

  /**
   * Runs one script on `name`'s keys within `commandTimeout`: its named arguments, then `rest` (a
   * list, for scripts that take one). `giveUp`: the call's tokens are the caller's to forget if it
   * fails, so whatever the script took anyway (it ran after the budget, or its reply was lost with
   * the connection) is freed once the call settles (see {@link Leftovers}).
   */
  private run<A extends ArgSpec>(
    script: scripts.Script<A>,
    name: string,
    args: ArgValues<A>,
    rest: readonly (string | number)[] = [],
    giveUp?: GiveUp,
  ): Promise<unknown> {
    if (this.closed) return Promise.reject(new AirlockError('ERR_AIRLOCK_CLOSED', 'the redis store was closed'))
    const argv = [...this.keys(name), ...packArgs(script.args, args), ...rest]
    return timedStoreCall('redis', name, script.name, () =>
      this.caller.call(
        () => this.caller.eval(script, argv),
        giveUp && ((sent, answer) => answer.catch(() => this.leftovers.adopt(name, sent, giveUp))),
      ),
    )
  }

  async acquire(name: string, req: AcquireRequest): Promise<AcquireResult> {
    const changes = this.#server.changes
    let result: AcquireResult | null = null
    if (!req.queue && !req.admissionRate) {
      // null: the line is not empty; the single-decision script handles the line.
      result = await batch(this.acquireBatches, name, req, (reqs) => this.acquireMany(name, reqs))
    }
    result ??= await this.acquireOne(name, req)
    // Sent before a different server was found answering, and answered by it (a command queued
    // while the connection was down): the new server may lack slots it does not know of. Given
    // back; so is one the replicas did not acknowledge (with `replicas`).
    if (
      result.status === 'acquired' &&
      (this.#server.changes !== changes || (this.replicas > 0 && !(await this.#acknowledged())))
    ) {
      void this.release(name, req.token).catch(() => {})
      return { status: 'busy', now: result.now, nextExpiry: null }
    }
    return result
  }

  /** True when `replicas` replicas hold every write made so far on this connection (one `WAIT` per tick, shared). */
  async #acknowledged(): Promise<boolean> {
    this.#replicaWait ??= Promise.resolve().then(() => {
      this.#replicaWait = undefined
      return this.caller.deadlines.race(
        this.#redis.command(undefined, ['WAIT', this.replicas, this.replicaTimeout]) as Promise<number>,
        Date.now() + this.commandTimeout,
      )
    })
    return (await this.#replicaWait.catch(() => 0)) >= this.replicas
  }

  private async acquireOne(name: string, req: AcquireRequest): Promise<AcquireResult> {
    const q = req.queue
    const reply = (await this.run(
      scripts.ACQUIRE,
      name,
      {
        token: req.token,
        limit: req.limit,
        ttl: req.ttl,
        weight: req.weight,
        queued: q !== undefined,
        idle: q?.idleTimeout ?? 0,
        claim: q?.claimWindow ?? 0,
        maxLength: q?.maxLength ?? 0,
        order: q?.order === 'random' ? 'r' : 'f',
        mayAdmit: q?.admit !== false,
        channel: this.channel(name),
        confirm: q?.confirmTimeout ?? 0,
        seed: 1 + Math.floor(Math.random() * 2147483646),
        rate: req.admissionRate ?? 0,
        hold: q?.hold === true,
        shuffle: q?.shuffle ?? 0,
        client: req.client?.key ?? '',
        sharePlaces: req.client?.places ?? 0,
        shareSlots: req.client?.slots ?? 0,
        sharePerMinute: req.client?.perMinute ?? 0,
      },
      [],
      // A slot or a new place in line that nobody will use.
      req.fresh ? { tokens: [req.token], taken: (r) => (tookSomething(r, 0) ? [req.token] : []) } : undefined,
    )) as number[]
    return acquireResult(reply)
  }

  private async acquireMany(name: string, reqs: AcquireRequest[]): Promise<(AcquireResult | null)[]> {
    if (reqs.length === 1) return [await this.acquireOne(name, reqs[0]!)]
    const items = reqs.flatMap((r) =>
      packArgs(scripts.ACQUIRE_MANY_ITEM, {
        ...r,
        client: r.client?.key ?? '',
        sharePlaces: r.client?.places ?? 0,
        shareSlots: r.client?.slots ?? 0,
        sharePerMinute: r.client?.perMinute ?? 0,
      }),
    )
    const fresh = reqs.filter((r) => r.fresh).map((r) => r.token)
    const width = BATCH_REPLY_WIDTH
    const giveUp: GiveUp | undefined =
      fresh.length === 0
        ? undefined
        : {
            tokens: fresh,
            taken: (r) => reqs.flatMap((q, i) => (q.fresh && tookSomething(r, i * width) ? [q.token] : [])),
          }
    const reply = (await this.run(scripts.ACQUIRE_MANY, name, { count: reqs.length }, items, giveUp)) as number[]
    // What the call dropped is told once, with the first answer.
    const ended = decodeEnded(reply, reqs.length * width)
    return reqs.map((_, i) => {
      const r = decodeReply(reply, i * width)
      if (r.status === 'line') return null
      const result = acquireResult(reply, i * width, false)
      return i === 0 && ended !== undefined ? { ...result, ended } : result
    })
  }

  async refresh(name: string, token: string, ttl: number): Promise<RefreshResult> {
    const reply = (await this.run(scripts.REFRESH, name, { token, ttl })) as number[]
    return reply.length === 2 ? { ok: true, expiresAt: reply[0]!, fence: reply[1]! } : { ok: false }
  }

  async release(name: string, token: string): Promise<boolean> {
    return (await this.releaseHeld(name, token)) !== false
  }

  async releaseHeld(name: string, token: string): Promise<Released> {
    return batch(this.releaseBatches, name, token, async (tokens) => {
      const reply = (await this.run(scripts.RELEASE, name, { channel: this.channel(name) }, tokens)) as number[]
      return reply.map((r) => (r === -1 ? false : { heldMs: r >= 0 ? r : null }))
    })
  }

  async leave(name: string, token: string, keepOut = false): Promise<boolean> {
    return (await this.run(scripts.LEAVE, name, { token, channel: this.channel(name), keepOut })) === 1
  }

  async leaseState(name: string, token: string): Promise<LeaseState> {
    return LEASE_STATES.get((await this.run(scripts.LEASE_STATE, name, { token })) as number) ?? 'expired'
  }

  async state(name: string): Promise<{ held: number; waiting: number }> {
    const [held, waiting] = (await this.run(scripts.STATE, name, {})) as [number, number]
    return { held, waiting }
  }

  async forceReleaseAll(name: string): Promise<number> {
    return (await this.run(scripts.FORCE_RELEASE_ALL, name, { channel: this.channel(name) })) as number
  }

  lostAt(): number | undefined {
    return this.#server.lostAt
  }

  async writeStatus(name: string, instance: string, data: string, ttl: number): Promise<number> {
    return Number(await this.run(scripts.REPORT, name, { instance, data, ttl }))
  }

  async status(name: string): Promise<StoreStatus> {
    const r = (await this.run(scripts.STATUS, name, {})) as (number | string)[]
    const instances: StoreStatus['instances'] = []
    for (let i = 8 + Number(r[7]); i + 2 < r.length; i += 3) {
      instances.push({ id: String(r[i]), expiresAt: Number(r[i + 1]), data: String(r[i + 2]) })
    }
    const status: StoreStatus = { ...numbersAt(r, 0, ['held', 'waiting', 'admitted', 'windowMs', 'now']), instances }
    const ended = decodeEnded(r, 5)!
    return ended.expired > 0 || ended.lapsed > 0 ? { ...status, ended } : status
  }

  /** The per-minute history beside this store, on its client (see stores/history.ts: `historyFor` keeps one per store). */
  historyStorage(): RedisHistory {
    return new RedisHistory(this.client, this.commandTimeout, (name) => this.base(name))
  }

  /** Tokens whose given-up calls are still to be cleaned up (for tests and diagnostics). */
  get pendingCleanups(): number {
    return this.leftovers.size
  }

  async control(name: string, patch?: Readonly<Record<string, string | null>>): Promise<ControlRecord> {
    const pairs = patch === undefined ? [] : Object.entries(patch).flatMap(([field, value]) => [field, value ?? ''])
    const reply = (await this.run(scripts.CONTROL, name, { channel: this.controlChannel(name) }, pairs)) as (
      | string
      | number
    )[]
    const fields: Record<string, string> = {}
    let version = 0
    for (let i = 1; i + 1 < reply.length; i += 2) {
      if (reply[i] === '#v') version = Number(reply[i + 1])
      else fields[String(reply[i])] = String(reply[i + 1])
    }
    return { fields, version, now: Number(reply[0]) }
  }

  async adapt(name: string, report: AdaptReport): Promise<AdaptAnswer> {
    const reply = (await this.run(scripts.ADAPT, name, report, report.buckets.flat())) as (string | number)[]
    const answer: AdaptAnswer = { limit: Number(reply[0]), state: reply[1] ? String(reply[1]) : null }
    if (reply.length > 2) {
      const buckets: [number, number][] = []
      for (let i = 7; i + 1 < reply.length; i += 2) buckets.push([Number(reply[i]), Number(reply[i + 1])])
      answer.judge = { ...numbersAt(reply, 2, ['turn', 'samples', 'failures', 'refused', 'inside']), buckets }
    }
    return answer
  }

  async adaptCommit(name: string, commit: AdaptCommit): Promise<boolean> {
    return Number(await this.run(scripts.ADAPT_COMMIT, name, commit)) === 1
  }

  watchControl(name: string, listener: () => void): Promise<() => void> {
    return this.listen(this.controlChannel(name), () => listener())
  }

  /** The pub/sub channel that tells of a new version of `name`'s control record. */
  controlChannel(name: string): string {
    return `${this.base(name)}:control`
  }

  subscribe(name: string, listener: (headToken: string) => void): Promise<() => void> {
    return this.listen(this.channel(name), listener)
  }

  private listen(channel: string, listener: (message: string) => void): Promise<() => void> {
    if (this.closed) return Promise.reject(new AirlockError('ERR_AIRLOCK_CLOSED', 'the redis store was closed'))
    return this.channels.listen(channel, listener)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.leftovers.close()
    this.channels.close()
    this.#server.stop()
  }
}

/** A decision reply at `at` that took a slot or a new place in line. */
function tookSomething(reply: readonly number[], at: number): boolean {
  const status = decodeReply(reply, at).status
  return status === 'acquired' || status === 'queued'
}

/**
 * Creates a store on the Redis client you already have: ioredis 5 or 6, iovalkey, or node-redis 5
 * or 6 (each an optional peer: install the one you use), standalone or Cluster.
 *
 * ```ts
 * const store = redisStore({ client: new Redis(url) })                        // ioredis, iovalkey
 * const store = redisStore({ client: await createClient({ url }).connect() }) // node-redis
 * ```
 */
export function redisStore<C extends RedisClient>(options: RedisStoreOptions<C>): RedisStore<C> {
  return new RedisStore(options)
}
