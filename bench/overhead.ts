/**
 * What the shield costs on every request, next to what a user would pick instead (a program, not a
 * test): `npm run bench:overhead`.
 *
 * Scenarios, each its own app answering `hello world` in its own server process
 * (bench/overhead-server.ts), loopback only, autocannon in this process:
 * - bare Fastify 5; Fastify + gate for pass holders (memory store, Redis store); Fastify + gate in
 *   request mode (Redis; and on an ioredis client with auto-pipelining); the peers: a `redis-semaphore` gate (acquire/release per request),
 *   `@fastify/under-pressure`, `@fastify/rate-limit` on Redis;
 * - bare Express 5; Express + gate for pass holders (memory, Redis);
 * - a bare fetch handler on @hono/node-server, bare Hono 4 (on @hono/node-server), bare Koa 3; each
 *   with the gate for pass holders (memory store: a pass holder costs no store call on any store).
 * Ratios are to the bare app of the same framework. Scenarios alternate (A B C ..., A B C ...) so
 * drift hits all alike. Besides req/s (which on a small shared machine largely measures how much
 * CPU the load generator got), it reports the server's CPU time per request, which is steadier.
 *
 * Env: ROUNDS (3), SECONDS per run (2), WARMUP seconds per scenario (1), CONNECTIONS (32),
 * SCENARIOS (RegExp filter), CPU_PROF=<dir> (profile the server with --cpu-prof), BENCH_RESULTS=<dir>,
 * COMPARE=<git ref> (also run every gated scenario on that commit, in a temporary git worktree,
 * side by side in the same rounds: `COMPARE=HEAD~1 npm run bench:overhead`), BUILT=1 (build the
 * package first, and the COMPARE commit's too, and measure dist/, what users run; by default the servers run src/ through tsx,
 * whose `keepNames` helpers add a call to every function the gate makes per request).
 */
import { ADAPTERS, type AdapterName } from '../src/entries.js'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
import { startRedis } from '../test/helpers/redis.js'
import {
  describeMachine,
  envNumber,
  fixed,
  machine,
  markdownTable,
  mean,
  median,
  redisVersion,
  writeResults,
} from './lib.js'

const ROUNDS = envNumber('ROUNDS', 3)
const SECONDS = envNumber('SECONDS', 2)
const WARMUP = envNumber('WARMUP', 1)
const CONNECTIONS = envNumber('CONNECTIONS', 32)
const RATE = envNumber('RATE', 0)
const started = Date.now()

const redis = await startRedis()
const serverScript = new URL('./overhead-server.ts', import.meta.url).pathname
const serverArgs = ['--import', 'tsx']
if (process.env.CPU_PROF) serverArgs.push('--cpu-prof', '--cpu-prof-dir', process.env.CPU_PROF)
const serverEnv: NodeJS.ProcessEnv = { ...process.env, BENCH_REDIS_PORT: String(redis.port), NODE_ENV: 'production' }
if (process.env.BUILT === '1') {
  const root = new URL('..', import.meta.url).pathname
  execFileSync('npx', ['tsup', '--silent'], { cwd: root, stdio: 'inherit' })
  serverEnv.AIRLOCK_SRC = join(root, 'dist')
}
const measured = serverEnv.AIRLOCK_SRC ?? 'src/ (tsx)'

interface Target {
  port: number
  framework: AdapterName
  pass: boolean
  server: ChildProcess
}

// COMPARE: the same gated scenarios on another commit, checked out in a temporary worktree that
// shares this tree's node_modules.
const compare = process.env.COMPARE
const repo = new URL('..', import.meta.url).pathname
let compareTree: string | undefined
if (compare) {
  compareTree = join(mkdtempSync(join(tmpdir(), 'airlock-compare-')), 'tree')
  execFileSync('git', ['worktree', 'add', '--detach', compareTree, compare], { cwd: repo, stdio: 'ignore' })
  symlinkSync(join(repo, 'node_modules'), join(compareTree, 'node_modules'))
  // BUILT=1 measures both sides built: the other commit's src/ through tsx would pay tsx's helpers.
  if (process.env.BUILT === '1') execFileSync('npx', ['tsup', '--silent'], { cwd: compareTree, stdio: 'inherit' })
}
const compareSrc = compareTree === undefined ? undefined : join(compareTree, process.env.BUILT === '1' ? 'dist' : 'src')
const removeCompareTree = (): void => {
  if (!compareTree) return
  execFileSync('git', ['worktree', 'remove', '--force', compareTree], { cwd: repo, stdio: 'ignore' })
  rmSync(join(compareTree, '..'), { recursive: true, force: true })
}
const suffix = ` @${compare}`

// Two or more cores: the servers on the last core, the load generator on the others, so the two
// never trade places on a core mid-run (one source of the bench's noise). PIN=0 turns it off.
const cores = (await import('node:os')).availableParallelism()
const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
const pinServer = process.env.PIN !== '0' && cores >= 2 && hasTaskset ? String(cores - 1) : undefined
if (pinServer !== undefined)
  execFileSync('taskset', ['-pc', `0-${cores - 2}`, String(process.pid)], { stdio: 'ignore' })

/** Starts one scenario's server process (a `name @ref` one on the COMPARE tree); resolves once it listens. */
function startServer(name: string): Promise<Target> {
  const other = compare !== undefined && name.endsWith(suffix)
  const scenario = other ? name.slice(0, -suffix.length) : name
  const [command, args] = pinServer
    ? ['taskset', ['-c', pinServer, process.execPath, ...serverArgs, serverScript]]
    : [process.execPath, [...serverArgs, serverScript]]
  const server = spawn(command, args, {
    env: { ...serverEnv, SCENARIO: scenario, ...(other ? { AIRLOCK_SRC: compareSrc } : {}) },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    createInterface({ input: server.stdout! }).once('line', (line) =>
      resolve({ ...JSON.parse(line)[scenario], server }),
    )
    server.once('exit', (code) => reject(new Error(`server for '${name}' exited with ${code}`)))
  })
}

const listed: string[] = JSON.parse(
  execFileSync(process.execPath, [...serverArgs, serverScript], { env: { ...serverEnv, LIST: '1' } }).toString(),
)
/** Whether the COMPARE tree has the adapter of scenario `name` (an adapter added since has no twin there). */
const hasAdapter = (name: string): boolean => {
  const adapter = ADAPTERS[name.split(' ')[0] as AdapterName]
  return adapter === undefined || compareTree === undefined || existsSync(join(compareTree, adapter.file))
}
// Each gated scenario right before its twin on the COMPARE tree, so drift hits both alike.
const names = listed.flatMap((name) =>
  compare && name.includes('+ gate') && !/metrics|subscriber/.test(name) && hasAdapter(name)
    ? [name, name + suffix]
    : [name],
)
const targets: Record<string, Target> = {}
// One at a time: a cold start (tsx compiling) would otherwise slow the others' starts.
for (const name of names) targets[name] = await startServer(name)
const stopAll = (err: unknown): void => {
  console.error(err)
  for (const t of Object.values(targets)) t.server.kill('SIGKILL')
  void redis.stop()
  removeCompareTree()
  process.exitCode = 1
}
process.once('uncaughtException', stopAll)
process.once('unhandledRejection', stopAll)

/** A full pass for the gated apps: in once (provisional), back once (upgraded to full). */
async function passCookie(port: number): Promise<string> {
  const first = await fetch(`http://127.0.0.1:${port}/`)
  const provisional = first.headers.getSetCookie()[0]?.split(';')[0]
  if (!provisional) throw new Error(`no provisional pass from port ${port} (status ${first.status})`)
  const second = await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie: provisional } })
  const full = second.headers.getSetCookie()[0]?.split(';')[0]
  if (!full) throw new Error(`no full pass from port ${port} (status ${second.status})`)
  return full
}

/**
 * One run of autocannon's headers. Pass holders get a fresh pass first, as a browser keeps the renewed cookie:
 * autocannon cannot store cookies, and a pass sent unchanged for longer than its life (60 s) would
 * expire and every request would take a new slot.
 */
async function headersFor(name: string): Promise<Record<string, string>> {
  const t = targets[name]!
  if (t.pass) return { cookie: await passCookie(t.port) }
  // The rows without the gate get a cookie of the same size: parsing it is the server's cost, not the gate's.
  const gated = Object.values(targets).find((x) => x.pass)
  return gated === undefined ? {} : { cookie: (sameSize ??= await passCookie(gated.port)) }
}
let sameSize: string | undefined

/** `rate`: requests a second, all connections together (0: as fast as the server answers). */
function load(name: string, seconds: number, headers: Record<string, string>, rate = RATE): Promise<autocannon.Result> {
  return autocannon({
    url: `http://127.0.0.1:${targets[name]!.port}/`,
    connections: CONNECTIONS,
    duration: seconds,
    headers,
    ...(rate > 0 ? { overallRate: rate } : {}),
  })
}

/** CPU time (µs) used so far by a scenario's server process: user + system, and user alone. */
function serverCpu(name: string): Promise<{ total: number; user: number }> {
  const server = targets[name]!.server
  return new Promise((resolve) => {
    server.once('message', (u: NodeJS.CpuUsage) => resolve({ total: u.user + u.system, user: u.user }))
    server.send('cpu')
  })
}

/** CPU time (µs) used so far by the private redis-server. */
const redisClient = redis.client()
async function redisCpu(): Promise<number> {
  const info = await redisClient.info('cpu')
  const get = (k: string): number => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0)
  return (get('used_cpu_user') + get('used_cpu_sys')) * 1e6
}

/** Redis commands run since the last call (`INFO commandstats`, then `CONFIG RESETSTAT`): name → calls, µs. */
async function redisCommands(): Promise<Record<string, { calls: number; usec: number }>> {
  const info = await redisClient.info('commandstats')
  await redisClient.config('RESETSTAT')
  const out: Record<string, { calls: number; usec: number }> = {}
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    if (m[1] === 'info' || m[1] === 'config|resetstat' || m[1] === 'config') continue
    out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) }
  }
  return out
}

interface Sample {
  rps: number
  p50: number
  p99: number
  meanLatency: number
  /** Server CPU µs per request. */
  cpu: number
  /** Server user CPU µs per request: the JavaScript's work (system time is mostly the kernel writing to sockets). */
  userCpu: number
  /** redis-server CPU µs per request. */
  redisCpu: number
  non2xx: number
  errors: number
  commands: Record<string, { calls: number; usec: number }>
  requests: number
}

// Warm up every app (JIT, connections, Redis scripts).
if (WARMUP > 0) for (const name of Object.keys(targets)) await load(name, WARMUP, await headersFor(name))

const samples: Record<string, Sample[]> = {}
/**
 * The scenarios run one after another (each alone on the machine), or with TOGETHER=1 a framework's
 * scenarios at once, each with its own load generator (the servers share a core), so that whatever the machine
 * does meanwhile (another process, the CPU's clock) hits all of them alike: the steadiest ratios
 * between them, which bench:compare uses. Redis figures are then shared by the group (not shown).
 */
const TOGETHER = process.env.TOGETHER === '1'
const groups: string[][] = TOGETHER
  ? [...new Set(Object.values(targets).map((t) => t.framework))].map((fw) =>
      Object.keys(targets).filter((name) => targets[name]!.framework === fw),
    )
  : Object.keys(targets).map((name) => [name])

for (let round = 0; round < ROUNDS; round++) {
  for (const group of groups) {
    const headers = await Promise.all(group.map((name) => headersFor(name)))
    await redisCommands()
    const rcpu0 = await redisCpu()
    const cpu0 = await Promise.all(group.map((name) => serverCpu(name)))
    const results = await Promise.all(group.map((name, i) => load(name, SECONDS, headers[i]!)))
    const cpu1 = await Promise.all(group.map((name) => serverCpu(name)))
    const rcpu1 = await redisCpu()
    const commands = await redisCommands()
    group.forEach((name, i) => {
      const r = results[i]!
      const n = Math.max(1, r.requests.total)
      ;(samples[name] ??= []).push({
        rps: r.requests.total / Math.max(r.duration, 1e-3),
        p50: r.latency.p50,
        p99: r.latency.p99,
        meanLatency: r.latency.average,
        cpu: (cpu1[i]!.total - cpu0[i]!.total) / n,
        userCpu: (cpu1[i]!.user - cpu0[i]!.user) / n,
        redisCpu: group.length === 1 ? (rcpu1 - rcpu0) / n : NaN,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
        commands: group.length === 1 ? commands : {},
        requests: n,
      })
    })
  }
}

const rows = Object.entries(samples).map(([name, ss]) => ({
  name,
  framework: targets[name]!.framework,
  rps: median(ss.map((s) => s.rps)),
  p50: mean(ss.map((s) => s.p50)),
  p99: mean(ss.map((s) => s.p99)),
  meanLatency: mean(ss.map((s) => s.meanLatency)),
  cpu: median(ss.map((s) => s.cpu)),
  userCpu: median(ss.map((s) => s.userCpu)),
  redisCpu: median(ss.map((s) => s.redisCpu)),
  non2xx: ss.reduce((a, s) => a + s.non2xx, 0),
  errors: ss.reduce((a, s) => a + s.errors, 0),
  runs: ss.map((s) => Math.round(s.rps)),
  userRuns: ss.map((s) => Number(s.userCpu.toFixed(1))),
  redisCommands: perRequest(ss),
}))

/** Redis commands per HTTP request over all rounds, with the server-side µs each took. */
function perRequest(ss: Sample[]): Record<string, { perRequest: number; usecPerCall: number }> {
  const requests = ss.reduce((a, s) => a + s.requests, 0)
  const sum: Record<string, { calls: number; usec: number }> = {}
  for (const s of ss) {
    for (const [k, v] of Object.entries(s.commands)) {
      const t = (sum[k] ??= { calls: 0, usec: 0 })
      t.calls += v.calls
      t.usec += v.usec
    }
  }
  return Object.fromEntries(
    Object.entries(sum)
      .filter(([, v]) => v.calls / requests >= 0.001)
      .map(([k, v]) => [k, { perRequest: v.calls / requests, usecPerCall: v.usec / v.calls }]),
  )
}
const percent = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)} %` : '-')
/** The framework's row with a middleware of the gate's shape that does nothing (bench/overhead-server.ts). */
const empty = (framework: string) => rows.find((r) => r.framework === framework && / \+ empty /.test(r.name))
const bare = (framework: string) => rows.find((r) => r.framework === framework && r.name.endsWith(' bare'))
const table = rows.map((r) => {
  const b = bare(r.framework)
  return {
    ...r,
    ratio: b ? r.rps / b.rps : NaN,
    cpuRatio: b ? b.cpu / r.cpu : NaN,
    /** The scenario's server CPU per request over the bare app's, as a cost: 0.05 = 5 % more. */
    cpuCost: b ? r.cpu / b.cpu - 1 : NaN,
    userCost: b ? r.userCpu / b.userCpu - 1 : NaN,
    /** Over the framework's empty middleware: what the gate costs beyond what any middleware there does (paired by round). */
    floorCost: (() => {
      const f = empty(r.framework)
      return f && f !== r && !r.name.endsWith(' bare') ? paired(r.name, f.name, 'cpu') - 1 : NaN
    })(),
    userFloorCost: (() => {
      const f = empty(r.framework)
      return f && f !== r && !r.name.endsWith(' bare') ? paired(r.name, f.name, 'userCpu') - 1 : NaN
    })(),
  }
})

/**
 * The median over rounds of `a`'s figure over `b`'s in the same round: runs a few seconds apart
 * share the machine's drift (another process, the CPU's clock), which a ratio of two medians taken
 * over the whole run does not cancel.
 */
function paired(a: string, b: string, key: 'cpu' | 'userCpu'): number {
  const sa = samples[a]!
  const sb = samples[b]!
  return median(sa.map((s, i) => s[key] / sb[i]![key]))
}

const m = machine(await redisVersion(redisClient))
console.log(
  `\n${describeMachine(m)}; ${ROUNDS} rounds x ${SECONDS} s, ${CONNECTIONS} connections; measured: ${measured}\n`,
)
const markdown = markdownTable(
  [
    'scenario',
    '>req/s',
    '>x bare',
    '>p50 ms',
    '>p99 ms',
    '>mean ms',
    '>server CPU µs/req',
    '>x bare (CPU)',
    '>CPU over bare',
    '>CPU over empty middleware',
    '>user CPU µs/req',
    '>user CPU over bare',
    '>user CPU over empty middleware',
    '>redis CPU µs/req',
    '>non-2xx',
    'runs (req/s)',
  ],
  table.map((r) => [
    r.name,
    Math.round(r.rps),
    fixed(r.ratio, 2),
    fixed(r.p50, 0),
    fixed(r.p99, 0),
    fixed(r.meanLatency, 2),
    fixed(r.cpu, 1),
    fixed(r.cpuRatio, 2),
    percent(r.cpuCost),
    percent(r.floorCost),
    fixed(r.userCpu, 1),
    percent(r.userCost),
    percent(r.userFloorCost),
    fixed(r.redisCpu, 1),
    r.non2xx + r.errors,
    r.runs.join(' / '),
  ]),
)
console.log(markdown)
console.log(
  '\nx bare: against the bare app of the same framework (Fastify rows vs bare Fastify, Express rows vs bare Express; fetch, Hono, Koa likewise).' +
    "\nx bare (CPU) = bare server CPU per request / this scenario's: the throughput ratio a CPU-bound server would see." +
    "\nCPU over empty middleware (and user CPU over empty middleware) = the same against the framework's row with a middleware of the gate's shape that does nothing (what any middleware costs there), as the median over rounds of the ratio within each round." +
    "\nCPU over bare = this scenario's server CPU per request / the bare app's - 1; user CPU: the same, user time only (the JavaScript's work; the system time, mostly the kernel writing to the sockets, grows when a slower server leaves the load generator idle between answers)." +
    '\np50/p99 are whole milliseconds (autocannon); mean is exact.',
)
// COMPARE: each gated row against its twin on the other commit, paired by round (the ratio a
// change to the hot path lands with; `npm run bench:compare`).
const compared = compare === undefined ? [] : table.filter((r) => samples[r.name + suffix] !== undefined)
if (compared.length > 0) {
  console.log(`\nNow against ${compare} (same run; the median over rounds of each round's ratio):`)
  console.log(
    markdownTable(
      [
        'scenario',
        '>server CPU µs/req',
        `>at ${compare}`,
        '>ratio',
        '>user CPU µs/req',
        `>at ${compare}`,
        '>ratio (user)',
      ],
      compared.map((r) => {
        const then = table.find((t) => t.name === r.name + suffix)!
        return [
          r.name,
          fixed(r.cpu, 1),
          fixed(then.cpu, 1),
          `${fixed(paired(r.name, then.name, 'cpu'), 2)}x`,
          fixed(r.userCpu, 1),
          fixed(then.userCpu, 1),
          `${fixed(paired(r.name, then.name, 'userCpu'), 2)}x`,
        ]
      }),
    ),
  )
}
console.log('\nRedis commands per request (server-side µs per call, INFO commandstats):')
for (const r of table) {
  const cmds = Object.entries(r.redisCommands)
  if (cmds.length === 0) continue
  console.log(
    `- ${r.name}: ${cmds.map(([k, v]) => `${k} ${v.perRequest.toFixed(2)} (${v.usecPerCall.toFixed(1)} µs)`).join(', ')}`,
  )
}
for (const r of table)
  if (r.non2xx + r.errors > 0) console.warn(`warning: ${r.name}: ${r.non2xx} non-2xx, ${r.errors} errors/timeouts`)
const file = writeResults('overhead', {
  machine: m,
  settings: { rounds: ROUNDS, seconds: SECONDS, warmup: WARMUP, connections: CONNECTIONS, compare, measured },
  rows: table,
  markdown,
  elapsedSeconds: (Date.now() - started) / 1000,
})
if (file) console.log(`results: ${file}`)
console.log(`overhead bench: ${((Date.now() - started) / 1000).toFixed(1)} s`)

redisClient.disconnect()
await Promise.all(
  Object.values(targets).map(({ server }) => {
    const exited = new Promise((r) => server.once('exit', r))
    server.kill('SIGTERM')
    return exited
  }),
)
await redis.stop()
removeCompareTree()
