/**
 * A Redis stall during a hug (issue 22): `npx tsx bench/stall.ts` (in `npm run hug`).
 *
 * A fragile app (bench/stall/server.ts, its own process: 50 ms pages, an instant 500 when more than
 * CAPACITY (20) requests are inside) behind the gate at LIMIT (15) on a private redis-server.
 * CONNECTIONS (1,000) clients send requests back to back (a busy 503 waits 50-150 ms, a 500 is
 * retried at once) and IMPATIENT (50) more give up on any request not answered within 10-100 ms.
 * 2 s into the crowd Redis is paused (`CLIENT PAUSE <ms> ALL`) for 300 ms, then (in another run)
 * 1.5 s; last, 1.5 s from the moment the crowd arrives (`1500@0`: the gate holds no slot yet, so
 * nothing pooled serves during the pause). For request and session mode and each `onStoreError` (the default `'local'`, `'open'`,
 * `'closed'`): failed handler runs during the run, and handler runs started during the pause (the
 * site still serving). Each run in fresh processes and a fresh key prefix.
 *
 * Env: CONNECTIONS, IMPATIENT, LIMIT, CAPACITY, PAUSES (comma-separated ms), MODES, POLICIES (comma
 * lists), BENCH_RESULTS=<dir>; DEBUG_STALL=1: each run's handler runs and failures per 100 ms on stderr.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { Agent, request } from 'node:http'
import { createInterface } from 'node:readline'
import { startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, machine, markdownTable, writeResults, stopChild } from './lib.js'

const CONNECTIONS = envNumber('CONNECTIONS', 1000)
const IMPATIENT = envNumber('IMPATIENT', 50)
const LIMIT = envNumber('LIMIT', 15)
const CAPACITY = envNumber('CAPACITY', 20)
/** `ms` or `ms@at`: a pause of `ms` starting `at` ms into the crowd (default 2 s). */
const PAUSES = (process.env.PAUSES ?? '300,1500,1500@0').split(',').map((p) => {
  const [ms, at] = p.split('@')
  return { ms: Number(ms), at: at === undefined ? 2_000 : Number(at) }
})
const MODES = (process.env.MODES ?? 'request,session').split(',')
const POLICIES = (process.env.POLICIES ?? 'local,open,closed').split(',')
/** The crowd keeps coming this long after the pause ends. */
const AFTER_MS = 2_000

function startServer(env: Record<string, string>): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./stall/server.ts', import.meta.url).pathname], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`stall/server.ts exited ${code}`)))
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^listening (\d+)$/.exec(line)
      if (m) resolve({ port: Number(m[1]), child })
    })
  })
}

const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS + IMPATIENT + 10 })
/** One request; `giveUpMs`: abort when not answered by then. Resolves the status (0: error or gave up) and the pass cookie. */
function send(
  port: number,
  path: string,
  cookie: string | undefined,
  method = 'GET',
  giveUpMs?: number,
): Promise<{ status: number; cookie?: string; body?: string }> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, agent: giveUpMs ? undefined : agent, headers: cookie ? { cookie } : {} },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        const set = res.headers['set-cookie']?.find((c) => c.startsWith('airlock_pass'))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, cookie: set?.split(';')[0], body: Buffer.concat(chunks).toString() }),
        )
        res.on('error', () => resolve({ status: 0 }))
      },
    )
    req.on('error', () => resolve({ status: 0 }))
    if (giveUpMs) req.setTimeout(giveUpMs, () => req.destroy())
    req.end()
  })
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function client(port: number, end: number, impatient: boolean): Promise<void> {
  let cookie: string | undefined
  while (Date.now() < end) {
    const r = await send(port, '/', cookie, 'GET', impatient ? 10 + Math.random() * 90 : undefined)
    cookie = r.cookie ?? cookie
    if (r.status === 503 || r.status === 0) await sleep(50 + Math.random() * 100)
  }
}

interface Row {
  mode: string
  policy: string
  pauseMs: number
  pauseAtMs: number
  runs: number
  failed: number
  failedDuringOrAfter: number
  runsDuringPause: number
}

async function run(
  redisUrl: string,
  admin: { call(...a: string[]): Promise<unknown> },
  mode: string,
  policy: string,
  pause: { ms: number; at: number },
): Promise<Row> {
  const { ms: pauseMs, at: pauseAt } = pause
  const env: Record<string, string> = {
    REDIS_URL: redisUrl,
    MODE: mode,
    LIMIT: String(LIMIT),
    CAPACITY: String(CAPACITY),
    PREFIX: `stall-${mode}-${policy}-${pauseMs}-${Date.now()}`,
  }
  if (policy !== 'local') env.ON_STORE_ERROR = policy
  const { port, child } = await startServer(env)
  try {
    await send(port, '/bench/start', undefined, 'POST')
    const end = Date.now() + pauseAt + pauseMs + AFTER_MS
    if (pauseAt === 0) await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'ALL')
    const crowd = [
      ...Array.from({ length: CONNECTIONS }, () => client(port, end, false)),
      ...Array.from({ length: IMPATIENT }, () => client(port, end, true)),
    ]
    if (pauseAt > 0) {
      await sleep(pauseAt)
      await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'ALL')
    }
    await Promise.all(crowd)
    const stats = JSON.parse((await send(port, '/bench/stats', undefined)).body!) as {
      runs: number[]
      failed: number[]
    }
    if (process.env.DEBUG_STALL) console.error(JSON.stringify(stats))
    const sum = (xs: number[], from = 0, to = xs.length): number => xs.slice(from, to).reduce((a, b) => a + b, 0)
    const pauseFrom = pauseAt / 100
    const pauseTo = (pauseAt + pauseMs) / 100
    return {
      mode,
      policy,
      pauseMs,
      pauseAtMs: pauseAt,
      runs: sum(stats.runs),
      failed: sum(stats.failed),
      failedDuringOrAfter: sum(stats.failed, pauseFrom),
      runsDuringPause: sum(stats.runs, pauseFrom, pauseTo),
    }
  } finally {
    await stopChild(child)
  }
}

const redis = await startRedis()
const admin = redis.client()
try {
  const rows: Row[] = []
  for (const mode of MODES)
    for (const pause of PAUSES)
      for (const policy of POLICIES) rows.push(await run(redis.url, admin, mode, policy, pause))
  console.log(`# A Redis stall during a hug\n\n${describeMachine(machine())}`)
  console.log(
    `${CONNECTIONS} clients + ${IMPATIENT} impatient, limit ${LIMIT}, a backend that fails at once above ${CAPACITY} inside (50 ms pages); the bar: 0 failed handler runs with the default ('local')\n`,
  )
  console.log(
    markdownTable(
      ['mode', 'pause', 'onStoreError', 'handler runs', 'failed runs', 'runs started during the pause', 'bar met'],
      rows.map((r) => [
        r.mode,
        `${r.pauseMs} ms, ${r.pauseAtMs / 1000} s in`,
        r.policy === 'local' ? "'local' (default)" : `'${r.policy}'`,
        r.runs,
        r.failed,
        r.runsDuringPause,
        r.policy === 'local' ? (r.failed === 0 ? 'yes' : 'no') : '-',
      ]),
    ),
  )
  writeResults('stall', { connections: CONNECTIONS, impatient: IMPATIENT, limit: LIMIT, capacity: CAPACITY, rows })
} finally {
  admin.disconnect()
  await redis.stop()
  agent.destroy()
}
