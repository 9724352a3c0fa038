import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { airlockShield } from '../src/fastify.js'
import defaultExport from '../src/fastify.js'
import { isAirlockError } from '../src/base/errors.js'
import { memoryStore } from '../src/stores/memory.js'
import { countingStore, recordingLogger } from './helpers/stores.js'

const SECRET = 'f'.repeat(32)

describe('Fastify plugin', () => {
  it('is a fastify-plugin named airlock-shield for Fastify 5, default and named export', () => {
    expect(defaultExport).toBe(airlockShield)
    const meta = (airlockShield as unknown as Record<symbol, { name: string; fastify: string }>)[
      Symbol.for('plugin-meta')
    ]
    expect(meta).toMatchObject({ name: 'airlock-shield', fastify: '5.x' })
  })

  it('fails at startup with ERR_AIRLOCK_OPTION on bad plugin or route options', async () => {
    const bad = Fastify()
    await expect(bad.register(airlockShield, { limit: 0 })).rejects.toSatisfy(
      (err: unknown) =>
        isAirlockError(err, 'ERR_AIRLOCK_OPTION') &&
        /limit must be a positive integer, got 0/.test((err as Error).message),
    )
    const unnamed = Fastify()
    await unnamed.register(airlockShield, { logger: recordingLogger(), secret: SECRET })
    expect(() => unnamed.get('/x', { config: { airlock: { limit: 1 } as never } }, async () => 'x')).toThrow(
      /config.airlock of GET \/x needs a name/,
    )
    expect(() => unnamed.get('/y', { config: { airlock: { name: 'y', limt: 1 } as never } }, async () => 'y')).toThrow(
      /config.airlock of GET \/y has no option 'limt'/,
    )
    await bad.close().catch(() => {})
    await unnamed.close()
  })

  it('takes several registrations on one instance, each its own named gate; the same name twice fails at startup', async () => {
    const app = Fastify()
    const site = memoryStore()
    const api = countingStore(memoryStore())
    await app.register(airlockShield, { limit: 1, store: site, secret: SECRET, logger: recordingLogger() })
    await app.register(airlockShield, {
      name: 'api',
      mode: 'request',
      global: false,
      limit: 1,
      store: api,
      logger: recordingLogger(),
    })
    app.get('/', async (_req, reply) => `site ${reply.airlock.decision?.kind}`)
    app.get('/api/slow', { config: { airlock: 'api' } }, async (_req, reply) => {
      await new Promise((r) => setTimeout(r, 100))
      return `api ${reply.airlock.decision?.kind}`
    })
    await app.ready()
    expect([...app.airlockGates.keys()]).toEqual(['default', 'api'])
    expect(app.airlockGate.name).toBe('default')
    // '/' is gated by the site's gate only (limit 1): a second cookie-less visitor is busy.
    expect((await app.inject('/')).body).toBe('site admit')
    expect((await app.inject('/')).statusCode).toBe(503)
    // '/api/slow' by the api gate only (request mode, limit 1), never by the site's (full) gate.
    const [a, b] = await Promise.all([app.inject('/api/slow'), app.inject('/api/slow')])
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 503])
    expect([a.body, b.body]).toContain('api admit')
    expect(api.calls.acquire).toBe(2)
    expect((await site.state('default')).held).toBe(1)
    await app.close()

    const twice = Fastify()
    await twice.register(airlockShield, { secret: SECRET, logger: recordingLogger() })
    await expect(twice.register(airlockShield, { secret: SECRET, logger: recordingLogger() })).rejects.toSatisfy(
      (err: unknown) =>
        isAirlockError(err, 'ERR_AIRLOCK_OPTION') &&
        /already registered with a gate named 'default': give this registration its own name/.test(
          (err as Error).message,
        ),
    )
    await twice.close().catch(() => {})
  })

  it('runs the gate once per request (GET and the derived HEAD route), and only on gated routes with global: false', async () => {
    const store = countingStore(memoryStore())
    const app = Fastify()
    await app.register(airlockShield, { global: false, store, secret: SECRET, logger: recordingLogger() })
    app.get('/free', async () => 'free')
    app.get(
      '/gated',
      { config: { airlock: { name: 'gated', limit: 5 } } },
      async (_req, reply) => reply.airlock.decision?.kind,
    )
    await app.ready()
    expect((await app.inject('/free')).body).toBe('free')
    expect(store.total()).toBe(0)
    expect((await app.inject('/gated')).body).toBe('admit')
    expect(store.calls).toEqual({ acquire: 1 })
    const head = await app.inject({ method: 'HEAD', url: '/gated' })
    expect(head.statusCode).toBe(200)
    expect(store.calls).toEqual({ acquire: 2 })
    expect(app.airlockGate.name).toBe('default')
    await app.close()
  })

  it('route-level gates inherit the store and secret but pick their own cookie', async () => {
    const store = memoryStore()
    const app = Fastify()
    await app.register(airlockShield, {
      store,
      secret: SECRET,
      cookie: { name: 'site_pass', sameSite: 'strict' },
      logger: recordingLogger(),
    })
    app.get('/', async () => 'home')
    app.get('/c', { config: { airlock: { name: 'c', limit: 1 } } }, async () => 'c')
    const home = await app.inject('/')
    expect(home.headers['set-cookie']).toMatch(/^site_pass=.*SameSite=Strict/)
    expect(app.airlockGate).toBeDefined()
    const c = await app.inject('/c')
    const headC = await app.inject({ method: 'HEAD', url: '/c' })
    expect(headC.statusCode).toBe(503) // the HEAD route shares the GET route's gate 'c' (limit 1)
    expect(c.headers['set-cookie']).toMatch(/^airlock_pass_c=p1~c~.*SameSite=Strict/)
    expect((await store.state('c')).held).toBe(1)
    await app.close()
  })

  it('hands the gate a plain view (data properties only: an accessor here once cost 14 µs per request)', async () => {
    const app = Fastify()
    await app.register(airlockShield, { secret: SECRET, store: memoryStore(), logger: recordingLogger() })
    app.get('/', async () => 'ok')
    const views: object[] = []
    const decide = app.airlockGate.decide.bind(app.airlockGate)
    app.airlockGate.decide = (view) => {
      views.push(view)
      return decide(view)
    }
    await app.inject('/')
    expect(views).toHaveLength(1)
    for (const [key, d] of Object.entries(Object.getOwnPropertyDescriptors(views[0]))) {
      expect({ key, accessor: d.get !== undefined }).toEqual({ key, accessor: false })
    }
    expect(views[0]).toMatchObject({ method: 'GET', url: '/', secure: false })
    await app.close()
  })
})

describe('one path: bypass rules judge the path Fastify routes (issue 25)', () => {
  it('with useSemicolonDelimiter, GET /admin;.css is /admin to the gate too: no bypass by a /\\.css$/ rule', async () => {
    const app = Fastify({ routerOptions: { useSemicolonDelimiter: true } } as never) as ReturnType<typeof Fastify>
    await app.register(airlockShield, {
      limit: 1,
      secret: 's'.repeat(32),
      store: memoryStore(),
      bypass: [/\.css$/],
      logger: { warn() {} },
    })
    let reached = 0
    app.get('/admin', async () => {
      reached++
      return 'admin'
    })
    app.get('/style.css', async () => 'css')
    const holder = await app.inject({ url: '/admin', remoteAddress: '10.0.0.1' })
    expect(holder.statusCode).toBe(200)
    const trick = await app.inject({
      url: '/admin;.css',
      remoteAddress: '10.0.0.2',
      headers: { accept: 'application/json' },
    })
    expect(trick.statusCode).toBe(503)
    expect(reached).toBe(1)
    expect((await app.inject({ url: '/style.css', remoteAddress: '10.0.0.3' })).body).toBe('css') // a real stylesheet is still bypassed
    await app.close()
  })
})

describe('misuse of the plugin caught at startup (issue 25)', () => {
  it('registered inside an encapsulated context while the routes are outside it: ready() fails with one sentence', async () => {
    const app = Fastify()
    await app.register(async (sub) => {
      await sub.register(airlockShield, { secret: 's'.repeat(32), store: memoryStore(), logger: { warn() {} } })
    })
    app.get('/', async () => 'ungated')
    await expect(app.ready()).rejects.toThrow(
      /^airlockShield gates no route: register it on the app itself \(not inside app\.register\(\.\.\.\)\) and before your routes/,
    )
  })

  it('registered on the app before its routes: fine; with no route at all: fine', async () => {
    const app = Fastify()
    await app.register(airlockShield, { secret: 's'.repeat(32), store: memoryStore(), logger: { warn() {} } })
    app.get('/', async () => 'gated')
    await app.ready()
    await app.close()
    const bare = Fastify()
    await bare.register(airlockShield, { secret: 's'.repeat(32), store: memoryStore(), logger: { warn() {} } })
    await bare.ready()
    await bare.close()
  })
})
