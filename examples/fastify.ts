/**
 * Fastify 5 behind the Hug Shield gate.
 *   In your app (npm install airlock-shield fastify ioredis tsx):
 *     npx tsx node_modules/airlock-shield/examples/fastify.ts
 *   In a clone of the repository: npx tsx examples/fastify.ts
 * With REDIS_URL set (and AIRLOCK_SECRET), slots and passes are shared by every instance.
 */
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { airlockShield } from 'airlock-shield/fastify'
import { memoryStore } from 'airlock-shield'
import { redisStore } from 'airlock-shield/redis'

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
// One log line a request would drown the terminal (and the server) during `airlock hug`.
const app = Fastify({ logger: true, disableRequestLogging: true })

await app.register(airlockShield, {
  limit: 20,
  store: redis ? redisStore({ client: redis }) : memoryStore(),
  secret: process.env.AIRLOCK_SECRET, // 32+ bytes; required in production with Redis
  bypass: ['/health', '/static'],
})

app.get('/', async () => ({ hello: 'world' }))
app.get('/health', async () => 'ok') // never gated
app.get('/webhook', { config: { airlock: false } }, async () => 'not gated either')
// Checkout gets its own, smaller gate.
app.get('/checkout', { config: { airlock: { name: 'checkout', limit: 5 } } }, async () => 'checkout')
// Ends the visitor's pass and frees its slot at once.
app.post('/logout', async (_request, reply) => ({ released: await reply.airlock.release() }))

app.addHook('onClose', async () => {
  redis?.disconnect()
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().then(() => process.exit(0)))
}
await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' })
