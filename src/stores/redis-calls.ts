/**
 * How airlock talks to Redis: every call waits for a connected client (never the client's offline
 * queue) and has a budget ({@link RedisCaller}, {@link Deadlines}); a call given up on may still
 * run on Redis, so what it took is freed once it settles ({@link Leftovers}).
 */
import { createHash } from 'node:crypto'
import { AirlockError } from '../base/errors.js'
import type { RedisClient, RedisClientLike } from './redis-client.js'
import { redisClientLike } from './redis-clients.js'

export type { RedisClient } from './redis-client.js'

/** A Lua script as sent to Redis: its text, its SHA1, and how many of its arguments are keys. */
export interface LuaScript {
  readonly lua: string
  readonly sha: string
  readonly numKeys: number
}

/** A {@link LuaScript} from its text. */
export function luaScript(lua: string, numKeys: number): LuaScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex'), numKeys }
}

/**
 * Sends commands on a connected client within `commandTimeout`: while the client is reconnecting
 * it waits for `ready` rather than parking the command in the client's offline queue (a parked acquire
 * or write would run once Redis is back, long after its caller was told it failed), and a call
 * still unanswered at its deadline rejects with `ERR_AIRLOCK_STORE_UNAVAILABLE`.
 */
export class RedisCaller {
  readonly deadlines: Deadlines
  private readyWait: Promise<void> | undefined
  /** Scripts sent with EVAL on this client (so Redis has them cached). */
  private readonly loaded = new Set<string>()

  readonly client: RedisClientLike

  /** `client`: the user's (ioredis, iovalkey, node-redis), or its adapter. */
  constructor(
    client: RedisClient | RedisClientLike,
    readonly commandTimeout: number,
  ) {
    this.client = redisClientLike(client)
    this.deadlines = new Deadlines(commandTimeout)
  }

  /** Runs `send` (once connected) within the budget; `sent` is told the command's own promise. */
  call<T>(send: () => Promise<T>, sent?: (command: Promise<T>, answer: Promise<T>) => void): Promise<T> {
    const deadline = Date.now() + this.commandTimeout
    const go = (): Promise<T> => {
      const command = send()
      const answer = this.deadlines.race(command, deadline)
      sent?.(command, answer)
      return answer
    }
    // The hot path: connected (or lazily connecting on first use), so send at once.
    if (this.client.ready) return go()
    return this.ready(deadline).then(go)
  }

  /** EVALSHA of `script`, or EVAL the first time and whenever Redis has lost it (NOSCRIPT): one round trip. */
  eval(script: LuaScript, keysAndArgs: (string | number)[]): Promise<unknown> {
    if (!this.loaded.has(script.sha)) {
      this.loaded.add(script.sha)
      return this.client.eval(script.lua, script.numKeys, keysAndArgs)
    }
    return this.client.evalsha(script.sha, script.numKeys, keysAndArgs).catch((err: unknown) => {
      if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err
      return this.client.eval(script.lua, script.numKeys, keysAndArgs)
    })
  }

  private async ready(deadline: number): Promise<void> {
    if (this.client.ready) return
    if (this.client.ended) throw unavailable(`redis connection is ${this.client.status}`)
    // One 'ready' listener per connection attempt, however many calls wait on it.
    this.readyWait ??= new Promise<void>((resolve) => {
      this.client.onceReady(() => {
        this.readyWait = undefined
        resolve()
      })
    })
    await this.deadlines.race(this.readyWait, deadline, () =>
      unavailable(`redis not ready within ${this.commandTimeout} ms (status ${this.client.status})`),
    )
  }
}

export function unavailable(message: string, cause?: unknown): AirlockError {
  return new AirlockError('ERR_AIRLOCK_STORE_UNAVAILABLE', message, { cause })
}

/** What to clean up if a call is given up on: its tokens, and those a late reply says it took. */
export interface GiveUp {
  tokens: readonly string[]
  taken(reply: number[]): readonly string[]
}

/** Most tokens kept for cleanup; beyond it the oldest are left to their ttl. */
const MAX_LEFTOVERS = 10_000
const CLEANUP_RETRY_MS = [100, 250, 500, 1000, 2000, 5000] as const

/**
 * Capacity taken by calls nobody waits for any more. A call given up on (its budget ran out while
 * Redis was paused, or its connection failed) may still run on Redis later: a client re-sends
 * unanswered commands after a reconnect, and a paused server runs the queued ones when it resumes.
 * Its slot (or place in line) would then be held by a token nobody has, until its ttl. So once such
 * a call settles, the tokens its late reply says it took (all of them when it failed: it may have
 * run before the reply was lost) are freed with one ABANDON script per semaphore, retried with
 * backoff until Redis takes it. Commands on one connection run in order, so the cleanup never runs
 * before the call it cleans up after.
 */
export class Leftovers {
  private readonly pending = new Map<string, Set<string>>()
  private count = 0
  private timer: NodeJS.Timeout | undefined
  private attempt = 0
  private running = false
  private closed = false

  constructor(private readonly abandon: (name: string, tokens: string[]) => Promise<unknown>) {}

  get size(): number {
    return this.count
  }

  /** Watches a call that was given up on. */
  adopt(name: string, sent: Promise<unknown>, giveUp: GiveUp): void {
    sent.then(
      (reply) => this.add(name, giveUp.taken(reply as number[])),
      () => this.add(name, giveUp.tokens),
    )
  }

  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.pending.clear()
    this.count = 0
  }

  private add(name: string, tokens: readonly string[]): void {
    if (this.closed || tokens.length === 0) return
    let set = this.pending.get(name)
    if (!set) {
      set = new Set()
      this.pending.set(name, set)
    }
    for (const token of tokens) {
      if (this.count >= MAX_LEFTOVERS || set.has(token)) continue
      set.add(token)
      this.count++
    }
    this.attempt = 0
    this.schedule(0)
  }

  private schedule(ms: number): void {
    if (this.timer || this.running || this.closed) return
    this.timer = setTimeout(() => void this.flush(), ms).unref()
  }

  private async flush(): Promise<void> {
    this.timer = undefined
    this.running = true
    let failed = false
    for (const [name, set] of this.pending) {
      const tokens = [...set].slice(0, 256)
      try {
        await this.abandon(name, tokens)
        for (const t of tokens) set.delete(t)
        this.count -= tokens.length
        if (set.size === 0) this.pending.delete(name)
      } catch {
        failed = true
      }
    }
    this.running = false
    if (this.count === 0) return
    this.schedule(failed ? CLEANUP_RETRY_MS[Math.min(this.attempt++, CLEANUP_RETRY_MS.length - 1)]! : 0)
  }
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
export class Deadlines {
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
      // busy is still unread. Give up only after the next poll for I/O (see src/base/budget.ts).
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
