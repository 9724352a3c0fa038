/**
 * The adaptive limit's rules against the failures a hug brings (issue 21): a backend that fails at
 * once above its capacity, a live limit that holds the gate lower, a restart. With the memory store
 * and a private Redis; real Fastify where requests matter.
 */
import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { airlockShield } from '../../src/fastify.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import { OPEN_ADMIT } from '../../src/gate/decisions.js'
import { airlockControl } from '../../src/core/control.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { hasRedisServer, requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'
import { hit, nextAddress } from '../http/harness.js'

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})
const view = (cookie?: string) => ({
  method: 'GET',
  url: '/',
  headers: cookie ? { cookie } : {},
  secure: false,
  request: undefined,
})

/** Fastify in request mode before `handler`; resolves the app's URL and its gate. */
async function app(options: object, handler: () => Promise<number>): Promise<{ url: string; gate: Gate }> {
  const fastify = Fastify()
  await fastify.register(airlockShield, { mode: 'request', secret: SECRET, logger: { warn: () => {} }, ...options })
  fastify.get('/', async (_req, reply) => reply.code(await handler()).send('x'))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  closers.push(() => fastify.close())
  return {
    url: `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}/`,
    gate: fastify.airlockGate as unknown as Gate,
  }
}

/** `clients` loops until `ms` have passed: a 500 is retried at once (the worst client), a 503 after 10 ms. */
async function drive(url: string, clients: number, ms: number): Promise<Record<number, number>> {
  const end = Date.now() + ms
  const statuses: Record<number, number> = {}
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        const r = await fetch(url).catch(() => null)
        await r?.arrayBuffer()
        const status = r?.status ?? 0
        statuses[status] = (statuses[status] ?? 0) + 1
        if (status !== 200 && status !== 500) await sleep(10)
      }
    }),
  )
  return statuses
}

describe('a failure costs what a success costs', () => {
  it('request mode: a failed request keeps its slot about as long as a good one, and its instance takes one slot less at once', async () => {
    const gate = createGate({
      mode: 'request',
      reuseWindow: 0,
      limit: { min: 2, max: 50, initial: 10 },
      store: memoryStore(),
    })
    closers.push(() => gate.close())
    await until(() => gate.limit === 10)
    const good = await gate.decide(view())
    await sleep(60)
    expect(good.kind === 'admit' && (await good.slot!.release(false))).toBe(true)
    const bad = await gate.decide(view())
    if (bad.kind !== 'admit' || bad.slot === undefined) throw new Error('not admitted')
    const t0 = performance.now()
    const released = bad.slot.release(true)
    expect(gate.limit).toBe(9)
    expect((await gate.state()).held).toBe(1) // kept, not freed at once
    await released
    expect(performance.now() - t0).toBeGreaterThanOrEqual(40) // about the good request's 60 ms
    expect((await gate.state()).held).toBe(0)
  })

  it('a backend that fails at once above its capacity: a slot past it does not turn into thousands of failures', {
    timeout: 20_000,
  }, async () => {
    // Capacity 5: 30 ms pages while at most 5 are inside, an instant 500 above (a pool that throws).
    let inside = 0
    const { url, gate } = await app({ limit: { min: 2, max: 100, initial: 20 }, store: memoryStore() }, async () => {
      if (inside >= 5) return 500
      inside++
      await sleep(30)
      inside--
      return 200
    })
    const statuses = await drive(url, 30, 4_000)
    const runs = (statuses[200] ?? 0) + (statuses[500] ?? 0)
    // Before: the 15 slots past the capacity cycled through instant 500s (74 % of runs failed in
    // this test). Now the first overshoot costs about one failure a slot, then probes one or two
    // each (about 7 % on a quiet machine; the margin is for a busy one, where fewer runs succeed).
    expect(statuses[200]).toBeGreaterThan(200)
    expect((statuses[500] ?? 0) / runs).toBeLessThan(0.25)
    expect(gate.limit).toBeLessThanOrEqual(8)
  })

  it("session mode: a pass whose request failed waits a good request's time before its next one; one failure brakes newcomers by one", async () => {
    const gate = createGate({ limit: { min: 2, max: 50, initial: 10 }, store: memoryStore(), secret: SECRET })
    closers.push(() => gate.close())
    await until(() => gate.limit === 10)
    const first = await gate.decide(view())
    const cookie = first.setCookie!.split(';')[0]!
    gate.measure(80, false, first)
    const pass = await gate.decide(view(cookie))
    expect(pass.kind).toBe('pass')
    gate.measure(2, true, pass)
    expect(gate.limit).toBe(9)
    const t0 = performance.now()
    const next = gate.decide(view(cookie))
    expect(next).toBeInstanceOf(Promise)
    expect((await next).kind).toBe('pass')
    expect(performance.now() - t0).toBeGreaterThanOrEqual(60)
    // The wait is once: the request after it goes on at once.
    expect(gate.decide(view(cookie))).not.toBeInstanceOf(Promise)
    // A request let in without a slot while the store failed teaches the limit nothing.
    expect(gate.measures(OPEN_ADMIT)).toBe(false)
    expect(gate.measures(pass)).toBe(true)
  })
})

describe('session mode: passes out above the figure in force', () => {
  it("a visitor whose request fails while more passes are out than the figure gives its pass back: its next request is a newcomer's (busy), not another failure", {
    timeout: 20_000,
  }, async () => {
    // A backend that fails at once above 4 inside; 12 visitors in at the start (initial 12).
    let inside = 0
    const fastify = Fastify()
    await fastify.register(airlockShield, {
      mode: 'session',
      secret: SECRET,
      logger: { warn: () => {} },
      limit: { min: 2, max: 50, initial: 12 },
      store: memoryStore(),
    })
    fastify.get('/', async (_req, reply) => {
      if (inside >= 4) return reply.code(500).send('refused')
      inside++
      await sleep(20)
      inside--
      return 'ok'
    })
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => fastify.close())
    const url = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}/`
    const end = Date.now() + 3_000
    // Per visitor: after one of its requests with a pass failed, what its next answers were.
    let passHolderBusy = 0
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        let cookie: string | undefined
        let failedWithPass = false
        const from = nextAddress() // a visitor of its own (the client share counts by address)
        while (Date.now() < end) {
          const r = await hit(url, { headers: cookie ? { cookie } : {}, from })
          cookie = r.cookies[0]?.split(';')[0] ?? cookie
          if (r.status === 500 && cookie) failedWithPass = true
          if (r.status === 503 && failedWithPass) passHolderBusy++
          if (r.status !== 200) await sleep(30)
        }
      }),
    )
    // Before: a pass holder always passed, so past the capacity it failed until its visit ended.
    expect(passHolderBusy).toBeGreaterThan(0)
  })
})

describe('session mode: a latency cut holds at once', () => {
  it('while more passes are out than the figure, a visitor whose request was sharply slower than the baseline gives its pass back', {
    timeout: 20_000,
  }, async () => {
    // 12 visitors in (initial 12); 20 ms a request for 1.5 s, then 200 ms above 4 inside (no failure).
    let inside = 0
    const t0 = Date.now()
    const fastify = Fastify()
    await fastify.register(airlockShield, {
      mode: 'session',
      secret: SECRET,
      logger: { warn: () => {} },
      limit: { min: 2, max: 50, initial: 12 },
      store: memoryStore(),
    })
    fastify.get('/', async () => {
      inside++
      await sleep(Date.now() - t0 > 1_500 && inside > 4 ? 200 : 20)
      inside--
      return 'ok'
    })
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => fastify.close())
    const url = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}/`
    const end = t0 + 5_000
    // Answers 503 to a visitor that had been let in.
    let passHolderBusy = 0
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        let cookie: string | undefined
        const from = nextAddress() // a visitor of its own (the client share counts by address)
        while (Date.now() < end) {
          const r = await hit(url, { headers: cookie ? { cookie } : {}, from })
          if (r.status === 503 && cookie) passHolderBusy++
          cookie = r.cookies[0]?.split(';')[0] ?? cookie
          if (r.status !== 200) await sleep(30)
        }
      }),
    )
    // Before: no request failed, so every visitor let in kept its pass however far the cut went.
    expect(passHolderBusy).toBeGreaterThan(0)
  })
})

function overrideAndRestart(label: string, fresh: () => Store) {
  describe(`learns only what was allowed to happen (${label})`, () => {
    it('no growth while a live limit holds the gate lower; cleared, it goes on from the live figure', {
      timeout: 20_000,
    }, async () => {
      const store = fresh()
      const name = `override-${Math.random().toString(36).slice(2)}`
      const control = airlockControl({ name, store })
      await control.set({ limit: 10 })
      const { url, gate } = await app({ name, limit: { min: 5, max: 200 }, store }, async () => {
        await sleep(20)
        return 200
      })
      await until(() => gate.limitSource === 'control')
      await drive(url, 40, 2_500)
      // Before: the estimate climbed to 200 within 3 s, never having seen more than 10 inside.
      const adaptive = (await gate.status()).adaptive!
      expect(adaptive.limit).toBeLessThanOrEqual(15)
      await control.clear()
      await until(() => gate.limitSource === 'adaptive')
      expect(gate.limit).toBeLessThanOrEqual(15)
      expect(gate.limit).toBeGreaterThanOrEqual(5)
    })

    it("the estimate survives a restart of the gate: the figure and the estimator's state come back from the store", async () => {
      const store = fresh()
      const options = {
        name: `restart-${Math.random().toString(36).slice(2)}`,
        limit: { min: 2, max: 100, initial: 40 },
        store,
        secret: SECRET,
      }
      const a = createGate(options)
      for (let i = 0; i < 40; i++) a.measure(50, false)
      await until(async () => (await a.status()).adaptive?.baseline !== null)
      for (let i = 0; i < 6; i++) a.measure(50, true)
      await until(() => a.limit < 40)
      await sleep(300)
      const before = (await a.status()).adaptive!
      await a.close()
      const b = createGate(options)
      closers.push(() => b.close())
      await until(() => b.limit === before.limit, 1_000)
      const after = (await b.status()).adaptive!
      expect(after).toMatchObject({ limit: before.limit, baseline: before.baseline })
    })
  })
}

overrideAndRestart('memory store', () => memoryStore())

requireRedis()
if (hasRedisServer) {
  const priv = usePrivateRedis()
  overrideAndRestart('Redis', () => priv.store)

  it('a store that lost its data (FLUSHDB on a private server): the gate goes on from the figure in force, not from its initial setting', async () => {
    const name = `lost-${Math.random().toString(36).slice(2)}`
    const gate = createGate({ name, limit: { min: 2, max: 100, initial: 40 }, store: priv.store, secret: SECRET })
    closers.push(() => gate.close())
    for (let i = 0; i < 40; i++) gate.measure(50, false)
    await until(async () => (await gate.status()).adaptive?.baseline !== null)
    for (let i = 0; i < 6; i++) gate.measure(50, true)
    await until(() => gate.limit < 40)
    await sleep(300)
    const before = gate.limit
    const admin = priv.redis.client()
    await admin.flushdb() // a private server: nobody else's data
    admin.disconnect()
    await sleep(500)
    // Before: the next window read no figure and went back to 40, a figure that had just failed.
    expect((await gate.status()).adaptive!.limit).toBe(before)
    expect(gate.limit).toBeLessThanOrEqual(before)
  })
}
