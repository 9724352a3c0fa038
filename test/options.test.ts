/**
 * Every option of every public factory and method, walked with the standard bad values of its kind
 * (test/helpers/options.ts): each is `ERR_AIRLOCK_OPTION` at creation (or at the call, before any
 * store call), with a message naming the option. Then the documented extremes are accepted, and no
 * timer overflowed along the way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { airlock } from '../src/express.js'
import { airlockShield } from '../src/fastify.js'
import { createLockServer, memoryResources, redisResources } from '../src/lock-server.js'
import { createSemaphore, createSigner, createWaitingRoom, createGate, isAirlockError, memoryStore, newVisitorId, throttle, type Lease } from '../src/index.js'
import { redisStore } from '../src/redis.js'
import { countingStore, recordingLogger } from './helpers/stores.js'
import { freePort } from './helpers/redis.js'
import { LONGEST, PAST_TIMER, patch, rows, show, UNKNOWN, type OptionSpec } from './helpers/options.js'
import { sleep } from './helpers/wait.js'

const SECRET = 'o'.repeat(32)
const API_KEY = 'options-test-key-0123456789'
const store = countingStore(memoryStore())
const sem = createSemaphore({ name: 'options', limit: 2, ttl: 5_000, store })
const room = createWaitingRoom({ name: 'options-room', limit: 2, ttl: 5_000, store })
let lease: Lease
let client: Redis
const warnings: Error[] = []
const onWarning = (w: Error): void => void warnings.push(w)

beforeAll(async () => {
  process.on('warning', onWarning)
  lease = (await sem.acquire())!
  // A real ioredis client that never connects (lazyConnect, nothing is sent), on a port nothing serves.
  client = new Redis({ port: await freePort(), lazyConnect: true, maxRetriesPerRequest: 0 })
})
afterAll(async () => {
  process.off('warning', onWarning)
  await lease.release()
  client.disconnect()
})

/** A factory or method under test: builds from an options value (sync: throws; async: rejects). */
interface Target {
  name: string
  /** What a message about the options argument itself names. */
  label: string
  base: Record<string, unknown>
  specs: readonly OptionSpec[]
  nested?: readonly string[]
  /** Whether rows replacing the whole options argument apply. */
  whole?: boolean
  /** A positional argument, not an options object: no unknown-key row. */
  positional?: boolean
  make(options: unknown): unknown
  /** Valid extremes: each must be accepted. */
  valid: readonly Record<string, unknown>[]
}

/** Closes, stops or releases whatever an accepted row made. */
async function dispose(made: unknown): Promise<void> {
  const m = made as { release?: () => unknown; close?: () => unknown } | null
  if (m && typeof m.close === 'function') await m.close()
  else if (m && typeof m.release === 'function') await m.release()
}

const fn = (): string => 'done'
const GATE_SPECS: readonly OptionSpec[] = [
  ['name', 'name'],
  ['limit', 'count'],
  ['mode', 'choice'],
  ['passTtl', 'duration'],
  ['provisionalTtl', 'duration'],
  ['recheckInterval', 'duration'],
  ['ttl', 'duration'],
  ['reuseWindow', 'durationOrZero'],
  ['retryAfter', 'seconds'],
  ['storeTimeout', 'duration'],
  ['cacheSize', 'count'],
  ['confirm', 'boolean'],
  ['onStoreError', 'choice'],
  ['secret', 'custom', ['short', 1, {}, [], [SECRET, 'short']]],
  ['bypass', 'custom', ['health', 1, {}, [1]]],
  ['skip', 'function'],
  ['nonce', 'function'],
  ['busyPage', 'custom', [1, true, {}]],
  ['logger', 'custom', [1, 'x', true, {}]],
  ['store', 'store'],
  ['cookie', 'object'],
  ['cookie.name', 'custom', ['', 'has space', 1, {}]],
  ['cookie.path', 'custom', ['', 'x', '/a;b', 1]],
  ['cookie.domain', 'custom', ['', 'a b', 'x;y', 1]],
  ['cookie.secure', 'custom', ['yes', 1, {}]],
  ['cookie.sameSite', 'choice'],
  ['cookie.httpOnly', 'boolean'],
  ['queue', 'custom', ['x', 1, () => 1]],
  ['queue.order', 'choice'],
  ['queue.maxLength', 'countOrZero'],
  ['queue.idleTimeout', 'duration'],
  ['queue.claimWindow', 'duration'],
  ['queue.confirmTimeout', 'duration'],
  ['queue.pollInterval', 'duration'],
  ['queue.page', 'function'],
]
const GATE_VALID = [
  { passTtl: LONGEST, provisionalTtl: LONGEST, recheckInterval: LONGEST, storeTimeout: LONGEST, retryAfter: 3600 },
  { mode: 'request', ttl: LONGEST, reuseWindow: LONGEST, limit: Number.MAX_SAFE_INTEGER, cacheSize: Number.MAX_SAFE_INTEGER },
  { mode: 'request', reuseWindow: 0 },
  { queue: { idleTimeout: LONGEST, claimWindow: LONGEST, confirmTimeout: LONGEST, maxLength: 0 } },
  { queue: { idleTimeout: LONGEST, claimWindow: LONGEST, pollInterval: Math.floor(LONGEST / 2.5) - 1 } },
]

const targets: Target[] = [
  {
    name: 'createSemaphore',
    label: 'createSemaphore()',
    base: { name: 'options', limit: 2, ttl: 1_000, store },
    specs: [['name', 'name'], ['limit', 'count'], ['ttl', 'duration'], ['store', 'store'], ['retryInterval', 'duration', [Math.floor(LONGEST / 10) + 1]]],
    whole: true,
    make: (o) => createSemaphore(o as never),
    valid: [{ ttl: LONGEST, retryInterval: Math.floor(LONGEST / 10) }, { limit: Number.MAX_SAFE_INTEGER }],
  },
  {
    name: 'sem.acquire',
    label: 'acquire()',
    base: {},
    specs: [['weight', 'count', [3]]],
    whole: true,
    make: (o) => sem.acquire(o as never),
    valid: [{ weight: 1 }],
  },
  {
    name: 'sem.acquireBlocking',
    label: 'acquireBlocking()',
    base: {},
    specs: [['timeout', 'wait'], ['weight', 'count', [3]], ['signal', 'signal']],
    whole: true,
    make: (o) => sem.acquireBlocking(o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST }, { timeout: 0, signal: new AbortController().signal }],
  },
  {
    name: 'sem.run',
    label: 'run()',
    base: {},
    specs: [['timeout', 'wait'], ['weight', 'count', [3]], ['signal', 'signal'], ['autoRefresh', 'boolean']],
    whole: true,
    make: (o) => sem.run(fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST, autoRefresh: false }, { signal: new AbortController().signal }],
  },
  {
    name: 'lease.refresh',
    label: 'ttl',
    base: {},
    specs: [['ttl', 'duration']],
    positional: true,
    make: (o) => lease.refresh((o as { ttl?: number }).ttl),
    valid: [{ ttl: LONGEST }],
  },
  {
    name: 'createWaitingRoom',
    label: 'createWaitingRoom()',
    base: { name: 'options-room', limit: 2, ttl: 1_000, store },
    specs: [
      ['name', 'name'],
      ['limit', 'count'],
      ['ttl', 'duration'],
      ['store', 'store'],
      ['order', 'choice'],
      ['maxLength', 'countOrZero'],
      ['idleTimeout', 'duration'],
      ['claimWindow', 'duration'],
      ['confirmTimeout', 'durationOrZero'],
      ['retryInterval', 'duration'],
    ],
    whole: true,
    make: (o) => createWaitingRoom(o as never),
    valid: [{ ttl: LONGEST, idleTimeout: LONGEST, claimWindow: LONGEST, confirmTimeout: LONGEST, retryInterval: LONGEST - 1, maxLength: 0 }],
  },
  {
    name: 'room.enter',
    label: 'enter()',
    base: {},
    specs: [['fresh', 'boolean']],
    whole: true,
    make: (o) => room.enter(newVisitorId(), o as never),
    valid: [{ fresh: true }, { fresh: false }],
  },
  {
    name: 'room.withAdmitted',
    label: 'withAdmitted()',
    base: {},
    specs: [['timeout', 'wait'], ['signal', 'signal'], ['autoRefresh', 'boolean']],
    whole: true,
    make: (o) => room.withAdmitted(newVisitorId(), fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST, autoRefresh: false }],
  },
  {
    name: 'airlock (Express)',
    label: 'gate options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: GATE_SPECS,
    nested: ['cookie', 'queue'],
    whole: true,
    make: (o) => airlock(o as never),
    valid: GATE_VALID,
  },
  {
    name: 'airlockShield (Fastify)',
    label: 'airlockShield options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: [...GATE_SPECS, ['global', 'boolean']],
    nested: ['cookie', 'queue'],
    make: async (o) => {
      const app = Fastify()
      app.register(airlockShield, o as never)
      try {
        await app.ready()
      } catch (err) {
        await app.close().catch(() => {})
        throw err
      }
      return app
    },
    valid: GATE_VALID,
  },
  {
    name: 'createDashboard',
    label: 'createDashboard()',
    base: { token: 't'.repeat(24), store, names: ['options'] },
    specs: [
      ['token', 'custom', [1, 'short', {}, null]],
      ['names', 'custom', [[], 'options', [1], ['has space'], {}]],
      ['controls', 'boolean'],
      ['interval', 'duration', [50, 99]],
      ['store', 'store'],
    ],
    whole: true,
    make: async (o) => (await import('../src/dashboard.js')).createDashboard(o as never),
    valid: [{ interval: '1s' }, { interval: 100 }],
  },
  {
    name: 'createProxy',
    label: 'createProxy()',
    base: { target: 'http://127.0.0.1:9', secret: SECRET, store, logger: recordingLogger() },
    specs: [
      ['target', 'custom', ['', 'ftp://x', 'not a url', 1, {}]],
      ['gated', 'boolean'],
      ['trustProxy', 'custom', [-1, 0.5, Number.NaN, Infinity, {}, ['300.0.0.1'], ['10.0.0.0/x'], [1]]],
      ['metricsPath', 'custom', ['/', 'metrics', '/m x', '/metrics?x=1', '/a#b', '//x', 1]],
      ['bodyLimit', 'custom', [-1, 0.5, Number.NaN, Infinity, '1mb']],
      ['upstreamTimeout', 'duration'],
      ['keepPassCookie', 'boolean'],
      ['passTtl', 'duration', [60]],
      ['retryAfter', 'seconds', [5000]],
    ],
    whole: true,
    make: async (o) => (await import('../src/proxy.js')).createProxy(o as never),
    valid: [{ upstreamTimeout: '90s', trustProxy: ['10.0.0.0/8', '::1'] }, { metricsPath: '/metrics' }],
  },
  {
    name: 'memoryStore',
    label: 'memoryStore()',
    base: {},
    specs: [['now', 'function', [1_700_000_000_000]]],
    whole: true,
    make: (o) => memoryStore(o as never),
    valid: [{ now: () => 0 }],
  },
  {
    name: 'redisStore',
    label: 'redisStore()',
    base: {
      get client() {
        return client
      },
    },
    specs: [['client', 'custom', ['redis://127.0.0.1:1', 1, true, {}]], ['commandTimeout', 'duration'], ['prefix', 'name']],
    whole: true,
    make: (o) => redisStore(o as never),
    valid: [{ commandTimeout: LONGEST }],
  },
  {
    name: 'redisResources',
    label: 'redisResources()',
    base: {
      get client() {
        return client
      },
    },
    specs: [['client', 'custom', ['redis://127.0.0.1:1', 1, true, {}]], ['commandTimeout', 'duration'], ['prefix', 'name']],
    whole: true,
    make: (o) => redisResources(o as never),
    valid: [{ commandTimeout: LONGEST }],
  },
  {
    name: 'throttle',
    label: 'throttle()',
    base: { semaphore: sem },
    specs: [
      ['semaphore', 'custom', ['x', 1, true, {}, { run: () => 1 }]],
      ['timeout', 'wait'],
      ['weight', 'count', [3]],
      ['signal', 'signal'],
    ],
    whole: true,
    make: (o) => throttle(fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST }, { timeout: 0, weight: 2 }],
  },
  {
    name: 'createLockServer',
    label: 'createLockServer()',
    base: { store, apiKeys: { write: API_KEY }, resources: memoryResources(memoryStore()) },
    specs: [
      ['store', 'store'],
      ['apiKeys', 'custom', ['x', 1, [], {}, { write: 'short' }]],
      ['resources', 'custom', ['x', 1, true, {}]],
      ['bodyLimit', 'count'],
      ['dataFormat', 'choice'],
      ['storeTimeout', 'duration'],
      ['logger', 'custom', ['x', 1, () => 1, []]],
      ['queue', 'object'],
      ['queue.idleTimeout', 'duration', [2]],
      ['queue.claimWindow', 'duration'],
      ['queue.maxLength', 'countOrZero'],
      ['queue.confirmTimeout', 'durationOrZero'],
    ],
    nested: ['queue'],
    whole: true,
    make: (o) => createLockServer(o as never),
    valid: [{ queue: { idleTimeout: LONGEST, claimWindow: LONGEST, maxLength: 0, confirmTimeout: 0 }, bodyLimit: Number.MAX_SAFE_INTEGER, logger: false, dataFormat: 'raw', storeTimeout: LONGEST }],
  },
  {
    name: 'createSigner',
    label: 'createSigner()',
    base: { secrets: SECRET, context: 'options' },
    specs: [['secrets', 'custom', ['short', 1, [], [SECRET, 2]]], ['context', 'custom', [1, {}, 'a b', 'a~b']], ['maxLength', 'count']],
    whole: true,
    make: (o) => createSigner(o as never),
    valid: [{ maxLength: Number.MAX_SAFE_INTEGER }],
  },
]

/** Runs `make`; the error it threw or rejected with, or `undefined` (then disposes what it made). */
async function failure(make: () => unknown): Promise<unknown> {
  let made: unknown
  try {
    made = make()
    made = await made
  } catch (err) {
    return err
  }
  await dispose(made)
  return undefined
}

describe('every option of every public factory', () => {
  for (const target of targets) {
    const table = rows(target.specs, target.nested, !target.positional).map((r) => ({ ...r, whole: false }))
    if (target.whole) for (const value of ['x', 1, true, null]) table.push({ option: target.label, value, whole: true })

    describe(target.name, () => {
      it.each(table.map((r) => [`${r.option} = ${show(r.value)}`, r] as const))('%s → ERR_AIRLOCK_OPTION naming it', async (_, row) => {
        const calls = store.total()
        const options = row.whole ? row.value : { ...target.base, ...patch(row.option, row.value) }
        const err = await failure(() => target.make(options))
        expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION'), String(err)).toBe(true)
        const named = row.option === UNKNOWN || row.option.endsWith(`.${UNKNOWN}`) ? `'${UNKNOWN}'` : row.option
        expect((err as Error).message).toContain(named)
        expect(store.total(), 'no store call before the options were checked').toBe(calls)
      })

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
        err.message === 'ttl must be at most 2147483647 ms (about 24.8 days, the longest a timer can wait), got 8589934592',
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
      expect(seen).toEqual(['airlock is a middleware factory: write app.use(airlock({ limit: 20, ... })), not app.use(airlock)'])
    } finally {
      server.close()
    }
  })

  it('redisStore(redis), a client where { client } is expected, is refused naming the fix', () => {
    const redis = new Redis({ lazyConnect: true })
    expect(() => redisStore(redis as never)).toThrow('redisStore() takes an options object: write redisStore({ client: redis }), not redisStore(redis)')
    redis.disconnect()
  })
})

describe('durations people can read, and unit mistakes caught (issue 25)', () => {
  it("every duration also takes '250ms', '60s', '5m', '1h'; a bare number stays milliseconds", () => {
    const gate = createGate({ passTtl: '5m', provisionalTtl: '10s', recheckInterval: '2.5s', storeTimeout: '250ms', secret: SECRET, logger: recordingLogger() })
    expect([gate.passTtl, gate.provisionalTtl, gate.recheckInterval, gate.storeTimeout]).toEqual([300_000, 10_000, 2_500, 250])
    expect(createGate({ passTtl: 90_000, secret: SECRET, logger: recordingLogger() }).passTtl).toBe(90_000)
    expect(createSemaphore({ name: 'readable', limit: 1, ttl: '1h' as never }).ttl).toBe(3_600_000)
    expect(() => createGate({ passTtl: '5 minutes' as never })).toThrow("passTtl must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got \"5 minutes\"")
  })

  it('passTtl: 60 (surely seconds) and retryAfter: 5000 (surely milliseconds) are refused with the likely intent', () => {
    expect(() => createGate({ passTtl: 60 })).toThrow("passTtl is in milliseconds: 60 is 60 ms; did you mean '60s'? (write '60ms' if you do mean milliseconds)")
    expect(createGate({ passTtl: '600ms', provisionalTtl: '300ms', recheckInterval: '300ms', secret: SECRET, logger: recordingLogger() }).passTtl).toBe(600)
    expect(() => createGate({ retryAfter: 5000 })).toThrow('retryAfter is in seconds and at most 3600 (an hour): 5000 is 83 min; did you mean 5?')
  })
})

describe('options the adversarial run found accepted (issue 25)', () => {
  it("the dashboard's interval: NaN, 0, -1, Infinity, 0.5 and 50 ms refused naming it; '1s' taken", async () => {
    const { createDashboard } = await import('../src/dashboard.js')
    const make = (interval: unknown) => createDashboard({ token: 't'.repeat(24), store: memoryStore(), names: ['a'], interval: interval as never })
    for (const bad of [Number.NaN, 0, -1, Infinity, 0.5, 50]) expect(() => make(bad), String(bad)).toThrow(/^interval must be/)
    await make('1s').close()
  })

  it("the proxy's metricsPath: '/', a query, a fragment, spaces, '//x' refused naming it", async () => {
    const { createProxy } = await import('../src/proxy.js')
    for (const bad of ['/', '/metrics?x=1', '/a#b', '/m x', '//x', 'metrics']) {
      await expect(createProxy({ target: 'http://127.0.0.1:9', metricsPath: bad, secret: SECRET }), bad).rejects.toThrow(/^metricsPath must be a path of its own/)
    }
  })

  it("createLockServer takes a logger shaped as the gate's docs describe ({ warn }) instead of failing inside Fastify", async () => {
    const said: string[] = []
    const server = createLockServer({ store: memoryStore(), apiKeys: { read: ['r'.repeat(24)], write: ['w'.repeat(24)] }, logger: { warn: (_o: object, m?: string) => void said.push(m ?? '') } as never })
    await server.close()
  })
})
