/**
 * The browser suites' one Chromium per `describe` block (vitest hooks; test/helpers/browser.ts
 * stays free of vitest so tools can launch Chromium too).
 */
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import { launchChromium } from './browser.js'

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
