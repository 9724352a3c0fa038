/**
 * Every option of every public factory and method, walked with the standard bad values of its kind
 * (test/helpers/options.ts): each is `ERR_AIRLOCK_OPTION` at creation (or at the call, before any
 * store call), with a message naming the option. Then the documented extremes are accepted, and no
 * timer overflowed along the way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { airlock } from '../src/express.js'
import { createLockServer } from '../src/lock-server.js'
import { createSemaphore, createGate, isAirlockError, memoryStore } from '../src/index.js'
import { redisStore } from '../src/redis.js'
import { countingStore, recordingLogger } from './helpers/stores.js'
import { PAST_TIMER, patch, rows, show, UNKNOWN, LONGEST } from './helpers/options.js'
import { closeTargets, failure, openTargets, SECRET, store, targets } from './helpers/option-targets.js'
import { sleep } from './helpers/wait.js'

const warnings: Error[] = []
const onWarning = (w: Error): void => void warnings.push(w)

beforeAll(async () => {
  process.on('warning', onWarning)
  await openTargets()
})
afterAll(async () => {
  process.off('warning', onWarning)
  await closeTargets()
})

describe('every option of every public factory', () => {
  for (const target of targets) {
    const table = rows(target.specs, target.nested, !target.positional).map((r) => ({ ...r, whole: false }))
    if (target.whole) for (const value of ['x', 1, true, null]) table.push({ option: target.label, value, whole: true })

    describe(target.name, () => {
      it.each(table.map((r) => [`${r.option} = ${show(r.value)}`, r] as const))(
        '%s → ERR_AIRLOCK_OPTION naming it',
        async (_, row) => {
          const calls = store.total()
          const options = row.whole ? row.value : { ...target.base, ...patch(row.option, row.value) }
          const err = await failure(() => target.make(options))
          expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION'), String(err)).toBe(true)
          const named = row.option === UNKNOWN || row.option.endsWith(`.${UNKNOWN}`) ? `'${UNKNOWN}'` : row.option
          expect((err as Error).message).toContain(named)
          expect(store.total(), 'no store call before the options were checked').toBe(calls)
        },
      )

      it.each(target.valid.map((v) => [JSON.stringify(v, (_k, x) => (x === Infinity ? 'Infinity' : x)), v] as const))(
        'accepts %s',
        async (_, valid) => {
          expect(await failure(() => target.make({ ...target.base, ...valid }))).toBeUndefined()
        },
      )
    })
  }
})

describe('the measured symptoms (issue 12)', () => {
  it('run() with ttl 2^33 is refused at once, without a single store call', async () => {
    const counted = countingStore(memoryStore())
    const attempt = async (): Promise<unknown> =>
      createSemaphore({ name: 'huge-ttl', limit: 1, ttl: 2 ** 33, store: counted }).run(() => sleep(300))
    await expect(attempt()).rejects.toSatisfy(
      (err: Error) =>
        isAirlockError(err, 'ERR_AIRLOCK_OPTION') &&
        err.message ===
          'ttl must be at most 2147483647 ms (about 24.8 days, the longest a timer can wait), got 8589934592',
    )
    expect(counted.total()).toBe(0)
  })

  it('a gate with storeTimeout 2^31 is refused at creation', () => {
    expect(() => createGate({ storeTimeout: PAST_TIMER, logger: recordingLogger() })).toThrow(
      /^storeTimeout must be at most 2147483647 ms \(about 24\.8 days, the longest a timer can wait\), got 2147483648$/,
    )
  })

  it("memoryStore({ now: 'x' }) is refused at creation, not with a TypeError at the first call", () => {
    expect(() => memoryStore({ now: 'x' as never })).toThrow(/^now must be a function returning the time in ms/)
  })

  it('a retryInterval whose 10x idle timeout would overflow is refused, naming retryInterval', () => {
    expect(() => createSemaphore({ name: 'poll', limit: 1, ttl: 1000, retryInterval: LONGEST })).toThrow(
      /^retryInterval must be at most 214748364 ms \(a blocking waiter's idle timeout, 10 × retryInterval, must fit 2147483647 ms/,
    )
  })

  // Last: every row above has run.
  it('no TimeoutOverflowWarning was emitted by any of the above', async () => {
    await new Promise((resolve) => setImmediate(resolve))
    expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([])
  })
})

describe('misuse caught with one sentence (issue 25)', () => {
  it('Express: app.use(airlock), the factory uncalled, answers each request with the sentence that says how to call it', async () => {
    const { default: express } = await import('express')
    const app = express()
    app.use(airlock as never)
    const seen: string[] = []
    app.use((err: Error, _req: unknown, res: { status(n: number): { end(): void } }, _next: unknown) => {
      seen.push(err.message)
      res.status(500).end()
    })
    const server = app.listen(0, '127.0.0.1')
    await new Promise((r) => server.once('listening', r))
    try {
      const r = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`)
      expect(r.status).toBe(500)
      expect(seen).toEqual([
        'airlock is a middleware factory: write app.use(airlock({ limit: 20, ... })), not app.use(airlock)',
      ])
    } finally {
      server.close()
    }
  })

  it('redisStore(redis), a client where { client } is expected, is refused naming the fix', () => {
    const redis = new Redis({ lazyConnect: true })
    expect(() => redisStore(redis as never)).toThrow(
      'redisStore() takes an options object: write redisStore({ client: redis }), not redisStore(redis)',
    )
    redis.disconnect()
  })
})

describe('durations people can read, and unit mistakes caught (issue 25)', () => {
  it("every duration also takes '250ms', '60s', '5m', '1h'; a bare number stays milliseconds", () => {
    const gate = createGate({
      passTtl: '5m',
      provisionalTtl: '10s',
      recheckInterval: '2.5s',
      storeTimeout: '250ms',
      secret: SECRET,
      logger: recordingLogger(),
    })
    expect([gate.passTtl, gate.provisionalTtl, gate.recheckInterval, gate.storeTimeout]).toEqual([
      300_000, 10_000, 2_500, 250,
    ])
    expect(createGate({ passTtl: 90_000, secret: SECRET, logger: recordingLogger() }).passTtl).toBe(90_000)
    expect(createSemaphore({ name: 'readable', limit: 1, ttl: '1h' as never }).ttl).toBe(3_600_000)
    expect(() => createGate({ passTtl: '5 minutes' as never })).toThrow(
      "passTtl must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got \"5 minutes\"",
    )
  })

  it('passTtl: 60 (surely seconds) and retryAfter: 5000 (surely milliseconds) are refused with the likely intent', () => {
    expect(() => createGate({ passTtl: 60 })).toThrow(
      "passTtl is in milliseconds: 60 is 60 ms; did you mean '60s'? (write '60ms' if you do mean milliseconds)",
    )
    expect(
      createGate({
        passTtl: '600ms',
        provisionalTtl: '300ms',
        recheckInterval: '300ms',
        secret: SECRET,
        logger: recordingLogger(),
      }).passTtl,
    ).toBe(600)
    expect(() => createGate({ retryAfter: 5000 })).toThrow(
      'retryAfter is in seconds and at most 3600 (an hour): 5000 is 83 min; did you mean 5?',
    )
  })
})

describe('options the adversarial run found accepted (issue 25)', () => {
  it("the dashboard's interval: NaN, 0, -1, Infinity, 0.5 and 50 ms refused naming it; '1s' taken", async () => {
    const { createDashboard } = await import('../src/dashboard.js')
    const make = (interval: unknown) =>
      createDashboard({ token: 't'.repeat(24), store: memoryStore(), names: ['a'], interval: interval as never })
    for (const bad of [Number.NaN, 0, -1, Infinity, 0.5, 50])
      expect(() => make(bad), String(bad)).toThrow(/^interval must be/)
    await make('1s').close()
  })

  it("the proxy's metricsPath: '/', a query, a fragment, spaces, '//x' refused naming it", async () => {
    const { createProxy } = await import('../src/proxy.js')
    for (const bad of ['/', '/metrics?x=1', '/a#b', '/m x', '//x', 'metrics']) {
      await expect(
        createProxy({ target: 'http://127.0.0.1:9', metricsPath: bad, secret: SECRET }),
        bad,
      ).rejects.toThrow(/^metricsPath must be a path of its own/)
    }
  })

  it("createLockServer takes a logger shaped as the gate's docs describe ({ warn }) instead of failing inside Fastify", async () => {
    const said: string[] = []
    const server = createLockServer({
      store: memoryStore(),
      apiKeys: { read: ['r'.repeat(24)], write: ['w'.repeat(24)] },
      logger: { warn: (_o: object, m?: string) => void said.push(m ?? '') } as never,
    })
    await server.close()
  })
})

describe('leftovers the options fuzz let through (issue 42)', () => {
  const gate = (options: Record<string, unknown>) =>
    createGate({ secret: SECRET, logger: recordingLogger(), store: memoryStore(), ...options } as never)

  it('a limit of 2^31 or more is refused, naming the option, the largest count and what to do instead', async () => {
    expect(() => gate({ limit: PAST_TIMER })).toThrow(
      'limit must be at most 2147483647 (2^31 − 1; no site serves more visitors or requests at once: to let everyone in, leave the route ungated with bypass or skip), got 2147483648',
    )
    expect(() => gate({ limit: { min: 1, max: PAST_TIMER } })).toThrow(
      'limit.max must be at most 2147483647 (2^31 − 1; no site serves more visitors or requests at once), got 2147483648',
    )
    expect(() => gate({ limit: { min: PAST_TIMER, max: 2 ** 32 } })).toThrow(/^limit\.min must be at most 2147483647/)
    expect(() => gate({ cacheSize: PAST_TIMER })).toThrow(/^cacheSize must be at most 2147483647 \(2\^31 − 1; /)
    expect(() => gate({ clientShare: { places: PAST_TIMER } })).toThrow(
      /^clientShare\.places must be at most 2147483647/,
    )
    expect(() => gate({ clientShare: { perMinute: PAST_TIMER } })).toThrow(
      /^clientShare\.perMinute must be at most 2147483647/,
    )
    for (const largest of [{ limit: LONGEST }, { limit: { min: 1, max: LONGEST } }, { cacheSize: LONGEST }]) {
      const g = gate(largest)
      expect(g.limit, JSON.stringify(largest)).toBeGreaterThanOrEqual(1)
      await g.close()
    }
  })

  it("the proxy's bodyLimit 0 is refused, saying what it would not do and what to do instead", async () => {
    const { createProxy } = await import('../src/proxy.js')
    await expect(createProxy({ target: 'http://127.0.0.1:9', bodyLimit: 0, secret: SECRET })).rejects.toThrow(
      'bodyLimit must be a whole number of bytes, at least 1 (a request whose Content-Length is over it gets 413), got 0: ' +
        '0 would not refuse bodies (a chunked body has no Content-Length and is streamed); to refuse request bodies, refuse them at the origin',
    )
    const proxy = await createProxy({
      target: 'http://127.0.0.1:9',
      bodyLimit: 1,
      secret: SECRET,
      store: memoryStore(),
    })
    await proxy.close()
  })

  it("the proxy's trustProxy takes a hop count as Express and Fastify do; a count that is none is refused naming it", async () => {
    const { createProxy } = await import('../src/proxy.js')
    for (const hops of [0, 1, 2]) {
      const proxy = await createProxy({
        target: 'http://127.0.0.1:9',
        trustProxy: hops,
        secret: SECRET,
        store: memoryStore(),
      })
      await proxy.close()
    }
    for (const bad of [-1, 1.5, Number.NaN, Infinity, PAST_TIMER]) {
      await expect(
        createProxy({ target: 'http://127.0.0.1:9', trustProxy: bad, secret: SECRET }),
        String(bad),
      ).rejects.toThrow(/^trustProxy must be true, false, a number of hops/)
    }
  })
})
