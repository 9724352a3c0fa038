import { describe, expectTypeOf, test } from 'vitest'
import Fastify, { type FastifyRequest } from 'fastify'
import express from 'express'
import { airlock } from '../src/express.js'
import { Hono, type Context } from 'hono'
import Koa from 'koa'
import { airlock as fetchAirlock, type FetchAnswer } from '../src/fetch.js'
import { airlock as honoAirlock, type AirlockVariables } from '../src/hono.js'
import { airlock as koaAirlock, type KoaContext } from '../src/koa.js'
import { airlockShield, type AirlockControl, type AirlockRouteConfig } from '../src/fastify.js'
import {
  createGate,
  type AirlockHandle,
  type Gate,
  type GateDecision,
  type GateOptions,
  type VisitorLanguage,
} from '../src/index.js'

describe('Fastify types', () => {
  test('reply.airlock, app.airlockGate and route config', () => {
    const app = Fastify()
    void app.register(airlockShield, { limit: 5, mode: 'request', global: true })
    void app.register(airlockShield)
    void app.register(airlockShield, { limit: 50, queue: { order: 'fifo', maxLength: 100_000, idleTimeout: 30_000 } })
    void app.register(airlockShield, { queue: true })
    // Custom pages are told the visitor's language.
    void app.register(airlockShield, {
      busyPage: ({ language }) => {
        expectTypeOf(language).toEqualTypeOf<VisitorLanguage>()
        expectTypeOf(language.dir).toEqualTypeOf<'ltr' | 'rtl'>()
        return `<html lang="${language.tag}">${language.number(1)}</html>`
      },
      queue: { page: ({ language, eta }) => `<html dir="${language.dir}">${language.eta(eta)}</html>` },
    })
    // @ts-expect-error order is 'fifo' or 'random'
    void app.register(airlockShield, { queue: { order: 'lifo' } })
    app.get('/', async (_req, reply) => {
      expectTypeOf(reply.airlock).toEqualTypeOf<AirlockHandle>()
      // The old name, kept until 0.3 as a deprecated alias, from the adapters' entries (not the root's).
      expectTypeOf<AirlockControl>().toEqualTypeOf<AirlockHandle>()
      expectTypeOf(reply.airlock.release).returns.resolves.toEqualTypeOf<boolean>()
      expectTypeOf(reply.airlock.decision).toEqualTypeOf<GateDecision | undefined>()
      const d = reply.airlock.decision
      if (d?.kind === 'queued') expectTypeOf(d.position).toEqualTypeOf<number | null>()
      return 'ok'
    })
    app.get('/health', { config: { airlock: false } }, async () => 'ok')
    app.get(
      '/checkout',
      { config: { airlock: { name: 'checkout', limit: 2, skip: (req) => req.ip === '::1' } } },
      async () => 'ok',
    )
    // @ts-expect-error a route-level gate needs its own name
    app.get('/bad', { config: { airlock: { limit: 2 } } }, async () => 'ok')
    // (A misspelt option inside route config is not caught by Fastify's config typing; it fails at startup.)
    expectTypeOf(app.airlockGate).toEqualTypeOf<Gate<FastifyRequest>>()
    expectTypeOf<AirlockRouteConfig>().toEqualTypeOf<
      boolean | string | (GateOptions<FastifyRequest> & { name: string })
    >()
  })
})

describe('Express types', () => {
  test('res.locals.airlock and the middleware', () => {
    const app = express()
    const mw = airlock({ limit: 5, skip: (req) => req.url === '/health' })
    app.use(mw)
    app.use(express.Router().use(airlock({ name: 'checkout', limit: 1 })))
    expectTypeOf(mw.gate.limit).toEqualTypeOf<number>()
    expectTypeOf(mw.close).returns.resolves.toBeVoid()
    app.get('/', (_req, res) => {
      expectTypeOf(res.locals.airlock).toEqualTypeOf<AirlockHandle | undefined>()
      res.send('ok')
    })
    // @ts-expect-error not a gate option
    airlock({ limt: 5 })
  })
})

describe('core types', () => {
  test('decisions narrow by kind', () => {
    const gate = createGate()
    const d = gate.decide({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })
    expectTypeOf(d).toEqualTypeOf<GateDecision | Promise<GateDecision>>()
    const decision = {} as GateDecision
    if (decision.kind === 'busy') expectTypeOf(decision.response.status).toEqualTypeOf<number>()
    if (decision.kind === 'pass') expectTypeOf(decision.token).toEqualTypeOf<string>()
    if (decision.kind === 'admit')
      expectTypeOf(decision.slot).toEqualTypeOf<import('../src/index.js').RequestSlot | undefined>()
    // @ts-expect-error mode is 'session' | 'request'
    createGate({ mode: 'queue' })
  })
})

describe('diagnostics channels', () => {
  test("every channel's payload type is exported from the root", () => {
    type Payloads = {
      'airlock:decision': import('../src/index.js').DecisionEvent
      'airlock:store': import('../src/index.js').StoreEvent
      'airlock:breaker': import('../src/index.js').BreakerEvent
      'airlock:queue': import('../src/index.js').QueueEvent
      'airlock:control': import('../src/index.js').ControlEvent
      'airlock:limit': import('../src/index.js').LimitEvent
      'airlock:failover': import('../src/index.js').FailoverEvent
      'airlock:release': import('../src/index.js').ReleaseEvent
      'airlock:challenge': import('../src/index.js').ChallengeEvent
    }
    expectTypeOf<keyof Payloads>().toEqualTypeOf<typeof import('../src/index.js').CHANNELS[number]>()
    expectTypeOf<Payloads['airlock:limit']>().toHaveProperty('recent').toEqualTypeOf<number | null>()
  })
})

describe('fetch, Hono and Koa types', () => {
  test("wrap keeps the handler's arguments; check answers a FetchAnswer; options are typed", () => {
    const gate = fetchAirlock({
      limit: 5,
      clientAddress: (request, server) => (server as { ip: string }).ip ?? request.url,
      trustProxy: true,
    })
    const handler = gate.wrap((_request: Request, server: { ip: string }) => new Response(server.ip))
    expectTypeOf(handler).parameters.toEqualTypeOf<[Request, { ip: string }]>()
    expectTypeOf(gate.check(new Request('http://x/'))).toEqualTypeOf<FetchAnswer | Promise<FetchAnswer>>()
    expectTypeOf(gate.handle(new Request('http://x/'))).toEqualTypeOf<AirlockHandle>()
    // @ts-expect-error trustProxy is a boolean
    fetchAirlock({ trustProxy: 'yes' })
  })

  test("Hono: c.var.airlock, and the gate's functions get the Context", () => {
    const app = new Hono<{ Variables: AirlockVariables }>()
    app.use(
      honoAirlock({ limit: 5, skip: (c) => c.req.path === '/health', clientAddress: (c) => c.req.header('x-real-ip') }),
    )
    app.get('/', (c) => {
      expectTypeOf(c.var.airlock).toEqualTypeOf<AirlockHandle>()
      return c.text('ok')
    })
    expectTypeOf(honoAirlock().gate).toEqualTypeOf<Gate<Context>>()
  })

  test('Koa: ctx.state.airlock', () => {
    const app = new Koa()
    app.use(koaAirlock({ limit: 5, skip: (ctx) => ctx.path === '/health' }))
    app.use((ctx) => {
      expectTypeOf(ctx.state.airlock).toEqualTypeOf<AirlockHandle | undefined>()
    })
    expectTypeOf(koaAirlock().gate).toEqualTypeOf<Gate<KoaContext>>()
  })
})
