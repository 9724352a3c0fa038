/**
 * Hug simulation (a program, not a test): `npm run hug`.
 *
 * A fragile site (bench/hug-server.ts, its own process): `GET /` takes WORK_MS (50 ms) and answers
 * 500 when more than CAPACITY (50) requests are in flight, like a database that locks up. VISITORS
 * (2,000) simulated visitors arrive within RAMP (1 s), each on its own keep-alive connection
 * (loopback only), and behave like people with a browser:
 * - a visit is 2 to 5 pages with 50–250 ms between clicks, then `POST /done` (checkout/logout);
 *   the visitor then leaves and a new one arrives on that connection;
 * - a 500 is reloaded after the same think time; a busy 503 is retried after `Retry-After` x
 *   0.5–1.5 (what the busy page does); a queued 202 is polled (JSON, `X-Airlock-Poll`) after
 *   `Retry-After` x 0.75–1.25 (what the waiting page does), keeping the cookies;
 * - ABORT_SHARE (20 %) of visitors are impatient: they give up on any request not answered within
 *   10–100 ms (drawn per request), close the connection and leave without `POST /done`.
 *
 * Scenarios, one after the other, SECONDS (10) each: no shield; the gate in request mode (memory,
 * Redis) at limit LIMIT (= CAPACITY); in session mode on Redis; with the waiting room on Redis. First
 * the unloaded latency of each app (one visitor, sequential pages). Everything stops by itself: no
 * new request after SECONDS, requests still open 2 s later are cut.
 *
 * DASHBOARD_PORT=9090 (with AIRLOCK_DASHBOARD_TOKEN) serves the operator's dashboard for the Redis
 * scenarios, to watch the hug live.
 *
 * Env: VISITORS, SECONDS, RAMP, ABORT_SHARE, CAPACITY, LIMIT, WORK_MS, UNLOADED_PAGES (20), SCENARIOS (RegExp on the app
 * names: unshielded, request-memory, request-redis, session-redis, queue-redis), BENCH_RESULTS=<dir>.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { airlockReport, renderReportHtml } from '../src/index.js'
import { redisStore } from '../src/redis.js'
import { Agent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { createInterface } from 'node:readline'
import { startRedis } from '../test/helpers/redis.js'
import type { Counters } from './hug-server.js'
import {
  describeMachine,
  envNumber,
  fixed,
  machine,
  markdownTable,
  mean,
  percentile,
  redisVersion,
  writeResults,
} from './lib.js'

const VISITORS = envNumber('VISITORS', 2000)
const SECONDS = envNumber('SECONDS', 10)
const RAMP = envNumber('RAMP', 1)
const ABORT_SHARE = envNumber('ABORT_SHARE', 0.2)
const CAPACITY = envNumber('CAPACITY', 50)
const LIMIT = envNumber('LIMIT', CAPACITY)
const WORK_MS = envNumber('WORK_MS', 50)
const UNLOADED_PAGES = envNumber('UNLOADED_PAGES', 20)
const GRACE_MS = 2000
const only = process.env.SCENARIOS ? new RegExp(process.env.SCENARIOS) : undefined
const started = performance.now()
const startedAt = Date.now()

const SCENARIOS: { app: string; label: string }[] = [
  { app: 'unshielded', label: 'A: no shield' },
  { app: 'request-memory', label: 'B: request mode, memory' },
  { app: 'request-redis', label: 'B: request mode, redis' },
  { app: 'session-redis', label: 'B: session mode, redis' },
  { app: 'queue-redis', label: 'C: waiting room, redis' },
].filter((s) => !only || only.test(s.app))

/** Open files this process may have (the soft limit), from /proc; undefined where unknown. */
function openFileLimit(): number | undefined {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}
const fdLimit = openFileLimit()
if (fdLimit !== undefined && fdLimit < VISITORS + 256) {
  throw new Error(
    `VISITORS=${VISITORS} needs about ${VISITORS + 256} open files here and in the server, but ulimit -n is ${fdLimit}: raise it (ulimit -n 20000) or lower VISITORS`,
  )
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const uniform = (a: number, b: number): number => a + Math.random() * (b - a)

/** A visitor's cookies: what a browser keeps between requests. */
class Jar {
  private readonly cookies = new Map<string, string>()
  header(): string | undefined {
    if (this.cookies.size === 0) return undefined
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }
  store(setCookie: string[] | undefined): void {
    for (const line of setCookie ?? []) {
      const pair = line.split(';', 1)[0]!
      const eq = pair.indexOf('=')
      if (eq <= 0) continue
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      if (value === '' || /;\s*max-age=0\b/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
}

type Answer =
  | { kind: 'answer'; status: number; ms: number; headers: IncomingHttpHeaders }
  | { kind: 'aborted' }
  | { kind: 'error'; code: string }
  | { kind: 'cut' }

/** Everything one scenario's visitors saw. */
class Run {
  readonly open = new Set<ClientRequest>()
  readonly agents: Agent[] = []
  readonly status: Record<string, number> = {}
  readonly pageMs: number[] = []
  readonly waits: number[] = []
  readonly stillWaiting: number[] = []
  readonly errors: Record<string, number> = {}
  visitors = 0
  impatient = 0
  aborted = 0
  cut = 0
  /** Visitors who got any answer other than the page, the busy page or the waiting room, or an error. */
  visitorsBad = 0
  visitorsWithPage = 0
  visitorsOnlyBusy = 0
  queuedVisitors = 0
  directAdmissions = 0
  connectionsOpened = 0
  private cutting = false
  constructor(
    readonly port: number,
    readonly end: number,
  ) {}
  over(): boolean {
    return performance.now() >= this.end
  }
  /** Sleeps `ms`, or less if the run ends first. */
  pause(ms: number): Promise<void> {
    return sleep(Math.max(0, Math.min(ms, this.end - performance.now())))
  }
  /** Ends the run: requests still open are cut; keep-alive connections are closed. */
  finish(): void {
    this.cutting = true
    for (const req of this.open) req.destroy()
    for (const a of this.agents) a.destroy()
  }

  send(
    agent: Agent,
    method: string,
    path: string,
    jar: Jar,
    headers: Record<string, string>,
    patienceMs?: number,
  ): Promise<Answer> {
    return new Promise((resolve) => {
      const t0 = performance.now()
      const cookie = jar.header()
      const req = httpRequest({
        agent,
        host: '127.0.0.1',
        port: this.port,
        method,
        path,
        headers: cookie ? { ...headers, cookie } : headers,
      })
      this.open.add(req)
      let gaveUp = false
      const timer =
        patienceMs === undefined
          ? undefined
          : setTimeout(() => {
              gaveUp = true
              req.destroy()
            }, patienceMs)
      const done = (a: Answer): void => {
        clearTimeout(timer)
        this.open.delete(req)
        resolve(a)
      }
      req.on('socket', (socket) => {
        if (!(socket as { counted?: boolean }).counted) {
          ;(socket as { counted?: boolean }).counted = true
          this.connectionsOpened++
        }
      })
      req.on('response', (res) => {
        jar.store(res.headers['set-cookie'])
        res.on('data', () => {})
        res.on('end', () =>
          done({ kind: 'answer', status: res.statusCode ?? 0, ms: performance.now() - t0, headers: res.headers }),
        )
        res.on('error', () =>
          done(gaveUp ? { kind: 'aborted' } : this.cutting ? { kind: 'cut' } : { kind: 'error', code: 'response' }),
        )
      })
      req.on('error', (err: NodeJS.ErrnoException) =>
        done(
          gaveUp
            ? { kind: 'aborted' }
            : this.cutting
              ? { kind: 'cut' }
              : { kind: 'error', code: err.code ?? err.message },
        ),
      )
      req.end()
    })
  }
}

const GET_HTML = { accept: 'text/html' }
const POLL = { accept: 'application/json', 'x-airlock-poll': '1' }

/** One visit, as a person with a browser makes it (see the header). */
async function visit(run: Run, agent: Agent): Promise<'left' | 'done' | 'over'> {
  run.visitors++
  const jar = new Jar()
  const impatient = Math.random() < ABORT_SHARE
  if (impatient) run.impatient++
  const arrived = performance.now()
  const want = 2 + Math.floor(Math.random() * 4)
  let pages = 0
  let bad = false
  let busy = false
  let polling = false
  let queued = false
  let admitted = false
  const settle = (outcome: 'left' | 'done' | 'over'): 'left' | 'done' | 'over' => {
    if (bad) run.visitorsBad++
    if (pages > 0) run.visitorsWithPage++
    else if (busy) run.visitorsOnlyBusy++
    if (queued && !admitted && outcome === 'over') run.stillWaiting.push(performance.now() - arrived)
    return outcome
  }
  while (!run.over()) {
    const a = await run.send(
      agent,
      'GET',
      '/',
      jar,
      polling ? POLL : GET_HTML,
      impatient ? uniform(10, 100) : undefined,
    )
    if (a.kind === 'cut') {
      run.cut++
      return settle('over')
    }
    if (a.kind === 'aborted') {
      run.aborted++
      return settle('left')
    }
    if (a.kind === 'error') {
      run.errors[a.code] = (run.errors[a.code] ?? 0) + 1
      bad = true
      await run.pause(1000)
      continue
    }
    run.status[a.status] = (run.status[a.status] ?? 0) + 1
    const retryAfter = Number(a.headers['retry-after'] ?? 1) * 1000
    if (a.status === 200 && polling) {
      // Admitted from the line: the waiting page loads the site.
      polling = false
      admitted = true
      run.waits.push(performance.now() - arrived)
      continue
    }
    if (a.status === 200) {
      if (pages === 0 && !queued) run.directAdmissions++
      pages++
      run.pageMs.push(a.ms)
      if (pages >= want) {
        await run.send(agent, 'POST', '/done', jar, { accept: 'application/json' })
        return settle('done')
      }
      await run.pause(uniform(50, 250))
    } else if (a.status === 202) {
      if (!queued) run.queuedVisitors++
      queued = true
      polling = true
      await run.pause(retryAfter * uniform(0.75, 1.25))
    } else if (a.status === 503) {
      busy = true
      polling = false
      await run.pause(retryAfter * uniform(0.5, 1.5))
    } else {
      bad = true // a 500 (or anything else): reload after a moment
      await run.pause(uniform(50, 250))
    }
  }
  return settle('over')
}

/**
 * The most visitors one admitted visitor saw admitted before it although they arrived after it.
 * Slots freed together are reserved in arrival order for as many waiters, who then pick them up at
 * their next poll, in whatever order their polls come: that reorders visitors within such a batch
 * (bounded by the limit), never across batches.
 */
function maxDisplacement(order: readonly number[]): number {
  let most = 0
  for (let i = 0; i < order.length; i++) {
    let ahead = 0
    for (let j = 0; j < i; j++) if (order[j]! > order[i]!) ahead++
    most = Math.max(most, ahead)
  }
  return most
}

/** Pairs (i < j) admitted in the opposite order of their arrival (merge-sort count). */
function inversions(order: number[]): number {
  if (order.length < 2) return 0
  const mid = order.length >> 1
  const left = order.slice(0, mid)
  const right = order.slice(mid)
  let count = inversions(left) + inversions(right)
  let i = 0
  let j = 0
  let k = 0
  while (i < left.length && j < right.length) {
    if (left[i]! <= right[j]!) order[k++] = left[i++]!
    else {
      order[k++] = right[j++]!
      count += left.length - i
    }
  }
  while (i < left.length) order[k++] = left[i++]!
  while (j < right.length) order[k++] = right[j++]!
  return count
}

// ---------------------------------------------------------------------------------------------

const redis = await startRedis()
const server = spawn(process.execPath, ['--import', 'tsx', new URL('./hug-server.ts', import.meta.url).pathname], {
  env: {
    ...process.env,
    BENCH_REDIS_PORT: String(redis.port),
    CAPACITY: String(CAPACITY),
    LIMIT: String(LIMIT),
    WORK_MS: String(WORK_MS),
    NODE_ENV: 'production',
  },
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
})
const stopAll = (err: unknown): void => {
  console.error(err)
  server.kill('SIGKILL')
  void redis.stop()
  process.exit(1)
}
process.once('uncaughtException', stopAll)
process.once('unhandledRejection', stopAll)
const ports: Record<string, number> = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line)))
  server.once('exit', (code) => reject(new Error(`hug server exited with ${code}`)))
})

interface ServerStats {
  stats: Record<string, Omit<Counters, 'connections'>>
  loopDelayP99: number
  loopDelayMax: number
}
function ask<T>(msg: 'stats' | 'reset'): Promise<T> {
  return new Promise((resolve) => {
    server.once('message', (m: T) => resolve(m))
    server.send(msg)
  })
}

/** Script calls and CPU of the private redis-server since the last call (resets its command stats). */
const redisInfo = redis.client()
async function redisUsage(): Promise<{ scripts: number; scriptUsec: number; cpuUs: number }> {
  const [commands, cpu] = [await redisInfo.info('commandstats'), await redisInfo.info('cpu')]
  await redisInfo.config('RESETSTAT')
  const script = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(commands)
  const get = (k: string): number => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)?.[1] ?? 0)
  return {
    scripts: Number(script?.[1] ?? 0),
    scriptUsec: Number(script?.[2] ?? 0),
    cpuUs: (get('used_cpu_user') + get('used_cpu_sys')) * 1e6,
  }
}

/** Unloaded latency: one visitor, UNLOADED_PAGES sequential pages, then done. */
async function unloaded(app: string): Promise<number[]> {
  const run = new Run(ports[app]!, Number.POSITIVE_INFINITY)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  run.agents.push(agent)
  const jar = new Jar()
  const ms: number[] = []
  for (let i = 0; i < UNLOADED_PAGES; i++) {
    const a = await run.send(agent, 'GET', '/', jar, GET_HTML)
    if (a.kind !== 'answer' || a.status !== 200)
      throw new Error(`unloaded ${app}: ${a.kind === 'answer' ? a.status : a.kind}`)
    ms.push(a.ms)
  }
  await run.send(agent, 'POST', '/done', jar, {})
  run.finish()
  return ms
}

const unloadedMs: Record<string, number[]> = {}
for (const s of SCENARIOS) unloadedMs[s.app] = await unloaded(s.app)

/** One scenario's figures, from what the visitors saw and what the server counted. */
function summarize(
  s: (typeof SCENARIOS)[number],
  run: Run,
  server: ServerStats,
  elapsed: number,
  clientLoopP99: number,
) {
  const st = server.stats[s.app]!
  const answers = Object.values(run.status).reduce((a, b) => a + b, 0)
  const arrival = new Map(st.arrivals.map((id, i) => [id, i]))
  const admittedOrder = st.admissions.map((id) => arrival.get(id)).filter((x): x is number => x !== undefined)
  const pairs = (admittedOrder.length * (admittedOrder.length - 1)) / 2
  return {
    ...s,
    elapsed,
    visitors: run.visitors,
    impatient: run.impatient,
    peakConnections: st.peakConnections,
    connectionsOpened: run.connectionsOpened,
    answers,
    status: run.status,
    share500: (run.status['500'] ?? 0) / Math.max(1, answers),
    aborted: run.aborted,
    cut: run.cut,
    errors: run.errors,
    visitorsBad: run.visitorsBad,
    visitorsWithPage: run.visitorsWithPage,
    visitorsOnlyBusy: run.visitorsOnlyBusy,
    backend: {
      requests: st.backend,
      ok: st.backend200,
      errors500: st.backend500,
      maxInFlight: st.maxInFlight,
      failOpen: st.failOpen,
    },
    backend500Share: st.backend500 / Math.max(1, st.backend),
    slotsHeldMean: mean(st.held),
    toHandlerMs: { p50: percentile(st.toHandlerMs, 50), p99: percentile(st.toHandlerMs, 99) },
    serverPageMs: { p50: percentile(st.pageMs, 50), p90: percentile(st.pageMs, 90), p99: percentile(st.pageMs, 99) },
    lineMean: mean(st.waiting),
    pageMs: {
      p50: percentile(run.pageMs, 50),
      p90: percentile(run.pageMs, 90),
      p99: percentile(run.pageMs, 99),
      max: Math.max(0, ...run.pageMs),
    },
    unloadedMs: { p50: percentile(unloadedMs[s.app]!, 50), p99: percentile(unloadedMs[s.app]!, 99) },
    clientLoopP99: clientLoopP99,
    serverLoopP99: server.loopDelayP99,
    queue:
      s.app === 'queue-redis'
        ? {
            queuedVisitors: run.queuedVisitors,
            directAdmissions: run.directAdmissions,
            arrivals: st.arrivals.length,
            admittedFromLine: st.admissions.length,
            stillWaiting: run.stillWaiting.length,
            stillWaitingMaxMs: Math.max(0, ...run.stillWaiting),
            inversions: inversions([...admittedOrder]),
            pairs,
            maxDisplacement: maxDisplacement(admittedOrder),
            waitMs: { p50: percentile(run.waits, 50), p90: percentile(run.waits, 90), max: Math.max(0, ...run.waits) },
          }
        : undefined,
  }
}

const results: (ReturnType<typeof summarize> & {
  redis: { scriptsPerSecond: number; usecPerScript: number; cpuShare: number }
})[] = []
for (const s of SCENARIOS) {
  await ask('reset')
  const redis0 = await redisUsage()
  const clientLoop = monitorEventLoopDelay({ resolution: 10 })
  clientLoop.enable()
  const t0 = performance.now()
  const run = new Run(ports[s.app]!, t0 + SECONDS * 1000)
  const loops: Promise<void>[] = []
  for (let i = 0; i < VISITORS; i++) {
    loops.push(
      (async () => {
        await sleep(Math.random() * RAMP * 1000)
        const agent = new Agent({ keepAlive: true, maxSockets: 1 })
        run.agents.push(agent)
        while (!run.over()) await visit(run, agent)
      })(),
    )
  }
  // Stops by itself: at the end plus a grace period, whatever is still open is cut.
  const cutter = setTimeout(() => run.finish(), SECONDS * 1000 + GRACE_MS)
  await Promise.all(loops)
  clearTimeout(cutter)
  run.finish()
  clientLoop.disable()
  const elapsed = (performance.now() - t0) / 1000
  await sleep(200) // let the server see the connections close
  const server = await ask<ServerStats>('stats')
  const redis1 = await redisUsage()
  const redisLoad = {
    scriptsPerSecond: redis1.scripts / elapsed,
    usecPerScript: redis1.scripts > 0 ? redis1.scriptUsec / redis1.scripts : NaN,
    cpuShare: (redis1.cpuUs - redis0.cpuUs) / (elapsed * 1e6),
  }
  results.push({ ...summarize(s, run, server, elapsed, clientLoop.percentile(99) / 1e6), redis: redisLoad })
  console.error(`hug: ${s.label} done in ${elapsed.toFixed(1)} s`)
}

const m = machine(await redisVersion(redis.client()))
const ms = (x: number): string => fixed(x, 0)
const pct = (x: number): string => `${fixed(x * 100, 1)} %`
console.log(
  `\n${describeMachine(m)}\n${VISITORS} visitors (${fixed(ABORT_SHARE * 100)} % impatient), ${SECONDS} s per scenario; ` +
    `backend: ${WORK_MS} ms per page, 500 above ${CAPACITY} in flight; shield limit ${LIMIT}\n`,
)
const rowsOf: [string, (r: (typeof results)[number]) => string | number][] = [
  ['visitors (arrived)', (r) => r.visitors],
  ['peak open connections (server)', (r) => r.peakConnections],
  ['answers', (r) => r.answers],
  ['page (200)', (r) => r.status['200'] ?? 0],
  ['busy page (503)', (r) => r.status['503'] ?? 0],
  ['waiting room (202)', (r) => r.status['202'] ?? 0],
  ['error (500)', (r) => r.status['500'] ?? 0],
  ['answers that are 500s', (r) => pct(r.share500)],
  ['requests given up by impatient visitors', (r) => r.aborted],
  ['requests cut at the end', (r) => r.cut],
  ['connection errors', (r) => Object.values(r.errors).reduce((x, y) => x + y, 0)],
  ['backend: requests run', (r) => r.backend.requests],
  ['backend: 500s answered', (r) => r.backend.errors500],
  ['backend: most in flight', (r) => r.backend.maxInFlight],
  [`shield: slots held, mean (limit ${LIMIT})`, (r) => fixed(r.slotsHeldMean, 1)],
  ['shield: let in without a slot (store slow)', (r) => (r.app === 'unshielded' ? '-' : r.backend.failOpen)],
  ['visitors who got a 500 or an error', (r) => r.visitorsBad],
  ['visitors who got the page', (r) => r.visitorsWithPage],
  ['visitors who got only the busy page', (r) => r.visitorsOnlyBusy],
  ['unloaded page latency p50 ms', (r) => ms(r.unloadedMs.p50)],
  ['page latency p50 ms', (r) => ms(r.pageMs.p50)],
  ['page latency p90 ms', (r) => ms(r.pageMs.p90)],
  ['page latency p99 ms', (r) => ms(r.pageMs.p99)],
  [
    'server: page time p50 / p90 / p99 ms',
    (r) => `${ms(r.serverPageMs.p50)} / ${ms(r.serverPageMs.p90)} / ${ms(r.serverPageMs.p99)}`,
  ],
  ['server: request to handler p50 / p99 ms', (r) => `${fixed(r.toHandlerMs.p50, 1)} / ${fixed(r.toHandlerMs.p99, 1)}`],
  [
    'redis: scripts/s, µs each, CPU of one core',
    (r) =>
      r.app.endsWith('redis')
        ? `${fixed(r.redis.scriptsPerSecond)}, ${fixed(r.redis.usecPerScript, 1)}, ${pct(r.redis.cpuShare)}`
        : '-',
  ],
  ['event loop delay p99 ms (server / client)', (r) => `${ms(r.serverLoopP99)} / ${ms(r.clientLoopP99)}`],
]
const markdown = markdownTable(
  ['', ...results.map((r) => `>${r.label}`)],
  rowsOf.map(([label, f]) => [label, ...results.map(f)]),
)
console.log(markdown)

const q = results.find((r) => r.queue)
let queueMarkdown = ''
if (q?.queue) {
  const x = q.queue
  queueMarkdown = markdownTable(
    ['waiting room (C)', '>value'],
    [
      ['visitors who took a place in line', x.queuedVisitors],
      ['admitted at once (line empty, slot free)', x.directAdmissions],
      ['admitted from the line', `${x.admittedFromLine} (${fixed(x.admittedFromLine / q.elapsed, 1)}/s)`],
      ['line length, mean', fixed(q.lineMean, 0)],
      ['still waiting at the end', `${x.stillWaiting} (waited up to ${fixed(x.stillWaitingMaxMs / 1000, 1)} s)`],
      ['picked up their slot out of arrival order (pairs)', `${x.inversions} of ${x.pairs}`],
      ['most later arrivals one visitor saw get in first', `${x.maxDisplacement} (limit ${LIMIT})`],
      [
        'wait p50 / p90 / max (s)',
        `${fixed(x.waitMs.p50 / 1000, 1)} / ${fixed(x.waitMs.p90 / 1000, 1)} / ${fixed(x.waitMs.max / 1000, 1)}`,
      ],
    ],
  )
  console.log(`\n${queueMarkdown}`)
}

const a = results.find((r) => r.app === 'unshielded')
const shielded = results.filter((r) => r.app !== 'unshielded')
console.log('\ntargets:')
if (a)
  console.log(
    `- without the shield, >= 90 % of backend answers are 500s: ${pct(a.backend500Share)} ${a.backend500Share >= 0.9 ? 'met' : 'MISSED'}`,
  )
for (const r of shielded) {
  const ok = r.backend.errors500 === 0 && r.visitorsBad === 0
  console.log(
    `- ${r.label}: ${r.backend.errors500} backend 500s, ${r.visitorsBad} visitors saw a 500 or an error: ${ok ? 'met' : 'MISSED'}`,
  )
}

const elapsedSeconds = (performance.now() - started) / 1000
const file = writeResults('hug', {
  machine: m,
  settings: {
    visitors: VISITORS,
    seconds: SECONDS,
    ramp: RAMP,
    abortShare: ABORT_SHARE,
    capacity: CAPACITY,
    limit: LIMIT,
    workMs: WORK_MS,
  },
  rows: results,
  markdown: queueMarkdown ? `${markdown}\n\n${queueMarkdown}` : markdown,
  elapsedSeconds,
})
if (file) console.log(`results: ${file}`)
console.log(`hug bench: ${elapsedSeconds.toFixed(1)} s`)

server.kill('SIGTERM')
await new Promise((r) => server.once('exit', r))
// The history the Redis gates kept (their last minute flushed at close), as `airlock report` shows
// it after a hug: the worked example of docs/observability.md reads these.
for (const name of ['session-redis', 'queue-redis'].filter((n) => !only || only.test(n))) {
  const client = new Redis(redis.port, '127.0.0.1', { lazyConnect: true })
  const report = await airlockReport({ store: redisStore({ client, prefix: 'hug' }), name, from: startedAt - 60_000 })
  client.disconnect()
  const t = report.totals
  const s = (sec: number | null): string => (sec === null ? '-' : `${sec.toFixed(1)} s`)
  console.log(
    `history of ${name}: ${t.minutes} minute(s), admitted ${t.admitted} (${t.admittedFromLine} from the line, peak ${t.admittedPeak} a minute), ` +
      `turned away ${t.turnedAway}, abandoned ${t.abandoned}, released ${t.released} ${JSON.stringify(t.releasedBy)}, ` +
      `wait p50/p90/max ${s(t.waitP50)} / ${s(t.waitP90)} / ${s(t.waitMax)}, visit p50/p90 ${s(t.visitP50)} / ${s(t.visitP90)}, most in line ${t.inLineMax ?? '-'}`,
  )
  const dir = process.env.BENCH_RESULTS
  if (dir) {
    writeFileSync(join(dir, `hug-report-${name}.json`), `${JSON.stringify(report, null, 2)}\n`)
    writeFileSync(join(dir, `hug-report-${name}.html`), renderReportHtml(report))
  }
}
await redis.stop()
