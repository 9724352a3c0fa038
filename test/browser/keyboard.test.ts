/**
 * The waiting page by keyboard alone (issue 27), in real headless Chromium: Tab reaches every
 * control ("Tell me when it is my turn", then "Leave the line"), each shows a visible focus ring,
 * and the toggle works with the space bar. In English and in Arabic (right to left).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { queuedJson, renderWaitingPage } from '../../src/pages/waiting.js'
import { PageLanguages } from '../../src/pages/language.js'
import { chromiumAvailable, launchChromium } from '../helpers/browser.js'

const languages = new PageLanguages()

let browser: Browser
let server: Server
let base: string

beforeAll(async () => {
  if (!chromiumAvailable) return
  browser = await launchChromium()
  server = createServer((req, res) => {
    if (req.headers['x-airlock-poll'] !== undefined) {
      res.writeHead(202, { 'content-type': 'application/json' })
      return res.end(queuedJson(3, 10, 40))
    }
    const language = languages.pick(req.headers['accept-language'])
    res.writeHead(202, { 'content-type': 'text/html; charset=utf-8' })
    return res.end(
      renderWaitingPage(
        {
          order: 'fifo',
          position: 3,
          waiting: 10,
          eta: 40,
          pollInterval: 60_000,
          keepAliveInterval: 60_000,
          nonce: undefined,
        },
        language,
      ),
    )
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})
afterAll(async () => {
  await browser?.close()
  await new Promise((ok) => server?.close(ok))
})

interface Focused {
  tag: string
  name: string
  outline: string
  width: number
}

/** The focused element: its tag, accessible text, and its outline (the focus ring). */
const FOCUSED = `(() => {
  const e = document.activeElement
  if (!e || e === document.body) return null
  const s = getComputedStyle(e)
  return { tag: e.tagName, name: e.textContent.trim(), outline: s.outlineStyle, width: parseFloat(s.outlineWidth) }
})()`

describe.runIf(chromiumAvailable || process.env.CI)('the waiting page by keyboard', () => {
  for (const [tag, notify, leave] of [
    ['en', 'Tell me when it is my turn', 'Leave the line'],
    ['ar', 'أعلمني عندما يحين دوري', 'مغادرة قائمة الانتظار'],
  ] as const) {
    it(`${tag}: Tab reaches "${notify}" and "${leave}", each with a visible focus ring; space presses the toggle`, async () => {
      const context = await browser.newContext({ locale: tag })
      try {
        const page = await context.newPage()
        await page.goto(base)
        await page.locator('#n:not([hidden])').waitFor() // the toggle is shown by the script
        const reached: Focused[] = []
        // Tab until the focus comes back to a control already reached (or leaves the page).
        for (let i = 0; i < 6; i++) {
          await page.keyboard.press('Tab')
          const f = (await page.evaluate(FOCUSED)) as Focused | null
          if (f === null || reached.some((r) => r.name === f.name)) break
          reached.push(f)
        }
        expect(reached.map((r) => [r.tag, r.name])).toEqual([
          ['BUTTON', notify],
          ['BUTTON', leave],
        ])
        for (const r of reached) {
          expect(r.outline, r.name).not.toBe('none')
          expect(r.width, r.name).toBeGreaterThan(0)
        }
        // From "Leave the line", Shift+Tab goes back to the toggle; the space bar presses it.
        await page.locator('form button:not(#n)').focus()
        await page.keyboard.press('Shift+Tab')
        expect(((await page.evaluate(FOCUSED)) as Focused).name).toBe(notify)
        await page.keyboard.press('Space')
        await expect(page.locator('#n').getAttribute('aria-pressed')).resolves.toBe('true')
      } finally {
        await context.close()
      }
    })
  }
})
