/**
 * Screenshots of every page a visitor sees, in two languages (English, and Arabic for right to
 * left), as Debian's Chromium renders them: docs/pages/<page>-<lang>.png (issue 27).
 *   npx tsx tools/page-shots.ts [out-dir]
 * The pages are rendered by the functions the gate and the proxy answer with; the waiting page's
 * polls are answered with the same place, so it shows what a visitor in a long line sees.
 */
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { launchChromium } from '../test/helpers/browser.js'
import { renderBusyPage } from '../src/pages/busy.js'
import { renderChallengePage } from '../src/pages/challenge.js'
import { PageLanguages, type PageLanguage } from '../src/pages/language.js'
import { renderLeftPage } from '../src/pages/left.js'
import { originErrorPage } from '../src/pages/origin.js'
import { queuedJson, renderWaitingPage } from '../src/pages/waiting.js'

const LANGUAGES = ['en', 'ar'] as const
const PAGES: Record<string, (l: PageLanguage) => string> = {
  busy: (l) => renderBusyPage(20, undefined, l),
  waiting: (l) =>
    renderWaitingPage(
      {
        order: 'fifo',
        position: 1234,
        waiting: 5678,
        eta: 150,
        pollInterval: 60_000,
        keepAliveInterval: 60_000,
        nonce: undefined,
      },
      l,
    ),
  challenge: (l) =>
    renderChallengePage(
      { challenge: 'not-a-real-challenge', difficulty: 30, noscriptDelay: 3_600_000, nonce: undefined },
      l,
    ),
  left: (l) => renderLeftPage('/', l),
  'origin-502': (l) => originErrorPage(502, l),
}

/** Writes one PNG per page and language into `dir`; resolves the files written. */
export async function pageShots(dir: string): Promise<string[]> {
  mkdirSync(dir, { recursive: true })
  const languages = new PageLanguages()
  const server = createServer((req, res) => {
    if (req.headers['x-airlock-poll'] !== undefined) {
      res.writeHead(202, { 'content-type': 'application/json' })
      return res.end(queuedJson(1234, 5678, 150))
    }
    const [page = '', lang = 'en'] = (req.url ?? '/').slice(1).split('/')
    const render = PAGES[page]
    if (render === undefined) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    return res.end(render(languages.pick(lang)))
  })
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const browser = await launchChromium()
  const written: string[] = []
  try {
    const page = await browser.newPage({ viewport: { width: 720, height: 420 } })
    for (const lang of LANGUAGES) {
      for (const name of Object.keys(PAGES)) {
        await page.goto(`${base}/${name}/${lang}`)
        const path = join(dir, `${name}-${lang}.png`)
        await page.screenshot({ path })
        written.push(path)
      }
    }
  } finally {
    await browser.close()
    server.close()
  }
  return written
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const file of await pageShots(process.argv[2] ?? 'docs/pages')) console.log(`wrote ${file}`)
}
