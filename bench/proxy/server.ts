/**
 * Our proxy for bench/proxy.ts, its own process. MODE: `plain` (no gate), `session` (pass holders),
 * `request` (request mode on REDIS_URL, LIMIT). Prints `listening <port>`.
 */
import { Redis } from 'ioredis'
import { createProxy } from '../../src/proxy.js'
import { memoryStore } from '../../src/index.js'
import { redisStore } from '../../src/redis.js'

const mode = process.env.MODE ?? 'plain'
const client = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const store = client ? redisStore({ client, prefix: 'proxy-bench' }) : memoryStore()
const app = await createProxy({
  target: process.env.TARGET!,
  gated: mode !== 'plain',
  mode: mode === 'request' ? 'request' : 'session',
  limit: Number(process.env.LIMIT ?? 1000),
  passTtl: 600_000,
  // The load generator's virtual users all come from 127.0.0.1: the client share (on by default)
  // would count them as one client. Off here, as for any load test from one machine.
  clientShare: false,
  secret: 'proxy-bench-secret-that-is-at-least-32-bytes',
  store,
  logger: { warn: () => {} },
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`listening ${(app.server.address() as { port: number }).port}`)
process.on(
  'SIGTERM',
  () =>
    void app.close().then(() => {
      client?.disconnect()
      process.exit(0)
    }),
)
