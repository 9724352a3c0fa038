/**
 * The servers measured by bench/overhead.ts, each scenario in its own process (so the load generator
 * does not share its event loop, and scenarios do not share a JIT: Express and Fastify apps in one
 * process made whichever ran first after the other pay to re-optimise Node's HTTP code). Each
 * scenario is its own app on its own loopback port answering `hello world` on `GET /`. Prints one
 * JSON line (`{ [scenario]: { port, framework, pass } }`) once listening; answers `cpu` messages
 * with its CPU usage; closes everything on SIGTERM.
 *
 * Env: BENCH_REDIS_PORT (required), SCENARIO (the one scenario to serve, by exact name), or
 * SCENARIOS (a RegExp: every scenario whose name matches), or LIST=1 (print the names and exit);
 * AIRLOCK_SRC (another tree's src/ to measure instead of this one's).
 */
import diagnostics from 'node:diagnostics_channel'
import { existsSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createAdaptorServer } from '@hono/node-server'
import { Hono } from 'hono'
import Koa from 'koa'
import { Registry } from 'prom-client'
import underPressure from '@fastify/under-pressure'
import rateLimit from '@fastify/rate-limit'
import express from 'express'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis, type RedisOptions } from 'ioredis'
import { Semaphore as RedisSemaphore } from 'redis-semaphore'
import type { AirlockMiddleware } from '../src/express.js'
import type { airlock as FetchAirlock } from '../src/fetch.js'
import type { airlock as HonoAirlock } from '../src/hono.js'
import type { airlock as KoaAirlock } from '../src/koa.js'
import type { airlock as NodeAirlock } from '../src/node.js'
import { ADAPTER_NAMES, type AdapterName } from '../src/entries.js'
import type { airlockShield as AirlockShield } from '../src/fastify.js'
import type { memoryStore as MemoryStore } from '../src/index.js'
import type { redisStore as RedisStoreFactory } from '../src/redis.js'

// The package under test: this tree's src/, or (AIRLOCK_SRC) another tree's, e.g. the previous
// commit's worktree made by bench/overhead.ts for COMPARE. Older trees exported everything from
// the root; newer ones from the entry points.
// A built tree (dist/, what users run: no tsx, no keepNames helpers) has .js entry points.
const src = process.env.AIRLOCK_SRC ?? new URL('../src', import.meta.url).pathname
const ext = existsSync(`${src}/index.ts`) ? 'ts' : 'js'
const root = (await import(`${src}/index.${ext}`)) as Record<string, unknown>
const from = async <T>(entry: string, name: string): Promise<T> =>
  (root[name] ?? ((await import(`${src}/${entry}.${ext}`)) as Record<string, unknown>)[name]) as T
const airlockShield = await from<typeof AirlockShield>('fastify', 'airlockShield')
const airlock = await from<(options: object) => AirlockMiddleware>('express', 'airlock')
const memoryStore = await from<typeof MemoryStore>('index', 'memoryStore')
const redisStoreOf = await from<typeof RedisStoreFactory>('redis', 'redisStore')
// Two trees on one Redis keep apart: their scripts may read each other's keys differently.
const redisStore = (options: { client: Redis }) =>
  redisStoreOf({ ...options, prefix: process.env.AIRLOCK_SRC ? 'compare' : 'airlock' })

const SECRET = 'bench-secret-that-is-at-least-32-bytes'
/** High enough never to trip with the bench's connections: we measure the cost, not the limiting. */
const LIMIT = 1000
const redisPort = Number(process.env.BENCH_REDIS_PORT)
const exact = process.env.SCENARIO
const only = process.env.SCENARIOS ? new RegExp(process.env.SCENARIOS) : undefined
const clients: Redis[] = []
const redis = (options: RedisOptions = {}): Redis => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', maxRetriesPerRequest: 1, ...options })
  clients.push(c)
  return c
}

/** Every adapter of the list (src/entries.ts) has its rows here: checked when the scenarios are made. */
export type Framework = AdapterName
interface App {
  framework: Framework
  /** The bench must send a pass cookie (fetched once before measuring). */
  pass: boolean
  port: number
  close(): Promise<void>
}

async function fastifySite(setup?: (app: FastifyInstance) => Promise<void>): Promise<Omit<App, 'pass'>> {
  const app = Fastify({ logger: false })
  if (setup) await setup(app)
  app.get('/', async () => 'hello world')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { framework: 'fastify', port: (app.server.address() as { port: number }).port, close: () => app.close() }
}

async function expressSite(
  setup?: (app: express.Express) => AirlockMiddleware | undefined,
): Promise<Omit<App, 'pass'>> {
  const app = express()
  const gate = setup?.(app)
  app.get('/', (_req, res) => {
    res.send('hello world')
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  return {
    framework: 'express',
    port: (server.address() as { port: number }).port,
    close: async () => {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await gate?.close()
    },
  }
}

/** Listens on a loopback port; `close` stops the server and then `gate`. */
async function served(
  framework: Framework,
  server: Server,
  gate?: { close(): Promise<void> },
): Promise<Omit<App, 'pass'>> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    framework,
    port: (server.address() as { port: number }).port,
    close: async () => {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await gate?.close()
    },
  }
}

// The adapters of issue 29, loaded by the scenarios that use them (a COMPARE tree may predate them).
const fetchAirlock = () => from<typeof FetchAirlock>('fetch', 'airlock')
const honoAirlock = () => from<typeof HonoAirlock>('hono', 'airlock')
const koaAirlock = () => from<typeof KoaAirlock>('koa', 'airlock')
const nodeAirlock = () => from<typeof NodeAirlock>('node', 'airlock')

type NodeShield = (req: IncomingMessage, res: ServerResponse, next: (airlock: unknown) => void) => void

/** Plain node:http (no framework), with a shield of the node adapter's shape in front, or none. */
async function nodeSite(gate?: NodeShield & Partial<{ close(): Promise<void> }>): Promise<Omit<App, 'pass'>> {
  const hello = (_req: IncomingMessage, res: ServerResponse): void => {
    res.setHeader('content-type', 'text/plain; charset=utf-8')
    res.end('hello world')
  }
  const server = createServer(gate === undefined ? hello : (req, res) => gate(req, res, () => hello(req, res)))
  return served('node', server, gate?.close === undefined ? undefined : { close: gate.close })
}
/** A middleware of the node adapter's shape that does nothing. */
const emptyNode: NodeShield = (_req, _res, next) => next(undefined)

/** A plain fetch handler on @hono/node-server (no framework): as `Bun.serve` or `Deno.serve` would be given it. */
async function fetchSite(
  gate?: Pick<ReturnType<typeof FetchAirlock>, 'wrap'> & Partial<Pick<ReturnType<typeof FetchAirlock>, 'close'>>,
): Promise<Omit<App, 'pass'>> {
  const hello = (_request: Request, _env: unknown): Response => new Response('hello world')
  return served(
    'fetch',
    createAdaptorServer({ fetch: gate ? gate.wrap(hello) : hello }) as Server,
    gate?.close ? { close: gate.close } : undefined,
  )
}

// The floor under each gate row: a middleware of the same shape that does nothing, so a row can be
// read against what any middleware costs on that framework (the gate's own cost is the difference).
const emptyFetchWrap = {
  wrap:
    <C extends unknown[]>(h: (r: Request, ...c: C) => Response | Promise<Response>) =>
    (r: Request, ...c: C) =>
      h(r, ...c),
}
const emptyHono = async (_c: unknown, next: () => Promise<void>): Promise<void> => {
  await next()
}
const emptyKoa = async (_ctx: unknown, next: () => Promise<unknown>): Promise<void> => {
  await next()
}
async function emptyFastifyHooks(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (_request, _reply, done) => done())
  app.addHook('onSend', (_request, _reply, payload, done) => done(null, payload))
}

async function honoSite(gate?: ReturnType<typeof HonoAirlock> | typeof emptyHono): Promise<Omit<App, 'pass'>> {
  const app = new Hono()
  if (gate) app.use(gate as ReturnType<typeof HonoAirlock>)
  app.get('/', (c) => c.text('hello world'))
  return served(
    'hono',
    createAdaptorServer({ fetch: app.fetch }) as Server,
    gate === emptyHono ? undefined : (gate as ReturnType<typeof HonoAirlock> | undefined),
  )
}

async function koaSite(gate?: ReturnType<typeof KoaAirlock> | typeof emptyKoa): Promise<Omit<App, 'pass'>> {
  const app = new Koa()
  if (gate) app.use(gate as ReturnType<typeof KoaAirlock>)
  app.use((ctx) => {
    if (ctx.path === '/') ctx.body = 'hello world'
  })
  return served(
    'koa',
    createServer(app.callback()),
    gate === emptyKoa ? undefined : (gate as ReturnType<typeof KoaAirlock> | undefined),
  )
}

function use(app: express.Express, gate: AirlockMiddleware): AirlockMiddleware {
  app.use(gate)
  return gate
}

/** A `redis-semaphore` gate as its README shows it: a Semaphore per request, released when done. */
async function redisSemaphoreGate(app: FastifyInstance): Promise<void> {
  const client = redis()
  const held = new WeakMap<object, RedisSemaphore>()
  app.addHook('onRequest', async (request, reply) => {
    const sem = new RedisSemaphore(client, 'bench-site', LIMIT, { lockTimeout: 30_000, acquireAttemptsLimit: 1 })
    if (!(await sem.tryAcquire())) return reply.code(503).header('retry-after', '5').send('busy')
    held.set(request, sem)
  })
  app.addHook('onResponse', async (request) => {
    await held.get(request)?.release()
  })
}

/** name → [pass cookie needed, how to build it]. Insertion order is the alternation order. */
const scenarios: Record<string, [boolean, () => Promise<Omit<App, 'pass'>>]> = {
  'fastify bare': [false, () => fastifySite()],
  'fastify + empty hooks (onRequest, onSend)': [false, () => fastifySite(emptyFastifyHooks)],
  'fastify + gate, pass holders, memory': [
    true,
    () =>
      fastifySite(
        async (app) => void (await app.register(airlockShield, { limit: LIMIT, store: memoryStore(), secret: SECRET })),
      ),
  ],
  'fastify + gate, pass holders, memory, prometheus metrics': [
    true,
    () =>
      fastifySite(async (app) => {
        // airlock-shield/prometheus on prom-client: a counter per decision (and the gauges at scrape time).
        const { airlockMetrics } = (await import(`${src}/prometheus.ts`).catch(() => ({}))) as {
          airlockMetrics?: (o: object) => unknown
        }
        if (!airlockMetrics)
          throw new Error(
            'this tree has no prometheus module (COMPARE with an older commit: filter it out with SCENARIOS)',
          )
        airlockMetrics({ registry: new Registry() })
        await app.register(airlockShield, { limit: LIMIT, store: memoryStore(), secret: SECRET })
      }),
  ],
  'fastify + gate, pass holders, memory, channel subscriber': [
    true,
    () =>
      fastifySite(async (app) => {
        // A subscriber on airlock:decision that does nothing: what publishing the events costs.
        diagnostics.subscribe('airlock:decision', () => {})
        await app.register(airlockShield, { limit: LIMIT, store: memoryStore(), secret: SECRET })
      }),
  ],
  'fastify + gate, pass holders, redis': [
    true,
    () =>
      fastifySite(
        async (app) =>
          void (await app.register(airlockShield, {
            limit: LIMIT,
            store: redisStore({ client: redis() }),
            secret: SECRET,
          })),
      ),
  ],
  'fastify + gate, request mode, redis': [
    false,
    () =>
      fastifySite(
        async (app) =>
          void (await app.register(airlockShield, {
            mode: 'request',
            limit: LIMIT,
            store: redisStore({ client: redis() }),
          })),
      ),
  ],
  'fastify + gate, request mode, redis, auto-pipelining': [
    false,
    () =>
      fastifySite(async (app) => {
        // The same on an ioredis client with enableAutoPipelining: commands issued in one turn of the
        // event loop share one socket write.
        await app.register(airlockShield, {
          mode: 'request',
          limit: LIMIT,
          store: redisStore({ client: redis({ enableAutoPipelining: true }) }),
        })
      }),
  ],
  'fastify + redis-semaphore per request': [false, () => fastifySite(redisSemaphoreGate)],
  'fastify + @fastify/under-pressure': [
    false,
    () =>
      fastifySite(async (app) => {
        // The README's thresholds, with heap/RSS limits a bench process never reaches and no
        // event-loop-utilization limit (a saturated bench server sits near 1.0 and would trip it).
        await app.register(underPressure, { maxEventLoopDelay: 1000, maxHeapUsedBytes: 1e9, maxRssBytes: 2e9 })
      }),
  ],
  'fastify + @fastify/rate-limit, redis': [
    false,
    () =>
      fastifySite(async (app) => {
        // The README's Redis setup (connectTimeout 500, maxRetriesPerRequest 1); a max the bench never reaches.
        await app.register(rateLimit, { max: 1e9, timeWindow: 60_000, redis: redis({ connectTimeout: 500 }) })
      }),
  ],
  'express bare': [false, () => expressSite()],
  'express + empty middleware': [
    false,
    () =>
      expressSite((app) => {
        app.use((_req, _res, next) => next())
        return undefined
      }),
  ],
  'express + gate, pass holders, memory': [
    true,
    () => expressSite((app) => use(app, airlock({ limit: LIMIT, store: memoryStore(), secret: SECRET }))),
  ],
  'express + gate, pass holders, redis': [
    true,
    () =>
      expressSite((app) => use(app, airlock({ limit: LIMIT, store: redisStore({ client: redis() }), secret: SECRET }))),
  ],
  'fetch bare': [false, () => fetchSite()],
  'fetch + empty wrapper': [false, () => fetchSite(emptyFetchWrap)],
  'fetch + gate, pass holders, memory': [
    true,
    async () => fetchSite((await fetchAirlock())({ limit: LIMIT, store: memoryStore(), secret: SECRET })),
  ],
  'hono bare': [false, () => honoSite()],
  'hono + empty middleware': [false, () => honoSite(emptyHono)],
  'hono + gate, pass holders, memory': [
    true,
    async () => honoSite((await honoAirlock())({ limit: LIMIT, store: memoryStore(), secret: SECRET })),
  ],
  'node bare': [false, () => nodeSite()],
  'node + empty middleware': [false, () => nodeSite(emptyNode)],
  'node + gate, pass holders, memory': [
    true,
    async () => nodeSite((await nodeAirlock())({ limit: LIMIT, store: memoryStore(), secret: SECRET })),
  ],
  'koa bare': [false, () => koaSite()],
  'koa + empty middleware': [false, () => koaSite(emptyKoa)],
  'koa + gate, pass holders, memory': [
    true,
    async () => koaSite((await koaAirlock())({ limit: LIMIT, store: memoryStore(), secret: SECRET })),
  ],
}

// Every adapter of the list has its three rows (bare, empty middleware, gated): a new one is measured too.
for (const framework of ADAPTER_NAMES) {
  const rows = Object.keys(scenarios).filter((name) => name.startsWith(`${framework} `))
  if (
    !rows.some((r) => r.endsWith(' bare')) ||
    !rows.some((r) => / \+ empty /.test(r)) ||
    !rows.some((r) => / \+ gate, /.test(r))
  )
    throw new Error(
      `bench/overhead-server.ts: the adapter '${framework}' (src/entries.ts) needs its bare, empty-middleware and gated rows`,
    )
}

if (process.env.LIST) {
  console.log(JSON.stringify(Object.keys(scenarios).filter((name) => !only || only.test(name))))
  process.exit(0)
}
if (exact !== undefined && !(exact in scenarios)) throw new Error(`SCENARIO: no scenario named '${exact}'`)
const apps: Record<string, App> = {}
for (const [name, [pass, make]] of Object.entries(scenarios)) {
  if (exact !== undefined ? name !== exact : only && !only.test(name)) continue
  apps[name] = { ...(await make()), pass }
}
console.log(
  JSON.stringify(
    Object.fromEntries(
      Object.entries(apps).map(([k, a]) => [k, { port: a.port, framework: a.framework, pass: a.pass }]),
    ),
  ),
)

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
