/**
 * Seeing the gate live: its events on node:diagnostics_channel (payloads as documented, nothing
 * published without a subscriber), and its cluster-wide status: two instances on one private Redis
 * each report their counters; either one's status shows both, the slots held and the line.
 */
import diagnostics from 'node:diagnostics_channel'
import { afterEach, describe, expect, it } from 'vitest'
import { addVisitSink, createGate, type Gate, type GateOptions, type RequestView } from '../../src/gate/gate.js'
import {
  decisionChannel,
  type BreakerEvent,
  type DecisionEvent,
  type QueueEvent,
  type ReleaseEvent,
  type StoreEvent,
} from '../../src/base/events.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep, until } from '../helpers/wait.js'

requireRedis()
const SECRET = 'status-test-secret-of-32-bytes-or-more'
const view = (cookie?: string, extra: Partial<RequestView> = {}): RequestView => ({
  method: 'GET',
  url: '/',
  headers: cookie ? { cookie, accept: 'text/html' } : { accept: 'text/html' },
  secure: false,
  request: undefined,
  ...extra,
})
const cookieOf = (d: { setCookie?: string }) => d.setCookie!.split(';')[0]!

function listen<T>(name: string): { events: T[]; stop(): void } {
  const events: T[] = []
  const onMessage = (m: unknown) => events.push(m as T)
  diagnostics.subscribe(name, onMessage)
  return { events, stop: () => diagnostics.unsubscribe(name, onMessage) }
}

describe('gate events (node:diagnostics_channel)', () => {
  const gates: Gate[] = []
  const make = (o: GateOptions) => {
    const g = createGate({ secret: SECRET, logger: recordingLogger(), ...o })
    gates.push(g)
    return g
  }
  afterEach(async () => {
    await Promise.all(gates.splice(0).map((g) => g.close()))
  })

  it('airlock:decision: every decision with its kind, reason and duration; nothing published without a subscriber', async () => {
    const gate = make({ limit: 1, store: memoryStore(), bypass: ['/health'] })
    const decisions = listen<DecisionEvent>('airlock:decision')
    try {
      const first = await gate.decide(view())
      await gate.decide(view()) // busy: the one slot is taken
      await gate.decide(view(cookieOf(first))) // the pass, upgraded
      await gate.decide(view(undefined, { url: '/health' }))
      expect(decisions.events.map((e) => [e.gate, e.mode, e.kind, e.reason])).toEqual([
        ['default', 'session', 'admit', 'slot'],
        ['default', 'session', 'busy', 'full'],
        ['default', 'session', 'pass', undefined],
        ['default', 'session', 'bypass', undefined],
      ])
      for (const e of decisions.events) expect(e.durationMs).toBeGreaterThanOrEqual(0)
    } finally {
      decisions.stop()
    }
    expect(decisionChannel.hasSubscribers).toBe(false)
    await gate.decide(view()) // no subscriber: nothing to receive, nothing built
    expect(decisions.events).toHaveLength(4)
  })

  it('airlock:queue: a new place, a visitor waiting, admission from the line, a full line', async () => {
    const store = memoryStore()
    const gate = make({ limit: 1, store, queue: { maxLength: 1 } })
    const queue = listen<QueueEvent>('airlock:queue')
    try {
      const holder = await gate.decide(view())
      expect(holder.kind).toBe('admit')
      const queued = await gate.decide(view())
      expect(queued.kind).toBe('queued')
      const ticket = cookieOf(queued)
      await gate.decide(view(ticket))
      expect((await gate.decide(view())).kind).toBe('busy') // the line is full
      await gate.release(holder)
      expect((await gate.decide(view(ticket))).kind).toBe('admit')
      expect(queue.events.slice(0, 3)).toEqual([
        { gate: 'default', event: 'enter', position: 1, waiting: 1, waitMs: null, count: 1 },
        { gate: 'default', event: 'wait', position: 1, waiting: 1, waitMs: null, count: 1 },
        { gate: 'default', event: 'full', position: null, waiting: 1, waitMs: null, count: 1 },
      ])
      expect(queue.events.slice(3)).toMatchObject([
        { gate: 'default', event: 'admit', position: null, waiting: null, count: 1 },
      ])
      expect(queue.events[3]!.waitMs).toBeGreaterThanOrEqual(0)
    } finally {
      queue.stop()
    }
  })

  it('airlock:release, abandoned places and the figures in status(): an expired pass with its visit, a lapsed place, a release by the origin', async () => {
    let now = Date.now()
    const store = memoryStore({ now: () => now })
    const gate = make({ limit: 1, store, provisionalTtl: 10_000, queue: { maxLength: 5 } })
    const released = listen<ReleaseEvent>('airlock:release')
    const queue = listen<QueueEvent>('airlock:queue')
    const sunk: string[] = []
    const remove = addVisitSink(gate, {
      admitted: (from, waitMs) => sunk.push(`admitted ${from} ${waitMs === null ? 'null' : 'ms'}`),
      turnedAway: (reason) => sunk.push(`turned away ${reason}`),
      abandoned: (count) => sunk.push(`abandoned ${count}`),
      released: (by, visitMs) => sunk.push(`released ${by} ${visitMs}`),
    })
    try {
      expect((await gate.decide(view())).kind).toBe('admit') // its provisional pass is never confirmed
      expect((await gate.decide(view())).kind).toBe('queued') // its place is never seen again
      now += 60_000 // the store's clock: the slot expired, the place lapsed
      const next = await gate.decide(view())
      expect(next.kind).toBe('admit')
      expect(released.events).toEqual([{ gate: 'default', by: 'expiry', visitMs: 10_000 }])
      expect(queue.events.filter((e) => e.event === 'abandon')).toEqual([
        { gate: 'default', event: 'abandon', position: null, waiting: null, waitMs: null, count: 1 },
      ])
      now += 2_500 // the site gives the pass back 2.5 s after its admission: the store tells how long it was held
      expect(await gate.release(next)).toBe(true)
      expect(released.events[1]).toEqual({ gate: 'default', by: 'origin', visitMs: 2_500 })
      expect(await gate.release(next)).toBe(false)
      expect(released.events).toHaveLength(2)
      expect(sunk).toEqual([
        'admitted slot null',
        'released expiry 10000',
        'abandoned 1',
        'admitted slot null',
        'released origin 2500',
      ])
      const self = (await gate.status()).instances[0]!
      expect(self.counters).toMatchObject({
        admitted: 2,
        admittedFromLine: 0,
        abandoned: 1,
        released: { visitor: 0, origin: 1, expiry: 1, operator: 0 },
      })
      expect(self.visitMs).toMatchObject({ max: 10_000, count: 2 })
      expect(self.waitMs).toEqual({ p50: null, p90: null, max: null, count: 0 })
      remove()
      await gate.decide(view())
      expect(sunk).toHaveLength(5)
    } finally {
      released.stop()
      queue.stop()
    }
  })

  it.runIf(redisAvailable)(
    'on Redis, a session pass given back early has its visit length: from its grant on the Redis clock to the release',
    async () => {
      const redis = await startRedis()
      const store = redisStore({ client: redis.client() })
      const gate = make({ limit: 2, store })
      const released = listen<ReleaseEvent>('airlock:release')
      try {
        const first = await gate.decide(view())
        expect(first.kind).toBe('admit')
        await sleep(300)
        expect(await gate.release(first)).toBe(true)
        expect(released.events).toHaveLength(1)
        const visitMs = released.events[0]!.visitMs
        expect(visitMs).toBeGreaterThanOrEqual(280) // Redis TIME and this clock may differ by a millisecond or so
        expect(visitMs).toBeLessThan(10_000)
        expect(await gate.release(first)).toBe(false)
        expect(released.events).toHaveLength(1)
        expect((await gate.status()).instances[0]!.visitMs).toMatchObject({ count: 1 })
      } finally {
        released.stop()
        await store.close()
        await redis.stop()
      }
    },
  )

  it.runIf(redisAvailable)(
    'airlock:store and airlock:breaker: each Redis call with its script and duration; the breaker opening and closing',
    async () => {
      const redis = await startRedis()
      const store = redisStore({ client: redis.client({ maxRetriesPerRequest: 0 }), commandTimeout: 200 })
      const gate = make({ limit: 5, store, storeTimeout: 300 })
      const calls = listen<StoreEvent>('airlock:store')
      const breaker = listen<BreakerEvent>('airlock:breaker')
      try {
        await gate.decide(view())
        // The gate's first read of its live control may land first on a busy box: find the decision's call.
        expect(calls.events.find((e) => e.operation === 'acquire')).toMatchObject({
          store: 'redis',
          name: 'default',
          operation: 'acquire',
          ok: true,
          error: undefined,
        })
        await redis.kill()
        for (let i = 0; i < 3; i++) await gate.decide(view())
        expect(calls.events.some((e) => !e.ok && e.error === 'ERR_AIRLOCK_STORE_UNAVAILABLE')).toBe(true)
        expect(breaker.events).toEqual([{ gate: 'default', state: 'open' }])
        await redis.start()
        await until(() => breaker.events.length === 2, 10_000)
        expect(breaker.events[1]).toEqual({ gate: 'default', state: 'closed' })
      } finally {
        calls.stop()
        breaker.stop()
        await store.close()
        await redis.stop()
      }
    },
  )
})

describe.runIf(redisAvailable)('cluster-wide status on one Redis', () => {
  let redis: PrivateRedis | undefined
  const stores: RedisStore[] = []
  const gates: Gate[] = []
  afterEach(async () => {
    await Promise.all(gates.splice(0).map((g) => g.close()))
    await Promise.all(stores.splice(0).map((s) => s.close()))
    await redis?.stop()
  })

  it('two instances report their own counters; either status shows both, the slots, the line and the ETA', async () => {
    redis = await startRedis()
    const instance = () => {
      const store = redisStore({ client: redis!.client() })
      stores.push(store)
      const gate = createGate({
        limit: 3,
        store,
        secret: SECRET,
        queue: true,
        statusInterval: 100,
        logger: recordingLogger(),
      })
      gates.push(gate)
      return gate
    }
    const [a, b] = [instance(), instance()]
    await a.decide(view())
    await a.decide(view())
    await b.decide(view()) // the third slot
    const queued = await b.decide(view()) // the line
    expect(queued.kind).toBe('queued')
    await sleep(350) // both reported
    for (const [self, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const st = await self.status()
      expect(st).toMatchObject({
        name: 'default',
        mode: 'session',
        limit: 3,
        held: 3,
        available: 0,
        waiting: 1,
        admittedLastMinute: 3,
      })
      expect(st.instances).toHaveLength(2)
      expect(st.instances[0]!.self).toBe(true)
      const byAdmitted = st.instances.map((i) => [i.self, i.counters.admitted, i.counters.queued, i.limit]).sort()
      expect(byAdmitted).toEqual(
        self === a
          ? [
              [false, 1, 1, 3],
              [true, 2, 0, 3],
            ]
          : [
              [false, 2, 0, 3],
              [true, 1, 1, 3],
            ],
      )
      expect(other).toBeDefined()
      expect(st.eta).toBeNull() // nobody was admitted from the line yet: no rate
    }
    // An instance that stops reporting drops out after its reports lapse (3 intervals, at least 2 s).
    await a.close()
    await until(async () => (await b.status()).instances.length === 1, 6_000, 100)
  })
})
