/**
 * One gated app of bench/adaptive.ts, its own process: Fastify in front of the fragile backend
 * (BACKEND_URL). SHIELD: `static:N` (the gate at limit N), `adaptive:MIN:MAX` (the adaptive limit),
 * `under-pressure` (@fastify/under-pressure, no gate). MODE: `request` (default) or `session` (a
 * visitor ends its visit with `GET /leave`, which gives its pass back). REDIS_URL: the gate's store
 * (else memory). `POST /bench/control?limit=N` sets the live limit, `DELETE /bench/control` clears
 * it. Prints `listening <port>`, then `{"t":ms,"limit":n,"adaptive":n,"recent":ms,"baseline":ms}`
 * every 100 ms (the limit in force, the adaptive figure, and the last judged window's 95th
 * percentile and the baseline: the host's own noise). TRACE=1: each move of the adaptive limit (`airlock:limit`) on stderr.
 */
import diagnostics from 'node:diagnostics_channel'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import underPressure from '@fastify/under-pressure'
import { airlockShield } from '../../src/fastify.js'
import { airlockControl, memoryStore } from '../../src/index.js'
import { redisStore } from '../../src/redis.js'

const shield = process.env.SHIELD ?? 'static:40'
const mode = process.env.MODE === 'session' ? 'session' : 'request'
const backend = process.env.BACKEND_URL!
const client = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const store = client ? redisStore({ client, prefix: process.env.PREFIX ?? 'adaptive-bench' }) : memoryStore()
const name = 'adaptive-bench'
const app = Fastify()
if (shield === 'under-pressure') {
  await app.register(underPressure, { maxEventLoopDelay: 200, retryAfter: 1 })
} else {
  const [kind, a, b] = shield.split(':')
  const limit = kind === 'adaptive' ? { min: Number(a), max: Number(b) } : Number(a)
  // Fail closed: a store answer slower than storeTimeout on this busy 2-core box must not let work in unmetered.
  await app.register(airlockShield, {
    name,
    mode,
    limit,
    store,
    secret: 'adaptive-bench-secret-of-at-least-32-bytes',
    bypass: '/bench/',
    storeTimeout: 500,
    onStoreError: 'closed',
    // The load generator's virtual users all come from 127.0.0.1: the client share (on by default)
    // would count them as one client. Off here, as for any load test from one machine.
    clientShare: false,
    logger: { warn: () => {} },
  })
}
const control = airlockControl({ name, store, by: 'bench' })
app.post('/bench/control', async (req) => control.set({ limit: Number((req.query as { limit: string }).limit) }))
app.delete('/bench/control', async () => control.clear())
app.get('/', async (_req, reply) => {
  const res = await fetch(`${backend}/work`)
  reply.code(res.status)
  return res.text()
})
app.get('/leave', async (_req, reply) => {
  await reply.airlock.release()
  return 'bye'
})
if (process.env.TRACE) {
  // Each move of the adaptive limit, with its reason, on stderr.
  const t0 = Date.now()
  diagnostics.subscribe('airlock:limit', (m) => console.error(`${Date.now() - t0} ${JSON.stringify(m)}`))
}
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`listening ${(app.server.address() as { port: number }).port}`)
setInterval(() => {
  if (shield === 'under-pressure') return
  const t = Date.now()
  void app.airlockGate.status().then((s) =>
    console.log(
      JSON.stringify({
        t,
        limit: app.airlockGate.limit,
        adaptive: s.adaptive?.limit ?? null,
        recent: s.adaptive?.recent ?? null,
        baseline: s.adaptive?.baseline ?? null,
      }),
    ),
  )
}, 100).unref()
process.on('SIGTERM', () => {
  void app.close().then(() => {
    client?.disconnect()
    process.exit(0)
  })
})
