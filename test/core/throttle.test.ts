/**
 * throttle(): never more than `limit` calls inside, fair turns, errors and timeouts, on the memory
 * store and on a private Redis. The counter of calls inside is the test's own, not the semaphore's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSemaphore, type Semaphore } from '../../src/core/semaphore.js'
import { throttle } from '../../src/core/throttle.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'

requireRedis()
import { sleep, until } from '../helpers/wait.js'
import { useStore } from '../helpers/stores.js'
let n = 0
const uniq = (label: string) => `throttle-${label}-${++n}-${process.pid}`

/** Counts calls inside the wrapped function, independently of the semaphore. */
function insideCounter() {
  let inside = 0
  let most = 0
  const order: number[] = []
  return {
    get most() {
      return most
    },
    get inside() {
      return inside
    },
    order,
    async call(id: number, ms: number): Promise<number> {
      inside++
      most = Math.max(most, inside)
      order.push(id)
      try {
        await sleep(ms)
        return id * 2
      } finally {
        inside--
      }
    },
  }
}

function throttleSuite(label: string, makeStore: () => Promise<{ store: Store; close(): Promise<void> }>): void {
  describe(`throttle on ${label}`, () => {
    const made = useStore(makeStore)
    const sem = (limit: number, ttl = 10_000): Semaphore =>
      createSemaphore({ name: uniq(label), limit, ttl, store: made.store })

    it('100 concurrent calls: never more than the limit inside, every call answered, all slots freed', async () => {
      const s = sem(3)
      const counter = insideCounter()
      const limited = throttle((id: number) => counter.call(id, 2 + (id % 5)), { semaphore: s, timeout: 60_000 })
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => limited(i)))
      expect(results).toEqual(Array.from({ length: 100 }, (_, i) => i * 2))
      expect(counter.most).toBeLessThanOrEqual(3)
      expect(counter.most).toBe(3) // the limit was actually used, not just respected
      expect(counter.inside).toBe(0)
      expect(await s.getState()).toEqual({ limit: 3, held: 0, available: 3, waiting: 0 })
    })

    it('serves waiting calls in arrival order (limit 1)', async () => {
      const s = sem(1)
      const holder = (await s.acquire())!
      const counter = insideCounter()
      const limited = throttle((id: number) => counter.call(id, 1), { semaphore: s })
      const calls: Promise<number>[] = []
      for (let i = 0; i < 12; i++) {
        calls.push(limited(i))
        // Call i has joined the line before call i + 1 is made.
        await until(async () => (await s.getState()).waiting === i + 1)
      }
      await holder.release()
      await Promise.all(calls)
      expect(counter.order).toEqual(Array.from({ length: 12 }, (_, i) => i))
    })

    it('an error thrown or rejected by fn reaches the caller unchanged, and the slot is released', async () => {
      const s = sem(1)
      const boom = new Error('legacy backend said no')
      const rejecting = throttle(
        async () => {
          await sleep(1)
          throw boom
        },
        { semaphore: s, timeout: 5_000 },
      )
      const throwing = throttle(
        (): number => {
          throw boom
        },
        { semaphore: s, timeout: 5_000 },
      )
      await expect(rejecting()).rejects.toBe(boom)
      await expect(throwing()).rejects.toBe(boom)
      expect((await s.getState()).held).toBe(0)
      // The slot really is free: a plain acquire gets it.
      const lease = await s.acquire()
      expect(lease).not.toBeNull()
      await lease!.release()
    })

    it('rejects with ERR_AIRLOCK_TIMEOUT when not admitted in time, without running fn, and leaves the line', async () => {
      const s = sem(1)
      const holder = (await s.acquire())!
      let ran = 0
      const limited = throttle(() => ++ran, { semaphore: s, timeout: 150 })
      const err = await limited().catch((e: unknown) => e)
      expect(isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')).toBe(true)
      expect(ran).toBe(0)
      expect(await s.getState()).toMatchObject({ held: 1, waiting: 0 })
      // timeout 0: one try, no waiting at all.
      const once = throttle(() => ++ran, { semaphore: s, timeout: 0 })
      expect(isAirlockError(await once().catch((e: unknown) => e), 'ERR_AIRLOCK_TIMEOUT')).toBe(true)
      await holder.release()
      expect(await once()).toBe(1)
    })

    it('waits for a release, then runs (no timeout given: waits as long as it takes)', async () => {
      const s = sem(1)
      const holder = (await s.acquire())!
      const limited = throttle(async (x: string) => `got ${x}`, { semaphore: s })
      const pending = limited('a')
      await until(async () => (await s.getState()).waiting === 1)
      await holder.release()
      expect(await pending).toBe('got a')
    })

    it('keeps this and every argument', async () => {
      const s = sem(2)
      const erp = {
        base: 'erp',
        fetch(this: { base: string }, id: string, page: number, opts?: { raw: boolean }) {
          return `${this.base}/${id}/${page}/${opts?.raw ?? false}`
        },
      }
      const fetch = throttle(erp.fetch, { semaphore: s })
      const bound = { base: 'erp', fetch }
      expect(await bound.fetch('inv', 2, { raw: true })).toBe('erp/inv/2/true')
      expect(await fetch.call({ base: 'other' }, 'x', 1)).toBe('other/x/1/false')
    })

    it('weight takes several units per call', async () => {
      const s = sem(4)
      const counter = insideCounter()
      const heavy = throttle((id: number) => counter.call(id, 3), { semaphore: s, weight: 2, timeout: 30_000 })
      await Promise.all(Array.from({ length: 10 }, (_, i) => heavy(i)))
      expect(counter.most).toBe(2)
    })

    it('signal: aborting rejects waiting calls with its reason and they leave the line; calls inside finish', async () => {
      const s = sem(1)
      const ac = new AbortController()
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      const limited = throttle(
        async (x: number) => {
          await gate
          return x
        },
        { semaphore: s, signal: ac.signal },
      )
      const inside = limited(1)
      await until(async () => (await s.getState()).held === 1)
      const waiting = limited(2)
      await until(async () => (await s.getState()).waiting === 1)
      const reason = new Error('shutting down')
      ac.abort(reason)
      await expect(waiting).rejects.toBe(reason)
      expect((await s.getState()).waiting).toBe(0)
      release()
      expect(await inside).toBe(1)
      await expect(limited(3)).rejects.toBe(reason) // already aborted: rejects at once
    })
  })
}

describe('throttle options', () => {
  const s = createSemaphore({ name: 'throttle-options', limit: 2, ttl: 1_000, store: memoryStore() })
  it.each([
    [() => throttle('nope' as never, { semaphore: s }), /throttle\(\) needs a function/],
    [() => throttle(() => 1, undefined as never), /needs an options object with a semaphore/],
    [() => throttle(() => 1, {} as never), /semaphore must be a semaphore from createSemaphore/],
    [() => throttle(() => 1, { semaphore: s, timeout: -1 }), /timeout must be a non-negative number/],
    [() => throttle(() => 1, { semaphore: s, weight: 3 }), /weight must be at most the semaphore's limit \(2\), got 3/],
    [() => throttle(() => 1, { semaphore: s, weight: 0 }), /weight must be a positive integer, got 0/],
    [() => throttle(() => 1, { semaphore: s, signal: {} as never }), /signal must be an AbortSignal/],
    [() => throttle(() => 1, { semaphore: s, timeuot: 5 } as never), /throttle\(\) has no option 'timeuot'/],
  ])('fails fast with ERR_AIRLOCK_OPTION naming the option (%#)', (make, message) => {
    let err: unknown
    try {
      make()
    } catch (e) {
      err = e
    }
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    expect((err as Error).message).toMatch(message)
  })
})

throttleSuite('memory', async () => {
  const store = memoryStore()
  return { store, close: () => store.close() }
})

describe.runIf(redisAvailable)('on a private Redis', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  throttleSuite('redis', async () => {
    const store = redisStore({ client: redis.client() })
    return { store, close: () => store.close() }
  })
})
