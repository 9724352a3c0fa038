/**
 * The test app of the adapters added for issue 29 (the fetch adapter on `@hono/node-server` without
 * Hono, Hono, Koa 3), with the routes of harness.ts's `startApp` and the same ways in: `/open` and
 * `/checkout` before the app-wide gate (as in the Express app), 404s behind it.
 */
import type { AddressInfo } from 'node:net'
import { createServer, type Server } from 'node:http'
import { createAdaptorServer } from '@hono/node-server'
import { Hono } from 'hono'
import Koa from 'koa'
import { airlock as fetchAirlock, type FetchAirlock } from '../../src/fetch.js'
import { airlock as honoAirlock, type AirlockVariables, type HonoAirlock } from '../../src/hono.js'
import { airlock as koaAirlock, type KoaAirlock, type KoaContext } from '../../src/koa.js'
import type { AppSetup, Stats, TestApp } from './harness.js'

export type WebAdapterName = 'fetch' | 'hono' | 'koa'

/** What harness.ts hands each app: the shared record of handler runs, and the `/hang` switch. */
export interface Kit {
  stats: Stats
  hang(): Promise<void>
  unhang(): void
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The work routes' answer after `ms` (`fail`: throws), counted in `stats`. */
export async function work(stats: Stats, ms: number, fail: boolean): Promise<string> {
  stats.enter()
  try {
    await sleep(ms)
    if (fail) throw new Error('boom')
    return 'done'
  } finally {
    stats.leave()
  }
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

export function closer(server: Server, gates: { close(): Promise<void> }[], kit: Kit): () => Promise<void> {
  return async () => {
    kit.unhang()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    await Promise.all(gates.map((g) => g.close()))
  }
}

/** A plain fetch handler (no framework) served by `@hono/node-server`. */
function fetchApp(setup: AppSetup, kit: Kit): { server: Server; gates: FetchAirlock[] } {
  const { stats } = kit
  const site = fetchAirlock({ trustProxy: setup.trustProxy ?? false, ...setup.gate })
  const gates = [site]
  const text = (body: string, init?: ResponseInit) => new Response(body, init)
  const routes = async (request: Request, _env: unknown): Promise<Response> => {
    const url = new URL(request.url)
    const ms = Number(url.searchParams.get('ms') ?? 0)
    const method = request.method === 'HEAD' ? 'GET' : request.method
    switch (`${method} ${url.pathname}`) {
      case 'GET /':
        stats.enter()
        stats.leave()
        return text('home')
      case 'GET /work':
        return text(await work(stats, ms, false))
      case 'GET /throw':
        return text(await work(stats, ms, true))
      case 'GET /hang':
        stats.enter()
        await kit.hang()
        stats.leave()
        return text('late')
      case 'POST /logout':
        return text(`released=${await site.handle(request).release()}`)
      case 'POST /done':
        return text('thanks', { headers: { 'airlock-command': 'release' } })
      case 'GET /health':
        return text('ok')
      case 'GET /kind':
        return text(site.handle(request).decision?.kind ?? 'none')
      default:
        return text('not found', { status: 404 })
    }
  }
  const gated = site.wrap(routes)
  let checkout: ((request: Request, ...context: unknown[]) => Response | Promise<Response>) | undefined
  if (setup.checkout) {
    const own = fetchAirlock(setup.checkout)
    gates.push(own)
    checkout = own.wrap(async (request: Request) => {
      if (request.method === 'POST') return text(`released=${await own.handle(request).release()}`)
      return text(`checkout ${own.handle(request).decision?.kind}`)
    })
  }
  const server = createAdaptorServer({
    fetch: (request: Request, env: unknown) => {
      const path = new URL(request.url).pathname
      if (path === '/open') {
        stats.enter()
        stats.leave()
        return text('open')
      }
      if (checkout !== undefined && (path === '/checkout' || path.startsWith('/checkout/')))
        return checkout(request, env)
      return gated(request, env)
    },
  }) as Server
  return { server, gates }
}

function honoApp(setup: AppSetup, kit: Kit): { server: Server; gates: HonoAirlock[] } {
  const { stats } = kit
  const app = new Hono<{ Variables: AirlockVariables }>()
  const gates: HonoAirlock[] = []
  app.onError((_err, c) => c.text('error', 500))
  app.get('/open', (c) => {
    stats.enter()
    stats.leave()
    return c.text('open')
  })
  if (setup.checkout) {
    const own = honoAirlock(setup.checkout)
    gates.push(own)
    app.get('/checkout', own, (c) => c.text(`checkout ${c.var.airlock?.decision?.kind}`))
    app.post('/checkout/done', own, async (c) => c.text(`released=${await c.var.airlock?.release()}`))
  }
  const site = honoAirlock({ trustProxy: setup.trustProxy ?? false, ...setup.gate })
  gates.push(site)
  app.use(site)
  const ms = (c: { req: { query(k: string): string | undefined } }): number => Number(c.req.query('ms') ?? 0)
  app.get('/', (c) => {
    stats.enter()
    stats.leave()
    return c.text('home')
  })
  app.get('/work', async (c) => c.text(await work(stats, ms(c), false)))
  app.get('/throw', async (c) => c.text(await work(stats, ms(c), true)))
  app.get('/hang', async (c) => {
    stats.enter()
    await kit.hang()
    stats.leave()
    return c.text('late')
  })
  app.post('/logout', async (c) => c.text(`released=${await c.var.airlock?.release()}`))
  app.post('/done', (c) => {
    c.header('Airlock-Command', 'release')
    return c.text('thanks')
  })
  app.get('/health', (c) => c.text('ok'))
  app.get('/kind', (c) => c.text(c.var.airlock?.decision?.kind ?? 'none'))
  return { server: createAdaptorServer({ fetch: app.fetch }) as Server, gates }
}

function koaApp(setup: AppSetup, kit: Kit): { server: Server; gates: KoaAirlock[] } {
  const { stats } = kit
  const app = new Koa()
  app.proxy = setup.trustProxy ?? false
  app.silent = true // the error route's stack is expected
  const site = koaAirlock(setup.gate ?? {})
  const gates = [site]
  const own = setup.checkout ? koaAirlock(setup.checkout) : undefined
  if (own) gates.push(own)
  app.use(async (ctx, next) => {
    if (ctx.path === '/open') {
      stats.enter()
      stats.leave()
      ctx.body = 'open'
      return
    }
    if (own !== undefined && (ctx.path === '/checkout' || ctx.path.startsWith('/checkout/'))) {
      return own(ctx, async () => {
        ctx.body =
          ctx.method === 'POST'
            ? `released=${await ctx.state.airlock?.release()}`
            : `checkout ${ctx.state.airlock?.decision?.kind}`
      })
    }
    return next()
  })
  app.use(site)
  app.use(async (ctx: KoaContext) => {
    const ms = Number(ctx.query.ms ?? 0)
    const method = ctx.method === 'HEAD' ? 'GET' : ctx.method
    switch (`${method} ${ctx.path}`) {
      case 'GET /':
        stats.enter()
        stats.leave()
        ctx.body = 'home'
        return
      case 'GET /work':
        ctx.body = await work(stats, ms, false)
        return
      case 'GET /throw':
        ctx.body = await work(stats, ms, true)
        return
      case 'GET /hang':
        stats.enter()
        await kit.hang()
        stats.leave()
        ctx.body = 'late'
        return
      case 'POST /logout':
        ctx.body = `released=${await ctx.state.airlock?.release()}`
        return
      case 'POST /done':
        ctx.set('Airlock-Command', 'release')
        ctx.body = 'thanks'
        return
      case 'GET /health':
        ctx.body = 'ok'
        return
      case 'GET /kind':
        ctx.body = ctx.state.airlock?.decision?.kind ?? 'none'
        return
      default:
        ctx.status = 404
        ctx.body = 'not found'
    }
  })
  return { server: createServer(app.callback()), gates }
}

/** Starts the app of `adapter` on a free loopback port. */
export async function startWebApp(adapter: WebAdapterName, setup: AppSetup, kit: Kit): Promise<TestApp> {
  const { server, gates } =
    adapter === 'fetch' ? fetchApp(setup, kit) : adapter === 'hono' ? honoApp(setup, kit) : koaApp(setup, kit)
  return { adapter, url: await listen(server), stats: kit.stats, unhang: kit.unhang, close: closer(server, gates, kit) }
}
