/**
 * Hostile clients against a shielded Fastify and Express site, each a process of its own (issue 38):
 * the gate's answers, the waiting room's polls and leave, the door, the confirm request, a route
 * with a body, the dashboard (its sign-in, controls, events, state) and the metrics. Bodies cut at
 * every point, slow, oversized; clients that stop reading; bad encodings; repeated and odd headers;
 * every upgrade token. The process never exits, and every honest request meanwhile is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nextAddress } from '../http/harness.js'
import {
  abuse,
  cutOffs,
  expectAlive,
  get,
  honest,
  signIn,
  site,
  stopsCleanly,
  type Endpoint,
  type Target,
} from './harness.js'

describe.each(['fastify', 'express'] as const)('a %s site with the gate, the dashboard and metrics', (framework) => {
  let target: Target
  let cookie: string
  beforeAll(async () => {
    target = await site(framework)
    cookie = await signIn(`${target.base}/airlock`)
  })
  afterAll(() => target?.stop())

  /** What honest people and the operator do meanwhile: each must be answered. */
  const honestTraffic = () => {
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
    return async () => {
      const results = await Promise.all([page.stop(), operator.stop(), scrape.stop()])
      for (const r of results) {
        expect(r.failures).toEqual([])
        expect(r.answered).toBeGreaterThan(0)
      }
      expectAlive(target)
    }
  }

  const endpoints = (): Endpoint[] => {
    const form = { 'Content-Type': 'application/x-www-form-urlencoded' }
    const dashboard = { Cookie: cookie }
    return [
      { method: 'GET', path: '/' },
      { method: 'GET', path: '/?__airlock=confirm', headers: { Accept: 'text/html' } },
      { method: 'GET', path: '/', headers: { 'X-Airlock-Poll': '1', Accept: 'application/json' } },
      { method: 'POST', path: '/?__airlock=leave', headers: form, body: '' },
      { method: 'POST', path: '/form', headers: form, body: 'a=1&b=2' },
      { method: 'POST', path: '/airlock/', headers: form, body: 'token=not-the-token-xxxxxxxx' },
      {
        method: 'POST',
        path: '/airlock/control',
        headers: { ...dashboard, 'Content-Type': 'application/json', 'X-Airlock-Dashboard': '1' },
        body: '{"name":"shop","patch":{"limit":3}}',
      },
      { method: 'GET', path: '/airlock/events', headers: dashboard },
      { method: 'GET', path: '/airlock/state', headers: dashboard },
      { method: 'GET', path: '/metrics' },
    ]
  }

  it('every endpoint against every hostile client: the process stays up, every honest request is answered', {
    timeout: 120_000,
  }, async () => {
    const done = honestTraffic()
    for (const ep of endpoints()) await abuse(target.base, ep)
    await done()
  })

  it("1,000 cut-off bodies on each of the dashboard's POSTs while honest requests run: never an exit, never an unanswered request", {
    timeout: 120_000,
  }, async () => {
    const done = honestTraffic()
    for (const ep of endpoints().filter((e) => e.path.startsWith('/airlock/') && e.method === 'POST')) {
      await cutOffs(target.base, ep)
    }
    await done()
  })

  it('after all of it, SIGTERM stops it at once (exit 0)', async () => {
    await stopsCleanly(target)
  })
})
