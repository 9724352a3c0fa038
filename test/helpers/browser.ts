/**
 * Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH) driven by playwright-core; never a
 * downloaded browser. Browser tests skip only where Chromium is missing and CI is unset: in CI a
 * missing Chromium fails loudly.
 */
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const chromiumAvailable = existsSync(CHROMIUM)
if (!chromiumAvailable && process.env.CI) {
  throw new Error(`CI=true but no Chromium at ${CHROMIUM}: the browser test must run in CI`)
}

/** A headless Chromium; close it in `afterAll`. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
}

/**
 * One headless Chromium for the enclosing `describe` block: launched before its tests, closed after
 * them. Call it in the block; the returned function gives the browser inside a test.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined
  beforeAll(async () => {
    browser = await launchChromium()
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
  })
  return () => {
    if (!browser) throw new Error('useChromium(): the browser is only there inside a test')
    return browser
  }
}
