/**
 * The examples users copy, run as a user runs them and clicked through in a real headless Chromium:
 * the "Leave" button of `npm run demo` (examples/demo.ts) and of examples/waiting-room.ts posts an
 * HTML form, and must free the visitor's slot (Fastify answers a form post 415 unless the app can
 * parse `application/x-www-form-urlencoded`).
 */
import { describe, expect, it } from 'vitest'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { cleanUpExamples, startExample } from '../helpers/examples.js'
import { freePort } from '../helpers/redis.js'

cleanUpExamples()

describe.skipIf(!chromiumAvailable)('examples in a real browser', () => {
  const browser = useChromium()

  it('npm run demo: "Leave" frees the visitor\'s slot', async () => {
    const port = await freePort()
    await startExample('demo.ts', { PORT: String(port) }, /Ctrl-C to stop/)
    const url = `http://127.0.0.1:${port}/`
    const held = async (): Promise<number> => ((await (await fetch(`${url}stats`)).json()) as { held: number }).held
    const context = await browser().newContext()
    try {
      const page = await context.newPage()
      expect((await page.goto(url))?.status()).toBe(200)
      await expect(page.locator('h1').textContent()).resolves.toBe('Welcome in!')
      expect(await held()).toBe(1)
      const [left] = await Promise.all([
        page.waitForResponse(`${url}leave`),
        page.getByRole('button', { name: /Leave/ }).click(),
      ])
      expect(left.status()).toBe(200)
      await expect(page.locator('p').first().textContent()).resolves.toContain('Your slot is free')
      expect(await held()).toBe(0)
    } finally {
      await context.close()
    }
  }, 60_000)

  it('waiting-room.ts: "Leave" lets the next in line in, by itself', async () => {
    const port = await freePort()
    await startExample('waiting-room.ts', { PORT: String(port) }, /waiting room demo on/)
    const url = `http://127.0.0.1:${port}/`
    const first = await browser().newContext()
    const second = await browser().newContext()
    try {
      const inside = await first.newPage()
      expect((await inside.goto(url))?.status()).toBe(200)
      const waiting = await second.newPage()
      expect((await waiting.goto(url))?.status()).toBe(202)
      await expect(waiting.locator('#p').textContent()).resolves.toBe('1')
      const [left] = await Promise.all([
        inside.waitForResponse(`${url}leave`),
        inside.getByRole('button', { name: /Leave/ }).click(),
      ])
      expect(left.status()).toBe(200)
      await expect(inside.locator('p').textContent()).resolves.toBe('Thanks, you left the shop.')
      // The waiting page polls every ~2 s and loads the shop once admitted.
      await waiting.waitForSelector('text=You are in the shop', { timeout: 20_000 })
    } finally {
      await first.close()
      await second.close()
    }
  }, 60_000)
})
