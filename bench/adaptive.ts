/**
 * The adaptive limit against a backend whose capacity the gate is not told (a program, not a test;
 * part of `npm run hug`).
 *
 * The fragile backend (bench/adaptive/backend.ts, its own process) serves WORK_MS (50) per request
 * up to C in flight and slows, then times out (500), above it; C is 40, then 15, then 60, PHASE_S
 * (20) seconds each. Rows, side by side in one run, each with fresh processes: the gate in request
 * mode at static limit 15, at static limit 60, @fastify/under-pressure, the adaptive limit
 * (`{ min: 5, max: 500 }`), and the adaptive limit on two instances sharing one private Redis.
 * CONNECTIONS (150) clients send requests back to back (a busy 503 waits 50-150 ms: still far
 * more eager than the busy page, which waits Retry-After seconds).
 *
 * Per phase, counted from 3 s after the change: goodput against the ideal (C x seconds / work
 * time); failures; admitted p99 against the unloaded time. Writes the effective limit against C
 * over time to docs/benchmarks-adaptive.svg. Env: PHASE_S, WORK_MS, CONNECTIONS, ROWS (RegExp).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { createInterface } from 'node:readline'
import { startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, fixed, machine, markdownTable, percentile, writeResults } from './lib.js'

const PHASE_S = envNumber('PHASE_S', 20)
const WORK_MS = envNumber('WORK_MS', 50)
const CONNECTIONS = envNumber('CONNECTIONS', 150)
const CAPACITIES = [40, 15, 60]
const only = process.env.ROWS ? new RegExp(process.env.ROWS) : undefined
const ROWS = [
  { label: 'static limit 15', shield: 'static:15', instances: 1 },
  { label: 'static limit 60', shield: 'static:60', instances: 1 },
  { label: '@fastify/under-pressure', shield: 'under-pressure', instances: 1 },
  { label: 'adaptive', shield: 'adaptive:5:500', instances: 1 },
  { label: 'adaptive, 2 instances on Redis', shield: 'adaptive:5:500', instances: 2, redis: true },
].filter((r) => !only || only.test(r.label))

const children: ChildProcess[] = []
function start(file: string, env: Record<string, string>, onLine?: (line: string) => void): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(file, import.meta.url).pathname], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
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
  await Promise.all(children.splice(0).map((c) => new Promise<void>((done) => (c.exitCode !== null ? done() : (c.once('exit', () => done()), c.kill('SIGTERM'))))))
}

const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS * 2 })
function get(port: number): Promise<{ status: number; ms: number }> {
  const t0 = performance.now()
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }))
    })
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0 }))
    req.end()
  })
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

interface Done {
  t: number
  status: number
  ms: number
}

async function runRow(row: (typeof ROWS)[number], redisUrl: string | undefined) {
  const env = { WORK_MS: String(WORK_MS), PHASE_S: String(PHASE_S), PHASES: CAPACITIES.join(',') }
  const backendPort = await start('./adaptive/backend.ts', env)
  const limits: { t: number; limit: number; instance: number }[] = []
  const ports = await Promise.all(
    Array.from({ length: row.instances }, (_, instance) =>
      start('./adaptive/server.ts', { ...env, SHIELD: row.shield, BACKEND_URL: `http://127.0.0.1:${backendPort}`, ...(row.redis && redisUrl ? { REDIS_URL: redisUrl } : {}) }, (line) => {
        const j = JSON.parse(line) as { t: number; limit: number | null }
        if (j.limit !== null) limits.push({ t: j.t, limit: j.limit, instance })
      }),
    ),
  )
  // Unloaded: one request at a time.
  const unloaded: number[] = []
  for (let i = 0; i < 20; i++) unloaded.push((await get(ports[0]!)).ms)
  await fetch(`http://127.0.0.1:${backendPort}/`, { method: 'POST' })
  const t0 = Date.now()
  const end = t0 + PHASE_S * 1000 * CAPACITIES.length
  const done: Done[] = []
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, i) => {
      while (Date.now() < end) {
        const r = await get(ports[i % ports.length]!)
        done.push({ t: Date.now() - t0, status: r.status, ms: r.ms })
        if (r.status === 503 || r.status === 0) await sleep(50 + Math.random() * 100)
      }
    }),
  )
  await stopChildren()
  const admitted = done.filter((d) => d.status === 200 || d.status === 500)
  const phases = CAPACITIES.map((c, p) => {
    const from = (p * PHASE_S + 3) * 1000
    const to = (p + 1) * PHASE_S * 1000
    const inPhase = done.filter((d) => d.t >= from && d.t < to)
    const ok = inPhase.filter((d) => d.status === 200)
    const ideal = (c * (to - from)) / WORK_MS
    return {
      capacity: c,
      goodput: ok.length / ideal,
      failures: inPhase.filter((d) => d.status === 500).length,
      failuresLast10s: done.filter((d) => d.status === 500 && d.t >= to - 10_000 && d.t < to).length,
      p99: percentile(ok.map((d) => d.ms), 99),
    }
  })
  return {
    label: row.label,
    unloadedMs: percentile(unloaded, 50),
    admitted: admitted.length,
    failures: admitted.filter((d) => d.status === 500).length,
    phases,
    limits: limits.map((l) => ({ ...l, t: l.t - t0 })).filter((l) => l.t >= 0 && l.instance === 0),
  }
}

/** The effective limit of each adaptive row against C over time, as an SVG. */
function chart(rows: Awaited<ReturnType<typeof runRow>>[]): string {
  const W = 720
  const H = 260
  const total = PHASE_S * CAPACITIES.length * 1000
  const yMax = 80
  const x = (t: number) => ((t / total) * (W - 60) + 40).toFixed(1)
  const y = (v: number) => (H - 30 - (Math.min(v, yMax) / yMax) * (H - 50)).toFixed(1)
  const cPath = CAPACITIES.map((c, p) => `${p === 0 ? 'M' : 'L'}${x(p * PHASE_S * 1000)} ${y(c)} L${x((p + 1) * PHASE_S * 1000)} ${y(c)}`).join(' ')
  const colors = ['#2563eb', '#16a34a', '#ea580c', '#7c3aed']
  const lines = rows
    .filter((r) => r.label.startsWith('adaptive') && r.limits.length > 0)
    .map((r, i) => `<path d="${r.limits.map((l, k) => `${k ? 'L' : 'M'}${x(l.t)} ${y(l.limit)}`).join(' ')}" fill="none" stroke="${colors[i]}" stroke-width="2"/><text x="50" y="${20 + i * 16}" fill="${colors[i]}" font-size="12">${r.label}</text>`)
  const ticks = [0, 20, 40, 60, 80].map((v) => `<text x="8" y="${y(v)}" font-size="11" fill="#556">${v}</text><line x1="40" x2="${W - 20}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`)
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" font-family="system-ui,sans-serif"><rect width="${W}" height="${H}" fill="#fff"/>${ticks.join('')}` +
    `<path d="${cPath}" fill="none" stroke="#9ca3af" stroke-width="3" stroke-dasharray="6 4"/><text x="${W - 200}" y="20" font-size="12" fill="#6b7280">backend capacity C (dashed)</text>${lines.join('')}` +
    `<text x="${W / 2 - 60}" y="${H - 8}" font-size="11" fill="#556">time (s): C = ${CAPACITIES.join(' -> ')}, ${PHASE_S} s each</text></svg>`
  )
}

const redis = ROWS.some((r) => r.redis) ? await startRedis() : undefined
try {
  const results: Awaited<ReturnType<typeof runRow>>[] = []
  for (const row of ROWS) results.push(await runRow(row, redis?.url))
  console.log(`# The adaptive limit\n\n${describeMachine(machine())}`)
  console.log(`backend: ${WORK_MS} ms per request up to C in flight, slower above, 500 past ${3 * WORK_MS} ms; C = ${CAPACITIES.join(', ')} for ${PHASE_S} s each; ${CONNECTIONS} clients; figures from 3 s after each change\n`)
  const headers = ['', ...results.map((r) => r.label)]
  const rows: (string | number)[][] = []
  CAPACITIES.forEach((c, p) => {
    rows.push([`goodput / ideal, C=${c}`, ...results.map((r) => fixed(r.phases[p]!.goodput, 2))])
    rows.push([`failures, C=${c} (last 10 s)`, ...results.map((r) => `${r.phases[p]!.failures} (${r.phases[p]!.failuresLast10s})`)])
    rows.push([`admitted p99 ms, C=${c}`, ...results.map((r) => fixed(r.phases[p]!.p99))])
  })
  rows.push(['failures / admitted, whole run', ...results.map((r) => `${fixed((100 * r.failures) / Math.max(1, r.admitted), 2)} %`)])
  rows.push(['unloaded ms', ...results.map((r) => fixed(r.unloadedMs, 1))])
  console.log(markdownTable(headers, rows))
  if (process.env.BENCH_CHART !== '0') writeFileSync(new URL('../docs/benchmarks-adaptive.svg', import.meta.url), chart(results))
  writeResults('adaptive', { phaseSeconds: PHASE_S, workMs: WORK_MS, connections: CONNECTIONS, capacities: CAPACITIES, rows: results })
} finally {
  await stopChildren()
  await redis?.stop()
  agent.destroy()
}
