/**
 * What a test opens, closed after it: `const own = closeAfterEach()` in a `describe`, then
 * `const redis = own(await startRedis(), (r) => r.stop())`. After each test every closer runs, the
 * last opened first (an app before its store, a store before its server), even when the test failed.
 */
import type { FastifyInstance } from 'fastify'
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import { afterEach } from 'vitest'
import { airlockMetrics, type AirlockMetrics } from '../../src/prometheus.js'

export type Own = <T>(thing: T, close: (thing: T) => unknown) => T

export function closeAfterEach(): Own {
  const closers: (() => unknown)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })
  return (thing, close) => {
    closers.push(() => close(thing))
    return thing
  }
}

/** A Fastify app with prom-client metrics on an ungated `GET /metrics`; both closed after the test. */
export function metricsApp(own: Own): { app: FastifyInstance; metrics: AirlockMetrics } {
  const registry = new Registry()
  const metrics = own(airlockMetrics({ registry, statusCacheMs: 0 }), (m) => m.stop())
  const app = own(Fastify({ forceCloseConnections: true }), (a) => a.close())
  app.get('/metrics', { config: { airlock: false } }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  )
  return { app, metrics }
}
