/**
 * A product drop behind the fair waiting room.
 *   In your app (npm install airlock-shield fastify @fastify/formbody ioredis tsx):
 *     npx tsx node_modules/airlock-shield/examples/waiting-room.ts
 *   In a clone of the repository: npx tsx examples/waiting-room.ts
 * Then open http://127.0.0.1:3000/ in two browsers (or a normal and a private window): the first gets
 * in, the second waits at position 1 and is let in by itself when the first clicks "Leave".
 * With REDIS_URL set (and AIRLOCK_SECRET), every instance shares one line.
 */
import Fastify from 'fastify'
import formbody from '@fastify/formbody'
import { Redis } from 'ioredis'
import { airlockShield } from 'airlock-shield/fastify'
import { memoryStore } from 'airlock-shield'
import { redisStore } from 'airlock-shield/redis'

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const app = Fastify({ logger: { level: 'warn' } })
// The "Leave" button posts an HTML form (application/x-www-form-urlencoded). Fastify parses only
// JSON and plain text by itself and answers any other body type 415, so register the form parser
// in every Fastify app that has HTML forms (npm install @fastify/formbody).
await app.register(formbody)

await app.register(airlockShield, {
  limit: Number(process.env.LIMIT ?? 1), // visitors in the shop at once
  store: redis ? redisStore({ client: redis }) : memoryStore(),
  secret: process.env.AIRLOCK_SECRET, // 32+ bytes; required in production with Redis
  queue: { order: 'fifo', maxLength: 100_000, idleTimeout: 30_000, claimWindow: 10_000 },
  bypass: ['/health'],
})

app.get('/', async (_request, reply) =>
  reply
    .type('text/html')
    .send(
      '<!doctype html><title>Shop</title><h1>You are in the shop</h1>' +
        '<form method="post" action="/leave"><button>Leave (frees your place for the next in line)</button></form>',
    ),
)
app.post('/leave', async (_request, reply) => {
  await reply.airlock.release()
  return reply.type('text/html').send('<!doctype html><title>Bye</title><p>Thanks, you left the shop.</p>')
})
app.get('/health', async () => 'ok')
// How the line looks right now (not gated): { limit, held, available, waiting }.
app.get('/state', { config: { airlock: false } }, async () => app.airlockGate.state())

app.addHook('onClose', async () => {
  redis?.disconnect()
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().then(() => process.exit(0)))
}
const port = Number(process.env.PORT ?? 3000)
await app.listen({ port, host: '127.0.0.1' })
console.log(`waiting room demo on http://127.0.0.1:${port}/ (limit ${process.env.LIMIT ?? 1}); state at /state`)
