/**
 * The adaptive limit in a gate: against a real fragile handler on Fastify and Express (request
 * mode: the handler's own time), in session mode (the response time), and shared by two gates on
 * one private Redis.
 */
import type { Server } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import express from 'express'
import { airlockShield } from '../../src/fastify.js'
import { airlock } from '../../src/express.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** A handler of capacity c: 100 ms up to c in flight, slower above, 500 past 300 ms (long enough that a busy CI box's jitter is not overload). */
function fragile(c: number) {
  let inFlight = 0
  const seen = { max: 0, failures: 0, maxAfter: 0, watchFrom: Infinity }
  const work = async (): Promise<number> => {
    inFlight++
    seen.max = Math.max(seen.max, inFlight)
    if (Date.now() >= seen.watchFrom) seen.maxAfter = Math.max(seen.maxAfter, inFlight)
    const time = 100 * (1 + Math.max(0, inFlight - c) / 4)
    await sleep(Math.min(time, 300))
    inFlight--
    if (time > 300) seen.failures++
    return time > 300 ? 500 : 200
  }
  return { work, seen }
}

async function drive(url: string, clients: number, ms: number): Promise<void> {
  const end = Date.now() + ms
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        const r = await fetch(url).catch(() => null)
        await r?.arrayBuffer()
        if (r?.status === 503) await sleep(10)
      }
    }),
  )
}

describe.each(['fastify', 'express'])('adaptive limit on %s, request mode', (adapter) => {
  it('learns a capacity of 10 from a start of 2, and keeps the handler out of failure', {
    timeout: 40_000,
  }, async () => {
    const backend = fragile(10)
    let gate: Gate
    let url: string
    if (adapter === 'fastify') {
      const app = Fastify()
      await app.register(airlockShield, {
        mode: 'request',
        limit: { min: 2, max: 100 },
        store: memoryStore(),
        logger: { warn: () => {} },
      })
      app.get('/', async (_req, reply) => reply.code(await backend.work()).send('x'))
      await app.listen({ port: 0, host: '127.0.0.1' })
      closers.push(() => app.close())
      gate = app.airlockGate as unknown as Gate
      url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/`
    } else {
      const app = express()
      const mw = airlock({
        mode: 'request',
        limit: { min: 2, max: 100 },
        store: memoryStore(),
        logger: { warn: () => {} },
      })
      app.use(mw)
      app.get('/', (_req, res) => void backend.work().then((status) => res.status(status).send('x')))
      const server: Server = await new Promise((ok) => {
        const s = app.listen(0, '127.0.0.1', () => ok(s))
      })
      closers.push(
        () => new Promise((ok) => server.close(ok)),
        () => mw.close(),
      )
      gate = mw.gate as unknown as Gate
      url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
    }
    expect(gate.limit).toBe(2)
    backend.seen.watchFrom = Date.now() + 5_000
    await drive(url, 40, 9_000)
    const status = await gate.status()
    expect(status.limitSource).toBe('adaptive')
    expect(status.adaptive).toMatchObject({ min: 2, max: 100 })
    expect(status.adaptive!.baseline).toBeGreaterThan(90)
    // Found: near 10, and from 5 s on never where the handler fails (more than 10 + 8 in flight).
    expect(gate.limit).toBeGreaterThanOrEqual(5)
    expect(gate.limit).toBeLessThanOrEqual(16)
    expect(backend.seen.maxAfter).toBeLessThanOrEqual(18)
    expect(backend.seen.maxAfter).toBeGreaterThanOrEqual(5)
  })
})

describe('adaptive limit options and session mode', () => {
  it.each([
    [{ min: 0, max: 5 }, 'limit.min must be a positive integer'],
    [{ min: 5, max: 3 }, 'limit.max must be at least limit.min (5), got 3'],
    [{ min: 5, max: 10, initial: 20 }, 'limit.initial must be within limit.min and limit.max (5..10), got 20'],
    [{ min: 5, max: 10, start: 6 }, 'start'],
  ])('limit %j is refused: %s', (limit, message) => {
    try {
      createGate({ limit: limit as never })
      expect.unreachable()
    } catch (err) {
      expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
      expect((err as Error).message).toContain(message)
    }
  })

  it('session mode learns from the response times the adapter reports', async () => {
    const gate = createGate({ limit: { min: 3, max: 50, initial: 4 }, store: memoryStore(), secret: SECRET })
    closers.push(() => gate.close())
    expect([gate.limit, gate.adaptive]).toEqual([4, true])
    for (let i = 0; i < 40; i++) gate.measure(20, false)
    await gate.decide({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined }) // admitted
    for (let i = 0; i < 6; i++)
      await gate.decide({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })
    await until(async () => Math.abs(((await gate.status()).adaptive?.recent ?? 0) / 20 - 1) < 0.013, 2_000)
    for (let i = 0; i < 40; i++) gate.measure(30, true)
    await until(() => gate.limit === 3, 2_000) // failures: cut to min
  })
})

requireRedis()

describe('adaptive limit across instances', () => {
  const priv = usePrivateRedis()

  it('two gates on one Redis share one figure: failures seen by one lower it for both', async () => {
    const options = {
      name: 'fleet-adaptive',
      limit: { min: 2, max: 200, initial: 40 },
      store: priv.store,
      secret: SECRET,
    }
    const a = createGate(options)
    const b = createGate(options)
    closers.push(
      () => a.close(),
      () => b.close(),
    )
    await until(() => a.limit === 40 && b.limit === 40, 2_000)
    for (let i = 0; i < 20; i++) a.measure(30, true)
    await until(() => a.limit < 40 && b.limit === a.limit, 3_000)
    await sleep(600)
    expect(b.limit).toBe(a.limit)
    expect(a.limit).toBeGreaterThanOrEqual(2)
  })

  it('one judge at a time for the fleet: what one gate measured is what the other shows', async () => {
    const options = { name: 'fleet-judge', limit: { min: 2, max: 200, initial: 10 }, store: priv.store, secret: SECRET }
    const a = createGate(options)
    const b = createGate(options)
    closers.push(
      () => a.close(),
      () => b.close(),
    )
    for (let i = 0; i < 50; i++) a.measure(80, false)
    await until(async () => Math.abs(((await b.status()).adaptive?.recent ?? 0) / 80 - 1) < 0.013, 3_000)
    const baseline = (await b.status()).adaptive?.baseline
    expect(baseline).not.toBeNull()
    await until(async () => (await a.status()).adaptive?.baseline === baseline, 2_000)
  })
})
