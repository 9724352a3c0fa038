/**
 * Metric names by the book: `promtool check metrics` (Debian's `prometheus` package) passes, with no
 * lint warning, on the full metrics text of gates with every feature on (the waiting room and its
 * door, the adaptive limit, the live control, a request-mode gate, a Redis store on a private
 * redis-server, the breaker), after traffic that fills the histograms and counters.
 */
import { spawnSync } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { airlockShield } from '../../src/fastify.js'
import { redisStore } from '../../src/stores/redis.js'
import { airlockControl } from '../../src/core/control.js'
import type { Gate } from '../../src/gate/gate.js'
import { closeAfterEach, metricsApp } from '../helpers/cleanup.js'
import { redisAvailable, requireRedis, startRedis } from '../helpers/redis.js'
import { recordingLogger } from '../helpers/stores.js'
import { hit, nextAddress } from '../http/harness.js'
import { until } from '../helpers/wait.js'

requireRedis()
const SECRET = 'promtool-test-secret-of-32-bytes-or-more'
const hasPromtool = spawnSync('promtool', ['--version']).status === 0
if (!hasPromtool && process.env.CI) throw new Error('CI=true but promtool is not on PATH (apt-get install prometheus)')

/** The cookies of a response as one `Cookie` header value, merged into `jar`. */
function keep(jar: Map<string, string>, setCookies: string[]): string {
  for (const c of setCookies) {
    const [pair] = c.split(';')
    const eq = pair!.indexOf('=')
    jar.set(pair!.slice(0, eq), pair!.slice(eq + 1))
  }
  return [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
}

describe.runIf(redisAvailable && hasPromtool)('promtool check metrics', () => {
  const own = closeAfterEach()

  it('passes with no lint warning on every metric of gates with every feature on', async () => {
    const redis = own(await startRedis(), (r) => r.stop())
    const store = own(redisStore({ client: redis.client({ maxRetriesPerRequest: 0 }), commandTimeout: 500 }), (s) =>
      s.close(),
    )
    const { app } = metricsApp(own)
    const common = { store, secret: SECRET, logger: recordingLogger() }
    // The line (limit 1, fast polls) and the adaptive limit; the door and request mode on their own routes.
    await app.register(airlockShield, {
      ...common,
      name: 'promtool',
      limit: { min: 1, max: 1 },
      queue: { pollInterval: 100 },
    })
    app.get('/', async () => 'home')
    app.get('/done', async (_req, reply) => reply.header('airlock-command', 'release').send('bye'))
    app.get(
      '/door',
      { config: { airlock: { name: 'promtool-door', limit: 1, queue: { challenge: true } } } },
      async () => 'door',
    )
    app.get(
      '/api',
      { config: { airlock: { name: 'promtool-api', mode: 'request', limit: 5, queue: false } } },
      async () => 'api',
    )
    await app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    await airlockControl({ name: 'promtool', store }).set({ admissionRate: 600 }, { by: 'test' })
    const gate = (app as unknown as { airlockGate: Gate }).airlockGate
    await until(() => gate.control.admissionRate === 600, 10_000) // applied (pushed, or re-read) before the scrape

    // One visitor in, one in line; the first leaves (Airlock-Command: release), the second is let in from the line.
    const json = { accept: 'application/json' }
    const first = new Map<string, string>()
    const firstFrom = nextAddress()
    const admitted = await hit(`${url}/`, { headers: json, from: firstFrom })
    expect(admitted.status).toBe(200)
    keep(first, admitted.cookies)
    const second = new Map<string, string>()
    const secondFrom = nextAddress()
    const queued = await hit(`${url}/`, { headers: json, from: secondFrom })
    expect(queued.status).toBe(202)
    let cookie = keep(second, queued.cookies)
    expect((await hit(`${url}/done`, { headers: { ...json, cookie: keep(first, []) }, from: firstFrom })).status).toBe(
      200,
    )
    await until(
      async () => {
        const r = await hit(`${url}/`, { headers: { ...json, cookie, 'x-airlock-poll': '1' }, from: secondFrom })
        cookie = keep(second, r.cookies)
        return r.status === 200
      },
      10_000,
      100,
    )
    expect((await hit(`${url}/done`, { headers: { ...json, cookie }, from: secondFrom })).status).toBe(200)
    // The door challenges a newcomer; request mode lets requests through.
    expect((await hit(`${url}/door`, { headers: json, from: nextAddress() })).status).not.toBe(200)
    for (let i = 0; i < 3; i++) expect((await hit(`${url}/api`, { from: nextAddress() })).status).toBe(200)

    const text = await (await fetch(`${url}/metrics`)).text()
    for (const metric of [
      'airlock_queue_wait_seconds_count',
      'airlock_visit_seconds_count',
      'airlock_released_total',
      'airlock_challenges_total',
      'airlock_adaptive_limit',
      'airlock_admission_rate_limit_per_second',
    ]) {
      expect(text).toMatch(new RegExp(`^${metric}\\{`, 'm'))
    }
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
    expect({ status: check.status, out: `${check.stdout}${check.stderr}`.trim() }).toEqual({ status: 0, out: '' })
  }, 40_000)
})
