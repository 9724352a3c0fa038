/**
 * Every page a visitor or an operator sees, checked by axe-core (WCAG 2.1 A and AA rules and axe's
 * best practices: a main landmark, one `<h1>`, no content outside a landmark, headings in order) in
 * real headless Chromium, at a phone's width (320 px) and a desktop's (1280 px), after its script
 * has run (issues 27 and 42). The pages are rendered by the same functions the gate, the proxy, the
 * report and the dashboard answer with; the live dashboard is a real one (a memory store), showing a
 * gate with its charts, table, look back and controls. Also: with `prefers-reduced-motion: reduce`,
 * nothing on them animates or transitions.
 */
import { createRequire } from 'node:module'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser } from 'playwright-core'
import { renderBusyPage } from '../../src/pages/busy.js'
import { queuedJson, renderWaitingPage } from '../../src/pages/waiting.js'
import { renderChallengePage } from '../../src/pages/challenge.js'
import { originErrorPage } from '../../src/pages/origin.js'
import { renderDashboardPage } from '../../src/pages/dashboard.js'
import { signInPage } from '../../src/dashboard/sign-in.js'
import { PageLanguages } from '../../src/pages/language.js'
import { renderLeftPage } from '../../src/pages/left.js'
import { renderReportHtml } from '../../src/pages/report.js'
import { summarize } from '../../src/core/report.js'
import { createDashboard, type Dashboard } from '../../src/dashboard/server.js'
import { memoryStore } from '../../src/stores/memory.js'
import { HUG_FIRST, hugMinutes } from '../helpers/hug-minutes.js'
import { chromiumAvailable, launchChromium } from '../helpers/browser.js'

const languages = new PageLanguages()

const axeSource: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source

/** axe's rule sets run on every page: WCAG 2.0 and 2.1, A and AA, and axe's best practices. */
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']

/** Each page, as served. */
/** A visitor in a first-come line: 1,234th of 5,000, seven minutes to go. */
const WAITING = {
  order: 'fifo',
  position: 1234,
  waiting: 5000,
  eta: 420,
  pollInterval: 60_000,
  keepAliveInterval: 60_000,
  nonce: undefined,
} as const

const PAGES: Record<string, () => string> = {
  busy: () => renderBusyPage(3600),
  waiting: () => renderWaitingPage(WAITING),
  'waiting (random order)': () =>
    renderWaitingPage({
      order: 'random',
      position: null,
      waiting: 5000,
      eta: null,
      pollInterval: 60_000,
      keepAliveInterval: 60_000,
      nonce: undefined,
    }),
  'waiting (before the opening)': () =>
    renderWaitingPage({
      order: 'fifo',
      position: null,
      waiting: 80,
      eta: 3600,
      opensAt: Date.now() + 3_600_000,
      pollInterval: 60_000,
      keepAliveInterval: 60_000,
      nonce: undefined,
    }),
  challenge: () =>
    renderChallengePage({
      challenge: 'not-a-real-challenge',
      difficulty: 30,
      noscriptDelay: 3_600_000,
      nonce: undefined,
    }),
  'waiting (Arabic, right to left)': () => renderWaitingPage(WAITING, languages.pick('ar')),
  'busy (German)': () => renderBusyPage(3600, undefined, languages.pick('de')),
  'busy (a client over its share)': () => renderBusyPage(3600, undefined, undefined, 'client-share'),
  'left the line (Japanese)': () => renderLeftPage('/shop', languages.pick('ja')),
  'left the line': () => renderLeftPage('/shop'),
  'proxy 502': () => originErrorPage(502),
  'proxy 504': () => originErrorPage(504),
  'dashboard sign-in': () => signInPage(false),
  'dashboard sign-in (wrong token)': () => signInPage(true),
  'dashboard (before its first event)': () => renderDashboardPage({ names: ['shop'], controls: true }),
  'history report': () => renderReportHtml(summarize('shop', HUG_FIRST, HUG_FIRST + 60, hugMinutes(60, 300))),
}

/**
 * The live dashboard, served under this path by a real dashboard (a memory store): checked once its
 * gate is drawn (tiles, charts with their axes, the instances table, the look back, the controls).
 */
const LIVE_DASHBOARD = '/live-dashboard/'
const DASHBOARD_TOKEN = 'a11y-test-dashboard-token'
const DASHBOARD_DRAWN = [
  '[data-gate="shop"] > .charts .axis time',
  '[data-back="shop"] figure .axis time',
  '[data-gate="shop"] form',
]

/** What each test opens: a path, and what to wait for before axe runs. */
const OPENED: Record<string, { path: string; ready?: readonly string[] }> = {
  ...Object.fromEntries(Object.keys(PAGES).map((name) => [name, { path: `/${encodeURIComponent(name)}` }])),
  'dashboard (a gate drawn, with its look back and controls)': { path: LIVE_DASHBOARD, ready: DASHBOARD_DRAWN },
}
const WIDTHS = [320, 1280]

let browser: Browser
let server: Server
let dashboard: Dashboard
let base: string

beforeAll(async () => {
  if (!chromiumAvailable) return
  browser = await launchChromium()
  dashboard = createDashboard({ token: DASHBOARD_TOKEN, store: memoryStore(), names: ['shop'], interval: 250 })
  await dashboard.ready
  server = createServer((req, res) => {
    if (req.url?.startsWith(LIVE_DASHBOARD)) {
      // Signed in by the test (the page, its events, look back and controls all under the mount).
      req.url = `/${req.url.slice(LIVE_DASHBOARD.length)}`
      req.headers.authorization = `Bearer ${DASHBOARD_TOKEN}`
      return dashboard.handle(req, res)
    }
    const name = decodeURIComponent((req.url ?? '/').slice(1).split('?')[0]!)
    if (req.headers['x-airlock-poll'] !== undefined) {
      res.writeHead(202, { 'content-type': 'application/json' })
      return res.end(queuedJson(1200, 5000, 400))
    }
    const page = PAGES[name]
    if (page === undefined) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    return res.end(page())
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await browser?.close()
  dashboard?.close()
  server?.closeAllConnections()
  await new Promise((ok) => server?.close(ok))
})

interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

describe.runIf(chromiumAvailable || process.env.CI)('axe-core: no WCAG 2.1 A/AA or best-practice violation', () => {
  for (const [name, { path, ready }] of Object.entries(OPENED)) {
    it(`${name}, at ${WIDTHS.join(' and ')} px`, async () => {
      const found: string[] = []
      for (const width of WIDTHS) {
        // axe is injected by the test: the pages' own policies allow only their hashed scripts.
        const context = await browser.newContext({ viewport: { width, height: 800 }, bypassCSP: true })
        const page = await context.newPage()
        try {
          await page.goto(`${base}${path}`)
          await page.waitForLoadState('load')
          for (const selector of ready ?? []) await page.locator(selector).first().waitFor({ timeout: 10_000 })
          await page.evaluate(axeSource)
          const violations = (await page.evaluate(
            (tags) =>
              (globalThis as unknown as { axe: { run(o: object): Promise<{ violations: unknown[] }> } }).axe
                .run({ runOnly: { type: 'tag', values: tags } })
                .then((r) => r.violations),
            AXE_TAGS,
          )) as Violation[]
          for (const v of violations)
            found.push(
              `${width}px ${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
            )
        } finally {
          await context.close()
        }
      }
      expect(found).toEqual([])
    })
  }
})

/** What a site's stylesheet or a future spinner could add: every element animated and fading. */
const MOTION =
  '*,:before,:after{transition:opacity 2s;animation:airlock-test-spin 1s infinite}@keyframes airlock-test-spin{to{opacity:.5}}'

describe.runIf(chromiumAvailable || process.env.CI)('prefers-reduced-motion: reduce: nothing moves', () => {
  for (const [name, { path, ready }] of Object.entries(OPENED)) {
    it(name, async () => {
      const moving: Record<string, number> = {}
      for (const reducedMotion of ['reduce', 'no-preference'] as const) {
        // The motion is injected by the test (bypassCSP): the pages' own styles have none today.
        const context = await browser.newContext({ reducedMotion, bypassCSP: true })
        try {
          const page = await context.newPage()
          await page.goto(`${base}${path}`)
          for (const selector of ready ?? []) await page.locator(selector).first().waitFor({ timeout: 10_000 })
          await page.addStyleTag({ content: MOTION })
          moving[reducedMotion] = await page.evaluate(`(() => {
            let n = 0
            for (const e of document.querySelectorAll('*')) {
              for (const pseudo of [null, '::before', '::after']) {
                const s = getComputedStyle(e, pseudo)
                if (s.animationName !== 'none' || s.transitionDuration.split(',').some((d) => parseFloat(d) > 0)) n++
              }
            }
            return n
          })()`)
        } finally {
          await context.close()
        }
      }
      expect(moving.reduce, 'elements that animate or transition under reduce').toBe(0)
      expect(moving['no-preference'], 'the injected motion applies without the preference').toBeGreaterThan(0)
    })
  }
})
