/**
 * Overhead of the Hug Shield gate (a program, not a test): `npx tsx bench/overhead.ts`.
 *
 * Scenarios, each its own Fastify 5 app in one server process (loopback only):
 * - bare Fastify;
 * - Fastify + gate, pass holders (a valid full pass cookie), memory store;
 * - the same on Redis (a private redis-server spawned here);
 * - Fastify + gate in request mode on Redis (a slot acquired and released per request).
 * Scenarios alternate (A B C D, A B C D, ...) so drift hits all alike. Bounded: ROUNDS x SECONDS
 * per scenario (default 3 x 2 s). Reports req/s and, steadier on a shared machine, the server's
 * CPU time per request (and redis-server's).
 */
import { spawn } from 'node:child_process'
import { cpus, loadavg } from 'node:os'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
import { startRedis } from '../test/helpers/redis.js'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const SECONDS = Number(process.env.SECONDS ?? 2)
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32)

const redis = await startRedis()
const stopAll = (): void => {
  server.kill('SIGKILL')
  void redis.stop()
}
process.once('uncaughtException', (err) => {
  console.error(err)
  stopAll()
  process.exitCode = 1
})
process.once('unhandledRejection', (err) => {
  console.error(err)
  stopAll()
  process.exitCode = 1
})
const server = spawn(process.execPath, ['--import', 'tsx', new URL('./overhead-server.ts', import.meta.url).pathname], {
  env: { ...process.env, BENCH_REDIS_PORT: String(redis.port), NODE_ENV: 'production' },
  stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
})
const ports: Record<string, number> = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line)))
  server.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
})

/** A full pass for the gated apps: in once (provisional), back once (upgraded to full). */
async function passCookie(port: number): Promise<string | undefined> {
  const first = await fetch(`http://127.0.0.1:${port}/`)
  const provisional = first.headers.getSetCookie()[0]?.split(';')[0]
  if (!provisional) return undefined
  const second = await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie: provisional } })
  return second.headers.getSetCookie()[0]?.split(';')[0]
}

const headers: Record<string, Record<string, string>> = {}
for (const [name, port] of Object.entries(ports)) {
  const cookie = name.includes('(pass)') ? await passCookie(port) : undefined
  if (name.includes('(pass)') && !cookie) throw new Error(`no pass for ${name}`)
  headers[name] = cookie ? { cookie } : {}
}

function run(port: number, h: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: seconds, headers: h })
}

/** CPU time (user + system, µs) used so far by the server process. */
function serverCpu(): Promise<number> {
  return new Promise((resolve) => {
    server.once('message', (u: NodeJS.CpuUsage) => resolve(u.user + u.system))
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

interface Sample {
  result: autocannon.Result
  /** Server CPU µs per request. */
  cpu: number
  /** redis-server CPU µs per request. */
  redisCpu: number
}

// Warm up every app (JIT, connections, Redis scripts).
for (const [name, port] of Object.entries(ports)) await run(port, headers[name]!, 1)

const results: Record<string, Sample[]> = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, port] of Object.entries(ports)) {
    const [cpu0, rcpu0] = [await serverCpu(), await redisCpu()]
    const r = await run(port, headers[name]!, SECONDS)
    const [cpu1, rcpu1] = [await serverCpu(), await redisCpu()]
    const n = Math.max(1, r.requests.total)
    ;(results[name] ??= []).push({ result: r, cpu: (cpu1 - cpu0) / n, redisCpu: (rcpu1 - rcpu0) / n })
    if (r.non2xx > 0 || r.errors > 0) console.warn(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
  }
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rows = Object.entries(results).map(([name, rs]) => ({
  name,
  rps: mean(rs.map((s) => s.result.requests.average)),
  p50: mean(rs.map((s) => s.result.latency.p50)),
  p99: mean(rs.map((s) => s.result.latency.p99)),
  cpu: median(rs.map((s) => s.cpu)),
  redisCpu: median(rs.map((s) => s.redisCpu)),
  runs: rs.map((s) => Math.round(s.result.requests.average)).join(' / '),
}))
const bare = rows.find((r) => r.name === 'bare')!
console.log(
  `\n${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ${ROUNDS} rounds x ${SECONDS} s, ${CONNECTIONS} connections; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}\n`,
)
console.log('| scenario | req/s | x bare (req/s) | p50 ms | p99 ms | server CPU µs/req | x bare (CPU) | redis CPU µs/req | runs (req/s) |')
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
for (const r of rows) {
  console.log(
    `| ${r.name} | ${Math.round(r.rps)} | ${(r.rps / bare.rps).toFixed(2)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ` +
      `${r.cpu.toFixed(1)} | ${(bare.cpu / r.cpu).toFixed(2)} | ${r.redisCpu.toFixed(1)} | ${r.runs} |`,
  )
}
console.log('\nx bare (CPU) = bare server CPU per request / this scenario\'s: the throughput ratio a CPU-bound server would see.')
redisClient.disconnect()

server.kill('SIGTERM')
await new Promise((r) => server.once('exit', r))
await redis.stop()
