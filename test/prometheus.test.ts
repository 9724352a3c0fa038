/**
 * `airlock-shield/prometheus` on prom-client: known traffic through Fastify and through Express (7
 * admitted, 3 queued, 5 busy because the line is full, then one decision during a store outage),
 * over real HTTP on a private Redis; the exact numbers read back from the `/metrics` text.
 */
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import express from 'express'
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import { airlockShield } from '../src/fastify.js'
import { airlock, type AirlockMiddleware } from '../src/express.js'
import { airlockMetrics, type AirlockMetrics } from '../src/prometheus.js'
import { redisStore, type RedisStore } from '../src/stores/redis.js'
import { isAirlockError } from '../src/base/errors.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'
import { recordingLogger } from './helpers/stores.js'
import { hit, nextAddress } from './http/harness.js'

requireRedis()
const SECRET = 'prometheus-test-secret-of-32-bytes-or-more'

/** The value of one sample line of the exposition text, or undefined. */
function sample(text: string, metric: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue
    const inside = line.slice(metric.length + 1, line.indexOf('}'))
    const parts = inside.split(',')
    if (want.every((w) => parts.includes(w)) && parts.length === want.length)
      return Number(line.slice(line.indexOf('}') + 2))
  }
  return undefined
}

interface Site {
  url: string
  close(): Promise<void>
}

async function fastifySite(gate: object, registry: Registry): Promise<Site> {
  const app = Fastify({ forceCloseConnections: true })
  app.get('/metrics', { config: { airlock: false } }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  )
  await app.register(airlockShield, gate)
  app.get('/', async () => 'home')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() }
}

async function expressSite(gate: object, registry: Registry): Promise<Site> {
  const app = express()
  app.get('/metrics', (_req, res, next) => {
    registry.metrics().then((text) => res.type(registry.contentType).send(text), next)
  })
  const mw: AirlockMiddleware = airlock(gate)
  app.use(mw)
  app.get('/', (_req, res) => {
    res.send('home')
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await mw.close()
    },
  }
}

describe.runIf(redisAvailable)('Prometheus metrics (airlock-shield/prometheus)', () => {
  let redis: PrivateRedis | undefined
  let store: RedisStore | undefined
  let metrics: AirlockMetrics | undefined
  let site: Site | undefined
  afterEach(async () => {
    metrics?.stop()
    await site?.close()
    await store?.close()
    await redis?.stop()
    metrics = site = store = redis = undefined
  })

  for (const [adapter, start] of [
    ['Fastify', fastifySite],
    ['Express', expressSite],
  ] as const) {
    it(`${adapter}: 7 admitted, 3 queued, 5 busy, one store outage, read exactly from /metrics`, async () => {
      redis = await startRedis()
      store = redisStore({ client: redis.client({ maxRetriesPerRequest: 0 }), commandTimeout: 300 })
      const registry = new Registry()
      metrics = airlockMetrics({ registry, statusCacheMs: 0 })
      const name = `metrics-${adapter.toLowerCase()}`
      site = await start(
        {
          name,
          limit: 7,
          store,
          secret: SECRET,
          queue: { maxLength: 3 },
          storeTimeout: 500,
          logger: recordingLogger(),
        },
        registry,
      )
      // Each request a visitor of its own, from its own address (the client share counts by address).
      const get = () =>
        hit(`${site!.url}/`, { headers: { accept: 'text/html' }, from: nextAddress() }).then((r) => r.status)
      const statuses: number[] = []
      for (let i = 0; i < 15; i++) statuses.push(await get())
      expect(statuses).toEqual([...Array(7).fill(200), ...Array(3).fill(202), ...Array(5).fill(503)])

      let text = await (await fetch(`${site.url}/metrics`)).text()
      const decisions = (kind: string, reason: string) =>
        sample(text, 'airlock_decisions_total', { gate: name, kind, reason })
      expect([decisions('admit', 'slot'), decisions('queued', ''), decisions('busy', 'full')]).toEqual([7, 3, 5])
      expect(sample(text, 'airlock_queue_events_total', { gate: name, event: 'enter' })).toBe(3)
      expect(sample(text, 'airlock_queue_events_total', { gate: name, event: 'full' })).toBe(5)
      expect(sample(text, 'airlock_slots_held', { gate: name })).toBe(7)
      expect(sample(text, 'airlock_limit', { gate: name })).toBe(7)
      expect(sample(text, 'airlock_queue_length', { gate: name })).toBe(3)
      expect(sample(text, 'airlock_admissions_per_second', { gate: name })).toBeCloseTo(7 / 60, 6)
      expect(sample(text, 'airlock_breaker_open', { gate: name })).toBe(0)
      expect(
        sample(text, 'airlock_store_duration_seconds_count', { store: 'redis', operation: 'acquire', outcome: 'ok' }),
      ).toBe(15)

      // A store outage: with onStoreError 'local' (the default) the 7 passes this instance gave are
      // its whole share of the limit, so a newcomer is busy.
      await redis.kill()
      expect(await get()).toBe(503)
      text = await (await fetch(`${site.url}/metrics`)).text()
      expect(decisions('busy', 'store-unavailable')).toBe(1)
      expect(
        sample(text, 'airlock_store_duration_seconds_count', {
          store: 'redis',
          operation: 'acquire',
          outcome: 'error',
        }),
      ).toBe(1)
      expect(sample(text, 'airlock_slots_held', { gate: name })).toBeUndefined() // unknown while the store is down
      expect([decisions('admit', 'slot'), decisions('queued', ''), decisions('busy', 'full')]).toEqual([7, 3, 5])
    }, 30_000)
  }

  it('checks its options, and stop() unsubscribes and unregisters', () => {
    const registry = new Registry()
    for (const bad of [
      { prefix: 'has space' },
      { buckets: [0] },
      { registry: {} },
      { statusCacheMs: -1 },
      { nope: 1 },
    ]) {
      let error: unknown
      try {
        airlockMetrics(bad as never)
      } catch (err) {
        error = err
      }
      expect(isAirlockError(error, 'ERR_AIRLOCK_OPTION')).toBe(true)
    }
    const m = airlockMetrics({ registry, prefix: 'shield_' })
    expect(registry.getMetricsAsArray().map((x) => x.name)).toContain('shield_decisions_total')
    m.stop()
    expect(registry.getMetricsAsArray()).toEqual([])
  })
})
