/**
 * Small helpers shared by the benches: settings from the environment, the machine's description,
 * Markdown tables, statistics, and the optional JSON results (`BENCH_RESULTS=<dir>`) that
 * `bench/chart.ts` and the smoke test read.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'

/** A positive number from the environment (`SECONDS=0.5`), or `fallback`; anything else fails loudly. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`)
  return n
}

export interface Machine {
  cpus: number
  model: string
  node: string
  redis?: string
  /** 1, 5 and 15 minute load averages when the bench ended. */
  load: number[]
}

/** This machine, as the tables' caption describes it. */
export function machine(redisVersion?: string): Machine {
  return {
    cpus: cpus().length,
    model: cpus()[0]?.model.trim() ?? 'cpu',
    node: process.version,
    ...(redisVersion ? { redis: redisVersion } : {}),
    load: loadavg().map((l) => Math.round(l * 100) / 100),
  }
}

export function describeMachine(m: Machine): string {
  return `${m.cpus} x ${m.model}, node ${m.node}${m.redis ? `, redis ${m.redis}` : ''}; load average ${m.load.map((l) => l.toFixed(1)).join(' ')}`
}

/** The `redis_version` of a server, from `INFO server`. */
export async function redisVersion(client: { info(section: string): Promise<string> }): Promise<string> {
  return /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? 'unknown'
}

/** A Markdown table; columns whose header starts with `>` are right-aligned (the `>` is dropped). */
export function markdownTable(headers: string[], rows: (string | number)[][]): string {
  const right = headers.map((h) => h.startsWith('>'))
  const names = headers.map((h) => (h.startsWith('>') ? h.slice(1) : h))
  return [
    `| ${names.join(' | ')} |`,
    `| ${right.map((r) => (r ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n')
}

export const mean = (xs: number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length)
export const median = (xs: number[]): number => percentile(xs, 50)

/** The p-th percentile (nearest rank) of unsorted samples; NaN when there are none. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** Formats a number with `digits` decimals, or `-` when it is not a number. */
export function fixed(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-'
}

/** Writes `<BENCH_RESULTS>/<name>.json` when `BENCH_RESULTS` is set; returns the path or undefined. */
export function writeResults(name: string, data: object): string | undefined {
  const dir = process.env.BENCH_RESULTS
  if (!dir) return undefined
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${name}.json`)
  writeFileSync(file, `${JSON.stringify({ bench: name, date: new Date().toISOString(), ...data }, null, 2)}\n`)
  return file
}

/** Stops a child process (SIGTERM) and resolves once it has exited. */
export function stopChild(child: {
  exitCode: number | null
  once(event: 'exit', fn: () => void): unknown
  kill(signal: NodeJS.Signals): unknown
}): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise<void>((done) => {
    child.once('exit', () => done())
    child.kill('SIGTERM')
  })
}
