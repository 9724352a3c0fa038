/**
 * The challenge page (src/pages/challenge.ts): its solver evaluated in Node and compared with
 * node:crypto, the page's shape, and the page in a real headless Chromium (Debian's
 * /usr/bin/chromium via playwright-core) served with its own CSP by a tiny node:http server: it
 * solves by itself in workers, on the page when there is no Worker or the CSP blocks them, and
 * without JavaScript it reloads itself after noscriptDelay.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { Challenges, challengeSettings, SOLUTION_HEADER, type ChallengeVerdict } from '../../src/gate/challenge.js'
import {
  CHALLENGE_PAGE_CSP,
  CHALLENGE_PAGE_SCRIPT,
  CHALLENGE_PAGE_STYLE,
  CHALLENGE_WORKER_SCRIPT,
  challengeJson,
  challengePageHashes,
  renderChallengePage,
} from '../../src/pages/challenge.js'
import { sha256Source } from '../../src/pages/csp.js'
import { chromiumAvailable } from '../helpers/browser.js'
import { useChromium } from '../helpers/use-chromium.js'
import { until } from '../helpers/wait.js'

const SECRET = 'challenge-browser-secret-of-32-bytes-or-more'

interface Solver {
  sha(bytes: string): Int32Array
  solve(
    c: string,
    d: number,
    i: number,
    k: number,
    tell: (t: number) => void,
    done: (n: number) => void,
    later: (f: () => void) => void,
  ): void
}

/** The worker's source run in Node on a fake worker global (no `document`, no `crypto`). */
function loadWorker(): {
  api: Solver
  self: { postMessage(m: number): void; onmessage?: (m: { data: unknown }) => void }
  posted: number[]
} {
  const posted: number[] = []
  const self = { postMessage: (m: number) => void posted.push(m) } as {
    postMessage(m: number): void
    onmessage?: (m: { data: unknown }) => void
  }
  const api = new Function('self', `return ${CHALLENGE_WORKER_SCRIPT}`)(self) as Solver
  return { api, self, posted }
}

const hex = (words: Int32Array): string => Array.from(words, (w) => (w >>> 0).toString(16).padStart(8, '0')).join('')
const zeroBits = (text: string): number => {
  const d = createHash('sha256').update(text).digest()
  let n = 0
  for (const byte of d) {
    if (byte) return n + Math.clz32(byte) - 24
    n += 8
  }
  return n
}

describe('the solver, evaluated in Node', () => {
  it('its SHA-256 equals node:crypto on random inputs (every padding boundary, up to 3 blocks and more)', () => {
    const { api } = loadWorker()
    const lengths = [0, 1, 3, 4, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 1000]
    for (let i = 0; i < 600; i++) lengths.push(Math.floor(Math.random() * 300))
    for (const len of lengths) {
      const bytes = randomBytes(len)
      expect(hex(api.sha(bytes.toString('latin1'))), `length ${len}`).toBe(
        createHash('sha256').update(bytes).digest('hex'),
      )
    }
    expect(hex(api.sha('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('finds the first counter with d leading zero bits, as brute force with node:crypto does, on challenges of every length', () => {
    const { api } = loadWorker()
    for (const len of [1, 50, 62, 63, 64, 100, 127, 128, 200]) {
      const c = 'c'.repeat(len)
      let expected = 0
      while (zeroBits(`${c}:${expected}`) < 10) expected++
      let found = -1
      api.solve(
        c,
        10,
        0,
        1,
        () => {},
        (n) => (found = n),
        (f) => f(),
      )
      expect(found, `length ${len}`).toBe(expected)
    }
  })

  it('as a worker: splits the counters (worker i of k tries i, i + k, ...), posts progress as negative numbers and the nonce, which the gate accepts', async () => {
    const challenges = new Challenges('shop', [SECRET], challengeSettings({ difficulty: 12 })!)
    const { challenge } = challenges.issue('visitor', Date.now(), 12)
    const { self, posted } = loadWorker()
    self.onmessage!({ data: { c: challenge, d: 12, i: 2, k: 3 } })
    await new Promise<void>(function wait(resolve) {
      if (posted.some((m) => m >= 0)) resolve()
      else setTimeout(() => wait(resolve), 10)
    })
    const nonce = posted.find((m) => m >= 0)!
    expect(nonce % 3).toBe(2)
    expect(posted.filter((m) => m < 0).every((m) => Number.isInteger(m))).toBe(true)
    expect(challenges.verify('visitor', `${challenge} ${nonce}`, Date.now())).toBe('ok')
  })
})

describe('the challenge page', () => {
  const challenges = new Challenges('g'.repeat(64), [SECRET], challengeSettings(true)!)
  const issued = challenges.issue('visitor', Date.now(), 17)

  it('is under 3.5 KB with the longest gate name, says what happens, and escapes what it inserts', () => {
    const html = renderChallengePage({ ...issued, noscriptDelay: 15_000, nonce: undefined })
    expect(Buffer.byteLength(html)).toBeLessThan(3584)
    expect(html).toMatch(/^<!doctype html><html lang="en" dir="ltr">/)
    expect(html).toContain('<h1>Just a moment</h1>')
    expect(html).toContain('Checking your browser before you join the line — this takes a second.')
    expect(html).toContain(
      `<p id="c" role="status" aria-live="polite" data-challenge="${issued.challenge}" data-difficulty="17" data-progress="Checking your browser… {percent}" data-done="Done, joining the line…">`,
    )
    expect(html).toContain('<noscript><meta http-equiv="refresh" content="15"></noscript>')
    expect(html).toContain('<noscript><p>This page joins the line by itself in 15 s.</p></noscript>')
    expect(html).not.toMatch(/<img|<form|<input|<button/)
    const evil = renderChallengePage({
      challenge: '"><script>x</script>',
      difficulty: 3,
      noscriptDelay: 1500,
      nonce: '"n"',
    })
    expect(evil).not.toContain('"><script>x')
    expect(evil).toContain('content="2"')
    expect(evil).toContain('<script nonce="&#34;n&#34;">')
  })

  it('its CSP allows exactly its own script and style, its blob: worker, and requests to its own origin', () => {
    expect(challengePageHashes.script).toBe(sha256Source(CHALLENGE_PAGE_SCRIPT))
    expect(challengePageHashes.style).toBe(sha256Source(CHALLENGE_PAGE_STYLE))
    expect(CHALLENGE_PAGE_CSP).toContain(`script-src ${challengePageHashes.script};`)
    expect(CHALLENGE_PAGE_CSP).toContain("connect-src 'self'; worker-src blob:;")
    expect(CHALLENGE_PAGE_CSP).toMatch(/^default-src 'none';/)
  })

  it('challengeJson tells an API client what to do', () => {
    expect(JSON.parse(challengeJson('c1~x', 17, Date.UTC(2030, 0, 1)))).toEqual({
      status: 'challenge',
      challenge: 'c1~x',
      difficulty: 17,
      expiresAt: '2030-01-01T00:00:00.000Z',
      solve: "SHA-256(challenge + ':' + nonce) with 17 leading zero bits; send X-Airlock-Solution: <challenge> <nonce>",
    })
  })
})

/**
 * A gate in miniature: `/` answers the challenge page (difficulty 12) until a solution arrives with
 * the header; the verdict is recorded; an accepted visitor then sees "joined".
 */
async function startSite(opts: { csp?: string; noscriptDelay?: number } = {}) {
  const challenges = new Challenges(
    'shop',
    [SECRET],
    challengeSettings({ difficulty: 12, noscriptDelay: opts.noscriptDelay ?? 15_000 })!,
  )
  const verdicts: ChallengeVerdict[] = []
  const loads: string[] = []
  let joined = false
  const server: Server = createServer((req, res) => {
    const solution = req.headers[SOLUTION_HEADER]
    if (req.url !== '/') return res.writeHead(404).end()
    if (solution !== undefined) {
      const verdict = challenges.verify('visitor', String(solution), Date.now())
      verdicts.push(verdict)
      if (verdict === 'ok') joined = true
      return res.writeHead(202, { 'cache-control': 'no-store' }).end()
    }
    loads.push(joined ? 'joined' : 'challenge')
    if (joined)
      return res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<!doctype html><title>In line</title><h1 id="in">In line</h1>')
    const issued = challenges.issue('visitor', Date.now(), 12)
    res.writeHead(202, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': opts.csp ?? CHALLENGE_PAGE_CSP,
    })
    return res.end(
      renderChallengePage({
        ...issued,
        noscriptDelay: challengeSettings({ noscriptDelay: opts.noscriptDelay ?? 15_000 })!.noscriptDelay,
        nonce: undefined,
      }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return { url, verdicts, loads, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

describe.skipIf(!chromiumAvailable)('the challenge page in a real browser', () => {
  const browser = useChromium()

  async function visit(site: Awaited<ReturnType<typeof startSite>>, init?: string) {
    const context = await browser().newContext()
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused|Uncaught/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(e.message))
    if (init) await page.addInitScript(init)
    expect((await page.goto(site.url))?.status()).toBe(202)
    return { context, page, problems }
  }

  it('solves a 12-bit challenge in workers by itself, sends X-Airlock-Solution that verify accepts, and reloads into the line', async () => {
    const site = await startSite()
    const context = await browser().newContext()
    const page = await context.newPage()
    const problems: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused|Uncaught/i.test(m.text())) problems.push(m.text())
    })
    page.on('pageerror', (e) => problems.push(e.message))
    let workers = 0
    page.on('worker', () => workers++)
    try {
      // Read before the visit: a 12-bit challenge is solved and the page gone before a later evaluate.
      const cores = (await page.evaluate('navigator.hardwareConcurrency')) as number
      expect((await page.goto(site.url))?.status()).toBe(202)
      await page.waitForSelector('#in', { timeout: 20_000 })
      expect(site.verdicts).toEqual(['ok'])
      expect(site.loads).toEqual(['challenge', 'joined'])
      expect(workers).toBe(Math.min(cores, 4)) // one per core, at most 4
      expect(problems).toEqual([])
    } finally {
      await context.close()
      await site.close()
    }
  }, 60_000)

  it('without Worker support it solves on the page itself', async () => {
    const site = await startSite()
    const { context, page, problems } = await visit(site, 'delete window.Worker')
    try {
      await page.waitForSelector('#in', { timeout: 20_000 })
      expect(await page.evaluate('typeof Worker')).toBe('undefined') // the init script ran on every load
      expect(site.verdicts).toEqual(['ok'])
      expect(problems).toEqual([])
    } finally {
      await context.close()
      await site.close()
    }
  }, 60_000)

  it('when a site policy blocks blob: workers it still solves, on the page', async () => {
    const site = await startSite({ csp: CHALLENGE_PAGE_CSP.replace('worker-src blob:', "worker-src 'none'") })
    const { context, page, problems } = await visit(site)
    try {
      await page.waitForSelector('#in', { timeout: 20_000 })
      expect(site.verdicts).toEqual(['ok'])
      expect(problems.join('\n')).toMatch(/worker-src/) // the policy did refuse the worker
    } finally {
      await context.close()
      await site.close()
    }
  }, 60_000)

  it('without JavaScript it reloads itself after noscriptDelay (the gate then lets it in)', async () => {
    const site = await startSite({ noscriptDelay: 1000 })
    const context = await browser().newContext({ javaScriptEnabled: false })
    try {
      const page = await context.newPage()
      const start = Date.now()
      expect((await page.goto(site.url))?.status()).toBe(202)
      await until(() => site.loads.length >= 2, 10_000)
      expect(Date.now() - start).toBeGreaterThanOrEqual(900)
      expect(site.verdicts).toEqual([]) // no solution without JavaScript
    } finally {
      await context.close()
      await site.close()
    }
  }, 60_000)
})
