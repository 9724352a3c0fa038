/**
 * Hostile clients against the package's other servers, each a process (issue 38): `airlock serve`
 * (the HTTP lock service: its bodies are Fastify's, within the service's limit and 30 s),
 * `airlock dashboard` on a private Redis, and `airlock auth` (issue 39: the decision service
 * nginx asks; it reads no body, and names in its headers are a proxy's word it takes as a view). The process never exits, and every honest request
 * meanwhile is answered.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import {
  abuse,
  cli,
  cutOffs,
  expectAlive,
  get,
  honest,
  signIn,
  stopsCleanly,
  type Endpoint,
  type Target,
} from './harness.js'

const KEY = 'a-hostile-suite-write-key-of-some-length'

describe('airlock serve (the lock service)', () => {
  let target: Target
  beforeAll(async () => {
    target = await cli(
      ['serve', '--port', '0', '--log-level', 'info'],
      { AIRLOCK_WRITE_KEY: KEY },
      /Server listening at (http:\/\/127\.0\.0\.1:\d+)/,
    )
    const auth = { 'x-api-key': KEY, 'content-type': 'application/json' }
    expect(
      (await get(`${target.base}/resource`, { method: 'POST', headers: auth, body: '{"name":"printer","timeout":60}' }))
        .status,
    ).toBe(201)
  })
  afterAll(() => target?.stop())

  const json = { 'X-Api-Key': KEY, 'Content-Type': 'application/json' }
  const endpoints: Endpoint[] = [
    { method: 'POST', path: '/resource', headers: json, body: '{"name":"printer","timeout":60}' },
    { method: 'PUT', path: '/resource/printer/tray1/lock', headers: json, body: '' },
    {
      method: 'PUT',
      path: '/resource/printer/tray1',
      headers: { ...json, 'X-Ticket': 'not-a-ticket' },
      body: '{"paper":"A4","sheets":[1,2,3]}',
    },
    {
      method: 'POST',
      path: '/resource/printer/tray1/unlock',
      headers: { ...json, 'X-Ticket': 'not-a-ticket' },
      body: '{}',
    },
    { method: 'GET', path: '/resource/printer/tray1?lock=0', headers: json },
    { method: 'DELETE', path: '/resource/nothing', headers: json },
  ]
  const run = async (work: () => Promise<void>): Promise<void> => {
    const health = honest(
      'a health check',
      () => get(`${target.base}/health`),
      (s) => s === 200,
    )
    const reader = honest(
      'a reader',
      () => get(`${target.base}/resource/printer`, { headers: { 'x-api-key': KEY } }),
      (s) => s === 200,
    )
    await work()
    for (const r of await Promise.all([health.stop(), reader.stop()])) {
      expect(r.failures).toEqual([])
      expect(r.answered).toBeGreaterThan(0)
    }
    expectAlive(target)
  }

  it('every route against every hostile client: the process stays up, every honest request is answered', {
    timeout: 120_000,
  }, async () => {
    await run(async () => {
      for (const ep of endpoints) await abuse(target.base, ep)
    })
  })

  it('1,000 cut-off bodies on each POST and PUT while honest requests run', { timeout: 120_000 }, async () => {
    await run(async () => {
      for (const ep of endpoints.filter((e) => e.body !== undefined && e.body !== '')) {
        await cutOffs(target.base, ep)
      }
    })
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})

describe.runIf(redisAvailable || process.env.CI)('airlock dashboard on a private Redis', () => {
  let redis: PrivateRedis
  let target: Target
  let cookie: string
  beforeAll(async () => {
    requireRedis()
    redis = await startRedis()
    target = await cli(
      ['dashboard', '--redis', redis.url, '--name', 'shop', '--port', '0'],
      {},
      /airlock dashboard on (http:\/\/[^ /]+)/,
    )
    cookie = await signIn(target.base)
  }, 60_000)
  afterAll(async () => {
    await target?.stop()
    await redis?.stop()
  })

  const endpoints = (): Endpoint[] => [
    {
      method: 'POST',
      path: '/',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'token=not-the-token-xxxxxxxx',
    },
    {
      method: 'POST',
      path: '/control',
      headers: { Cookie: cookie, 'Content-Type': 'application/json', 'X-Airlock-Dashboard': '1' },
      body: '{"name":"shop","patch":{"limit":3}}',
    },
    { method: 'GET', path: '/events', headers: { Cookie: cookie } },
    { method: 'GET', path: '/history?name=shop&range=hour', headers: { Cookie: cookie } },
  ]
  const run = async (work: () => Promise<void>): Promise<void> => {
    const operator = honest(
      'the operator',
      () => get(`${target.base}/state`, { headers: { cookie } }),
      (s) => s === 200,
    )
    await work()
    const r = await operator.stop()
    expect(r.failures).toEqual([])
    expect(r.answered).toBeGreaterThan(0)
    expectAlive(target)
  }

  it('every route against every hostile client: the process stays up, the operator is answered throughout', {
    timeout: 120_000,
  }, async () => {
    await run(async () => {
      for (const ep of endpoints()) await abuse(target.base, ep)
    })
  })

  it('1,000 cut-off bodies on the sign-in and the control POST while the operator polls', {
    timeout: 120_000,
  }, async () => {
    await run(async () => {
      for (const ep of endpoints().filter((e) => e.method === 'POST')) {
        await cutOffs(target.base, ep)
      }
    })
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})

describe('airlock auth (the decision service)', () => {
  let target: Target
  const secret = mkdtempSync(join(tmpdir(), 'airlock-hostile-auth-'))
  beforeAll(async () => {
    writeFileSync(join(secret, 'secret'), 'a-hostile-suite-secret-of-at-least-32-bytes\n')
    target = await cli(
      [
        'auth',
        '--port',
        '0',
        '--limit',
        '5',
        '--secret-file',
        join(secret, 'secret'),
        '--dashboard',
        '/airlock',
        '--log-level',
        'info',
      ],
      {},
      /on (http:\/\/127\.0\.0\.1:\d+)\/\.airlock/,
    )
  })
  afterAll(() => target?.stop())

  const asked = {
    'X-Original-URI': '/page?x=1',
    'X-Original-Method': 'GET',
    'X-Forwarded-For': '203.0.113.9',
    Accept: 'text/html',
  }
  const endpoints: Endpoint[] = [
    { method: 'GET', path: '/.airlock/decide', headers: asked },
    {
      method: 'GET',
      path: '/.airlock/decide',
      headers: {
        ...asked,
        'X-Original-URI': `/${'%2e%2e/'.repeat(500)}`,
        Cookie: `airlock_pass=${'p1~default~x~zz~f~'.repeat(40)}; airlock_ticket=junk`,
      },
    },
    { method: 'GET', path: '/.airlock/auth-request', headers: { ...asked, 'X-Airlock-Poll': '1' } },
    { method: 'GET', path: '/.airlock/answer/not-an-id' },
    { method: 'POST', path: '/.airlock/decide', headers: asked, body: 'a body nobody reads' },
    {
      method: 'POST',
      path: '/airlock/',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'token=wrong-token-of-some-length',
    },
  ]
  const run = async (work: () => Promise<void>): Promise<void> => {
    const health = honest(
      'a health check',
      () => get(`${target.base}/.airlock/health`),
      (s) => s === 200,
    )
    const decision = honest(
      'a decision',
      () => get(`${target.base}/.airlock/decide`, { headers: asked }),
      (s) => s === 200 || s === 202 || s === 503,
    )
    await work()
    for (const r of await Promise.all([health.stop(), decision.stop()])) {
      expect(r.failures).toEqual([])
      expect(r.answered).toBeGreaterThan(0)
    }
    expectAlive(target)
  }

  it('every path against every hostile client: the process stays up, every honest question is answered', {
    timeout: 120_000,
  }, async () => {
    await run(async () => {
      for (const ep of endpoints) await abuse(target.base, ep)
    })
  })

  it('1,000 cut-off bodies on each path that may get one while honest questions run', {
    timeout: 120_000,
  }, async () => {
    await run(async () => {
      for (const ep of endpoints.filter((e) => e.body !== undefined)) await cutOffs(target.base, ep)
    })
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})
