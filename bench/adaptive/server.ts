/**
 * One gated app of bench/adaptive.ts, its own process: Fastify in front of the fragile backend
 * (BACKEND_URL). SHIELD: `static:N` (the gate in request mode at limit N), `adaptive:MIN:MAX` (the
 * adaptive limit), `under-pressure` (@fastify/under-pressure, no gate). REDIS_URL: the gate's store
 * (else memory). Prints `listening <port>`, then `{"t":ms,"limit":n}` every 250 ms.
 */
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import underPressure from '@fastify/under-pressure'
import { airlockShield } from '../../src/fastify.js'
import { memoryStore } from '../../src/index.js'
import { redisStore } from '../../src/redis.js'

const shield = process.env.SHIELD ?? 'static:40'
const backend = process.env.BACKEND_URL!
const client = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const store = client ? redisStore({ client, prefix: 'adaptive-bench' }) : memoryStore()
const app = Fastify()
if (shield === 'under-pressure') {
  await app.register(underPressure, { maxEventLoopDelay: 200, retryAfter: 1 })
} else {
  const [kind, a, b] = shield.split(':')
  const limit = kind === 'adaptive' ? { min: Number(a), max: Number(b) } : Number(a)
  // Fail closed: a store answer slower than storeTimeout on this busy 2-core box must not let work in unmetered.
  await app.register(airlockShield, { name: 'adaptive-bench', mode: 'request', limit, store, storeTimeout: 500, onStoreError: 'closed', logger: { warn: () => {} } })
}
app.get('/', async (_req, reply) => {
  const res = await fetch(`${backend}/work`)
  reply.code(res.status)
  return res.text()
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`listening ${(app.server.address() as { port: number }).port}`)
setInterval(() => {
  const limit = shield === 'under-pressure' ? null : app.airlockGate.limit
  console.log(JSON.stringify({ t: Date.now(), limit }))
}, 250).unref()
process.on('SIGTERM', () => {
  void app.close().then(() => {
    client?.disconnect()
    process.exit(0)
  })
})
