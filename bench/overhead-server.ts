/**
 * The servers measured by bench/overhead.ts, in their own process (so the load generator does not
 * share their event loop). Prints one JSON line with the ports once listening.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { airlockShield, memoryStore, redisStore } from '../src/index.js'

const SECRET = 'bench-secret-that-is-at-least-32-bytes'
const redisPort = Number(process.env.BENCH_REDIS_PORT)
const clients: Redis[] = []
const redis = (): Redis => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', maxRetriesPerRequest: 1 })
  clients.push(c)
  return c
}

async function site(setup?: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  if (setup) await setup(app)
  app.get('/', async () => 'hello world')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const apps = {
  bare: await site(),
  'gate memory (pass)': await site(async (app) => {
    await app.register(airlockShield, { limit: 1000, store: memoryStore(), secret: SECRET })
  }),
  'gate redis (pass)': await site(async (app) => {
    await app.register(airlockShield, { limit: 1000, store: redisStore({ client: redis() }), secret: SECRET })
  }),
  'request mode redis': await site(async (app) => {
    await app.register(airlockShield, { mode: 'request', limit: 1000, store: redisStore({ client: redis() }) })
  }),
}
const ports = Object.fromEntries(Object.entries(apps).map(([k, a]) => [k, (a.server.address() as { port: number }).port]))
console.log(JSON.stringify(ports))

// The bench asks for this process's CPU time around each run (CPU per request is robust to a noisy machine).
process.on('message', () => {
  process.send?.(process.cpuUsage())
})

process.on('SIGTERM', () => {
  void Promise.all(Object.values(apps).map((a) => a.close())).then(() => {
    for (const c of clients) c.disconnect()
    process.disconnect?.()
    process.exit(0)
  })
})
