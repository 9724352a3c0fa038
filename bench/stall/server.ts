/**
 * The gated app of bench/stall.ts, its own process: Fastify with the gate on REDIS_URL (limit
 * LIMIT, MODE, ON_STORE_ERROR or the default) in front of a fragile handler in the same process:
 * `GET /` takes WORK_MS while at most CAPACITY requests are inside, and fails at once with 500 above
 * (a pool that throws). Counts handler runs and failures exactly, by time since `POST /bench/start`.
 * Prints `listening <port>`; `GET /bench/stats` answers the counts as JSON.
 */
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { airlockShield } from '../../src/fastify.js'
import { redisStore } from '../../src/redis.js'

const WORK = Number(process.env.WORK_MS ?? 50)
const CAPACITY = Number(process.env.CAPACITY ?? 20)
const client = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 1 })
const store = redisStore({ client, prefix: process.env.PREFIX ?? 'stall-bench' })
const onStoreError = process.env.ON_STORE_ERROR as 'local' | 'open' | 'closed' | undefined
const app = Fastify()
await app.register(airlockShield, {
  mode: process.env.MODE === 'session' ? 'session' : 'request',
  limit: Number(process.env.LIMIT ?? 15),
  store,
  secret: 'stall-bench-secret-of-at-least-32-bytes',
  bypass: '/bench/',
  logger: { warn: () => {} },
  // The load generator's virtual users all come from 127.0.0.1: the client share (on by default)
  // would count them as one client. Off here, as for any load test from one machine.
  clientShare: false,
  ...(onStoreError ? { onStoreError } : {}),
})

let started = 0
let inside = 0
/** Handler runs and failed runs, per 100 ms since the start. */
const runs: number[] = []
const failed: number[] = []
const count = (list: number[]): void => {
  const i = Math.floor((Date.now() - started) / 100)
  list[i] = (list[i] ?? 0) + 1
}
app.post('/bench/start', async () => {
  started = Date.now()
  runs.length = failed.length = 0
  return started
})
app.get('/bench/stats', async () => ({
  runs: Array.from(runs, (n) => n ?? 0),
  failed: Array.from(failed, (n) => n ?? 0),
}))
app.get('/', async (_req, reply) => {
  count(runs)
  if (inside >= CAPACITY) {
    count(failed)
    return reply.code(500).send('refused')
  }
  inside++
  await new Promise((r) => setTimeout(r, WORK))
  inside--
  return 'ok'
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`listening ${(app.server.address() as { port: number }).port}`)
process.on('SIGTERM', () => {
  void app.close().then(() => {
    client.disconnect()
    process.exit(0)
  })
})
