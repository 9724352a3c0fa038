/**
 * The waiting room's proof-of-work door (`queue.challenge`) in a real headless Chromium: at the
 * default difficulty the page solves by itself and the browser reaches the app when a slot is free,
 * or its place in line when none is; with JavaScript off, the slower door lets it in all the same.
 */
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { airlockShield } from '../../src/fastify.js'
import type { GateQueueOptions } from '../../src/gate/line.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { hit, nextAddress } from '../http/harness.js'

async function startSite(queue: GateQueueOptions, limit = 1) {
  const app = Fastify({ forceCloseConnections: true })
  await app.register(airlockShield, {
    limit,
    store: memoryStore(),
    queue,
    secret: 'browser-test-secret-of-32-bytes-or-more',
    logger: { warn() {}, info() {} },
  })
  app.get('/', async (_req, reply) =>
    reply.type('text/html').send('<!doctype html><title>App</title><h1 id="app">Welcome to the app</h1>'),
  )
  app.get('/favicon.ico', { config: { airlock: false } }, async (_req, reply) => reply.code(204).send())
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/` }
}

describe.skipIf(!chromiumAvailable)('the proof-of-work door in a real browser', () => {
  const browser = useChromium()

  it('at the default difficulty the page solves by itself and reaches the app when a slot is free; the next browser gets a place', async () => {
    const site = await startSite({ challenge: true, pollInterval: 500 })
    const context = await browser().newContext()
    const other = await browser().newContext()
    try {
      const page = await context.newPage()
      const violations: string[] = []
      page.on('console', (m) => {
        if (/Content Security Policy|Refused/i.test(m.text())) violations.push(m.text())
      })
      const t0 = Date.now()
      const first = await page.goto(site.url)
      expect(first?.status()).toBe(202)
      // What that first answer was (its body is gone once the page has solved and moved on): the
      // same request from another visitor.
      expect((await hit(site.url, { from: nextAddress() })).body).toContain('<h1>Just a moment</h1>')
      await page.waitForSelector('#app', { timeout: 20_000 })
      const ms = Date.now() - t0
      console.log(`challenge at the default difficulty: Chromium reached the app ${ms} ms after its first request`)
      expect(violations).toEqual([])
      // The slot is taken: the next browser solves too, then waits in line.
      const second = await other.newPage()
      await second.goto(site.url)
      await second.waitForSelector('#p', { timeout: 20_000 })
      await expect(second.locator('h1').textContent()).resolves.toBe('You are in line')
    } finally {
      await Promise.all([context.close(), other.close()])
      await site.app.close()
    }
  }, 60_000)

  it('with JavaScript off, the page reloads itself after noscriptDelay and gets in', async () => {
    const site = await startSite({ challenge: { noscriptDelay: 2_000 } })
    const context = await browser().newContext({ javaScriptEnabled: false })
    try {
      const page = await context.newPage()
      expect((await page.goto(site.url))?.status()).toBe(202)
      await expect(page.locator('noscript').first().count()).resolves.toBeGreaterThan(0)
      await page.waitForSelector('#app', { timeout: 15_000 })
    } finally {
      await context.close()
      await site.app.close()
    }
  }, 60_000)
})
