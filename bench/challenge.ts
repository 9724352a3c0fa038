/**
 * The waiting room's proof-of-work challenge in a real headless Chromium: how long a browser takes
 * to join the line at the default difficulty and two bits either side (RUNS challenges each, the
 * difficulties interleaved so machine noise hits all alike), timed by the server from sending the
 * challenge page to receiving the solution (worker start-up included; the page runs one worker per
 * core, at most 4). Then one worker alone at the default difficulty: the page's solver (plain
 * JavaScript) and WebCrypto's way (256 `crypto.subtle.digest` per `Promise.all`), which the page
 * does not use because this table shows it slower. The default difficulty is chosen from the first
 * table: its median must stay at or under a second here.
 *
 *   npx tsx bench/challenge.ts
 *
 * Env: RUNS per difficulty (20), DIFFICULTY (the default), SPREAD bits either side (2),
 * BENCH_RESULTS=<dir> to write challenge.json. Firefox is measured only where playwright can drive
 * one; Debian's firefox-esr cannot be (playwright needs its own patched build), so it says so.
 */
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import type { Browser } from 'playwright-core'
import { Challenges, challengeSettings, DEFAULT_DIFFICULTY, SOLUTION_HEADER } from '../src/gate/challenge.js'
import { CHALLENGE_PAGE_CSP, CHALLENGE_WORKER_SCRIPT, renderChallengePage } from '../src/pages/challenge.js'
import { launchChromium } from '../test/helpers/browser.js'
import { describeMachine, envNumber, fixed, machine, markdownTable, median, percentile, writeResults } from './lib.js'

const RUNS = envNumber('RUNS', 20)
const BASE = envNumber('DIFFICULTY', DEFAULT_DIFFICULTY)
const SPREAD = envNumber('SPREAD', 2)
const difficulties = [BASE - SPREAD, BASE, BASE + SPREAD].filter((d, i, all) => d >= 1 && all.indexOf(d) === i)

const challenges = new Challenges('bench', [randomBytes(32).toString('base64url')], challengeSettings(true)!)
/** Visitor id -> when its page was sent and the callback that takes its solve time. */
const pending = new Map<string, { sent: number; solved: (ms: number, verdict: string) => void }>()

/** `/?v=<visitor>&d=<bits>`: the challenge page; with a solution, the verdict; `/blank`: an empty page. */
function startServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const visitor = url.searchParams.get('v') ?? ''
    const solution = req.headers[SOLUTION_HEADER]
    if (typeof solution === 'string') {
      const entry = pending.get(visitor)
      entry?.solved(performance.now() - entry.sent, challenges.verify(visitor, solution, Date.now()))
      pending.delete(visitor)
      res.writeHead(200, { 'set-cookie': 'done=1' }).end('ok')
    } else if (url.pathname === '/blank' || req.headers.cookie?.includes('done=1') || !pending.has(visitor)) {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>done</title>')
    } else {
      const issued = challenges.issue(visitor, Date.now(), Number(url.searchParams.get('d')))
      pending.get(visitor)!.sent = performance.now()
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CHALLENGE_PAGE_CSP })
      res.end(renderChallengePage({ ...issued, noscriptDelay: 15_000, nonce: undefined }))
    }
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }),
    ),
  )
}

/** One visitor in a fresh context: ms from page sent to a verified solution. */
async function joinOnce(browser: Browser, base: string, difficulty: number): Promise<number> {
  const visitor = randomBytes(16).toString('base64url')
  const context = await browser.newContext()
  try {
    const solved = new Promise<number>((resolve, reject) => {
      pending.set(visitor, {
        sent: 0,
        solved: (ms, verdict) => (verdict === 'ok' ? resolve(ms) : reject(new Error(`verdict ${verdict}`))),
      })
    })
    const page = await context.newPage()
    await page.goto(`${base}?v=${visitor}&d=${difficulty}`)
    return await solved
  } finally {
    await context.close()
  }
}

/**
 * WebCrypto's way, for comparison (not used by the page): 256 `crypto.subtle.digest` calls per
 * `Promise.all`, counters from 0, in a worker; posts the nonce.
 */
const WEBCRYPTO_WORKER =
  'onmessage=async m=>{const{c,d}=m.data,U=new TextEncoder,L=2**(32-d);for(let n=0;;n+=256){const A=[];' +
  'for(let i=0;i<256;i++)A.push(crypto.subtle.digest("SHA-256",U.encode(c+":"+(n+i))));const r=await Promise.all(A);' +
  'for(let i=0;i<256;i++)if(new DataView(r[i]).getUint32(0)<L)return postMessage(n+i)}}'

/** One solve in one worker, timed in the page: the page's solver (plain JavaScript) or WebCrypto's way. */
async function solverOnce(
  browser: Browser,
  base: string,
  difficulty: number,
  webCrypto: boolean,
): Promise<{ ms: number; tries: number }> {
  const page = await browser.newPage()
  try {
    await page.goto(`${base}blank`)
    const challenge = challenges.issue(randomBytes(8).toString('hex'), Date.now(), difficulty).challenge
    const source = webCrypto ? WEBCRYPTO_WORKER : CHALLENGE_WORKER_SCRIPT
    // Run in the page (a string: this project type-checks without the DOM library).
    const script =
      `new Promise((resolve) => { const worker = new Worker(URL.createObjectURL(new Blob([${JSON.stringify(source)}], ` +
      `{ type: 'text/javascript' }))); const start = performance.now(); worker.onmessage = (m) => { if (m.data < 0) return; ` +
      `worker.terminate(); resolve({ ms: performance.now() - start, tries: m.data + 1 }) }; ` +
      `worker.postMessage(${JSON.stringify({ c: challenge, d: difficulty, i: 0, k: 1 })}) })`
    return (await page.evaluate(script)) as { ms: number; tries: number }
  } finally {
    await page.close()
  }
}

const { server, url } = await startServer()
const browser = await launchChromium()
try {
  console.log(`Chromium ${browser.version()}; ${RUNS} challenges per difficulty; ${describeMachine(machine())}\n`)
  await joinOnce(browser, url, 8) // warm-up
  const times = new Map<number, number[]>(difficulties.map((d) => [d, []]))
  for (let i = 0; i < RUNS; i++) for (const d of difficulties) times.get(d)!.push(await joinOnce(browser, url, d))
  const rows = difficulties.map((d) => {
    const t = times.get(d)!
    return {
      difficulty: d,
      expectedTries: 2 ** d,
      medianMs: median(t),
      p90Ms: percentile(t, 90),
      maxMs: Math.max(...t),
    }
  })
  console.log(
    markdownTable(
      ['page solves a challenge (Chromium)', '>bits', '>expected tries', '>median ms', '>p90 ms', '>max ms'],
      rows.map((r) => [
        r.difficulty === BASE ? 'default' : `default ${r.difficulty > BASE ? '+' : ''}${r.difficulty - BASE}`,
        r.difficulty,
        r.expectedTries,
        fixed(r.medianMs),
        fixed(r.p90Ms),
        fixed(r.maxMs),
      ]),
    ),
  )

  const paths: { path: string; medianMs: number; p90Ms: number; triesPerSecond: number }[] = []
  for (const webCrypto of [false, true]) {
    const runs: { ms: number; tries: number }[] = []
    for (let i = 0; i < RUNS; i++) runs.push(await solverOnce(browser, url, BASE, webCrypto))
    const rate = runs.reduce((a, r) => a + r.tries, 0) / (runs.reduce((a, r) => a + r.ms, 0) / 1000)
    const path = webCrypto
      ? 'WebCrypto, 256 digests per Promise.all (not used)'
      : "the page's solver (plain JavaScript)"
    paths.push({
      path,
      medianMs: median(runs.map((r) => r.ms)),
      p90Ms: percentile(
        runs.map((r) => r.ms),
        90,
      ),
      triesPerSecond: rate,
    })
  }
  console.log(
    '\n' +
      markdownTable(
        [`one worker, ${BASE} bits (Chromium)`, '>median ms', '>p90 ms', '>tries/s'],
        paths.map((p) => [p.path, fixed(p.medianMs), fixed(p.p90Ms), fixed(p.triesPerSecond)]),
      ),
  )
  const firefox = ['/usr/bin/firefox-esr', '/usr/bin/firefox'].find((f) => existsSync(f))
  console.log(
    firefox
      ? `\nFirefox: ${firefox} is installed, but playwright drives only its own patched Firefox build: not measured.`
      : '\nFirefox: not installed (no /usr/bin/firefox-esr nor /usr/bin/firefox): not measured. Expect it 2-3x slower than Chromium.',
  )
  const file = writeResults('challenge', { machine: machine(), browser: browser.version(), runs: RUNS, rows, paths })
  if (file) console.log(`\nwrote ${file}`)
} finally {
  await browser.close()
  server.close()
}
