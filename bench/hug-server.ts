/**
 * The fragile site of bench/hug.ts, in its own process: one Fastify app per scenario, each on its
 * own loopback port, all with the same route:
 *
 * - `GET /`: a page whose handler waits WORK_MS (50 ms: a database query) and answers 500 when more
 *   than CAPACITY requests were in flight when it started (a database that locks up under load).
 * - `POST /done`: the visitor is done (checkout, logout): releases its pass on shielded apps.
 *
 * Apps: `unshielded`; `request-memory` / `request-redis` (gate in request mode); `session-redis` (gate in
 * session mode, Redis); `queue-redis` (gate with the waiting room, Redis). Shield limit: LIMIT (≤ CAPACITY).
 *
 * With DASHBOARD_PORT, also serves the operator's dashboard for the Redis apps on that port.
 *
 * Prints one JSON line `{ [app]: port }` once listening. IPC: `stats` → counters of every app since
 * the last `reset`; `reset` → zeroes them. SIGTERM closes everything.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import { airlockShield, type AirlockShieldOptions } from '../src/fastify.js'
import { memoryStore } from '../src/index.js'
import { redisStore } from '../src/redis.js'
import { envNumber } from './lib.js'
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { createDashboard } from '../src/dashboard.js'

const CAPACITY = envNumber('CAPACITY', 50)
const LIMIT = envNumber('LIMIT', CAPACITY)
const WORK_MS = envNumber('WORK_MS', 50)
const RETRY_AFTER = envNumber('RETRY_AFTER', 1)
const POLL_INTERVAL = envNumber('POLL_INTERVAL', 1000)
const SECRET = 'hug-bench-secret-that-is-at-least-32-bytes'
const redisPort = Number(process.env.BENCH_REDIS_PORT)
const clients: Redis[] = []
const redis = (): Redis => {
  const c = new Redis({ port: redisPort, host: '127.0.0.1', maxRetriesPerRequest: 1 })
  clients.push(c)
  return c
}

/** What one app saw since the last reset (also the shape bench/hug.ts reads back). */
export interface Counters {
  /** Requests that reached the fragile handler. */
  backend: number
  backend200: number
  backend500: number
  maxInFlight: number
  /** Requests let in without a slot because the store failed or was slower than storeTimeout. */
  failOpen: number
  /** Answers by status, as sent (gate answers included). */
  status: Record<string, number>
  connections: number
  peakConnections: number
  /** ms from the request's arrival to the handler (the gate's decision, plus event-loop waits). */
  toHandlerMs: number[]
  /** ms from the request's arrival to the end of a page (200) response, as the server sees it. */
  pageMs: number[]
  /** The gate's slots held and line length, sampled every 250 ms (shielded apps). */
  held: number[]
  waiting: number[]
  /** Waiting room: visitor ids in the order their ticket was issued (arrival in line). */
  arrivals: string[]
  /** Waiting room: visitor ids in the order they were admitted from the line. */
  admissions: string[]
}

const fresh = (): Counters => ({
  backend: 0,
  backend200: 0,
  backend500: 0,
  maxInFlight: 0,
  failOpen: 0,
  status: {},
  connections: 0,
  peakConnections: 0,
  toHandlerMs: [],
  pageMs: [],
  held: [],
  waiting: [],
  arrivals: [],
  admissions: [],
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const PAGE = `<!doctype html><title>Drop</title><h1>The product page</h1><p>${'Lorem ipsum dolor sit amet. '.repeat(20)}</p>`

/** The visitor id in a `t1~<gate>~<visitorId>~<issuedAt>~<mac>` ticket (docs/waiting-room.md). */
function ticketId(cookies: string | string[] | number | undefined): string | undefined {
  const list = Array.isArray(cookies) ? cookies : typeof cookies === 'string' ? cookies.split(/;\s*/) : []
  for (const c of list) {
    // `airlock_ticket` for the default gate, `airlock_ticket_<name>` for a named one (these are).
    const m = /(?:^|;\s*)airlock_ticket(?:_[A-Za-z0-9_-]+)?=t1~[^~]+~([^~;]+)~/.exec(c)
    if (m) return m[1]
  }
  return undefined
}

async function fragileSite(
  shield?: AirlockShieldOptions,
): Promise<{ app: FastifyInstance; counters: () => Counters; reset(): void }> {
  let c = fresh()
  let inFlight = 0
  const app = Fastify({ logger: false, keepAliveTimeout: 60_000 })
  app.server.on('connection', (socket) => {
    const counters = c
    counters.connections++
    counters.peakConnections = Math.max(counters.peakConnections, counters.connections)
    socket.once('close', () => counters.connections--)
  })
  // Application hooks run before route-level ones (the gate's): this sees the request first.
  const arrivedAt = new WeakMap<object, number>()
  app.addHook('onRequest', async (request) => void arrivedAt.set(request, performance.now()))
  if (shield) {
    await app.register(airlockShield, shield)
    // The waiting room's order, seen from the server: when each ticket was issued, when each was admitted.
    app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply) => {
      const issued = reply.statusCode === 202 ? ticketId(reply.getHeader('set-cookie')) : undefined
      if (issued !== undefined) c.arrivals.push(issued)
      // Let in from the line: on a page load (the decision goes on to the route), or on a poll,
      // which the gate answers itself (200, with the pass; the route never runs, so no decision is
      // on the reply).
      const d = reply.airlock?.decision
      const admittedPoll = request.headers['x-airlock-poll'] !== undefined && reply.statusCode === 200
      if ((d?.kind === 'admit' && d.reason === 'line') || admittedPoll) {
        const id = ticketId(request.headers.cookie)
        if (id !== undefined) c.admissions.push(id)
      }
    })
  }
  app.addHook('onResponse', async (request, reply) => {
    c.status[reply.statusCode] = (c.status[reply.statusCode] ?? 0) + 1
    if (reply.statusCode === 200 && request.method === 'GET')
      c.pageMs.push(performance.now() - (arrivedAt.get(request) ?? performance.now()))
  })
  app.get('/', async (request, reply) => {
    const counters = c
    counters.backend++
    counters.toHandlerMs.push(performance.now() - (arrivedAt.get(request) ?? performance.now()))
    const d = reply.airlock?.decision // undefined on the unshielded app
    if (d?.kind === 'admit' && d.reason === 'store-unavailable') counters.failOpen++
    inFlight++
    counters.maxInFlight = Math.max(counters.maxInFlight, inFlight)
    const overloaded = inFlight > CAPACITY
    await sleep(WORK_MS)
    inFlight--
    if (overloaded) {
      counters.backend500++
      return reply.code(500).type('text/plain').send('database locked up')
    }
    counters.backend200++
    return reply.type('text/html').send(PAGE)
  })
  app.post('/done', async (_request, reply) => ({ released: (await reply.airlock?.release()) ?? false }))
  if (shield) {
    let sampler: NodeJS.Timeout | undefined
    app.addHook('onReady', async () => {
      sampler = setInterval(() => {
        const counters = c
        app.airlockGate.state().then(
          (st) => {
            counters.held.push(st.held)
            counters.waiting.push(st.waiting)
          },
          () => {},
        )
      }, 250)
    })
    app.addHook('onClose', async () => clearInterval(sampler))
  }
  await app.listen({ port: 0, host: '127.0.0.1', backlog: 4096 })
  return { app, counters: () => c, reset: () => void (c = fresh()) }
}

// The load generator's virtual users all come from 127.0.0.1: the client share (on by default)
// would count them as one client. Off here, as for any load test from one machine.
const common = { limit: LIMIT, retryAfter: RETRY_AFTER, clientShare: false }
// Each app's gate has its own name (so its own slots); the Redis ones share one store, which the
// dashboard (DASHBOARD_PORT) reads.
const hugStore = redisStore({ client: redis(), prefix: 'hug' })
const sites = {
  unshielded: await fragileSite(),
  'request-memory': await fragileSite({ ...common, name: 'request-memory', mode: 'request', store: memoryStore() }),
  'request-redis': await fragileSite({ ...common, name: 'request-redis', mode: 'request', store: hugStore }),
  'session-redis': await fragileSite({ ...common, name: 'session-redis', store: hugStore, secret: SECRET }),
  'queue-redis': await fragileSite({
    ...common,
    name: 'queue-redis',
    store: hugStore,
    secret: SECRET,
    // A quick line for a 10 s bench: pages poll every second; a head has 3 s to claim its slot.
    queue: { pollInterval: POLL_INTERVAL, claimWindow: POLL_INTERVAL * 3, idleTimeout: POLL_INTERVAL * 6 },
  }),
}
// DASHBOARD_PORT: the operator's dashboard for the Redis apps, to watch the hug live (token:
// AIRLOCK_DASHBOARD_TOKEN, else one made up and printed on stderr).
const dashboardPort = process.env.DASHBOARD_PORT
if (dashboardPort !== undefined) {
  const token = process.env.AIRLOCK_DASHBOARD_TOKEN ?? randomBytes(18).toString('hex')
  const dashboard = createDashboard({
    token,
    store: hugStore,
    names: ['request-redis', 'session-redis', 'queue-redis'],
    logger: { warn: () => {} },
  })
  const server = createServer((req, res) => dashboard.handle(req, res))
  server.listen(Number(dashboardPort), '127.0.0.1', () =>
    console.error(`dashboard: http://127.0.0.1:${dashboardPort}/?token=${token}`),
  )
  server.unref()
}
console.log(
  JSON.stringify(
    Object.fromEntries(Object.entries(sites).map(([k, s]) => [k, (s.app.server.address() as { port: number }).port])),
  ),
)

const loop = monitorEventLoopDelay({ resolution: 10 })
loop.enable()
process.on('message', (msg: string) => {
  if (msg === 'reset') {
    for (const s of Object.values(sites)) s.reset()
    loop.reset()
    process.send?.('ok')
  } else if (msg === 'stats') {
    const stats = Object.fromEntries(Object.entries(sites).map(([k, s]) => [k, s.counters()]))
    process.send?.({ stats, loopDelayP99: loop.percentile(99) / 1e6, loopDelayMax: loop.max / 1e6 })
  }
})

process.on('SIGTERM', () => {
  void Promise.all(Object.values(sites).map((s) => s.app.close())).then(() => {
    for (const c of clients) c.disconnect()
    process.disconnect?.()
    process.exit(0)
  })
})
