import { inspect } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { Redis } from 'ioredis'
import { createGate, type GateOptions, type RequestView } from '../../src/gate/gate.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import { recordingLogger } from '../helpers/stores.js'

const SECRET = 's'.repeat(32)
const view = (over: Partial<RequestView> = {}): RequestView => ({
  method: 'GET',
  url: '/',
  headers: {},
  secure: false,
  request: {},
  ...over,
})

function optionMessage(options: GateOptions): string {
  try {
    createGate({ logger: recordingLogger(), ...options })
  } catch (err) {
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    return (err as Error).message
  }
  throw new Error('expected ERR_AIRLOCK_OPTION')
}

describe('createGate options', () => {
  const env = process.env.NODE_ENV
  afterEach(() => {
    process.env.NODE_ENV = env
  })

  it('has working defaults: limit 100, session mode, name default, 5 s retry', () => {
    const gate = createGate({ logger: recordingLogger() })
    expect(gate).toMatchObject({
      name: 'default',
      limit: 100,
      mode: 'session',
      passTtl: 60_000,
      provisionalTtl: 10_000,
      recheckInterval: 5_000,
      ttl: 30_000,
      retryAfter: 5,
      onStoreError: 'local',
      storeTimeout: 200,
      cookieName: 'airlock_pass',
    })
    expect(createGate({ name: 'checkout', logger: recordingLogger() }).cookieName).toBe('airlock_pass_checkout')
    expect(createGate({ name: 'a.b:c', logger: recordingLogger() }).cookieName).toBe('airlock_pass_a_b_c')
  })

  it.each<[GateOptions, RegExp]>([
    [{ limit: 0 }, /^limit must be a positive integer, got 0$/],
    [{ limit: 1.5 }, /^limit must be a positive integer/],
    [{ name: 'has space' }, /^name must be 1 to 64 characters/],
    [{ mode: 'queue' as 'request' }, /^mode must be one of 'session', 'request', got "queue"$/],
    [
      { passTtl: -1 },
      /^passTtl must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got -1$/,
    ],
    [{ mode: 'request', reuseWindow: -1 }, /^reuseWindow must be a non-negative integer, got -1$/],
    [{ passTtl: 5000, provisionalTtl: 6000 }, /^provisionalTtl must be at most passTtl \(5000\), got 6000$/],
    [{ passTtl: 5000, recheckInterval: 6000 }, /^recheckInterval must be at most passTtl/],
    [{ ttl: 0 }, /^ttl must be a positive number of milliseconds/],
    [{ retryAfter: 0 }, /^retryAfter must be a positive integer, got 0$/],
    [{ secret: 'too-short' }, /^secret must be at least 32 bytes, got 9/],
    [{ secret: [SECRET, 'x'] }, /^secret\[1\] must be at least 32 bytes, got 1/],
    [{ onStoreError: 'maybe' as 'open' }, /^onStoreError must be one of 'local', 'open', 'closed'/],
    [{ storeTimeout: 0 }, /^storeTimeout must be a positive number of milliseconds/],
    [{ store: {} as Store }, /^store must implement the Store interface; missing acquire/],
    [{ cookie: { sameSite: 'none' } }, /^cookie.sameSite 'none' needs cookie.secure: true/],
    [{ cookie: { name: 'bad name' } }, /^cookie.name must be a cookie name/],
    [{ cookie: { path: 'x' } }, /^cookie.path must start with '\/'/],
    [{ cookie: { secure: 'yes' as 'auto' } }, /^cookie.secure must be true, false or 'auto'/],
    [{ cookie: { maxAge: 1 } as object }, /^cookie has no option 'maxAge'/],
    [{ bypass: ['health'] }, /^bypass\[0\] must be a path starting with '\/' or a RegExp, got "health"$/],
    [{ skip: true as unknown as () => boolean }, /^skip must be a function/],
    [{ busyPage: 42 as unknown as string }, /^busyPage must be an HTML string or a function/],
    [{ nonce: 'abc' as unknown as () => string }, /^nonce must be a function/],
    [{ logger: {} as never }, /^logger must be a pino-shaped logger/],
    [
      { limt: 5 } as GateOptions,
      /^airlock gate has no option 'limt' \(did you mean 'limit'\?\); known options are name, limit/,
    ],
  ])('%j fails at creation: %s', (options, message) => {
    expect(optionMessage(options)).toMatch(message)
  })

  it('needs a secret with a shared store in production, not with the memory store', () => {
    process.env.NODE_ENV = 'production'
    const client = new Redis({ lazyConnect: true })
    try {
      expect(optionMessage({ store: redisStore({ client }) })).toMatch(
        /^secret is required when NODE_ENV=production and the store is shared \('redis'\)/,
      )
      expect(() =>
        createGate({ store: redisStore({ client }), secret: SECRET, logger: recordingLogger() }),
      ).not.toThrow()
      expect(() => createGate({ store: memoryStore(), logger: recordingLogger() })).not.toThrow()
      // Request mode signs nothing, so it needs no secret.
      expect(() =>
        createGate({ mode: 'request', store: redisStore({ client }), logger: recordingLogger() }),
      ).not.toThrow()
    } finally {
      client.disconnect()
    }
  })

  it('warns once at creation when it makes up a random per-process secret', async () => {
    const log = recordingLogger()
    const a = createGate({ logger: log })
    expect(log.lines).toHaveLength(1)
    expect(log.lines[0]!.level).toBe('warn')
    expect(log.lines[0]!.msg).toMatch(/random per-process secret/)
    expect(a.randomSecret).toBe(true)
    const b = createGate({ logger: log })
    expect(log.lines).toHaveLength(1) // once per logger (one app), not once per gate
    // One per process: gates of one process accept each other's passes.
    const view = { method: 'GET', url: '/', headers: {}, secure: false, request: undefined }
    const admitted = (await a.decide(view)) as { setCookie?: string }
    const cookie = admitted.setCookie!.split(';')[0]!
    expect((await b.decide({ ...view, headers: { cookie } })).kind).toBe('pass')
    const quiet = recordingLogger()
    createGate({ secret: SECRET, logger: quiet })
    createGate({ mode: 'request', logger: quiet }) // request mode signs nothing
    expect(quiet.lines).toHaveLength(0)
  })
})

describe('secrets stay secret', () => {
  it('util.inspect of a gate (and of a route gate made from it) shows no secret, however deep', () => {
    const gate = createGate({ secret: SECRET, queue: true, store: memoryStore(), logger: recordingLogger() })
    const child = gate.child({ name: 'checkout', limit: 2 })
    for (const g of [gate, child]) {
      const text = inspect(g, { depth: Infinity, showHidden: true, getters: true })
      expect(text).toContain(g.name) // it did inspect the gate
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain(Buffer.from(SECRET).toString('hex'))
      expect(JSON.stringify(g)).not.toContain(SECRET)
    }
  })
})

describe('gate decisions', () => {
  it('answers a cached pass synchronously with the same decision object (no allocation, no store)', async () => {
    const gate = createGate({ limit: 2, store: memoryStore(), secret: SECRET, logger: recordingLogger() })
    const admit = await gate.decide(view())
    expect(admit.kind).toBe('admit')
    const cookie = admit.setCookie!.split(';')[0]!
    const upgraded = await gate.decide(view({ headers: { cookie } }))
    expect(upgraded.kind).toBe('pass')
    const full = upgraded.setCookie!.split(';')[0]!
    const first = await gate.decide(view({ headers: { cookie: full } }))
    const hot = gate.decide(view({ headers: { cookie: `x=1; ${full}` } }))
    expect(hot).not.toBeInstanceOf(Promise)
    expect(hot).toBe(first)
    // The old provisional value, replayed, passes and carries the renewed cookie again.
    const replay = gate.decide(view({ headers: { cookie } }))
    expect(replay).not.toBeInstanceOf(Promise)
    expect((replay as { setCookie?: string }).setCookie).toContain(full)
  })

  it('release() ends a pass everywhere in this process at once', async () => {
    const store = memoryStore()
    const gate = createGate({ limit: 1, store, secret: SECRET, logger: recordingLogger() })
    const admit = await gate.decide(view())
    const cookie = admit.setCookie!.split(';')[0]!
    const pass = await gate.decide(view({ headers: { cookie } }))
    expect(await gate.release(pass)).toBe(true)
    expect((await store.state('default')).held).toBe(0)
    const after = await gate.decide(view({ headers: { cookie } }))
    expect(after.kind).toBe('admit') // a new visitor, with a new slot
    expect(gate.clearCookie(true)).toMatch(
      /^airlock_pass=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0; Expires=.*; Secure$/,
    )
  })

  it('request mode: a slot per request, released exactly once', async () => {
    const store = memoryStore()
    const gate = createGate({ mode: 'request', limit: 1, store, reuseWindow: 0, logger: recordingLogger() })
    const d = await gate.decide(view())
    expect(d.kind).toBe('admit')
    expect(d.setCookie).toBeUndefined()
    expect((await gate.decide(view())).kind).toBe('busy')
    const slot = d.kind === 'admit' ? d.slot! : undefined
    const [r1, r2] = await Promise.all([slot!.release(), slot!.release()])
    expect([r1, r2]).toEqual([true, true]) // the same once-only promise
    expect(await gate.release(d)).toBe(true)
    expect((await store.state('default')).held).toBe(0)
    expect((await gate.decide(view())).kind).toBe('admit')
  })
})

/** A real store whose calls hang while `down` is set (stands in for a network partition). */
function partitionable(inner: Store): Store & { down: boolean; late: Record<string, number> } {
  const s = { kind: 'partitionable', down: false, late: {} } as Store & { down: boolean; late: Record<string, number> }
  for (const m of [
    'acquire',
    'refresh',
    'release',
    'leave',
    'leaseState',
    'state',
    'forceReleaseAll',
    'subscribe',
    'close',
  ] as const) {
    ;(s as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      if (s.down && m !== 'close') {
        await new Promise((r) => setTimeout(r, 400))
        s.late[m] = (s.late[m] ?? 0) + 1
      }
      return (inner[m] as (...a: unknown[]) => unknown).apply(inner, args)
    }
  }
  return s
}

describe('cookies and secrets', () => {
  it('sets the cookie attributes it is given: path, domain, Secure always or never, SameSite, HttpOnly off', async () => {
    const cookie = async (options: GateOptions['cookie'], secure: boolean) => {
      const gate = createGate({ store: memoryStore(), secret: SECRET, logger: recordingLogger(), cookie: options })
      return (await gate.decide(view({ secure }))).setCookie!
    }
    const custom = await cookie(
      { name: 'pass', path: '/shop', domain: 'example.com', sameSite: 'strict', httpOnly: false },
      false,
    )
    expect(custom).toMatch(/^pass=p1~default~[^;]+; Path=\/shop; Domain=example\.com; SameSite=Strict; Max-Age=10$/)
    expect(await cookie({ secure: true }, false)).toMatch(/; Secure$/)
    expect(await cookie({ secure: false }, true)).not.toMatch(/Secure/)
    expect(await cookie({ sameSite: 'none', secure: true }, false)).toMatch(/SameSite=None; Max-Age=10; Secure$/)
  })

  it('rotates secrets: passes signed with the old secret still pass, new passes are signed with the new one', async () => {
    const store = memoryStore()
    const OLD = 'o'.repeat(32)
    const NEW = 'n'.repeat(32)
    const before = createGate({ store, secret: OLD, logger: recordingLogger() })
    const oldCookie = (await before.decide(view())).setCookie!.split(';')[0]!
    const during = createGate({ store, secret: [NEW, OLD], logger: recordingLogger() })
    const upgraded = await during.decide(view({ headers: { cookie: oldCookie } }))
    expect(upgraded.kind).toBe('pass') // the old pass is accepted (and upgraded, signed with NEW)
    const newCookie = upgraded.setCookie!.split(';')[0]!
    const after = createGate({ store, secret: NEW, logger: recordingLogger() })
    expect((await after.decide(view({ headers: { cookie: newCookie } }))).kind).toBe('pass')
    expect((await after.decide(view({ headers: { cookie: oldCookie } }))).kind).toBe('admit') // OLD retired: no pass
  })
})

describe('user functions that throw', () => {
  it('a throwing skip() gates the request (never a bypass, never a crash) and is logged once', async () => {
    const log = recordingLogger()
    const gate = createGate({
      limit: 1,
      store: memoryStore(),
      secret: SECRET,
      logger: log,
      skip: () => {
        throw new Error('bug in skip')
      },
    })
    expect((await gate.decide(view())).kind).toBe('admit')
    expect((await gate.decide(view())).kind).toBe('busy')
    expect(log.lines.filter((l) => /skip option threw/.test(l.msg ?? ''))).toHaveLength(1)
  })

  it('a throwing nonce() serves the built-in busy page without a nonce (allowed by hash) and is logged once', async () => {
    const log = recordingLogger()
    const gate = createGate({
      limit: 1,
      store: memoryStore(),
      secret: SECRET,
      logger: log,
      nonce: () => {
        throw new Error('bug in nonce')
      },
    })
    await gate.decide(view())
    for (let i = 0; i < 2; i++) {
      const busy = await gate.decide(view())
      expect(busy.kind).toBe('busy')
      expect(busy.response?.status).toBe(503)
      expect(busy.response?.body).not.toContain('nonce=')
      expect(busy.response?.headers['content-security-policy']).toMatch(/sha256-/)
    }
    expect(log.lines.filter((l) => /nonce option threw/.test(l.msg ?? ''))).toHaveLength(1)
  })
})

describe('store budget and breaker', () => {
  it('decides within storeTimeout, opens the breaker, releases slots acquired too late, and recovers', async () => {
    const inner = memoryStore()
    const store = partitionable(inner)
    const log = recordingLogger()
    const gate = createGate({ limit: 5, store, secret: SECRET, storeTimeout: 250, logger: log, onStoreError: 'open' })
    try {
      store.down = true
      const times: number[] = []
      for (let i = 0; i < 6; i++) {
        const t0 = performance.now()
        const d = await gate.decide(view())
        times.push(performance.now() - t0)
        expect(d).toMatchObject({ kind: 'admit', reason: 'store-unavailable', setCookie: undefined })
      }
      expect(Math.max(...times)).toBeLessThan(250 + 300)
      expect(times.slice(3).every((t) => t < 125)).toBe(true) // breaker open: no waiting for the 250 ms budget
      expect(log.lines.filter((l) => l.level === 'warn')).toHaveLength(1)
      // The acquires that answered after the budget had their slots released (each call here takes 400 ms).
      const t1 = Date.now()
      while ((store.late.release ?? 0) < 3) {
        expect(Date.now() - t1).toBeLessThan(3000)
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(store.late.acquire).toBe(3) // three acquires reached the store, then answered too late
      expect((await inner.state('default')).held).toBe(0)
      store.down = false
      const t0 = Date.now()
      for (;;) {
        const d = await gate.decide(view())
        if (d.kind === 'admit' && d.reason === 'slot') break
        expect(Date.now() - t0).toBeLessThan(5000)
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(log.lines.some((l) => l.level === 'info')).toBe(true)
    } finally {
      await gate.close()
    }
  })

  it('fail-closed answers busy with the JSON or HTML busy response', async () => {
    const store = partitionable(memoryStore())
    store.down = true
    const gate = createGate({
      limit: 5,
      store,
      secret: SECRET,
      storeTimeout: 50,
      onStoreError: 'closed',
      logger: recordingLogger(),
    })
    try {
      const d = await gate.decide(view({ headers: { accept: 'application/json' } }))
      expect(d.kind).toBe('busy')
      expect(d).toMatchObject({
        reason: 'store-unavailable',
        response: { status: 503, body: '{"status":"busy","reason":"store-unavailable","retryAfter":5}' },
      })
    } finally {
      await gate.close()
    }
  })
})
