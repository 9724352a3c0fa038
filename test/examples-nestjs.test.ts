/**
 * examples/nestjs.ts, on Nest's Express platform and on its Fastify platform, over real HTTP on
 * 127.0.0.1 (issue 29's bars): two visitors get in, the third gets the busy page, a pass holder
 * goes on; request mode never lets more than the limit into a Nest handler. The example's
 * `createSite` is imported as it is (decorators compiled like tsx does: experimentalDecorators,
 * no decorator metadata); the program itself is run once per platform as a user runs it.
 */
import 'reflect-metadata'
import { Controller, Get, Module } from '@nestjs/common'
import { RouteConfig } from '@nestjs/platform-fastify'
import type { INestApplication, Type } from '@nestjs/common'
import { afterEach, describe, expect, it } from 'vitest'
import { createSite, type Platform } from '../examples/nestjs.js'
import { memoryStore } from '../src/stores/memory.js'
import type { GateOptions } from '../src/gate/types.js'
import { cleanUpExamples, exited, startExample } from './helpers/examples.js'
import { freePort } from './helpers/redis.js'
import { recordingLogger } from './helpers/stores.js'
import { until } from './helpers/wait.js'
import { Browser, hit, nextAddress, SECRET, Stats } from './http/harness.js'

cleanUpExamples()
const PLATFORMS: Platform[] = ['express', 'fastify']

/** What the `/work` handler saw, and the hold its runs wait on until the test lets them go. */
const work = { stats: new Stats(), holds: [] as (() => void)[] }
const letGo = (): void => {
  for (const go of work.holds.splice(0)) go()
}

@Controller()
class WorkController {
  @Get('work')
  async run(): Promise<string> {
    work.stats.enter()
    await new Promise<void>((go) => work.holds.push(go))
    work.stats.leave()
    return 'done'
  }
}

@Module({ controllers: [WorkController] })
class WorkModule {}

/** Routes that pick their gate through Nest's @RouteConfig (Fastify platform: the plugin reads `config.airlock`). */
@Controller()
class RoutedController {
  @Get()
  home(): string {
    return 'home'
  }

  @Get('webhook')
  @RouteConfig({ airlock: false })
  webhook(): string {
    return 'never gated'
  }

  @Get('checkout')
  @RouteConfig({ airlock: { name: 'checkout', limit: 1 } })
  checkout(): string {
    return 'checkout'
  }
}

@Module({ controllers: [RoutedController] })
class RoutedModule {}

/** Starts `createSite` on `platform` (closed after each test); resolves with its base URL. */
function useSites(platform: Platform): (gate: GateOptions, module?: Type) => Promise<string> {
  const apps: INestApplication[] = []
  afterEach(async () => {
    letGo()
    await Promise.all(apps.splice(0).map((a) => a.close()))
  })
  return async (gate, module) => {
    const app = await createSite(platform, { logger: recordingLogger(), ...gate }, module)
    apps.push(app)
    await app.listen(0, '127.0.0.1')
    const { port } = app.getHttpServer().address() as { port: number }
    return `http://127.0.0.1:${port}`
  }
}

describe.each(PLATFORMS)('NestJS on its %s platform', (platform) => {
  const start = useSites(platform)

  it('session mode: two visitors get in, the third gets the busy page, a pass holder goes on; logout frees a place', async () => {
    const url = await start({ limit: 2, store: memoryStore(), secret: SECRET, bypass: ['/health'] })
    const [first, second, third] = [new Browser(url), new Browser(url), new Browser(url)]
    for (const visitor of [first, second]) {
      const answer = await visitor.get('/')
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body)).toEqual({ products: ['tea', 'coffee'], decision: 'admit' }) // the controller's @Inject'ed provider
      expect(visitor.jar.has('airlock_pass')).toBe(true)
    }
    const busy = await third.get('/')
    expect(busy.status).toBe(503)
    expect(busy.headers.get('content-type')).toMatch(/^text\/html/)
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(third.jar.has('airlock_pass')).toBe(false)
    expect((await third.get('/health')).body).toBe('ok') // bypassed
    const again = await first.get('/')
    expect(again.status).toBe(200)
    expect(JSON.parse(again.body).decision).toBe('pass')
    // The @Airlock() handle's release() on this platform: the pass ends, its place goes to the third.
    expect(JSON.parse((await first.get('/logout', { method: 'POST' })).body)).toEqual({ released: true })
    expect(first.jar.has('airlock_pass')).toBe(false)
    expect((await third.get('/')).status).toBe(200)
  })

  it('request mode: a burst never has more than the limit inside the handler; the others are busy; slots come back', async () => {
    const limit = 3
    const burst = 12
    const store = memoryStore()
    const url = await start({ mode: 'request', limit, store }, WorkModule)
    work.stats = new Stats()
    const answers = Array.from({ length: burst }, () => hit(`${url}/work`, { from: nextAddress() }))
    // While `limit` handlers hold their slots, every other request of the burst is turned away.
    const statuses: number[] = []
    for (const a of answers) void a.then((r) => statuses.push(r.status))
    await until(() => statuses.length === burst - limit && work.stats.running === limit, 20_000)
    expect(statuses).toEqual(Array(burst - limit).fill(503))
    letGo()
    expect((await Promise.all(answers)).map((r) => r.status).sort()).toEqual([
      ...Array(limit).fill(200),
      ...Array(burst - limit).fill(503),
    ])
    expect(work.stats.max).toBe(limit)
    await work.stats.idle()
    await until(async () => (await store.state('default')).held === 0, 10_000) // released when each response ended
    const next = hit(`${url}/work`, { from: nextAddress() })
    await until(() => work.stats.running === 1)
    letGo()
    expect((await next).status).toBe(200)
  })

  it('npx tsx examples/nestjs.ts serves its first visitor with a pass, and stops on SIGTERM', async () => {
    const port = await freePort()
    const { child, output } = await startExample(
      'nestjs.ts',
      { PORT: String(port), PLATFORM: platform },
      /listening on/,
    )
    expect(output()).toContain(`NestJS (${platform} platform) listening on http://127.0.0.1:${port}`)
    const r = await fetch(`http://127.0.0.1:${port}/`)
    expect(r.status).toBe(200)
    expect(r.headers.getSetCookie().some((c) => c.startsWith('airlock_pass='))).toBe(true)
    child.kill('SIGTERM')
    expect(await exited(child)).toBe(0)
  })
})

describe('NestJS on its fastify platform: routes pick their gate with @RouteConfig', () => {
  const start = useSites('fastify')

  it('@RouteConfig({ airlock: false }) opts a route out; @RouteConfig({ airlock: { name, limit } }) gives it its own gate', async () => {
    const url = await start({ limit: 1, store: memoryStore(), secret: SECRET }, RoutedModule)
    const [first, second] = [new Browser(url), new Browser(url)]
    expect((await first.get('/')).status).toBe(200)
    expect((await second.get('/')).status).toBe(503) // the site's gate is full...
    expect((await second.get('/webhook')).body).toBe('never gated') // ...this route is not behind it
    expect((await second.get('/checkout')).body).toBe('checkout') // ...nor this one: behind its own gate (limit 1)
    expect((await new Browser(url).get('/checkout')).status).toBe(503)
  })
})
