/**
 * The waiting room in a real headless Chromium (Debian's /usr/bin/chromium via playwright-core):
 * with limit 1, one browser holds the slot, a second waits on the waiting page showing position 1,
 * the first releases, and the second reaches the app without any action. Also without JavaScript
 * (meta refresh), and a screenshot (UPDATE_SCREENSHOTS=1 writes docs/waiting-page.png).
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import type { BrowserContext } from 'playwright-core'
import { airlockShield } from '../../src/fastify.js'
import { hit, nextAddress } from '../http/harness.js'
import type { GateQueueOptions } from '../../src/gate/line.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'

async function startSite(queue: GateQueueOptions = { pollInterval: 300 }) {
  const app: FastifyInstance = Fastify({ forceCloseConnections: true })
  await app.register(airlockShield, {
    limit: 1,
    store: memoryStore(),
    queue,
    secret: 'browser-test-secret-of-32-bytes-or-more',
    logger: { warn() {}, info() {} },
  })
  app.get('/', async (_req, reply) =>
    reply.type('text/html').send('<!doctype html><title>App</title><h1 id="app">Welcome to the app</h1>'),
  )
  app.post('/logout', async (_req, reply) => ({ released: await reply.airlock.release() }))
  app.get('/favicon.ico', { config: { airlock: false } }, async (_req, reply) => reply.code(204).send())
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/` }
}

/** A cookie-keeping fetch client (for the visitors around the browser), another person: its own address. */
function visitor(url: string) {
  let cookie = ''
  const from = nextAddress()
  return async (path = '', method = 'GET'): Promise<number> => {
    const r = await hit(url + path, { method, headers: { accept: 'application/json', cookie }, from })
    for (const c of r.cookies) cookie = [cookie, c.split(';')[0]].filter(Boolean).join('; ')
    return r.status
  }
}

describe.skipIf(!chromiumAvailable)('waiting page in a real browser', () => {
  const browser = useChromium()

  it('limit 1: the second browser waits at position 1, polls by itself, and reaches the app when the first releases', async () => {
    const site = await startSite()
    const contexts: BrowserContext[] = []
    try {
      const first = await browser().newContext()
      const second = await browser().newContext({ viewport: { width: 720, height: 420 } })
      contexts.push(first, second)
      const holder = await first.newPage()
      expect((await holder.goto(site.url))?.status()).toBe(200)
      await holder.waitForSelector('#app')

      const page = await second.newPage()
      const violations: string[] = []
      page.on('console', (m) => {
        if (/Content Security Policy|Refused/i.test(m.text())) violations.push(m.text())
      })
      const polls: { status: number; poll: boolean }[] = []
      page.on('response', (r) => {
        if (r.url() === site.url && r.request().resourceType() === 'fetch') {
          polls.push({ status: r.status(), poll: r.request().headers()['x-airlock-poll'] === '1' })
        }
      })
      expect((await page.goto(site.url))?.status()).toBe(202)
      await expect(page.locator('h1').textContent()).resolves.toBe('You are in line')
      await expect(page.locator('#p').textContent()).resolves.toBe('1')
      // It polls by itself, and stays in line while the slot is held.
      await page.waitForResponse((r) => r.url() === site.url && r.request().resourceType() === 'fetch', {
        timeout: 10_000,
      })
      await page.waitForTimeout(700)
      expect(polls.length).toBeGreaterThanOrEqual(2)
      expect(polls.every((p) => p.status === 202 && p.poll)).toBe(true)
      expect(await page.locator('#p').textContent()).toBe('1')

      // The first visitor leaves (logout): the second gets in without doing anything.
      const released = await holder.evaluate(async () => (await fetch('/logout', { method: 'POST' })).json())
      expect(released).toEqual({ released: true })
      await page.waitForSelector('#app', { timeout: 15_000 })
      expect(violations).toEqual([])
      const cookies = await second.cookies()
      expect(cookies.find((c) => c.name === 'airlock_pass')?.httpOnly).toBe(true)
      expect(cookies.find((c) => c.name === 'airlock_ticket')?.httpOnly).toBe(true)
    } finally {
      await Promise.all(contexts.map((c) => c.close()))
      await site.app.close()
    }
  }, 60_000)

  it("in German (the browser's locale): the page and the strings its script updates after a poll are German", async () => {
    const site = await startSite()
    const context = await browser().newContext({ locale: 'de-DE' })
    try {
      const hold = visitor(site.url)
      expect(await hold()).toBe(200)
      const page = await context.newPage()
      const violations: string[] = []
      page.on('console', (m) => {
        if (/Content Security Policy|Refused/i.test(m.text())) violations.push(m.text())
      })
      // The polls are answered with a long line, so the script has numbers and a wait to format.
      await page.route(site.url, async (route) => {
        if (route.request().headers()['x-airlock-poll'] !== '1') return route.continue()
        await route.fulfill({
          status: 202,
          contentType: 'application/json',
          body: '{"status":"queued","position":1234,"eta":150,"waiting":5678}',
        })
      })
      const first = await page.goto(site.url)
      expect(first?.status()).toBe(202)
      expect(first?.headers()['content-language']).toBe('de')
      await expect(page.locator('html').getAttribute('lang')).resolves.toBe('de')
      await expect(page.locator('h1').textContent()).resolves.toBe('Sie sind in der Warteschlange')
      // The page as served (its first poll may already have rewritten the place on a busy box).
      expect(await first?.text()).toContain('<b id="p">1</b>')
      await expect.poll(() => page.locator('#p').textContent(), { timeout: 10_000 }).toBe('1.234')
      await expect(page.locator('main p').first().textContent()).resolves.toBe(
        'Ihr Platz in der Warteschlange: 1.234 von 5.678',
      )
      await expect(page.locator('#e').textContent()).resolves.toBe('etwa 3 Minuten')
      expect(violations).toEqual([])
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('pauses its polls while the tab is hidden (keep-alive only) and polls at once when shown again', async () => {
    const site = await startSite({ pollInterval: 250, claimWindow: 10_000, idleTimeout: 30_000 }) // keep-alive: 8 s
    const context = await browser().newContext()
    try {
      expect(await visitor(site.url)()).toBe(200) // holds the slot
      const page = await context.newPage()
      // Let the test decide what document.hidden says (headless tabs are always visible).
      await page.addInitScript(
        'Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__hidden === true })',
      )
      const polls: number[] = []
      page.on('request', (r) => {
        if (r.url() === site.url && r.resourceType() === 'fetch') polls.push(Date.now())
      })
      expect((await page.goto(site.url))?.status()).toBe(202)
      await page.waitForTimeout(1200)
      expect(polls.length).toBeGreaterThanOrEqual(3) // visible: every 250 ms (jittered)
      await page.evaluate('window.__hidden = true')
      await page.waitForTimeout(400) // a poll already scheduled may still go out
      const hiddenFrom = polls.length
      await page.waitForTimeout(2000)
      expect(polls.length).toBe(hiddenFrom) // hidden: nothing for 2 s (next keep-alive in ~8 s)
      // Shown again: a poll goes out at once (well before the next keep-alive, ~8 s away).
      const next = page.waitForRequest((r) => r.url() === site.url && r.resourceType() === 'fetch', { timeout: 2000 })
      await page.evaluate('window.__hidden = false; document.dispatchEvent(new Event("visibilitychange"))')
      await next
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('"Leave the line" frees the place at once: the visitor behind moves up within a poll; a cross-site POST is refused (issue 27)', async () => {
    const site = await startSite({ pollInterval: 500 })
    const contexts: BrowserContext[] = []
    try {
      const holder = visitor(site.url)
      expect(await holder()).toBe(200)
      const first = await browser().newContext()
      const second = await browser().newContext()
      contexts.push(first, second)
      const a = await first.newPage()
      expect((await a.goto(site.url))?.status()).toBe(202)
      const b = await second.newPage()
      expect((await b.goto(site.url))?.status()).toBe(202)
      await expect(b.locator('#p').textContent()).resolves.toBe('2')

      // Another site's form posting to the leave address, with the visitor's cookies: refused.
      const ticket = (await first.cookies()).map((c) => `${c.name}=${c.value}`).join('; ')
      const forged = await hit(`${site.url}?__airlock=leave`, {
        method: 'POST',
        headers: { cookie: ticket, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
        from: nextAddress(),
      })
      expect(forged.status).toBe(403)
      await new Promise((r) => setTimeout(r, 800))
      expect(await b.locator('#p').textContent(), 'a refused leave moves nobody').toBe('2')

      const hasTicket = async (): Promise<boolean> => (await first.cookies()).some((c) => c.name === 'airlock_ticket')
      expect(await hasTicket()).toBe(true)
      await a.getByRole('button', { name: 'Leave the line' }).click()
      await a.getByRole('heading', { name: 'You left the line' }).waitFor()
      expect(await hasTicket(), 'the ticket is cleared').toBe(false)
      // Within about one poll (500 ms, jittered up to 1.25x), the visitor behind is first.
      const t0 = Date.now()
      await expect.poll(() => b.locator('#p').textContent(), { timeout: 5_000, interval: 50 }).toBe('1')
      expect(Date.now() - t0).toBeLessThan(2_000)
      // Coming back joins at the back of the line, behind the visitor who moved up.
      expect((await a.goto(site.url))?.status()).toBe(202)
      expect(Number(await a.locator('#p').textContent())).toBeGreaterThanOrEqual(2)
      expect(await b.locator('#p').textContent()).toBe('1')
    } finally {
      for (const c of contexts) await c.close()
      await site.app.close()
    }
  }, 60_000)

  it('moves on without JavaScript too (meta refresh)', async () => {
    const site = await startSite({ pollInterval: 1000 })
    const context = await browser().newContext({ javaScriptEnabled: false })
    try {
      const holder = visitor(site.url)
      expect(await holder()).toBe(200)
      const page = await context.newPage()
      let loads = 0
      page.on('response', (r) => {
        if (r.url() === site.url) loads++
      })
      expect((await page.goto(site.url))?.status()).toBe(202)
      await expect(page.locator('#p').textContent()).resolves.toBe('1')
      expect(await holder('logout', 'POST')).toBe(200)
      await page.waitForSelector('#app', { timeout: 15_000 })
      expect(loads).toBeGreaterThanOrEqual(2)
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('takes a screenshot of the waiting page (docs/waiting-page.png with UPDATE_SCREENSHOTS=1)', async () => {
    const site = await startSite({ pollInterval: 2000 })
    const context = await browser().newContext({ viewport: { width: 720, height: 420 } })
    try {
      // A line with some history, so the page shows a measured estimate.
      let holder = visitor(site.url)
      expect(await holder()).toBe(200)
      const line = Array.from({ length: 5 }, () => visitor(site.url))
      for (const v of line) expect(await v()).toBe(202)
      for (const v of line.slice(0, 3)) {
        await holder('logout', 'POST')
        expect(await v()).toBe(200)
        holder = v
        await new Promise((r) => setTimeout(r, 150))
      }
      const page = await context.newPage()
      expect((await page.goto(site.url))?.status()).toBe(202)
      await expect(page.locator('#p').textContent()).resolves.toBe('3')
      await expect(page.locator('#e').textContent()).resolves.toMatch(/^about \d+ seconds?$/)
      const file = process.env.UPDATE_SCREENSHOTS
        ? fileURLToPath(new URL('../../docs/waiting-page.png', import.meta.url))
        : join(mkdtempSync(join(tmpdir(), 'airlock-shot-')), 'waiting-page.png')
      await page.screenshot({ path: file })
      const png = readFileSync(file)
      expect(png.subarray(1, 4).toString()).toBe('PNG')
      expect(png.length).toBeGreaterThan(5000)
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)
})
