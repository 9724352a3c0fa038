/** A real Chromium visitor in front of PHP through `createProxy`: busy page, then admitted, then the origin's page. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AirlockProxy } from '../../src/proxy.js'
import type { Browser as Chromium } from 'playwright-core'
import { createProxy } from '../../src/proxy.js'
import { memoryStore } from '../../src/stores/memory.js'
import { chromiumAvailable, launchChromium } from '../helpers/browser.js'
import { Browser } from '../http/harness.js'
import { phpOrigin, type Origin } from '../proxy/origins.js'

describe.runIf(chromiumAvailable)('a visitor in Chromium through airlock proxy', () => {
  let php: Origin
  let app: AirlockProxy
  let chromium: Chromium
  beforeAll(async () => {
    php = await phpOrigin()
    app = await createProxy({
      target: php.url,
      limit: 1,
      provisionalTtl: 2_000,
      retryAfter: 1,
      secret: 'a-proxy-browser-secret-at-least-32-bytes',
      store: memoryStore(),
      logger: { warn: () => {} },
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    chromium = await launchChromium()
  }, 30_000)
  afterAll(async () => {
    await chromium?.close()
    await app?.close()
    await php?.stop()
  })

  it("gets the busy page while the site is full, then the origin's PHP page once a slot frees", {
    timeout: 30_000,
  }, async () => {
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    // Someone is inside: a client that keeps no cookies holds the slot for provisionalTtl (2 s).
    expect((await new Browser(base).get('/')).status).toBe(200)
    const page = await chromium.newPage()
    const first = await page.goto(`${base}/`)
    expect(first?.status()).toBe(503)
    expect(await page.title()).toBe('Busy, please wait')
    // The busy page retries by itself; the slot frees after 2 s.
    await page.waitForSelector('text=Hello from PHP', { timeout: 20_000 })
    const cookies = (await page.context().cookies()).map((c) => c.name)
    expect(cookies).toEqual(expect.arrayContaining(['airlock_pass', 'origin_session']))
    await page.close()
  })
})
