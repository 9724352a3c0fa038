/**
 * A real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core; never a
 * downloaded browser) opens the busy page, sees it retry by itself, and reach the app once a slot
 * frees. Also takes a screenshot of the busy page (UPDATE_SCREENSHOTS=1 writes docs/busy-page.png).
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import { airlockShield } from '../../src/fastify.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'

async function startSite(retryAfter: number) {
  const store = memoryStore()
  const app: FastifyInstance = Fastify({ forceCloseConnections: true })
  await app.register(airlockShield, {
    limit: 1,
    store,
    retryAfter,
    secret: 'browser-test-secret-of-32-bytes-or-more',
    logger: { warn() {}, info() {} },
  })
  app.get('/', async (_req, reply) =>
    reply.type('text/html').send('<!doctype html><title>App</title><h1 id="app">Welcome to the app</h1>'),
  )
  app.get('/favicon.ico', { config: { airlock: false } }, async (_req, reply) => reply.code(204).send())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`
  // Someone else holds the only slot (a cookie-less client: provisional, 10 s).
  expect((await fetch(url)).status).toBe(200)
  return { app, store, url, free: () => store.forceReleaseAll('default') }
}

/** What one load of the busy page showed and when it left, as the page itself recorded it. */
interface Visit {
  /** The countdown's number right after load (at DOMContentLoaded: the inline script has run). */
  shown: number
  /** Every number the countdown showed, in order, repeats removed. */
  numbers: number[]
  /** Milliseconds from DOMContentLoaded to the page leaving for its reload. */
  stayed: number
}

/**
 * Runs in every document before its own scripts (Playwright injects it; the page's CSP does not
 * apply): records the countdown of each load in sessionStorage, which survives the reloads.
 */
const RECORD_VISITS = `(() => {
  let visit
  // The clock starts when the parser inserts #s, which is before the page's own script (after it
  // in the document) reads the time: a page that reloads early cannot hide behind a late start.
  const seen = new MutationObserver(() => {
    const s = document.getElementById('s')
    if (!s || visit) return
    seen.disconnect()
    visit = { shown: Number(s.textContent), numbers: [Number(s.textContent)], loadedAt: Date.now() }
    new MutationObserver(() => {
      const n = Number(s.textContent)
      if (visit.numbers.at(-1) !== n) visit.numbers.push(n)
    }).observe(s, { childList: true, characterData: true, subtree: true })
  })
  seen.observe(document, { childList: true, subtree: true })
  const leave = () => {
    if (!visit || visit.left) return
    visit.left = true
    const all = JSON.parse(sessionStorage.getItem('visits') || '[]')
    all.push({ shown: visit.shown, numbers: visit.numbers, stayed: Date.now() - visit.loadedAt })
    sessionStorage.setItem('visits', JSON.stringify(all))
  }
  addEventListener('beforeunload', leave)
  addEventListener('pagehide', leave)
})()`

describe.skipIf(!chromiumAvailable)('busy page in a real browser', () => {
  const browser = useChromium()

  it('shows the busy page, retries by itself under its strict CSP, and reaches the app once a slot frees', async () => {
    const site = await startSite(1)
    const context = await browser().newContext({ viewport: { width: 720, height: 420 } })
    try {
      const page = await context.newPage()
      const statuses: number[] = []
      const violations: string[] = []
      page.on('response', (r) => {
        if (r.url() === site.url) statuses.push(r.status())
      })
      page.on('console', (m) => {
        if (/Content Security Policy|Refused/i.test(m.text())) violations.push(m.text())
      })
      const first = await page.goto(site.url)
      expect(first?.status()).toBe(503)
      await expect(page.locator('h1').textContent()).resolves.toBe('Lots of visitors right now')
      // It retries by itself (jittered around 1 s here), still busy.
      await page.waitForResponse((r) => r.url() === site.url, { timeout: 10_000 })
      await page.waitForLoadState('domcontentloaded')
      expect(statuses.length).toBeGreaterThanOrEqual(2)
      expect(statuses.every((s) => s === 503)).toBe(true)
      await site.free()
      await page.waitForSelector('#app', { timeout: 15_000 })
      expect(statuses.at(-1)).toBe(200)
      expect(violations).toEqual([])
      // The visitor now holds a pass.
      const cookies = await context.cookies()
      expect(cookies.find((c) => c.name === 'airlock_pass')?.httpOnly).toBe(true)
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('counts down the delay it really waits: the number shown at load, one a second, then reloads', async () => {
    const retryAfter = 2 // jittered to 1..3 s
    const site = await startSite(retryAfter)
    const context = await browser().newContext()
    try {
      await context.addInitScript(RECORD_VISITS)
      const page = await context.newPage()
      expect((await page.goto(site.url))?.status()).toBe(503)
      let visits: Visit[] = []
      // Three reloads, so a page that reloads early gets caught whatever its random draw.
      while (visits.length < 3) {
        await page.waitForTimeout(500)
        // The page reloads by itself: a read that races a reload is simply read again.
        visits =
          ((await page.evaluate(`JSON.parse(sessionStorage.getItem('visits') || '[]')`).catch(() => null)) as
            | Visit[]
            | null) ?? visits
      }
      for (const v of visits.slice(0, 3)) {
        expect(v.shown).toBeGreaterThanOrEqual(Math.round(retryAfter * 0.5))
        expect(v.shown).toBeLessThanOrEqual(Math.round(retryAfter * 1.5))
        expect(v.numbers).toEqual(Array.from({ length: v.shown }, (_, i) => v.shown - i)) // 3, 2, 1
        // Never before the countdown ends (the clock started before the page's script ran, so
        // no margin is needed below); late by at most a generous margin on a loaded machine.
        expect(v.stayed).toBeGreaterThanOrEqual(v.shown * 1000)
        expect(v.stayed).toBeLessThan(v.shown * 1000 + 1500)
      }
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('retries without JavaScript too (meta refresh)', async () => {
    const site = await startSite(1)
    const context = await browser().newContext({ javaScriptEnabled: false })
    try {
      const page = await context.newPage()
      let loads = 0
      page.on('response', (r) => {
        if (r.url() === site.url) loads++
      })
      expect((await page.goto(site.url))?.status()).toBe(503)
      await site.free()
      await page.waitForSelector('#app', { timeout: 15_000 })
      expect(loads).toBeGreaterThanOrEqual(2)
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('takes a screenshot of the busy page (docs/busy-page.png with UPDATE_SCREENSHOTS=1)', async () => {
    const site = await startSite(5)
    const context = await browser().newContext({ viewport: { width: 720, height: 420 } })
    try {
      const page = await context.newPage()
      expect((await page.goto(site.url))?.status()).toBe(503)
      await page.waitForTimeout(1200) // the countdown has ticked
      // The committed picture is only rewritten on request, so test runs leave the tree clean.
      const file = process.env.UPDATE_SCREENSHOTS
        ? fileURLToPath(new URL('../../docs/busy-page.png', import.meta.url))
        : join(mkdtempSync(join(tmpdir(), 'airlock-shot-')), 'busy-page.png')
      await page.screenshot({ path: file })
      const png = readFileSync(file)
      expect(png.subarray(1, 4).toString()).toBe('PNG')
      expect(png.length).toBeGreaterThan(5000) // a rendered page, not a blank image
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)
})
