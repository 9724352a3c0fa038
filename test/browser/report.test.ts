/**
 * The history report's HTML page in real headless Chromium, served with its own CSP: it loads with
 * no console error and no policy violation, shows its four charts with their lines drawn, prints
 * (print media keeps the charts; a PDF comes out), and axe-core finds no WCAG 2.1 A/AA violation.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { summarize } from '../../src/core/report.js'
import { HUG_FIRST, hugMinutes } from '../helpers/hug-minutes.js'
import { renderReportHtml, REPORT_CSP } from '../../src/pages/report.js'
import type { MinuteRecord } from '../../src/stores/history.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { axeAtWidths, pageProblems, reportCharts } from '../helpers/page-checks.js'

const FIRST = HUG_FIRST

/** Two hours of a hug: the line grows to 600, then drains; a gap of ten quiet minutes in the middle. */
const records = (): MinuteRecord[] => hugMinutes(120, 600, [60, 70])

describe.runIf(chromiumAvailable || process.env.CI)('the HTML report in Chromium', () => {
  const browser = useChromium()
  let server: Server
  let url: string
  beforeAll(async () => {
    const html = renderReportHtml(summarize('shop', FIRST, FIRST + 120, records()))
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': REPORT_CSP })
      res.end(html)
    })
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => {
    await new Promise((ok) => server?.close(ok))
  })

  it('loads with no error, shows the four charts drawn, and prints', async () => {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const problems = pageProblems(page)
    try {
      await page.goto(url)
      await page.waitForLoadState('load')
      const charts = await reportCharts(page)
      expect(charts.map((c) => c.title)).toEqual([
        'In line at the minute’s end',
        'Admitted a minute',
        'Wait in line (s)',
        'Visit length (s)',
      ])
      for (const c of charts) {
        expect(c.width).toBeGreaterThan(300)
        expect(Math.min(...c.drawn)).toBeGreaterThan(100)
      }
      // The ten quiet minutes break the line: two pieces.
      expect(
        await page.$eval(
          'svg[data-chart="In line at the minute’s end"] path',
          (p) => (p.getAttribute('d')!.match(/M/g) ?? []).length,
        ),
      ).toBe(2)
      expect(await page.textContent('table')).toContain('Admitted')
      await page.emulateMedia({ media: 'print' })
      expect(
        await page.$eval(
          'header',
          (h) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(h)
              .backgroundColor,
        ),
      ).toBe('rgba(0, 0, 0, 0)')
      expect(
        await page.$$eval('svg[data-chart]', (s) => s.filter((x) => x.getBoundingClientRect().height > 50).length),
      ).toBe(4)
      const pdf = await page.pdf({ format: 'A4' })
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-')
      expect(problems).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('axe-core finds no WCAG 2.1 A/AA violation (320 and 1280 px)', async () => {
    expect(await axeAtWidths(browser(), url)).toEqual([])
  })
})
