/**
 * Takes docs/dashboard.png during a real hug: runs `npm run hug`'s waiting-room scenario with the
 * dashboard on, opens it in Debian's Chromium, and shoots the page mid-hug.
 *   npx tsx tools/dashboard-shot.ts [out.png]
 */
import { spawn } from 'node:child_process'
import { launchChromium } from '../test/helpers/browser.js'
import { freePort } from '../test/helpers/redis.js'

const out = process.argv[2] ?? 'docs/dashboard.png'
const token = 'dashboard-screenshot-token-0123456789'
const port = await freePort()
const hug = spawn(process.execPath, ['--import', 'tsx', 'bench/hug.ts'], {
  env: {
    ...process.env,
    SCENARIOS: 'session-redis|queue-redis',
    SECONDS: '25',
    DASHBOARD_PORT: String(port),
    AIRLOCK_DASHBOARD_TOKEN: token,
    UNLOADED_PAGES: '5',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true, // its own process group: the hug and the servers it starts stop together
})
let log = ''
hug.stdout.on('data', (d: Buffer) => (log += d.toString()))
hug.stderr.on('data', (d: Buffer) => (log += d.toString()))
const waitFor = async (re: RegExp, ms: number): Promise<void> => {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 200)))
    if (re.test(log)) return
  throw new Error(`no ${re} within ${ms} ms:\n${log}`)
}
const browser = await launchChromium()
try {
  await waitFor(/dashboard: http/, 60_000)
  const page = await browser.newPage({ viewport: { width: 1280, height: 1500 } })
  await page.goto(`http://127.0.0.1:${port}/?token=${token}`)
  // Well into the second scenario (the waiting room): the first ran 25 s, then a short pause.
  await new Promise((r) => setTimeout(r, 45_000))
  await page.screenshot({ path: out, fullPage: true })
  console.log(`wrote ${out}`)
} finally {
  await browser.close()
  const exited = new Promise((r) => hug.once('exit', r))
  process.kill(-hug.pid!, 'SIGTERM')
  await exited
}
