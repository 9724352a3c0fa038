/**
 * One test app per adapter (Fastify 5, Express 4, Express 5 here; fetch, Hono, Koa 3 in web-apps.ts),
 * all with the same routes, served over real HTTP on 127.0.0.1. The behaviour suite drives them through `TestApp` only.
 */
import { connect, type AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { Agent, fetch as undiciFetch } from 'undici'
import Fastify from 'fastify'
import { afterEach } from 'vitest'
import express5 from 'express'
import express4 from 'express4'
import { airlockShield } from '../../src/fastify.js'
import { airlock, type AirlockMiddleware } from '../../src/express.js'
import type { GateOptions } from '../../src/gate/gate.js'
import { ADAPTER_NAMES, type AdapterName as EntryAdapterName } from '../../src/entries.js'
import { airlock as nodeAirlock } from '../../src/node.js'
import { type NodeShape, startNodeShapeApp } from './node-apps.js'
import { startWebApp, type WebAdapterName } from './web-apps.js'

/**
 * Each adapter of the list (src/entries.ts) and its test app: Fastify's and Express's below, the
 * Web-standard ones and Koa's in web-apps.ts, those of the plain Node shape (`shield(req, res,
 * next(airlock))`) in node-apps.ts from their factory alone. A `Record`: a new adapter fails to
 * compile here until it has its app.
 */
const APPS: Record<EntryAdapterName, 'fastify' | 'express' | 'web' | NodeShape> = {
  fastify: 'fastify',
  express: 'express',
  fetch: 'web',
  hono: 'web',
  koa: 'web',
  node: nodeAirlock,
}

/** The adapters the HTTP suites run on: the list's, Express as 4 and 5. */
export type AdapterName = Exclude<EntryAdapterName, 'express'> | 'express4' | 'express5'
export const ADAPTERS: AdapterName[] = ADAPTER_NAMES.flatMap((n): AdapterName[] =>
  n === 'express' ? ['express4', 'express5'] : [n],
)

/** What the handlers saw. */
export class Stats {
  running = 0
  max = 0
  runs = 0
  finished = 0
  private waiters: (() => void)[] = []

  enter(): void {
    this.runs++
    this.running++
    if (this.running > this.max) this.max = this.running
  }

  leave(): void {
    this.running--
    this.finished++
    for (const w of this.waiters.splice(0)) w()
  }

  /** Resolves once no handler is running. */
  async idle(timeout = 20_000): Promise<void> {
    const until = Date.now() + timeout
    while (this.running > 0) {
      if (Date.now() > until) throw new Error(`handlers still running: ${this.running}`)
      await new Promise<void>((r) => {
        this.waiters.push(r)
        setTimeout(r, 50)
      })
    }
  }
}

export interface AppSetup {
  /** Options of the app-wide gate. */
  gate?: GateOptions<any>
  /** Options of the gate on `/checkout` (its own name and limit). */
  checkout?: GateOptions<any> & { name: string }
  /** Fastify trustProxy / Express 'trust proxy'. */
  trustProxy?: boolean
  /** Share one record of what the handlers saw between several apps (instances). */
  stats?: Stats
}

export interface TestApp {
  adapter: AdapterName
  url: string
  stats: Stats
  /** Lets every `/hang` handler finish. */
  unhang(): void
  close(): Promise<void>
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * Routes:
 * - `GET /` "home"; `GET /work?ms=N` sleeps N ms; `GET /throw?ms=N` sleeps then fails (500);
 * - `GET /hang` never answers until `unhang()`; `POST /logout` calls `airlock.release()`;
 * - `POST /done` answers with the header `Airlock-Command: release` (set before the body);
 * - `GET /health` (for the `bypass` option); `GET /open` opted out of the gate;
 * - `GET /checkout` behind its own gate (`setup.checkout`);
 * - `GET /kind` answers the decision kind.
 */
export async function startApp(adapter: AdapterName, setup: AppSetup = {}): Promise<TestApp> {
  const stats = setup.stats ?? new Stats()
  const hangs: (() => void)[] = []
  const hang = (): Promise<void> => new Promise((r) => hangs.push(r))
  const unhang = (): void => {
    for (const h of hangs.splice(0)) h()
  }
  const ms = (q: unknown): number => Number((q as { ms?: string }).ms ?? 0)
  const kind = adapter === 'express4' || adapter === 'express5' ? 'express' : APPS[adapter]
  if (typeof kind === 'function') {
    const app = await startNodeShapeApp(kind, setup, { stats, hang, unhang })
    return { adapter, stats, unhang, ...app }
  }
  if (kind === 'web') return startWebApp(adapter as WebAdapterName, setup, { stats, hang, unhang })

  if (adapter === 'fastify') {
    const app = Fastify({ forceCloseConnections: true, trustProxy: setup.trustProxy ?? false })
    await app.register(airlockShield, setup.gate ?? {})
    const work = async (delay: number, fail = false): Promise<string> => {
      stats.enter()
      try {
        await sleep(delay)
        if (fail) throw new Error('boom')
        return 'done'
      } finally {
        stats.leave()
      }
    }
    app.get('/', async () => {
      stats.enter()
      stats.leave()
      return 'home'
    })
    app.get('/work', async (req) => work(ms(req.query)))
    app.get('/throw', async (req) => work(ms(req.query), true))
    app.get('/hang', async () => {
      stats.enter()
      await hang()
      stats.leave()
      return 'late'
    })
    app.post('/logout', async (_req, reply) => `released=${await reply.airlock.release()}`)
    app.post('/done', async (_req, reply) => reply.header('Airlock-Command', 'release').send('thanks'))
    app.get('/health', async () => 'ok')
    app.get('/kind', async (_req, reply) => reply.airlock.decision?.kind ?? 'none')
    app.get('/open', { config: { airlock: false } }, async () => {
      stats.enter()
      stats.leave()
      return 'open'
    })
    if (setup.checkout) {
      app.get(
        '/checkout',
        { config: { airlock: setup.checkout } },
        async (_req, reply) => `checkout ${reply.airlock.decision?.kind}`,
      )
      app.post(
        '/checkout/done',
        { config: { airlock: setup.checkout } },
        async (_req, reply) => `released=${await reply.airlock.release()}`,
      )
    }
    await app.listen({ port: 0, host: '127.0.0.1', backlog: 4096 })
    const { port } = app.server.address() as AddressInfo
    return {
      adapter,
      url: `http://127.0.0.1:${port}`,
      stats,
      unhang,
      async close() {
        unhang()
        await app.close()
      },
    }
  }

  const express = (adapter === 'express4' ? express4 : express5) as unknown as typeof express5
  const app = express()
  if (setup.trustProxy) app.set('trust proxy', true)
  const middlewares: AirlockMiddleware<any>[] = []
  app.get('/open', (_req, res) => {
    stats.enter()
    stats.leave()
    res.send('open')
  })
  if (setup.checkout) {
    const router = express.Router()
    const mw = airlock(setup.checkout)
    middlewares.push(mw)
    router.use(mw)
    router.get('/', (_req, res) => {
      res.send(`checkout ${res.locals.airlock?.decision?.kind}`)
    })
    router.post('/done', (_req, res, next) => {
      res.locals.airlock!.release().then((r) => res.send(`released=${r}`), next)
    })
    app.use('/checkout', router)
  }
  const mw = airlock(setup.gate ?? {})
  middlewares.push(mw)
  app.use(mw)
  const work = (fail: boolean) => (req: any, res: any, next: any) => {
    stats.enter()
    setTimeout(() => {
      stats.leave()
      if (fail) next(new Error('boom'))
      else res.send('done')
    }, ms(req.query))
  }
  app.get('/', (_req, res) => {
    stats.enter()
    stats.leave()
    res.send('home')
  })
  app.get('/work', work(false))
  app.get('/throw', work(true))
  app.get('/hang', (_req, res) => {
    stats.enter()
    void hang().then(() => {
      stats.leave()
      res.send('late')
    })
  })
  app.post('/logout', (_req, res, next) => {
    res.locals.airlock!.release().then((r) => res.send(`released=${r}`), next)
  })
  app.post('/done', (_req, res) => {
    res.set('Airlock-Command', 'release').send('thanks')
  })
  app.get('/health', (_req, res) => {
    res.send('ok')
  })
  app.get('/kind', (_req, res) => {
    res.send(res.locals.airlock?.decision?.kind ?? 'none')
  })
  // Quiet error handler (the default one prints stacks).
  app.use((_err: unknown, _req: any, res: any, _next: any) => {
    res.status(500).send('error')
  })
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', 4096, () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  return {
    adapter,
    url: `http://127.0.0.1:${port}`,
    stats,
    unhang,
    async close() {
      unhang()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await Promise.all(middlewares.map((m) => m.close()))
    },
  }
}

/**
 * A request header as the gate's functions (`skip`, `nonce`, ...) see the request on each adapter:
 * Node's (Fastify, Express, Koa's context: a headers object), a fetch `Request` (`Headers`), or
 * Hono's context (`c.req.header(name)`).
 */
export function requestHeader(request: unknown, name: string): string | undefined {
  const r = request as { headers?: unknown; req?: { header?(name: string): string | undefined } }
  if (r.headers instanceof Headers) return r.headers.get(name) ?? undefined
  if (r.headers !== undefined) return (r.headers as Record<string, string | undefined>)[name]
  return r.req?.header?.(name)
}

/** A `startApp` for the enclosing block whose apps are all closed after each test. */
export function useApps(adapter: AdapterName): (setup?: AppSetup) => Promise<TestApp> {
  const apps: TestApp[] = []
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()))
  })
  return async (setup) => {
    const app = await startApp(adapter, setup)
    apps.push(app)
    return app
  }
}

export interface Answer {
  status: number
  headers: Headers
  body: string
  cookies: string[]
  ms: number
}

let addresses = 0
/**
 * A loopback address of its own (127.0.x.y, x and y from 2), for a client that stands for one
 * person: the gate's client share counts by address, as it would on the internet.
 */
export function nextAddress(): string {
  const n = addresses++ % (250 * 250)
  return `127.0.${2 + Math.floor(n / 250)}.${2 + (n % 250)}`
}

const agents = new Map<string, Agent>()
function agentFrom(address: string): Agent {
  let agent = agents.get(address)
  if (agent === undefined) agents.set(address, (agent = new Agent({ localAddress: address })))
  return agent
}

/** One request over a fresh connection (no pooling between tests), from 127.0.0.1 or the loopback address `from`. */
export async function hit(
  url: string,
  options: { method?: string; headers?: Record<string, string>; timeout?: number; from?: string } = {},
): Promise<Answer> {
  const t0 = performance.now()
  const init = {
    method: options.method ?? 'GET',
    headers: { connection: 'close', ...options.headers },
    signal: AbortSignal.timeout(options.timeout ?? 15_000),
  }
  const res =
    options.from === undefined
      ? await fetch(url, init)
      : ((await undiciFetch(url, { ...init, dispatcher: agentFrom(options.from) })) as unknown as Response)
  const body = await res.text()
  return {
    status: res.status,
    headers: res.headers,
    body,
    cookies: res.headers.getSetCookie(),
    ms: performance.now() - t0,
  }
}

/** A browser-like client: keeps cookies (by name), honours Max-Age=0; one person, so an address of its own (see {@link nextAddress}). */
export class Browser {
  readonly jar = new Map<string, string>()

  constructor(
    readonly base: string,
    readonly address = nextAddress(),
  ) {}

  cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async get(path: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', ...options.headers }
    if (this.jar.size > 0) headers.cookie = this.cookieHeader()
    const answer = await hit(this.base + path, { method: options.method, headers, from: this.address })
    for (const c of answer.cookies) {
      const [pair] = c.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      if (/;\s*Max-Age=0/i.test(c)) this.jar.delete(name)
      else this.jar.set(name, pair!.slice(eq + 1))
    }
    return answer
  }
}

export const SECRET = 'test-secret-that-is-at-least-32-bytes-long'

/** The headers a `HEAD` answer must share with the `GET` answer to the same request. */
const HEAD_HEADERS = [
  'content-type',
  'content-security-policy',
  'retry-after',
  'cache-control',
  'vary',
  'content-length',
] as const

/**
 * A `HEAD` request over a raw socket, read to the end: what is really on the wire, so that a body
 * sent after the headers would show (fetch hides it).
 */
function rawHead(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; body: string }> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    let data = ''
    const s = connect(Number(u.port), u.hostname, () => {
      const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`)
      s.write(`HEAD ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n${lines.join('')}\r\n`)
    })
    s.setTimeout(15_000, () => s.destroy(new Error('HEAD: no answer within 15 s')))
    s.on('data', (d) => {
      data += d.toString('latin1')
    })
    s.on('error', reject)
    s.on('close', () => {
      const end = data.indexOf('\r\n\r\n')
      const [statusLine, ...fields] = data.slice(0, end).split('\r\n')
      const parsed = new Headers()
      for (const f of fields) parsed.append(f.slice(0, f.indexOf(':')), f.slice(f.indexOf(':') + 1).trim())
      resolve({ status: Number(statusLine!.split(' ')[1]), headers: parsed, body: data.slice(end + 4) })
    })
  })
}

/**
 * Sends the same request as `GET` and as `HEAD` and returns the headers that must match (missing
 * ones as `null`), the `GET` body's byte length, and the `HEAD` answer's status and body as sent.
 */
export async function getAndHead(
  url: string,
  headers: Record<string, string> = {},
): Promise<{
  get: Record<string, string | null>
  head: Record<string, string | null>
  getLength: number
  getStatus: number
  headStatus: number
  headBody: string
}> {
  const pick = (h: Headers) => Object.fromEntries(HEAD_HEADERS.map((n) => [n, h.get(n)]))
  const get = await hit(url, { headers })
  const head = await rawHead(url, headers)
  return {
    get: pick(get.headers),
    head: pick(head.headers),
    getLength: Buffer.byteLength(get.body),
    getStatus: get.status,
    headStatus: head.status,
    headBody: head.body,
  }
}
