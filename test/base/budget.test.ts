/**
 * Budgets must not mistake a busy process for a slow store: during a hug the server's event loop
 * is often blocked longer than `storeTimeout`, while Redis answered long ago (the reply waits unread
 * in the socket). A real Redis, a synchronous block longer than the budget, and the answer must win.
 */
import { describe, expect, it } from 'vitest'
import { withinBudget } from '../../src/base/budget.js'
import { createGate, type GateDecision, type RequestView } from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { recordingLogger } from '../helpers/stores.js'

requireRedis()

/** Keeps this process busy (no event loop turn) for `ms`. */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

/** Lets the stores send what they queued for this turn (as after any request's callback). */
const sent = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve))

const release = async (d: GateDecision): Promise<void> => {
  if (d.kind === 'admit') await d.slot?.release()
}

const view: RequestView = { method: 'GET', url: '/', headers: {}, secure: false, request: {} }

describe('withinBudget', () => {
  it('rejects when the promise really is late, and hands the late value to onLate', async () => {
    let late: string | undefined
    // Late by far: on a busy box a timer can fire 100 ms late, and a promise settled by then is not late.
    const slow = new Promise<string>((resolve) => setTimeout(() => resolve('slow'), 600))
    await expect(
      withinBudget(
        slow,
        20,
        () => new Error('over budget'),
        (v) => (late = v),
      ),
    ).rejects.toThrow('over budget')
    await slow
    expect(late).toBe('slow')
    expect(await withinBudget(Promise.resolve('fast'), 20, () => new Error('over budget'))).toBe('fast')
  })
})

describe.runIf(redisAvailable)('a busy process and a prompt store', () => {
  const server = usePrivateRedis()

  it('the gate admits with a slot, not by failing open, when the process was blocked past storeTimeout', async () => {
    const log = recordingLogger()
    const store = redisStore({ client: server.redis.client(), prefix: 'busy-gate' })
    const gate = createGate({ mode: 'request', limit: 5, store, storeTimeout: 50, reuseWindow: 0, logger: log })
    await release(await gate.decide(view)) // connected, scripts loaded
    for (let i = 0; i < 5; i++) {
      const pending = gate.decide(view)
      await sent()
      block(400) // Redis answers within a millisecond (or a busy box's few hundred); this process reads it 400 ms later
      const d = await pending
      expect(d).toMatchObject({ kind: 'admit', reason: 'slot' })
      await release(d)
    }
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([])
    await gate.close()
    await store.close()
  })

  it("the Redis store's commandTimeout does not reject an answer that arrived while the process was blocked", async () => {
    const store = redisStore({ client: server.redis.client(), prefix: 'busy-store', commandTimeout: 50 })
    await store.state('s')
    for (let i = 0; i < 5; i++) {
      const pending = store.acquire('s', { token: `t${i}`, limit: 10, ttl: 5_000, weight: 1 })
      await sent()
      block(200)
      expect((await pending).status).toBe('acquired')
    }
    await store.close()
  })
})

describe('a process busy before the store was even asked', () => {
  // A pause between the start of a decision and its store call (a long garbage collection, the
  // process descheduled on a starved box; here the app's own `clientKey`) used up the budget: the
  // store was not slow, it was not asked yet. The memory store answers at once; it must win, not
  // turn the visitor into a local-quota admission without a pass (test/browser/reader.test.ts on a
  // loaded box: a first page 200 with no cookie, the next click 503).
  it('session mode, memory store: admitted with a slot and a pass, no warning', async () => {
    const log = recordingLogger()
    let paused = false
    let clients = 0
    const gate = createGate({
      mode: 'session',
      limit: 2,
      store: memoryStore(),
      secret: 'busy-before-call-secret-of-32-bytes-or-more',
      storeTimeout: 50,
      logger: log,
      clientKey: () => {
        if (paused) block(200)
        return `client-${clients++}`
      },
    })
    await gate.release(await gate.decide(view)) // the store's first call made
    paused = true
    const d = await gate.decide(view)
    expect(d).toMatchObject({ kind: 'admit', reason: 'slot' })
    expect(d.kind === 'admit' && d.setCookie).toBeTruthy()
    expect(log.lines.filter((l) => l.level === 'warn')).toEqual([])
    await gate.release(d)
    await gate.close()
  })
})
