/**
 * Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH) driven by playwright-core; never a
 * downloaded browser. Browser tests skip only where Chromium is missing and CI is unset: in CI a
 * missing Chromium fails loudly.
 */
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

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
