/**
 * The operator's dashboard in a real Chromium, while a load script drives two instances of a gate
 * on a private Redis: the numbers on the page equal the store's, the controls work, and it looks
 * back over the last hour, day and 30 days from the per-minute history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Browser as Chromium } from 'playwright-core'
import { airlockDashboard, airlockShield } from '../../src/fastify.js'
import { clusterStatus } from '../../src/gate/stats.js'
import { airlockControl } from '../../src/core/control.js'
import { chromiumAvailable, launchChromium } from '../helpers/browser.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'
import { Browser } from '../http/harness.js'
import { MinuteTally } from '../../src/core/history.js'
import { historyFor } from '../../src/stores/history.js'

requireRedis()
const TOKEN = 'dashboard-browser-test-token'
const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'

describe.runIf(chromiumAvailable)('the dashboard in Chromium', () => {
  const priv = usePrivateRedis()
  const apps: FastifyInstance[] = []
  let chromium: Chromium
  let running = true
  let load: Promise<unknown> = Promise.resolve()

  beforeAll(async () => {
    // The history to look back at: 100 admitted 10 minutes ago, 1,000 five hours ago, 10,000 three
    // days ago (the live gates below add at most a few dozen of their own).
    const now = Date.now()
    const clock = { t: now }
    const tally = new MinuteTally({
      storage: historyFor(priv.store)!,
      name: 'shop',
      keepMs: 31 * 86_400_000,
      now: () => clock.t,
      timer: false,
    })
    for (const [ago, n] of [
      [10 * 60_000, 100],
      [5 * 3_600_000, 1_000],
      [3 * 86_400_000, 10_000],
    ] as const) {
      clock.t = now - ago
      for (let i = 0; i < n; i++) tally.admitted('line', 20_000)
      tally.turnedAway('full')
    }
    await tally.close()
    for (let i = 0; i < 2; i++) {
      const app = Fastify()
      await app.register(airlockShield, {
        name: 'shop',
        limit: 5,
        store: priv.store,
        secret: SECRET,
        queue: { pollInterval: 500 },
        statusInterval: 500,
      })
      if (i === 0)
        await app.register(airlockDashboard, {
          prefix: '/airlock',
          token: TOKEN,
          store: priv.store,
          names: ['shop'],
          interval: 500,
        })
      app.get('/', async () => 'the shop')
      await app.listen({ port: 0, host: '127.0.0.1' })
      apps.push(app)
    }
    const url = (i: number) => `http://127.0.0.1:${(apps[i % 2]!.server.address() as { port: number }).port}`
    // The load script: 5 visitors inside clicking, 3 in line polling, on both instances.
    const inside = Array.from({ length: 5 }, (_, i) => new Browser(url(i)))
    for (const b of inside) expect((await b.get('/')).status).toBe(200)
    const waiting = Array.from({ length: 3 }, (_, i) => new Browser(url(i)))
    for (const b of waiting) expect((await b.get('/')).status).toBe(202)
    const loop = async (b: Browser, headers: Record<string, string>) => {
      while (running) {
        await b.get('/', { headers }).catch(() => null)
        await sleep(300)
      }
    }
    load = Promise.all([
      ...inside.map((b) => loop(b, {})),
      ...waiting.map((b) => loop(b, { accept: 'application/json', 'x-airlock-poll': '1' })),
    ])
    chromium = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    running = false
    await load
    await chromium?.close()
    for (const app of apps) await app.close()
  })

  it('shows held, limit, line and instances as the store has them; its controls apply on every instance', {
    timeout: 60_000,
  }, async () => {
    const page = await chromium.newPage()
    const base = `http://127.0.0.1:${(apps[0]!.server.address() as { port: number }).port}/airlock/`
    await page.goto(`${base}?token=${TOKEN}`)
    expect(page.url()).toBe(base) // the token left the address bar
    const tile = (k: string) => page.locator(`[data-gate="shop"] [data-k="${k}"]`).textContent()
    await page.locator('[data-gate="shop"] [data-k="held"]').waitFor()
    // Compare with the store until a sample matches the load script's 5 inside, 3 in line, 2
    // instances (the page updates twice a second; on a loaded box a poll can come late and its
    // place lapse until the next poll takes one again: wait for the settled figures).
    await until(async () => {
      const st = await clusterStatus(priv.store, 'shop')
      if (st.held !== 5 || st.waiting !== 3 || st.instances.length !== 2) return false
      return (
        (await tile('held')) === String(st.held) &&
        (await tile('waiting')) === String(st.waiting) &&
        (await tile('instances')) === String(st.instances.length)
      )
    }, 20_000)
    expect(await tile('held')).toBe('5')
    expect(await tile('waiting')).toBe('3')
    expect(await tile('instances')).toBe('2')
    expect(await page.locator('[data-gate="shop"] svg path').count()).toBeGreaterThan(4)

    // Raise the limit from the page: the line moves in on both instances.
    await page.fill('[data-gate="shop"] input[name="limit"]', '8')
    await page.click('[data-gate="shop"] button[type="submit"]')
    await until(async () => (await airlockControl({ name: 'shop', store: priv.store }).get()).limit === 8, 5_000)
    await until(async () => (await clusterStatus(priv.store, 'shop')).held === 8, 10_000)
    await until(async () => (await tile('held')) === '8', 5_000)

    // Closing asks first; dismissed, nothing changes; accepted, the mode is closed.
    page.once('dialog', (d) => void d.dismiss())
    await page.selectOption('[data-gate="shop"] select[name="mode"]', 'closed')
    await page.click('[data-gate="shop"] button[type="submit"]')
    await sleep(500)
    expect((await airlockControl({ name: 'shop', store: priv.store }).get()).mode).toBe('normal')
    page.once('dialog', (d) => void d.accept())
    await page.selectOption('[data-gate="shop"] select[name="mode"]', 'closed')
    await page.click('[data-gate="shop"] button[type="submit"]')
    await until(async () => (await airlockControl({ name: 'shop', store: priv.store }).get()).mode === 'closed', 5_000)
    await until(async () => (await tile('mode')) === 'closed', 5_000)
    await page.close()
  })

  it('looks back over the last hour, day and 30 days from the history', { timeout: 60_000 }, async () => {
    const page = await chromium.newPage()
    const base = `http://127.0.0.1:${(apps[0]!.server.address() as { port: number }).port}/airlock/`
    await page.goto(`${base}?token=${TOKEN}`)
    const back = '[data-back="shop"]'
    const admitted = async (range: string): Promise<number> => {
      await page.locator(`${back}[data-range="${range}"]`).waitFor()
      const text = (await page.locator(`${back} [data-k="back-totals"]`).textContent()) ?? ''
      return Number(/admitted (\d+)/.exec(text)?.[1])
    }
    const hour = await admitted('hour')
    expect(hour).toBeGreaterThanOrEqual(100)
    expect(hour).toBeLessThan(200)
    expect(await page.locator(`${back} figure svg path`).count()).toBeGreaterThanOrEqual(4)
    expect(await page.locator(`${back} figcaption`).first().textContent()).toContain('last hour')
    await page.click(`${back} button[data-range="day"]`)
    const day = await admitted('day')
    expect(day).toBeGreaterThanOrEqual(1_100)
    expect(day).toBeLessThan(1_200)
    expect(await page.locator(`${back} button[data-range="day"]`).getAttribute('aria-pressed')).toBe('true')
    await page.click(`${back} button[data-range="30d"]`)
    const month = await admitted('30d')
    expect(month).toBeGreaterThanOrEqual(11_100)
    expect(month).toBeLessThan(11_200)
    expect(await page.locator(`${back} [data-k="back-totals"]`).textContent()).toMatch(/wait p50 \/ p90 2\d(\.\d)? s/)
    // The JSON behind it: an hour a point over 30 days; a range it does not know is refused.
    const json = await page.request.get(`${base}history?name=shop&range=30d`)
    const body = (await json.json()) as { step: number; points: { t: number; admitted: number }[] }
    expect(body.step).toBe(60)
    expect(body.points.length).toBeGreaterThanOrEqual(720)
    expect(body.points.length).toBeLessThanOrEqual(721)
    expect(Math.max(...body.points.map((p) => p.admitted))).toBe(10_000)
    expect((await page.request.get(`${base}history?name=shop&range=week`)).status()).toBe(400)
    expect((await page.request.get(`${base}history?name=other&range=day`)).status()).toBe(400)
    await page.close()
  })

  it('a wrong token gets 401 and no page', async () => {
    const page = await chromium.newPage()
    const res = await page.goto(
      `http://127.0.0.1:${(apps[0]!.server.address() as { port: number }).port}/airlock/?token=wrong-token-wrong-token`,
    )
    expect(res?.status()).toBe(401)
    expect(await page.content()).not.toContain('data-gate')
    await page.close()
  })
})
