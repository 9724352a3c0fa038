/**
 * Bytes a pass holder's request allocates through each adapter, against the same app with an empty
 * middleware of the same shape: in process (no socket), N requests after a warm-up, with a young
 * generation large enough that no collection runs while counting, so the heap's growth is what
 * the requests allocated. Deterministic for a given Node version.
 *   node --expose-gc --min-semi-space-size=256 --max-semi-space-size=256 --import tsx bench/alloc.mts
 */
import inject from 'light-my-request'
import Fastify from 'fastify'
import express from 'express'
import Koa from 'koa'
import { Hono } from 'hono'
import { airlockShield } from '../src/fastify.js'
import { airlock as expressAirlock } from '../src/express.js'
import { airlock as fetchAirlock } from '../src/fetch.js'
import { airlock as honoAirlock } from '../src/hono.js'
import { airlock as koaAirlock } from '../src/koa.js'
import { airlock as nodeAirlock } from '../src/node.js'
import { ADAPTER_NAMES } from '../src/entries.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { memoryStore } from '../src/stores/memory.js'

const N = Number(process.env.N ?? 20_000)
const SECRET = 'alloc-bench-secret-of-at-least-32-bytes'
const gc = (globalThis as { gc?: () => void }).gc!
const options = () => ({ limit: 5, store: memoryStore(), secret: SECRET })

type Send = (cookie: string | undefined) => Promise<{ status: number; setCookie: string[] }>

async function measure(send: Send): Promise<number> {
  const first = await send(undefined)
  let pass = first.setCookie.find((c) => c.startsWith('airlock_pass='))?.split(';')[0]
  if (pass) {
    const confirmed = await send(pass)
    pass = confirmed.setCookie.find((c) => c.startsWith('airlock_pass='))?.split(';')[0] ?? pass
  }
  for (let i = 0; i < N / 2; i++) await send(pass)
  gc()
  gc()
  const before = process.memoryUsage().heapUsed
  for (let i = 0; i < N; i++) {
    const r = await send(pass)
    if (r.status !== 200) throw new Error(`status ${r.status}`)
  }
  return (process.memoryUsage().heapUsed - before) / N
}

const viaInject =
  (dispatch: Parameters<typeof inject>[0]): Send =>
  async (cookie) => {
    const r = await inject(dispatch, { url: '/', headers: cookie ? { cookie, accept: '*/*' } : { accept: '*/*' } })
    const sc = r.headers['set-cookie']
    return { status: r.statusCode, setCookie: sc === undefined ? [] : Array.isArray(sc) ? sc : [String(sc)] }
  }
const viaFetch =
  (fetch: (r: Request) => Response | Promise<Response>): Send =>
  async (cookie) => {
    const r = await fetch(
      new Request('http://127.0.0.1/', { headers: cookie ? { cookie, accept: '*/*' } : { accept: '*/*' } }),
    )
    await r.text()
    return { status: r.status, setCookie: r.headers.getSetCookie() }
  }

const scenarios: Record<string, () => Promise<Send>> = {
  // Fastify's own router behind light-my-request, as for Express and Koa (Fastify's inject wraps
  // it in more than a server would, and that part does not count the same from run to run).
  'fastify empty': async () => {
    const app = Fastify()
    app.addHook('onRequest', (_q, _r, done) => done())
    app.addHook('onSend', (_q, _r, p, done) => done(null, p))
    app.get('/', async () => 'hello world')
    await app.ready()
    return viaInject(app.routing as never)
  },
  'fastify gate': async () => {
    const app = Fastify()
    await app.register(airlockShield, options())
    app.get('/', async () => 'hello world')
    await app.ready()
    return viaInject(app.routing as never)
  },
  'express empty': async () => {
    const app = express()
    app.use((_q, _r, next) => next())
    app.get('/', (_q, res) => void res.send('hello world'))
    return viaInject(app as never)
  },
  'express gate': async () => {
    const app = express()
    app.use(expressAirlock(options()))
    app.get('/', (_q, res) => void res.send('hello world'))
    return viaInject(app as never)
  },
  'koa empty': async () => {
    const app = new Koa()
    app.use(async (_c, next) => await next())
    app.use((ctx) => void (ctx.body = 'hello world'))
    return viaInject(app.callback() as never)
  },
  'koa gate': async () => {
    const app = new Koa()
    app.use(koaAirlock(options()))
    app.use((ctx) => void (ctx.body = 'hello world'))
    return viaInject(app.callback() as never)
  },
  'node empty': async () =>
    viaInject(((req: IncomingMessage, res: ServerResponse) => {
      const hello = (): void => void res.end('hello world')
      ;((_q: IncomingMessage, _s: ServerResponse, next: () => void) => next())(req, res, hello)
    }) as never),
  'node gate': async () => {
    const shield = nodeAirlock(options())
    return viaInject(((req: IncomingMessage, res: ServerResponse) =>
      shield(req, res, () => void res.end('hello world'))) as never)
  },
  'fetch empty': async () => viaFetch((r) => ((_r: Request) => new Response('hello world'))(r)),
  'fetch gate': async () => viaFetch(fetchAirlock(options()).wrap(() => new Response('hello world'))),
  'hono empty': async () => {
    const app = new Hono()
    app.use(async (_c, next) => await next())
    app.get('/', (c) => c.text('hello world'))
    return viaFetch(app.fetch)
  },
  'hono gate': async () => {
    const app = new Hono()
    app.use(honoAirlock(options()))
    app.get('/', (c) => c.text('hello world'))
    return viaFetch(app.fetch)
  },
}

const json = process.argv.includes('--json')
const only = process.argv.slice(2).find((a) => !a.startsWith('--'))
const out: Record<string, number> = {}
for (const [name, make] of Object.entries(scenarios)) {
  if (only && !name.startsWith(only)) continue
  out[name] = Math.round(await measure(await make()))
}
if (json) {
  console.log(JSON.stringify(out))
  process.exit(0)
}
for (const fw of ADAPTER_NAMES) {
  if (out[`${fw} gate`] === undefined) continue
  console.log(
    `${fw.padEnd(8)} empty ${String(out[`${fw} empty`]).padStart(6)} B/req  gate ${String(out[`${fw} gate`]).padStart(6)} B/req  the gate's own ${out[`${fw} gate`]! - out[`${fw} empty`]!} B/req`,
  )
}
process.exit(0)
