/**
 * The dashboard read at a glance, in a real Chromium, while a load script drives a gate on the
 * memory store: the charts have a time axis (within the page's CSP, and axe finds nothing), the
 * instances table tells the gate's queued answers (202) from the people waiting in line, the look
 * back holds the minute in progress and follows it, and the tiles go quiet once the figures stop
 * coming (the store not answering, the dashboard gone) instead of showing the last ones.
 */
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Page } from 'playwright-core'
import { createDashboard, type Dashboard } from '../../src/dashboard/server.js'
import { airlockShield } from '../../src/fastify.js'
import { historyFor } from '../../src/stores/history.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { sleep, until } from '../helpers/wait.js'

const TOKEN = 'dashboard-glance-test-token'
const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const axeSource: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source
const MINUS = '\u2212'

describe.runIf(chromiumAvailable)('the dashboard read at a glance', () => {
  const chromium = useChromium()
  const inner = memoryStore()
  let storeDown = false
  // The dashboard's view of the store: the same memory store (and its history), whose `status` can fail.
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'status')
        return (name: string) =>
          storeDown ? Promise.reject(new Error('the store is not answering')) : target.status(name)
      if (prop === 'historyStorage') return () => historyFor(inner)
      const v = Reflect.get(target, prop, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  }) as Store
  let app: FastifyInstance
  let dashboard: Dashboard
  let server: Server
  let base: string
  let running = true
  let load: Promise<unknown> = Promise.resolve()

  beforeAll(async () => {
    app = Fastify()
    await app.register(airlockShield, {
      name: 'shop',
      mode: 'request',
      limit: 2,
      store: inner,
      secret: SECRET,
      statusInterval: 200,
      logger: { warn() {}, info() {} },
    })
    app.get('/', async () => {
      await sleep(100)
      return 'the shop'
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    dashboard = createDashboard({ token: TOKEN, store, names: ['shop'], interval: 250 })
    server = createServer((req, res) => dashboard.handle(req, res))
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    startLoad()
  }, 60_000)

  /** The load script: 4 visitors at once against a limit of 2, each request 100 ms. */
  function startLoad(): void {
    const site = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`
    const visitor = async (): Promise<void> => {
      while (running) {
        await fetch(site)
          .then((r) => r.text())
          .catch(() => null)
        await sleep(20)
      }
    }
    running = true
    load = Promise.all(Array.from({ length: 4 }, visitor))
  }

  afterAll(async () => {
    running = false
    await load
    dashboard?.close()
    server?.closeAllConnections()
    await new Promise((ok) => server?.close(ok))
    await app?.close()
  })

  /** The dashboard signed in, with every CSP violation it meets recorded in `window.cspViolations`. */
  async function open(bypassCSP = false): Promise<Page> {
    const context = await chromium().newContext({ viewport: { width: 1280, height: 900 }, bypassCSP })
    const page = await context.newPage()
    await page.addInitScript(`window.cspViolations = []
      document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI))`)
    await page.goto(`${base}?token=${TOKEN}`)
    return page
  }

  /** The tick labels under each chart of `figures`, in order. */
  const ticks = (page: Page, figures: string): Promise<string[][]> =>
    page
      .locator(figures)
      .evaluateAll((figs) => figs.map((f) => [...f.querySelectorAll('.axis time')].map((t) => t.textContent ?? '')))

  it('every chart has a time axis (the last 15 minutes live, the hour, day and 30 days back), inside the CSP and with no axe violation', {
    timeout: 60_000,
  }, async () => {
    const page = await open()
    const live = '[data-gate="shop"] > .charts figure'
    await page.locator(`${live} .axis time`).first().waitFor({ timeout: 10_000 })
    const liveTicks = await ticks(page, live)
    expect(liveTicks).toHaveLength(5)
    for (const t of liveTicks) expect(t).toEqual([`${MINUS}15 min`, `${MINUS}10 min`, `${MINUS}5 min`, 'now'])
    // Each tick says its clock time (datetime, and a tooltip) and sits under its chart, left to right.
    const placed = await page
      .locator(`${live}`)
      .first()
      .evaluate((f) => {
        const svg = f.querySelector('svg')!.getBoundingClientRect()
        return [...f.querySelectorAll('.axis time')].map((t) => {
          const r = t.getBoundingClientRect()
          return {
            left: r.left - svg.left,
            right: svg.right - r.right,
            below: r.top >= svg.bottom - 1,
            datetime: t.getAttribute('datetime'),
            title: t.getAttribute('title'),
          }
        })
      })
    for (const p of placed) {
      expect(Number.isNaN(Date.parse(p.datetime ?? ''))).toBe(false)
      expect(p.title).toBeTruthy()
      expect(p.below).toBe(true)
      expect(p.left).toBeGreaterThanOrEqual(-1)
      expect(p.right).toBeGreaterThanOrEqual(-1)
    }
    expect(placed[0]!.left).toBeLessThan(5)
    expect(placed.at(-1)!.right).toBeLessThan(5)

    const back = '[data-back="shop"]'
    await page.locator(`${back}[data-range="hour"] figure .axis time`).first().waitFor({ timeout: 10_000 })
    for (const t of await ticks(page, `${back} figure`))
      expect(t).toEqual([`${MINUS}60 min`, `${MINUS}45 min`, `${MINUS}30 min`, `${MINUS}15 min`, 'now'])
    await page.click(`${back} button[data-range="day"]`)
    await page.locator(`${back}[data-range="day"]`).waitFor()
    for (const t of await ticks(page, `${back} figure`))
      expect(t).toEqual([`${MINUS}24 h`, `${MINUS}18 h`, `${MINUS}12 h`, `${MINUS}6 h`, 'now'])
    await page.click(`${back} button[data-range="30d"]`)
    await page.locator(`${back}[data-range="30d"]`).waitFor()
    for (const t of await ticks(page, `${back} figure`))
      expect(t).toEqual([`${MINUS}30 d`, `${MINUS}20 d`, `${MINUS}10 d`, 'now'])
    expect(await page.evaluate('window.cspViolations')).toEqual([])
    await page.context().close()

    // axe over the live page (injected by the test: the page's own policy allows only its hashed script).
    const axed = await open(true)
    await axed.locator(`${live} .axis time`).first().waitFor({ timeout: 10_000 })
    await axed.locator(`${back} figure .axis time`).first().waitFor({ timeout: 10_000 })
    await axed.evaluate(axeSource)
    const violations = (await axed.evaluate(() =>
      (
        globalThis as unknown as {
          axe: { run(o: object): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> }
        }
      ).axe
        .run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
        .then((r) => r.violations.map((v) => `${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)),
    )) as string[]
    expect(violations).toEqual([])
    await axed.context().close()
  })

  it('the instances table tells the queued answers (202) from the people waiting in line, with a tooltip and a legend', {
    timeout: 30_000,
  }, async () => {
    const page = await open()
    const gate = '[data-gate="shop"]'
    await page.locator(`${gate} table th`).first().waitFor({ timeout: 10_000 })
    const headers = await page
      .locator(`${gate} table th`)
      .evaluateAll((ths) => ths.map((th) => ({ text: th.textContent, title: th.getAttribute('title') })))
    expect(headers.map((h) => h.text)).not.toContain('queued')
    const queued = headers.find((h) => h.text === 'queued answers (202)')
    expect(queued?.title).toMatch(/every answer that told a visitor to wait, polls included/)
    expect(queued?.title).toMatch(/waiting in line/)
    expect(await page.locator(`${gate} .tile:has([data-k="waiting"])`).getAttribute('title')).toMatch(/in the line now/)
    const legend = (await page.locator(`${gate} .legend`).textContent()) ?? ''
    expect(legend).toContain('queued answers (202)')
    expect(legend).toContain('waiting in line')
    await page.context().close()
  })

  it('the look back holds the minute in progress, marked so, and follows it without a click', {
    timeout: 60_000,
  }, async () => {
    const page = await open()
    const back = '[data-back="shop"]'
    const admitted = async (): Promise<number> =>
      Number(
        /admitted (\d+)/.exec((await page.locator(`${back} [data-k="back-totals"]`).textContent()) ?? '')?.[1] ?? -1,
      )
    await page.locator(`${back}[data-range="hour"]`).waitFor({ timeout: 10_000 })
    // The load began seconds ago: its admissions are in the hour already, not once the minute ends.
    expect(await admitted()).toBeGreaterThan(0)
    expect(await page.locator(`${back} [data-k="back-totals"]`).textContent()).toContain('the minute in progress')
    expect(await page.locator(`${back} figure[data-open]`).count()).toBe(3)
    expect(await page.locator(`${back} figcaption`).first().textContent()).toContain('in progress')
    const first = await admitted()
    await until(async () => (await admitted()) > first, 20_000, 250)
    await page.context().close()
  })

  it('the tiles fall to 0 when the load ends, and go quiet (a dash) once figures stop coming: the store not answering, the dashboard gone', {
    timeout: 60_000,
  }, async () => {
    const page = await open()
    const tile = (k: string) => page.locator(`[data-gate="shop"] [data-k="${k}"]`)
    const shown = async (k: string): Promise<string> => (await tile(k).textContent()) ?? ''
    await until(async () => Number(await shown('admitted')) > 0, 10_000, 100)
    running = false
    await load
    await until(async () => (await shown('admitted')) === '0' && (await shown('busy')) === '0', 5_000, 100)

    // Figures stop coming: the last ones are not shown as if they were live.
    startLoad()
    await until(async () => Number(await shown('admitted')) > 0, 10_000, 100)
    running = false
    await load
    storeDown = true
    const quiet = async (): Promise<boolean> =>
      (await shown('admitted')) === '—' &&
      (await shown('busy')) === '—' &&
      (await tile('admitted').locator('xpath=..').getAttribute('class'))!.includes('quiet')
    const took = await until(quiet, 8_000, 100)
    expect(took).toBeLessThan(6_000)
    expect(await tile('held').textContent()).toBe('—')
    expect(await page.locator('#u').textContent()).toMatch(/^no update since /)
    storeDown = false
    await until(async () => (await shown('admitted')) === '0', 5_000, 100)

    // The dashboard's process ends: the page keeps no figure as if it were live.
    dashboard.close()
    server.closeAllConnections()
    await new Promise((ok) => server.close(ok))
    await until(quiet, 8_000, 100)
    await page.context().close()
  })
})
