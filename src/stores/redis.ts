import type { Cluster, Redis } from 'ioredis'
import { AirlockError, optionError } from '../core/errors.js'
import { describe, duration, knownKeys, safeName } from '../core/validate.js'
import * as lua from './lua.js'
import type { AcquireRequest, AcquireResult, LeaseState, RefreshResult, Store } from './types.js'

/** An ioredis client: a standalone `Redis` or a `Cluster`. */
export type RedisClient = Redis | Cluster

export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` client. The store never closes it; you do. */
  client: RedisClient
  /**
   * Budget for one store call (ms), after which it rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`
   * instead of waiting on ioredis' offline queue or a dead connection. Default 1000.
   */
  commandTimeout?: number
  /** Key prefix; keys look like `{<prefix>:<name>}:h`. Default `'airlock'`. */
  prefix?: string
}

/** Script names on the client; versioned so two package versions on one client never clash. */
const COMMANDS = {
  acquire: { name: 'airlockAcquireV1', lua: lua.ACQUIRE },
  refresh: { name: 'airlockRefreshV1', lua: lua.REFRESH },
  release: { name: 'airlockReleaseV1', lua: lua.RELEASE },
  leave: { name: 'airlockLeaveV1', lua: lua.LEAVE },
  leaseState: { name: 'airlockLeaseStateV1', lua: lua.LEASE_STATE },
  state: { name: 'airlockStateV1', lua: lua.STATE },
  forceReleaseAll: { name: 'airlockForceReleaseAllV1', lua: lua.FORCE_RELEASE_ALL },
  acquireMany: { name: 'airlockAcquireManyV1', lua: lua.ACQUIRE_MANY },
  releaseMany: { name: 'airlockReleaseManyV1', lua: lua.RELEASE_MANY },
} as const

/** Most decisions sent in one batch call. */
const MAX_BATCH = 16

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>

const LEASE_STATES: Record<number, LeaseState> = { 1: 'acquired', 2: 'expired', 3: 'released' }

/**
 * A store on Redis (standalone or Cluster, Redis >= 6.2). Each operation is one Lua script,
 * registered once per client with `defineCommand` (EVALSHA, falling back to EVAL after a
 * `SCRIPT FLUSH`), so every decision is a single round trip that uses the server's clock.
 */
export class RedisStore implements Store {
  readonly kind = 'redis'
  readonly client: RedisClient
  readonly commandTimeout: number
  readonly prefix: string
  private subscriber: RedisClient | undefined
  private subscribing: Promise<RedisClient> | undefined
  private readonly listeners = new Map<string, Set<(head: string) => void>>()
  /** Channels subscribed (or being subscribed) on the subscriber connection. */
  private readonly subscriptions = new Map<string, Promise<void>>()
  private readonly deadlines: Deadlines
  private readyWait: Promise<void> | undefined
  private readonly acquireBatches = new Map<string, Batch<AcquireRequest, AcquireResult | null>>()
  private readonly releaseBatches = new Map<string, Batch<string, boolean>>()
  private closed = false

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') {
      optionError(`redisStore() needs an options object with a client, got ${describe(options)}`)
    }
    knownKeys('redisStore()', options, ['client', 'commandTimeout', 'prefix'])
    this.client = redisClientOption(options.client)
    const client = this.client as unknown as Record<string, unknown>
    this.commandTimeout = duration('commandTimeout', options.commandTimeout ?? 1000)
    this.prefix = safeName('prefix', options.prefix ?? 'airlock')
    this.deadlines = new Deadlines(this.commandTimeout)
    for (const { name, lua: script } of Object.values(COMMANDS)) {
      if (typeof client[name] !== 'function') {
        this.client.defineCommand(name, { numberOfKeys: lua.KEY_SUFFIXES.length, lua: script })
      }
    }
  }

  /** All keys of one semaphore, under one hash tag, in the scripts' KEYS order. */
  keys(name: string): string[] {
    const tag = `{${this.prefix}:${name}}`
    return lua.KEY_SUFFIXES.map((suffix) => `${tag}:${suffix}`)
  }

  /** The pub/sub channel that wakes waiters of `name`. */
  channel(name: string): string {
    return `{${this.prefix}:${name}}:wake`
  }

  private call(command: keyof typeof COMMANDS, name: string, ...args: (string | number)[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new AirlockError('ERR_AIRLOCK_CLOSED', 'the redis store was closed'))
    const fn = (this.client as unknown as Record<string, ScriptFn>)[COMMANDS[command].name]!
    const deadline = Date.now() + this.commandTimeout
    const send = (): Promise<unknown> => this.deadlines.race(fn.call(this.client, ...this.keys(name), ...args), deadline)
    const status = this.client.status
    // The hot path: connected (or lazily connecting on first use), so send at once.
    if (status === 'ready' || status === 'wait') return send()
    return this.ready(deadline).then(send)
  }

  /**
   * Waits for the client to be connected, so no command is parked in ioredis' offline queue (a
   * parked acquire would take a slot nobody owns once Redis is back).
   */
  private async ready(deadline: number): Promise<void> {
    const status = this.client.status
    if (status === 'ready' || status === 'wait') return
    if (status === 'end' || status === 'close') throw unavailable(`redis connection is ${status}`)
    // One 'ready' listener per connection attempt, however many calls wait on it.
    this.readyWait ??= new Promise<void>((resolve) => {
      this.client.once('ready', () => {
        this.readyWait = undefined
        resolve()
      })
    })
    await this.deadlines.race(this.readyWait, deadline, () =>
      unavailable(`redis not ready within ${this.commandTimeout} ms (status ${this.client.status})`),
    )
  }

  async acquire(name: string, req: AcquireRequest): Promise<AcquireResult> {
    if (!req.queue) {
      const batched = await this.batch(this.acquireBatches, name, req, (reqs) => this.acquireMany(name, reqs))
      if (batched) return batched
      // null: the line is not empty; the single-decision script handles the line.
    }
    return this.acquireOne(name, req)
  }

  private async acquireOne(name: string, req: AcquireRequest): Promise<AcquireResult> {
    const q = req.queue
    const reply = (await this.call(
      'acquire',
      name,
      req.token,
      req.limit,
      req.ttl,
      req.weight,
      q ? 1 : 0,
      q?.idleTimeout ?? 0,
      q?.claimWindow ?? 0,
      q?.maxLength ?? 0,
      q?.order === 'random' ? 'r' : 'f',
      q?.admit === false ? 0 : 1,
      this.channel(name),
      q?.confirmTimeout ?? 0,
      1 + Math.floor(Math.random() * 2147483646),
    )) as number[]
    switch (reply[0]) {
      case 1:
        return { status: 'acquired', fence: reply[1]!, expiresAt: reply[2]!, now: reply[3]! }
      case 0:
        return { status: 'busy', now: reply[1]!, nextExpiry: orNull(reply[2]!) }
      case 2:
        return {
          status: 'queued',
          position: reply[1]!,
          waiting: reply[2]!,
          now: reply[3]!,
          nextExpiry: orNull(reply[4]!),
          admitted: reply[5]!,
          windowMs: reply[6]!,
        }
      case 3:
        return { status: 'full', waiting: reply[1]!, now: reply[2]! }
      default:
        return { status: 'absent', now: reply[1]! }
    }
  }

  async refresh(name: string, token: string, ttl: number): Promise<RefreshResult> {
    const reply = (await this.call('refresh', name, token, ttl)) as number[]
    return reply[0] === 1 ? { ok: true, expiresAt: reply[1]!, fence: reply[2]! } : { ok: false }
  }

  async release(name: string, token: string): Promise<boolean> {
    return this.batch(this.releaseBatches, name, token, async (tokens) => {
      if (tokens.length === 1) return [(await this.call('release', name, tokens[0]!, this.channel(name))) === 1]
      const reply = (await this.call('releaseMany', name, this.channel(name), ...tokens)) as number[]
      return reply.map((r) => r === 1)
    })
  }

  private async acquireMany(name: string, reqs: AcquireRequest[]): Promise<(AcquireResult | null)[]> {
    if (reqs.length === 1) return [await this.acquireOne(name, reqs[0]!)]
    const args: (string | number)[] = [reqs.length]
    for (const r of reqs) args.push(r.token, r.limit, r.ttl, r.weight)
    const reply = (await this.call('acquireMany', name, ...args)) as number[]
    return reqs.map((_, i) => {
      const [status, a, b, c] = reply.slice(i * 4, i * 4 + 4) as [number, number, number, number]
      if (status === 1) return { status: 'acquired', fence: a, expiresAt: b, now: c }
      if (status === 0) return { status: 'busy', now: a, nextExpiry: orNull(b) }
      return null
    })
  }

  /**
   * Coalesces decisions on one semaphore made in the same turn of the event loop into one script
   * call (up to MAX_BATCH). Each decision is still taken on its own, in arrival order, atomically;
   * the batch only shares the round trip and the script's setup. A lone decision goes out alone.
   */
  private batch<I, O>(
    batches: Map<string, Batch<I, O>>,
    name: string,
    item: I,
    run: (items: I[]) => Promise<O[]>,
  ): Promise<O> {
    let b = batches.get(name)
    if (!b) {
      const fresh: Batch<I, O> = { items: [], settle: [] }
      batches.set(name, fresh)
      process.nextTick(() => {
        batches.delete(name)
        for (let i = 0; i < fresh.items.length; i += MAX_BATCH) {
          const settle = fresh.settle.slice(i, i + MAX_BATCH)
          run(fresh.items.slice(i, i + MAX_BATCH)).then(
            (out) => settle.forEach((s, j) => s.resolve(out[j]!)),
            (err: unknown) => settle.forEach((s) => s.reject(err)),
          )
        }
      })
      b = fresh
    }
    b.items.push(item)
    return new Promise<O>((resolve, reject) => b.settle.push({ resolve, reject }))
  }

  async leave(name: string, token: string): Promise<boolean> {
    return (await this.call('leave', name, token, this.channel(name))) === 1
  }

  async leaseState(name: string, token: string): Promise<LeaseState> {
    return LEASE_STATES[(await this.call('leaseState', name, token)) as number] ?? 'expired'
  }

  async state(name: string): Promise<{ held: number; waiting: number }> {
    const [held, waiting] = (await this.call('state', name)) as [number, number]
    return { held, waiting }
  }

  async forceReleaseAll(name: string): Promise<number> {
    return (await this.call('forceReleaseAll', name, this.channel(name))) as number
  }

  async subscribe(name: string, listener: (headToken: string) => void): Promise<() => void> {
    if (this.closed) throw new AirlockError('ERR_AIRLOCK_CLOSED', 'the redis store was closed')
    const channel = this.channel(name)
    let set = this.listeners.get(channel)
    if (!set) {
      set = new Set()
      this.listeners.set(channel, set)
    }
    set.add(listener)
    const forget = (): void => this.forget(channel, set, listener)
    try {
      const sub = await this.subscriberClient()
      // One SUBSCRIBE per channel, shared by every listener; a failed one is tried again next time.
      let pending = this.subscriptions.get(channel)
      if (pending === undefined) {
        const attempt = this.deadlines.race(sub.subscribe(channel), Date.now() + this.commandTimeout).then(() => {})
        this.subscriptions.set(channel, attempt)
        attempt.catch(() => {
          if (this.subscriptions.get(channel) === attempt) this.subscriptions.delete(channel)
        })
        pending = attempt
      }
      await pending
    } catch (err) {
      forget()
      throw err
    }
    return forget
  }

  /** Drops one listener; the last one of a channel unsubscribes it. */
  private forget(channel: string, set: Set<(headToken: string) => void>, listener: (headToken: string) => void): void {
    set.delete(listener)
    if (set.size > 0 || this.listeners.get(channel) !== set) return
    this.listeners.delete(channel)
    if (this.subscriptions.delete(channel)) this.subscriber?.unsubscribe(channel).catch(() => {})
  }

  /** One extra connection per store, opened on first use, for wake-up messages. */
  private subscriberClient(): Promise<RedisClient> {
    this.subscribing ??= (async () => {
      const sub = this.client.duplicate() as RedisClient
      sub.on('error', () => {}) // reconnects by itself; waiters keep their safety poll meanwhile
      sub.on('message', (channel: string, message: string) => {
        const set = this.listeners.get(channel)
        if (set) for (const listener of set) listener(message)
      })
      this.subscriber = sub
      return sub
    })()
    return this.subscribing
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.listeners.clear()
    this.subscriptions.clear()
    const sub = this.subscriber
    if (sub) {
      sub.disconnect()
    }
  }
}

interface Batch<I, O> {
  items: I[]
  settle: { resolve: (value: O) => void; reject: (err: unknown) => void }[]
}

function orNull(n: number): number | null {
  return n < 0 ? null : n
}

function unavailable(message: string, cause?: unknown): AirlockError {
  return new AirlockError('ERR_AIRLOCK_STORE_UNAVAILABLE', message, { cause })
}

interface Pending {
  deadline: number
  reject: (err: unknown) => void
  onTimeout: (() => AirlockError) | undefined
}

/**
 * Enforces the command budget without a timer per call: pending calls sit in a set that one
 * unref'd sweep (every budget/10, at least 10 ms) checks, rejecting with
 * `ERR_AIRLOCK_STORE_UNAVAILABLE` those whose deadline falls before the next sweep (so a call
 * rejects between 0.9x and 1x its budget, never later). A late reply is then ignored. Failures of the command itself
 * become `ERR_AIRLOCK_STORE_UNAVAILABLE` too.
 */
class Deadlines {
  private readonly pending = new Set<Pending>()
  private timer: NodeJS.Timeout | undefined
  private readonly every: number

  constructor(private readonly budget: number) {
    this.every = Math.max(10, Math.floor(budget / 10))
  }

  race<T>(promise: Promise<T>, deadline: number, onTimeout?: () => AirlockError): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry = { deadline, reject, onTimeout }
      this.pending.add(entry)
      this.timer ??= setInterval(() => this.sweep(), this.every).unref()
      promise.then(
        (value) => {
          this.settle(entry)
          resolve(value)
        },
        (err: unknown) => {
          this.settle(entry)
          reject(
            err instanceof AirlockError
              ? err
              : unavailable(`redis command failed: ${(err as Error)?.message ?? String(err)}`, err),
          )
        },
      )
    })
  }

  private settle(entry: Pending): void {
    this.pending.delete(entry)
  }

  private sweep(): void {
    // A call is given up on at the last sweep before its deadline, so it never outlives its budget.
    const now = Date.now() + this.every
    const due = [...this.pending].filter((entry) => entry.deadline <= now)
    if (due.length > 0) {
      // Timers run before the event loop reads sockets: a reply that came while this process was
      // busy is still unread. Give up only after the next poll for I/O (see src/core/budget.ts).
      setImmediate(() => {
        for (const entry of due) {
          if (!this.pending.delete(entry)) continue // answered meanwhile
          entry.reject(entry.onTimeout?.() ?? unavailable(`redis did not answer within ${this.budget} ms`))
        }
        this.stopWhenIdle()
      })
    }
    this.stopWhenIdle()
  }

  private stopWhenIdle(): void {
    if (this.pending.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer)
      this.timer = undefined
    }
  }
}

/** Checks a `client` option: an ioredis `Redis` or `Cluster` (throws `ERR_AIRLOCK_OPTION` otherwise). */
export function redisClientOption(value: unknown): RedisClient {
  const client = value as Record<string, unknown> | undefined
  if (!client || typeof client.defineCommand !== 'function' || typeof client.duplicate !== 'function') {
    optionError('client must be an ioredis Redis or Cluster instance (new Redis(url)), got ' + describe(value))
  }
  return value as RedisClient
}

/** Creates a store on an ioredis client (ioredis is an optional peer dependency). */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options)
}
