import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { airlockShield } from '../src/fastify.js'
import defaultExport from '../src/fastify.js'
import { airlockShield as fromRoot } from '../src/index.js'
import { isAirlockError } from '../src/core/errors.js'
import { memoryStore } from '../src/stores/memory.js'
import { countingStore, recordingLogger } from './helpers/stores.js'

const SECRET = 'f'.repeat(32)

describe('Fastify plugin', () => {
  it('is a fastify-plugin named airlock-shield for Fastify 5, default and named export', () => {
    expect(defaultExport).toBe(airlockShield)
    expect(fromRoot).toBe(airlockShield)
    const meta = (airlockShield as unknown as Record<symbol, { name: string; fastify: string }>)[Symbol.for('plugin-meta')]
    expect(meta).toMatchObject({ name: 'airlock-shield', fastify: '5.x' })
  })

  it('fails at startup with ERR_AIRLOCK_OPTION on bad plugin or route options', async () => {
    const bad = Fastify()
    await expect(bad.register(airlockShield, { limit: 0 })).rejects.toSatisfy(
      (err: unknown) => isAirlockError(err, 'ERR_AIRLOCK_OPTION') && /limit must be a positive integer, got 0/.test((err as Error).message),
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

  it('runs the gate once per request (GET and the derived HEAD route), and only on gated routes with global: false', async () => {
    const store = countingStore(memoryStore())
    const app = Fastify()
    await app.register(airlockShield, { global: false, store, secret: SECRET, logger: recordingLogger() })
    app.get('/free', async () => 'free')
    app.get('/gated', { config: { airlock: { name: 'gated', limit: 5 } } }, async (_req, reply) => reply.airlock.decision?.kind)
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
    await app.register(airlockShield, { store, secret: SECRET, cookie: { name: 'site_pass', sameSite: 'strict' }, logger: recordingLogger() })
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
