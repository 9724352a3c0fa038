/**
 * Hostile clients against `airlock proxy` (issue 38), as a process: the gate's answers and the
 * waiting room in front of an origin, forwarded bodies and WebSockets, its dashboard and metrics;
 * alone, and as two workers sharing a private Redis. The process (every worker) never exits, and
 * every honest request meanwhile is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nextAddress } from '../http/harness.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { nodeOrigin } from '../proxy/origins.js'
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

type Origin = Awaited<ReturnType<typeof nodeOrigin>>

async function hostileRun(target: Target, cookie: string, work: () => Promise<void>): Promise<void> {
  const page = honest(
    'a visitor',
    () => get(`${target.base}/`, { headers: { 'x-forwarded-for': nextAddress() } }),
    (s) => [200, 202, 503].includes(s),
  )
  const operator = honest(
    'the operator',
    () => get(`${target.base}/airlock/state`, { headers: { cookie } }),
    (s) => s === 200,
  )
  const scrape = honest(
    'Prometheus',
    () => get(`${target.base}/metrics`),
    (s) => s === 200,
  )
  await work()
  for (const r of await Promise.all([page.stop(), operator.stop(), scrape.stop()])) {
    expect(r.failures).toEqual([])
    expect(r.answered).toBeGreaterThan(0)
  }
  expectAlive(target)
  expect(target.stderr(), 'no worker died and was replaced').not.toMatch(/exited|uncaught|unhandled/i)
}

const endpoints = (cookie: string): Endpoint[] => {
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' }
  return [
    { method: 'GET', path: '/' },
    { method: 'GET', path: '/?__airlock=confirm', headers: { Accept: 'text/html' } },
    { method: 'GET', path: '/', headers: { 'X-Airlock-Poll': '1', Accept: 'application/json' } },
    { method: 'POST', path: '/?__airlock=leave', headers: form, body: '' },
    {
      method: 'PUT',
      path: '/upload',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: 'some bytes for the origin',
    },
    { method: 'GET', path: '/ws' },
    { method: 'POST', path: '/airlock/', headers: form, body: 'token=not-the-token-xxxxxxxx' },
    {
      method: 'POST',
      path: '/airlock/control',
      headers: { Cookie: cookie, 'Content-Type': 'application/json', 'X-Airlock-Dashboard': '1' },
      body: '{"name":"default","patch":{"limit":3}}',
    },
    { method: 'GET', path: '/airlock/events', headers: { Cookie: cookie } },
    { method: 'GET', path: '/metrics' },
  ]
}

const dashboardPosts = (cookie: string): Endpoint[] =>
  endpoints(cookie).filter((e) => e.path.startsWith('/airlock/') && e.method === 'POST')

const thousandCutOffs = async (base: string, cookie: string): Promise<void> => {
  for (const ep of dashboardPosts(cookie)) {
    await cutOffs(base, ep)
  }
}

let origin: Origin
beforeAll(async () => {
  origin = await nodeOrigin()
})
afterAll(() => origin?.stop())

const flags = (): string[] => [
  'proxy',
  '--target',
  origin.url,
  '--port',
  '0',
  '--limit',
  '3',
  '--queue',
  '--dashboard',
  '/airlock',
  '--metrics',
  '/metrics',
  '--log-level',
  'error',
]

describe('airlock proxy with its dashboard and metrics, one process', () => {
  let target: Target
  let cookie: string
  beforeAll(async () => {
    target = await cli(flags())
    cookie = await signIn(`${target.base}/airlock`)
  })
  afterAll(() => target?.stop())

  it('every endpoint against every hostile client: the process stays up, every honest request is answered', {
    timeout: 120_000,
  }, async () => {
    await hostileRun(target, cookie, async () => {
      for (const ep of endpoints(cookie)) await abuse(target.base, ep)
    })
  })

  it("1,000 cut-off bodies on each of the dashboard's POSTs while honest requests run", {
    timeout: 120_000,
  }, async () => {
    await hostileRun(target, cookie, () => thousandCutOffs(target.base, cookie))
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})

describe.runIf(redisAvailable || process.env.CI)('airlock proxy --workers 2 on a private Redis', () => {
  let redis: PrivateRedis
  let target: Target
  let cookie: string
  beforeAll(async () => {
    requireRedis()
    redis = await startRedis()
    target = await cli([...flags(), '--workers', '2', '--redis', redis.url], {}, /airlock proxy on (http:\/\/[^ /]+)/)
    cookie = await signIn(`${target.base}/airlock`)
  }, 60_000)
  afterAll(async () => {
    await target?.stop()
    await redis?.stop()
  })

  it("1,000 cut-off bodies on each of the dashboard's POSTs while honest requests run: no worker dies (before: 26 of 27 honest requests unanswered)", {
    timeout: 120_000,
  }, async () => {
    await hostileRun(target, cookie, () => thousandCutOffs(target.base, cookie))
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})
