/**
 * The adaptive limit against backends whose capacity the gate is not told (a program, not a test;
 * part of `npm run hug`).
 *
 * Four backends (bench/adaptive/backend.ts, its own process), each WORK_MS (50) per request up to C
 * inside: `slow-failure` (slower above C, a 500 after 3 x WORK_MS), `hard-cliff` (an instant 500
 * above C), `gradual` (the work shared above C: latency grows, throughput does not) with C = 30,
 * then 10, then 40; and `hard-cliff` whose capacity halves in one step, 40 then 20, while the limit
 * sits at it. PHASE_S (12) seconds a phase. For each backend, side by side in one run, each with
 * fresh processes: the perfect limit (the live limit set to C as each phase begins: the ideal the
 * adaptive rows are held to, and what bench/simulate.ts is calibrated against), the gate at a static limit of the lowest and of the highest C, @fastify/under-
 * pressure, the adaptive limit (`{ min: 2, max: 200 }`) in request mode, on two instances sharing
 * one private Redis, and in session mode (visitors of VISIT requests each, who then give their pass
 * back). Then a row for the operator: a hard cliff at C = 12, a live limit of 10 held for
 * HOLD_S (10) seconds, then cleared.
 *
 * CONNECTIONS (200) clients send requests back to back (a 500 is retried at once, a busy 503 after
 * 50-150 ms). Per phase, counted from 2 s after the change: goodput against the ideal (C x seconds
 * / WORK_MS), failed handler runs (500s) against all handler runs, the p99 of good requests against
 * the unloaded time; and the bars (failures <= 1 %, goodput >= 0.85, p99 <= 2x unloaded). Writes
 * the adaptive rows' limit against C over time to docs/benchmarks-adaptive.svg.
 *
 * Env: PHASE_S, HOLD_S, WORK_MS, CONNECTIONS, VISIT, BACKENDS and ROWS (RegExps on the labels).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { createInterface } from 'node:readline'
import { startRedis } from '../test/helpers/redis.js'
import {
  describeMachine,
  envNumber,
  fixed,
  machine,
  markdownTable,
  percentile,
  writeResults,
  stopChild,
} from './lib.js'

const PHASE_S = envNumber('PHASE_S', 12)
const HOLD_S = envNumber('HOLD_S', 10)
const WORK_MS = envNumber('WORK_MS', 50)
const CONNECTIONS = envNumber('CONNECTIONS', 200)
const VISIT = envNumber('VISIT', 30)
/** Phase time not counted after each change of capacity (ms). */
const SETTLE_MS = 2_000
const BARS = { failures: 0.01, goodput: 0.85, p99: 2, perfect: 0.9 }
const ADAPTIVE = 'adaptive:2:200'

const pick = <T extends { label: string }>(xs: T[], env: string): T[] => {
  const re = process.env[env] ? new RegExp(process.env[env]!) : undefined
  return xs.filter((x) => !re || re.test(x.label))
}
const BACKENDS = pick(
  [
    { label: 'slow failure', kind: 'slow-failure', phases: [30, 10, 40] },
    { label: 'hard cliff', kind: 'hard-cliff', phases: [30, 10, 40] },
    { label: 'gradual slowdown', kind: 'gradual', phases: [30, 10, 40] },
    { label: 'hard cliff, capacity halved', kind: 'hard-cliff', phases: [40, 20] },
  ],
  'BACKENDS',
)
interface Shield {
  label: string
  shield: (phases: number[]) => string
  instances?: number
  redis?: boolean
  session?: boolean
  /** The perfect limit: the live limit set to C at each change (the operator who knows C), the ideal the adaptive rows are held to. */
  perfect?: boolean
}
const PERFECT = 'perfect limit'
const SHIELDS: Shield[] = pick(
  [
    { label: PERFECT, shield: (p) => `static:${p[0]}`, perfect: true },
    { label: 'static, lowest C', shield: (p) => `static:${Math.min(...p)}` },
    { label: 'static, highest C', shield: (p) => `static:${Math.max(...p)}` },
    { label: '@fastify/under-pressure', shield: () => 'under-pressure' },
    { label: 'adaptive', shield: () => ADAPTIVE },
    { label: 'adaptive, 2 instances on Redis', shield: () => ADAPTIVE, instances: 2, redis: true },
    { label: 'adaptive, session mode', shield: () => ADAPTIVE, session: true },
  ],
  'ROWS',
)
const OVERRIDE = !process.env.ROWS || new RegExp(process.env.ROWS).test('live limit held, then cleared')

const children: ChildProcess[] = []
function start(file: string, env: Record<string, string>, onLine?: (line: string) => void): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(file, import.meta.url).pathname], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`${file} exited ${code}`)))
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^listening (\d+)$/.exec(line)
      if (m) resolve(Number(m[1]))
      else onLine?.(line)
    })
  })
}
const stopChildren = async (): Promise<void> => {
  await Promise.all(children.splice(0).map(stopChild))
}

const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS * 2 })
interface Answer {
  status: number
  ms: number
  cookie: string | undefined
}
function send(port: number, path: string, cookie?: string, method = 'GET'): Promise<Answer> {
  const t0 = performance.now()
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent, headers: cookie ? { cookie } : {} }, (res) => {
      res.resume()
      const set = res.headers['set-cookie']?.find((c) => c.startsWith('airlock_pass'))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, cookie: set?.split(';')[0] }),
      )
    })
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0, cookie: undefined }))
    req.end()
  })
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

interface Done {
  t: number
  status: number
  ms: number
}

/** One client until `end`: back to back; in session mode a visitor of VISIT requests, then the next one. */
async function client(port: number, session: boolean, end: number, t0: number, done: Done[]): Promise<void> {
  let cookie: string | undefined
  let answered = 0
  while (Date.now() < end) {
    const r = await send(port, '/', cookie)
    done.push({ t: Date.now() - t0, status: r.status, ms: r.ms })
    // A busy answer waits; so does a visitor's error page (a person reloads it, not a loop).
    if (r.status === 503 || r.status === 0 || (session && r.status === 500)) {
      await sleep(50 + Math.random() * 100)
      if (r.status !== 500) continue
    }
    cookie = r.cookie ?? cookie
    if (session && ++answered >= VISIT) {
      if (cookie) await send(port, '/leave', cookie)
      cookie = undefined
      answered = 0
    }
  }
}

interface PhaseFigures {
  capacity: number
  goodput: number
  runs: number
  failures: number
  failureRate: number
  /** The median and 99th percentile of good requests (ms): the median is the host's own load (the simulator's calibration). */
  p50: number
  p99: number
}

function phaseFigures(done: Done[], capacity: number, from: number, to: number): PhaseFigures {
  const inPhase = done.filter((d) => d.t >= from && d.t < to)
  const ok = inPhase.filter((d) => d.status === 200)
  const failures = inPhase.filter((d) => d.status === 500).length
  const runs = ok.length + failures
  return {
    capacity,
    goodput: ok.length / ((capacity * (to - from)) / WORK_MS),
    runs,
    failures,
    failureRate: failures / Math.max(1, runs),
    p50: percentile(
      ok.map((d) => d.ms),
      50,
    ),
    p99: percentile(
      ok.map((d) => d.ms),
      99,
    ),
  }
}

interface RunOptions {
  kind: string
  phases: number[]
  shield: string
  instances: number
  redisUrl: string | undefined
  session: boolean
  /** The operator's row: a live limit of `hold.limit` from the start, cleared after `hold.ms`. */
  hold?: { limit: number; ms: number }
  /** The perfect limit: the live limit set to each phase's C as the phase begins. */
  perfect?: boolean
}

/** Each run's key prefix on the shared Redis: a fresh fleet figure for every row. */
let runCount = 0
async function runOnce(o: RunOptions) {
  const prefix = `adaptive-bench-${++runCount}`
  const phaseMs = PHASE_S * 1000
  const total = o.hold ? o.hold.ms + phaseMs : phaseMs * o.phases.length
  const env = {
    WORK_MS: String(WORK_MS),
    PHASE_S: String(total / 1000 / o.phases.length),
    PHASES: o.phases.join(','),
    KIND: o.kind,
  }
  const backendPort = await start('./adaptive/backend.ts', env)
  const limits: { t: number; limit: number; adaptive: number | null; instance: number }[] = []
  const ports = await Promise.all(
    Array.from({ length: o.instances }, (_, instance) =>
      start(
        './adaptive/server.ts',
        {
          ...env,
          PREFIX: prefix,
          SHIELD: o.shield,
          MODE: o.session ? 'session' : 'request',
          BACKEND_URL: `http://127.0.0.1:${backendPort}`,
          ...(o.redisUrl ? { REDIS_URL: o.redisUrl } : {}),
        },
        (line) => {
          const j = JSON.parse(line) as { t: number; limit: number; adaptive: number | null }
          limits.push({ ...j, instance })
        },
      ),
    ),
  )
  // Unloaded: one request at a time (one visitor), then the backend's clock starts.
  const unloaded: number[] = []
  let cookie: string | undefined
  for (let i = 0; i < 20; i++) {
    const r = await send(ports[0]!, '/', cookie)
    unloaded.push(r.ms)
    cookie = r.cookie ?? cookie
  }
  if (cookie) await send(ports[0]!, '/leave', cookie)
  if (o.hold) await send(ports[0]!, `/bench/control?limit=${o.hold.limit}`, undefined, 'POST')
  if (o.perfect) await send(ports[0]!, `/bench/control?limit=${o.phases[0]}`, undefined, 'POST')
  await send(backendPort, '/', undefined, 'POST')
  const t0 = Date.now()
  const end = t0 + total
  const done: Done[] = []
  const clearing = o.hold
    ? sleep(o.hold.ms).then(() => send(ports[0]!, '/bench/control', undefined, 'DELETE'))
    : undefined
  // The perfect limit follows C at once (the live control reaches the gate through the memory store's own channel).
  const following = o.perfect
    ? Promise.all(
        o.phases
          .slice(1)
          .map((c, p) =>
            sleep(t0 + (p + 1) * PHASE_S * 1000 - Date.now()).then(() =>
              send(ports[0]!, `/bench/control?limit=${c}`, undefined, 'POST'),
            ),
          ),
      )
    : undefined
  await Promise.all(
    Array.from({ length: CONNECTIONS }, (_, i) => client(ports[i % ports.length]!, o.session, end, t0, done)),
  )
  await clearing
  await following
  await stopChildren()
  return {
    unloadedMs: percentile(unloaded, 50),
    done,
    limits: limits.map((l) => ({ ...l, t: l.t - t0 })).filter((l) => l.t >= 0 && l.instance === 0),
  }
}

async function runRow(backend: (typeof BACKENDS)[number], s: Shield, redisUrl: string | undefined) {
  const { unloadedMs, done, limits } = await runOnce({
    kind: backend.kind,
    phases: backend.phases,
    shield: s.shield(backend.phases),
    instances: s.instances ?? 1,
    redisUrl: s.redis ? redisUrl : undefined,
    session: s.session === true,
    perfect: s.perfect === true,
  })
  const phaseMs = PHASE_S * 1000
  const phases = backend.phases.map((c, p) => phaseFigures(done, c, p * phaseMs + SETTLE_MS, (p + 1) * phaseMs))
  // Judged against the perfect limit's row of the same backend once it is known (see judgeRows).
  const met = phases.every(
    (p) => p.failureRate <= BARS.failures && p.goodput >= BARS.goodput && p.p99 <= BARS.p99 * unloadedMs,
  )
  // The chart draws the adaptive rows' limits; a static row's limit says nothing.
  return {
    backend: backend.label,
    label: s.label,
    unloadedMs,
    phases,
    met,
    limits: s.shield(backend.phases) === ADAPTIVE ? thin(limits) : [],
  }
}

/** The operator's row: a hard cliff at 12, the live limit at 10 for HOLD_S, then cleared. */
async function runOverride() {
  const hold = { limit: 10, ms: HOLD_S * 1000 }
  const { unloadedMs, done, limits } = await runOnce({
    kind: 'hard-cliff',
    phases: [12],
    shield: ADAPTIVE.replace(':2:', ':5:'),
    instances: 1,
    redisUrl: undefined,
    session: false,
    hold,
  })
  const held = phaseFigures(done, 10, SETTLE_MS, hold.ms)
  const after = phaseFigures(done, 12, hold.ms, hold.ms + 5_000)
  const rest = phaseFigures(done, 12, hold.ms + SETTLE_MS, hold.ms + PHASE_S * 1000)
  const atClear = limits.filter((l) => l.t < hold.ms).at(-1)?.adaptive ?? null
  const highestAfter = Math.max(...limits.filter((l) => l.t >= hold.ms).map((l) => l.limit))
  return {
    unloadedMs,
    held,
    after,
    rest,
    adaptiveAtClear: atClear,
    highestAfter,
    met: after.failureRate <= 0.02,
    limits: thin(limits),
  }
}

/** One point every 250 ms (the servers print every 100 ms): enough for the chart, a tenth of the results file. */
function thin<T extends { t: number }>(points: T[]): T[] {
  let next = 0
  return points.filter((p) => {
    if (p.t < next) return false
    next = p.t + 250
    return true
  })
}

type Row = Awaited<ReturnType<typeof runRow>> & { vsPerfect?: number[] }

/**
 * With a perfect-limit row in the run, each row's goodput is also read against it, phase by phase,
 * and the bars are: goodput >= BARS.perfect of the perfect limit's, failures and p99 as before.
 */
function judgeRows(rows: Row[]): void {
  const perfect = rows.find((r) => r.label === PERFECT)
  if (!perfect) return
  for (const r of rows) {
    r.vsPerfect = r.phases.map((p, i) => p.goodput / Math.max(1e-9, perfect.phases[i]!.goodput))
    r.met = r.phases.every(
      (p, i) => p.failureRate <= BARS.failures && r.vsPerfect![i]! >= BARS.perfect && p.p99 <= BARS.p99 * r.unloadedMs,
    )
  }
}

/** The adaptive rows' limit against C over time, one panel per backend, as an SVG. */
function chart(rows: Row[]): string {
  const backends = [...new Set(rows.map((r) => r.backend))]
  const W = 720
  const PH = 200
  const H = PH * backends.length + 20
  const colors = ['#2563eb', '#16a34a', '#ea580c']
  const panels = backends.map((name, b) => {
    const phases = BACKENDS.find((x) => x.label === name)!.phases
    const total = PHASE_S * phases.length * 1000
    const yMax = 60
    const top = b * PH
    const x = (t: number) => ((t / total) * (W - 60) + 40).toFixed(1)
    const y = (v: number) => (top + PH - 30 - (Math.min(v, yMax) / yMax) * (PH - 60)).toFixed(1)
    const cPath = phases
      .map((c, p) => `${p === 0 ? 'M' : 'L'}${x(p * PHASE_S * 1000)} ${y(c)} L${x((p + 1) * PHASE_S * 1000)} ${y(c)}`)
      .join(' ')
    const lines = rows
      .filter((r) => r.backend === name && r.label.startsWith('adaptive') && r.limits.length > 0)
      .map(
        (r, i) =>
          `<path d="${r.limits.map((l, k) => `${k ? 'L' : 'M'}${x(l.t)} ${y(l.limit)}`).join(' ')}" fill="none" stroke="${colors[i % colors.length]}" stroke-width="1.5"/><text x="${60 + i * 200}" y="${top + 34}" fill="${colors[i % colors.length]}" font-size="11">${r.label}</text>`,
      )
    const ticks = [0, 20, 40, 60].map(
      (v) =>
        `<text x="8" y="${y(v)}" font-size="10" fill="#556">${v}</text><line x1="40" x2="${W - 20}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`,
    )
    return `${ticks.join('')}<text x="40" y="${top + 16}" font-size="13" font-weight="600" fill="#111">${name}: C = ${phases.join(' -> ')} (dashed), ${PHASE_S} s each</text><path d="${cPath}" fill="none" stroke="#9ca3af" stroke-width="3" stroke-dasharray="6 4"/>${lines.join('')}`
  })
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" font-family="system-ui,sans-serif"><rect width="${W}" height="${H}" fill="#fff"/>${panels.join('')}</svg>`
}

const redis = SHIELDS.some((s) => s.redis) && BACKENDS.length > 0 ? await startRedis() : undefined
try {
  const results: Row[] = []
  for (const backend of BACKENDS) {
    const rows: Row[] = []
    for (const s of SHIELDS) rows.push(await runRow(backend, s, redis?.url))
    judgeRows(rows)
    results.push(...rows)
  }
  const override = OVERRIDE ? await runOverride() : undefined
  console.log(`# The adaptive limit\n\n${describeMachine(machine())}`)
  console.log(
    `${WORK_MS} ms per request up to C inside; ${CONNECTIONS} clients; ${PHASE_S} s a phase, counted from ${SETTLE_MS / 1000} s after each change; bars: failures <= 1 % of handler runs, goodput >= 0.9 of the perfect limit's (0.85 of the ideal without that row), p99 of good requests <= 2x unloaded\n`,
  )
  for (const name of new Set(results.map((r) => r.backend))) {
    const rows = results.filter((r) => r.backend === name)
    const table: (string | number)[][] = []
    rows[0]!.phases.forEach((p, i) => {
      table.push([`goodput / ideal, C=${p.capacity}`, ...rows.map((r) => fixed(r.phases[i]!.goodput, 2))])
      if (rows.some((r) => r.vsPerfect))
        table.push([`goodput / perfect, C=${p.capacity}`, ...rows.map((r) => fixed(r.vsPerfect?.[i] ?? NaN, 2))])
      table.push([
        `failed runs, C=${p.capacity}`,
        ...rows.map((r) => `${fixed(100 * r.phases[i]!.failureRate, 2)} % (${r.phases[i]!.failures})`),
      ])
      table.push([`good p99 ms, C=${p.capacity}`, ...rows.map((r) => fixed(r.phases[i]!.p99))])
    })
    table.push(['unloaded ms', ...rows.map((r) => fixed(r.unloadedMs, 1))])
    table.push(['bars met', ...rows.map((r) => (r.met ? 'yes' : 'no'))])
    console.log(`## ${name}\n\n${markdownTable(['', ...rows.map((r) => r.label)], table)}\n`)
  }
  if (override) {
    const o = override
    console.log(
      `## live limit held, then cleared\n\nhard cliff at C = 12, \`{ min: 5, max: 200 }\`, live limit 10 for ${HOLD_S} s, then cleared\n`,
    )
    console.log(
      markdownTable(
        ['', 'figure'],
        [
          ['goodput / ideal while held (of 10)', fixed(o.held.goodput, 2)],
          ['adaptive figure when cleared', o.adaptiveAtClear ?? '-'],
          [
            'failed runs, 5 s after the clear',
            `${fixed(100 * o.after.failureRate, 2)} % (${o.after.failures} of ${o.after.runs})`,
          ],
          [`goodput / ideal, ${SETTLE_MS / 1000}-${PHASE_S} s after the clear`, fixed(o.rest.goodput, 2)],
          ['highest limit in force after the clear', o.highestAfter],
          ['bar met (failures <= 2 % in the 5 s after)', o.met ? 'yes' : 'no'],
        ],
      ),
    )
  }
  if (process.env.BENCH_CHART !== '0' && results.some((r) => r.label.startsWith('adaptive')))
    writeFileSync(new URL('../docs/benchmarks-adaptive.svg', import.meta.url), chart(results))
  writeResults('adaptive', {
    phaseSeconds: PHASE_S,
    workMs: WORK_MS,
    connections: CONNECTIONS,
    visit: VISIT,
    rows: results,
    override: override ?? null,
  })
} finally {
  await stopChildren()
  await redis?.stop()
  agent.destroy()
}
