import { describe, expect, it, vi } from 'vitest'
import { createSemaphore, type Semaphore } from '../../src/core/semaphore.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { countingStore, useStore } from '../helpers/stores.js'
import { sleep, until } from '../helpers/wait.js'

requireRedis()
let n = 0
const uniq = (label: string) => `${label}-${++n}-${process.pid}`

function semaphoreSuite(label: string, makeStore: () => Promise<{ store: Store; close(): Promise<void> }>): void {
  describe(`semaphore on ${label}`, () => {
    const made = useStore(makeStore)
    const sem = (limit = 1, ttl = 5_000, retryInterval = 5_000): Semaphore =>
      createSemaphore({ name: uniq(label), limit, ttl: `${ttl}ms`, store: made.store, retryInterval })

    it('acquires up to the limit and never waits', async () => {
      const s = sem(2)
      const a = await s.acquire()
      const b = await s.acquire()
      expect(a).not.toBeNull()
      expect(b).not.toBeNull()
      expect(await s.acquire()).toBeNull()
      expect(a!.token).not.toBe(b!.token)
      expect(b!.fence).toBeGreaterThan(a!.fence)
      expect(await s.getState()).toEqual({ limit: 2, held: 2, available: 0, waiting: 0 })
    })

    it('lease handles by token refresh, report state and release from "another process"', async () => {
      const s = sem(1)
      const lease = (await s.acquire())!
      const other = s.lease(lease.token)
      expect(await other.state()).toBe('acquired')
      expect(await other.refresh(10_000)).toBe(true)
      expect(other.fence).toBe(lease.fence)
      expect(await other.release()).toBe(true)
      expect(await lease.release()).toBe(false)
      expect(await lease.state()).toBe('released')
      expect(await lease.refresh()).toBe(false)
      expect(await s.lease('not-a-token').refresh()).toBe(false)
    })

    it('acquireBlocking is woken promptly by a release, not by its slow poll', async () => {
      const s = sem(1, 5_000, 10_000)
      const holder = (await s.acquire())!
      const waiting = s.acquireBlocking({ timeout: 8_000 })
      await until(async () => (await s.getState()).waiting === 1)
      const released = Date.now()
      await holder.release()
      const lease = await waiting
      expect(lease).not.toBeNull()
      expect(Date.now() - released).toBeLessThan(1_500)
      expect((await s.getState()).waiting).toBe(0)
    })

    it('acquireBlocking serves waiters in arrival order', async () => {
      const s = sem(1)
      let holder = (await s.acquire())!
      const order: number[] = []
      const waiters = []
      for (let i = 0; i < 5; i++) {
        waiters.push(
          s.acquireBlocking({ timeout: 20_000 }).then((lease) => {
            order.push(i)
            return lease!
          }),
        )
        await until(async () => (await s.getState()).waiting === i + 1)
      }
      for (let i = 0; i < 5; i++) {
        await holder.release()
        holder = await waiters[i]!
      }
      await holder.release()
      expect(order).toEqual([0, 1, 2, 3, 4])
    })

    it('acquireBlocking resolves null on timeout and leaves the line', async () => {
      const s = sem(1)
      await s.acquire()
      const started = Date.now()
      expect(await s.acquireBlocking({ timeout: 300 })).toBeNull()
      expect(Date.now() - started).toBeGreaterThanOrEqual(290)
      expect(Date.now() - started).toBeLessThan(2_000)
      expect((await s.getState()).waiting).toBe(0)
    })

    it('acquireBlocking rejects with signal.reason on abort and leaves the line', async () => {
      const s = sem(1)
      await s.acquire()
      const ac = new AbortController()
      const waiting = s.acquireBlocking({ signal: ac.signal })
      await until(async () => (await s.getState()).waiting === 1)
      const reason = new Error('user gave up')
      ac.abort(reason)
      await expect(waiting).rejects.toBe(reason)
      expect((await s.getState()).waiting).toBe(0)
      await expect(s.acquireBlocking({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    })

    it('a plain acquire never jumps ahead of blocking waiters', async () => {
      const s = sem(1)
      const holder = (await s.acquire())!
      const waiting = s.acquireBlocking({ timeout: 10_000 })
      await until(async () => (await s.getState()).waiting === 1)
      await holder.release()
      const jumper = await s.acquire()
      const waiter = await waiting
      expect(waiter).not.toBeNull()
      // The freed slot went to the waiter, whichever call reached the store first.
      expect(jumper).toBeNull()
    })

    it('weight: a heavy job takes several units and is not overtaken in line', async () => {
      const s = sem(3)
      const light = (await s.acquire({ weight: 2 }))!
      const heavy = s.acquireBlocking({ weight: 3, timeout: 10_000 })
      await until(async () => (await s.getState()).waiting === 1)
      expect(await s.acquire({ weight: 1 })).toBeNull()
      await light.release()
      const lease = await heavy
      expect(lease).not.toBeNull()
      expect((await s.getState()).held).toBe(3)
    })

    it('run() acquires, runs, releases, and throws ERR_AIRLOCK_TIMEOUT when not admitted', async () => {
      const s = sem(1)
      const result = await s.run(async ({ lease }) => {
        expect(await lease.state()).toBe('acquired')
        await expect(s.run(() => 'never')).rejects.toMatchObject({ code: 'ERR_AIRLOCK_TIMEOUT' })
        return 42
      })
      expect(result).toBe(42)
      expect((await s.getState()).held).toBe(0)
      await expect(
        s.run(() => {
          throw new Error('job failed')
        }),
      ).rejects.toThrow('job failed')
      expect((await s.getState()).held).toBe(0)
    })

    it('run() keeps a long job alive past ttl and stops refreshing when it ends', async () => {
      const counting = countingStore(made.store)
      const s = createSemaphore({ name: uniq(label), limit: 1, ttl: '300ms', store: counting })
      let token = ''
      await s.run(async ({ lease, signal }) => {
        token = lease.token
        await sleep(1_000)
        expect(signal.aborted).toBe(false)
        expect(await lease.state()).toBe('acquired')
      })
      const refreshes = counting.calls.refresh ?? 0
      expect(refreshes).toBeGreaterThanOrEqual(5) // every ttl / 3 = 100 ms for 1 s
      expect(await s.lease(token).state()).toBe('released')
      await sleep(400) // four more refresh periods: none may come
      expect(counting.calls.refresh).toBe(refreshes)
    })

    it('run() tells the job through its signal when the lease is lost', async () => {
      const s = sem(1, 300)
      const reason = await s.run(async ({ signal }) => {
        await s.forceReleaseAll()
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        return signal.reason
      })
      expect(isAirlockError(reason, 'ERR_AIRLOCK_LEASE_LOST')).toBe(true)
    })

    it('forceReleaseAll wakes the waiters', async () => {
      const s = sem(1)
      await s.acquire()
      const waiting = s.acquireBlocking({ timeout: 10_000 })
      await until(async () => (await s.getState()).waiting === 1)
      expect(await s.forceReleaseAll()).toBe(1)
      expect(await waiting).not.toBeNull()
    })
  })
}

semaphoreSuite('memory', async () => {
  const store = memoryStore()
  return { store, close: () => store.close() }
})

describe.runIf(redisAvailable)('redis', () => {
  let redis: PrivateRedis
  semaphoreSuite('redis', async () => {
    redis = await startRedis()
    const store = redisStore({ client: redis.client() })
    return {
      store,
      close: async () => {
        await store.close()
        await redis.stop()
      },
    }
  })
})

describe('semaphore options', () => {
  it.each([
    [{ name: 'x', limit: 0, ttl: 1000 }, 'limit must be a positive integer, got 0'],
    [{ name: 'x', limit: 1.5, ttl: 1000 }, 'limit must be a positive integer, got 1.5'],
    [
      { name: 'x', limit: 1, ttl: -1 },
      "ttl must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got -1",
    ],
    [{ name: '', limit: 1, ttl: 1000 }, 'name must be 1 to 64 characters'],
    [{ name: 'a b', limit: 1, ttl: 1000 }, 'name must be 1 to 64 characters'],
    [{ name: 'x', limit: 1, ttl: 1000, store: {} }, 'store must implement the Store interface; missing acquire'],
    [{ name: 'x', limit: 1, ttl: 1000, limt: 2 }, "createSemaphore() has no option 'limt'"],
  ])('rejects %j', (options, message) => {
    let error: unknown
    try {
      createSemaphore(options as never)
    } catch (err) {
      error = err
    }
    expect(isAirlockError(error, 'ERR_AIRLOCK_OPTION')).toBe(true)
    expect((error as Error).message).toContain(message)
  })

  it('rejects a weight above the limit', async () => {
    const s = createSemaphore({ name: uniq('w'), limit: 2, ttl: 1000 })
    await expect(s.acquire({ weight: 3 })).rejects.toThrow('weight must be at most the limit (2), got 3')
  })

  it('rejects a misspelt acquire() option instead of ignoring it', async () => {
    const s = createSemaphore({ name: uniq('typo'), limit: 2, ttl: 1000 })
    await expect(s.acquire({ wieght: 2 } as never)).rejects.toMatchObject({
      code: 'ERR_AIRLOCK_OPTION',
      message: "acquire() has no option 'wieght' (did you mean 'weight'?); known options are weight",
    })
    await expect(s.acquire(null as never)).rejects.toThrow('acquire() options must be an object, got null')
  })

  it('uses the shared memory store by default', async () => {
    const name = uniq('default')
    const a = createSemaphore({ name, limit: 1, ttl: 1000 })
    const b = createSemaphore({ name, limit: 1, ttl: 1000 })
    expect(await a.acquire()).not.toBeNull()
    expect(await b.acquire()).toBeNull()
  })

  it('expires slots on fake timers with the memory store', async () => {
    vi.useFakeTimers()
    try {
      const s = createSemaphore({ name: uniq('fake'), limit: 1, ttl: 60_000, store: memoryStore() })
      expect(await s.acquire()).not.toBeNull()
      vi.advanceTimersByTime(59_999)
      expect(await s.acquire()).toBeNull()
      vi.advanceTimersByTime(1)
      expect(await s.acquire()).not.toBeNull()
    } finally {
      vi.useRealTimers()
    }
  })
})
