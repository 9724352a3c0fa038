/**
 * Admitted in a background tab (issue 27), in a real headless Chromium: the waiting page's title and
 * favicon say so, the visitor who opted in ("Tell me when it is my turn") gets a Notification (or,
 * with notifications refused, a short WebAudio beep), the pass is confirmed so the slot outlives the
 * provisional pass while the tab stays hidden, and the page goes to the site once shown again (or
 * by itself after half the pass's life).
 */
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import Fastify, { type FastifyInstance } from 'fastify'
import type { BrowserContext, Page } from 'playwright-core'
import { airlockShield } from '../../src/fastify.js'
import { hit, nextAddress } from '../http/harness.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'

/** Polls every 300 ms when visible, every 800 ms (the keep-alive) when hidden. */
const QUEUE = { pollInterval: 300, claimWindow: 1_000, idleTimeout: 2_000 }

async function startSite(passes: { passTtl?: number; provisionalTtl?: number; confirm?: boolean } = {}) {
  const app: FastifyInstance = Fastify({ forceCloseConnections: true })
  await app.register(airlockShield, {
    limit: 1,
    store: memoryStore(),
    queue: QUEUE,
    ...passes,
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

/** A cookie-keeping fetch client, another person (its own address). */
function visitor(url: string) {
  let cookie = ''
  const from = nextAddress()
  return async (path = '', method = 'GET'): Promise<number> => {
    const r = await hit(url + path, { method, headers: { accept: 'application/json', cookie }, from })
    for (const c of r.cookies) cookie = [cookie, c.split(';')[0]].filter(Boolean).join('; ')
    return r.status
  }
}

/** A visitor that holds the only slot (its pass kept alive by a request every 300 ms) until `release()`. */
async function slotHolder(url: string) {
  const holder = visitor(url)
  expect(await holder()).toBe(200)
  const timer = setInterval(() => void holder().catch(() => {}), 300).unref()
  return {
    release: async (): Promise<number> => {
      clearInterval(timer)
      return holder('logout', 'POST')
    },
    stop: () => clearInterval(timer),
  }
}

/**
 * Before the page's own script: `document.hidden` and `visibilityState` follow `window.__hidden`
 * (a headless tab is always visible), and every Notification constructed, oscillator started and
 * CSP violation is recorded.
 */
const INIT = `
Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__hidden === true })
Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (window.__hidden === true ? 'hidden' : 'visible') })
window.__notes = []; window.__beeps = 0; window.__csp = []
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI))
if (window.Notification) {
  const Real = window.Notification
  window.Notification = class extends Real { constructor(title, options) { window.__notes.push(title); super(title, options) } }
}
if (window.AudioContext) {
  const start = OscillatorNode.prototype.start
  OscillatorNode.prototype.start = function (...a) { window.__beeps++; return start.apply(this, a) }
}
`

interface Seen {
  notes: string[]
  beeps: number
  csp: string[]
  title: string
  icon: string | null
}

/** What the page did: notifications, beeps, CSP violations; its title and favicon. */
const record = (page: Page): Promise<Seen> =>
  page.evaluate(`(() => {
    const icon = document.querySelector('link[rel=icon]')
    return { notes: window.__notes, beeps: window.__beeps, csp: window.__csp, title: document.title, icon: icon ? icon.href : null }
  })()`)

describe.skipIf(!chromiumAvailable)('admitted while the tab is hidden', () => {
  const browser = useChromium()

  async function waitingPage(context: BrowserContext, url: string): Promise<Page> {
    const page = await context.newPage()
    await page.addInitScript(INIT)
    expect((await page.goto(url))?.status()).toBe(202)
    return page
  }

  it('title and favicon change, the opted-in visitor is notified, the slot outlives the provisional pass, and showing the tab goes to the site', async () => {
    const site = await startSite({ passTtl: 20_000, provisionalTtl: 1_000 }) // the page may wait hidden 10 s
    const context = await browser().newContext()
    try {
      await context.grantPermissions(['notifications'], { origin: site.url.slice(0, -1) })
      const holder = await slotHolder(site.url)
      const page = await waitingPage(context, site.url)
      const toggle = page.getByRole('button', { name: 'Tell me when it is my turn' })
      await expect(toggle.getAttribute('aria-pressed')).resolves.toBe('false')
      await toggle.click()
      await expect(toggle.getAttribute('aria-pressed')).resolves.toBe('true')
      expect(await page.evaluate('Notification.permission')).toBe('granted')
      const before = await record(page)
      expect(before.title).toBe('You are in line')
      expect(before.icon).toBeNull()

      // The page's own confirm request (not the prefetch the site's answer links to).
      const confirmed = page.waitForResponse(
        (r) => r.url() === `${site.url}?__airlock=confirm` && r.request().resourceType() === 'fetch',
        { timeout: 15_000 },
      )
      await page.evaluate('window.__hidden = true')
      expect(await holder.release()).toBe(200) // the slot is free: the hidden page's next poll is admitted
      await expect.poll(async () => (await record(page)).title, { timeout: 15_000 }).toBe('✓ Your turn – 127.0.0.1')
      const after = await record(page)
      expect(after.icon).toMatch(/^data:image\/svg\+xml,<svg /)
      expect(after.notes).toEqual(['✓ Your turn – 127.0.0.1'])
      expect(after.beeps).toBe(0)
      expect(after.csp).toEqual([])

      // Past the provisional pass's life (1 s) the slot is still the hidden visitor's: a newcomer waits.
      await page.waitForTimeout(2_000)
      expect(await visitor(site.url)(), 'a newcomer waits: the slot is held').toBe(202)
      expect((await confirmed).status()).toBe(204)
      expect(page.url()).toBe(site.url)
      expect(await page.locator('#app').count()).toBe(0) // still the waiting page while hidden

      await page.evaluate('window.__hidden = false; document.dispatchEvent(new Event("visibilitychange"))')
      await page.waitForSelector('#app', { timeout: 10_000 })
      expect(await page.title()).toBe('App')
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)

  it('notifications refused: the opted-in visitor hears a beep; without the opt-in, neither; left hidden, the page goes to the site after half the pass', async () => {
    const site = await startSite({ passTtl: 4_000, provisionalTtl: 1_000 }) // hold: 2 s
    const contexts: BrowserContext[] = []
    try {
      const refused = await browser().newContext() // no permission granted: a headless prompt is refused
      const silent = await browser().newContext()
      contexts.push(refused, silent)
      await silent.grantPermissions(['notifications'], { origin: site.url.slice(0, -1) })
      const holder = await slotHolder(site.url)
      const beeper = await waitingPage(refused, site.url)
      await beeper.getByRole('button', { name: 'Tell me when it is my turn' }).click()
      await expect.poll(() => beeper.evaluate('Notification.permission')).not.toBe('granted')
      const quiet = await waitingPage(silent, site.url) // never clicks
      await beeper.evaluate('window.__hidden = true')
      await quiet.evaluate('window.__hidden = true')

      expect(await holder.release()).toBe(200)
      await expect.poll(async () => (await record(beeper)).title, { timeout: 15_000 }).toBe('✓ Your turn – 127.0.0.1')
      const heard = await record(beeper)
      expect(heard.beeps).toBe(1)
      expect(heard.notes).toEqual([])
      // Left hidden, it goes to the site by itself after the hold (half of passTtl), pass and slot alive.
      await beeper.waitForSelector('#app', { timeout: 10_000 })

      // The second visitor's turn (the first gives its slot up): a new title, no notification, no sound.
      await beeper.evaluate("fetch('/logout', { method: 'POST' }).then((r) => r.json())")
      await expect.poll(async () => (await record(quiet)).title, { timeout: 15_000 }).toBe('✓ Your turn – 127.0.0.1')
      const still = await record(quiet)
      expect(still.notes).toEqual([])
      expect(still.beeps).toBe(0)
      expect(still.csp).toEqual([])
    } finally {
      for (const c of contexts) await c.close()
      await site.app.close()
    }
  }, 60_000)

  it("with the gate's confirm off, an admitted hidden page goes to the site at once (no hold offered)", async () => {
    const site = await startSite({ confirm: false })
    const context = await browser().newContext()
    try {
      const holder = await slotHolder(site.url)
      const page = await waitingPage(context, site.url)
      await page.evaluate('window.__hidden = true')
      expect(await holder.release()).toBe(200)
      await page.waitForSelector('#app', { timeout: 15_000 })
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)
})
