/**
 * `airlock hug`'s HTML report in real headless Chromium, served with its own CSP (issue 40): made
 * from a real run (a small crowd against a gate at limit 3 with a line, and an origin that fails
 * now and then), it loads with no console error and no policy violation, shows its five charts
 * drawn with time ticks, states the verdict and the failures, and axe-core finds no WCAG 2.1 A/AA
 * violation.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { airlockShield } from '../../src/fastify.js'
import { runHug } from '../../src/hug/crowd.js'
import { HUG_REPORT_CSP, renderHugReport } from '../../src/hug/report.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { axeAtWidths, pageProblems, reportCharts } from '../helpers/page-checks.js'

describe.runIf(chromiumAvailable || process.env.CI)("airlock hug's report in Chromium", () => {
  const browser = useChromium()
  let app: FastifyInstance
  let server: Server
  let url: string
  let html: string
  beforeAll(async () => {
    app = Fastify()
    await app.register(airlockShield, {
      limit: 3,
      passTtl: '3s',
      provisionalTtl: '2s',
      store: memoryStore(),
      secret: 'hug-report-secret-of-at-least-32-bytes',
      queue: { pollInterval: 500 },
    })
    let n = 0
    app.get('/', async (_req, reply) => (++n % 7 === 0 ? reply.code(500).send('failed') : 'page'))
    await app.listen({ port: 0, host: '127.0.0.1' })
    const target = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`)
    const summary = await runHug({
      url: target,
      visitors: 30,
      over: 1500,
      ramp: true,
      rate: undefined,
      duration: 0,
      pages: 2,
      think: 200,
      patience: 8000,
      flood: 3,
      limit: 3,
      timeout: 5000,
      sources: 30,
    })
    expect(summary.visitors.admittedFromLine).toBeGreaterThan(0)
    expect(summary.answers.originErrors).toBeGreaterThan(0)
    html = renderHugReport(summary)
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': HUG_REPORT_CSP })
      res.end(html)
    })
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  }, 60_000)
  afterAll(async () => {
    await new Promise((ok) => server?.close(ok))
    await app?.close()
  })

  it('loads with no error, shows the verdict and the five charts drawn with their time axis', async () => {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const problems = pageProblems(page)
    try {
      await page.goto(url)
      await page.waitForLoadState('load')
      const charts = await reportCharts(page)
      expect(charts.map((c) => c.title)).toEqual([
        'Visitors in line and on the site',
        'Answers a second',
        'Wait from arrival to admission (s)',
        'Page latency (ms)',
        'Origin errors and unanswered requests a second',
      ])
      for (const c of charts) {
        expect(c.width).toBeGreaterThan(300)
        // Lines, or dots for the seconds with a figure between seconds without (waits come in bursts).
        expect(Math.max(...c.drawn) > 50 || c.dots > 0, c.title!).toBe(true)
        const ticks = c.ticks.filter((t) => / s$/.test(t))
        expect(ticks[0]).toBe('0 s')
        expect(ticks.length).toBeGreaterThanOrEqual(3)
      }
      expect(await page.textContent('.verdict')).toBe('Failed:')
      expect(await page.textContent('main')).toContain('with a 5xx the shield did not send')
      expect(problems).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('axe-core finds no WCAG 2.1 A/AA violation (320 and 1280 px)', async () => {
    expect(await axeAtWidths(browser(), url)).toEqual([])
  })
})
