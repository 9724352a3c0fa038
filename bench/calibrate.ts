/**
 * The simulator against the real box (`npm run bench:calibrate`; docs/simulate.md, "Calibration"):
 * reads runs of bench/adaptive.ts (REAL: comma-separated result files, each a run's
 * `BENCH_RESULTS=<dir>` adaptive.json, with the perfect-limit, one-instance and two-instance rows),
 * runs the same backends, rows and clients in the simulator under SEEDS (5) seeds, and prints both
 * side by side: per backend, row and phase, the range over the real runs and over the seeds of the
 * goodput (against the perfect limit's in the same run or cell), the failed share of handler runs and
 * the p99 of good requests against the unloaded time. A figure agrees when the two ranges overlap.
 * Writes both to `${BENCH_RESULTS ?? 'bench/results'}/calibration.json`.
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fixed, markdownTable } from './lib.js'
import type { BackendKind } from './simulate/backends.js'
import { CROWDED_NOISE, DEFAULTS, runCell, type SimSettings } from './simulate/run.js'

interface RealPhase {
  capacity: number
  goodput: number
  failureRate: number
  p99: number
}
interface RealRow {
  backend: string
  label: string
  unloadedMs: number
  phases: RealPhase[]
}

const files = (process.env.REAL ?? '').split(',').filter(Boolean)
if (files.length === 0) throw new Error('REAL: give the result files of bench/adaptive.ts runs, comma-separated')
const seeds = Array.from({ length: Number(process.env.SEEDS ?? 5) }, (_, i) => i + 1)

const BACKENDS: Record<string, { kind: BackendKind; phases: number[] }> = {
  'slow failure': { kind: 'slow', phases: [30, 10, 40] },
  'hard cliff': { kind: 'cliff', phases: [30, 10, 40] },
  'gradual slowdown': { kind: 'gradual', phases: [30, 10, 40] },
  'hard cliff, capacity halved': { kind: 'cliff', phases: [40, 20] },
}
/**
 * The real rows and their cells: the one-instance rows use the memory store (in process, no round
 * trip); the two instances share the box's 2 cores with Redis, the backend and the load generator
 * (CROWDED_NOISE).
 */
const ROWS: Record<
  string,
  { instances: number; shield: 'adaptive' | 'perfect'; storeRtt: number; noise: SimSettings['noise'] }
> = {
  'perfect limit': { instances: 1, shield: 'perfect', storeRtt: 0, noise: DEFAULTS.noise },
  adaptive: { instances: 1, shield: 'adaptive', storeRtt: 0, noise: DEFAULTS.noise },
  'adaptive, 2 instances on Redis': {
    instances: 2,
    shield: 'adaptive',
    storeRtt: DEFAULTS.storeRtt,
    noise: CROWDED_NOISE,
  },
}

type Figures = { goodput: number; failures: number; p99: number }[]
const runs = files.map((f) => (JSON.parse(readFileSync(f, 'utf8')) as { rows: RealRow[] }).rows)
const real = new Map<string, Figures[]>()
for (const rows of runs) {
  for (const r of rows) {
    if (!(r.label in ROWS) || !(r.backend in BACKENDS)) continue
    const perfect = rows.find((x) => x.backend === r.backend && x.label === 'perfect limit')
    if (!perfect) continue
    const key = `${r.backend}|${r.label}`
    real.set(key, [
      ...(real.get(key) ?? []),
      r.phases.map((p, i) => ({
        goodput: p.goodput / perfect.phases[i]!.goodput,
        failures: p.failureRate,
        p99: p.p99 / r.unloadedMs,
      })),
    ])
  }
}

const sim = new Map<string, Figures[]>()
for (const key of real.keys()) {
  const [backend, label] = key.split('|') as [string, string]
  const b = BACKENDS[backend]!
  const row = ROWS[label]!
  for (const seed of seeds) {
    const cell = { backend: b.kind, phases: b.phases, schedule: 'steady' as const, instances: row.instances, seed }
    const settings = { ...DEFAULTS, storeRtt: row.storeRtt, noise: row.noise }
    const r = await runCell({ ...cell, shield: row.shield }, settings)
    const perfect = row.shield === 'perfect' ? r : await runCell({ ...cell, shield: 'perfect' }, settings)
    sim.set(key, [
      ...(sim.get(key) ?? []),
      r.phases.map((p, i) => ({
        goodput: p.goodput / perfect.phases[i]!.goodput,
        failures: p.failureRate,
        p99: p.p99 / r.unloadedMs,
      })),
    ])
  }
}

const range = (xs: number[]): [number, number] => [Math.min(...xs), Math.max(...xs)]
const overlap = (a: [number, number], b: [number, number]): boolean => a[0] <= b[1] && b[0] <= a[1]
const show = ([lo, hi]: [number, number], f: (x: number) => string): string =>
  f(lo) === f(hi) ? f(lo) : `${f(lo)}–${f(hi)}`
const METRICS = [
  { name: 'goodput / perfect', of: (x: Figures[number]) => x.goodput, f: (x: number) => fixed(x, 2) },
  { name: 'failed', of: (x: Figures[number]) => x.failures, f: (x: number) => `${fixed(100 * x, 2)} %` },
  { name: 'p99 / unloaded', of: (x: Figures[number]) => x.p99, f: (x: number) => fixed(x, 2) },
] as const

let agree = 0
let total = 0
const out: object[] = []
console.log(
  `# The simulator against the real box\n\n${runs.length} real runs (${files.join(', ')}), ${seeds.length} seeds\n`,
)
for (const backend of Object.keys(BACKENDS)) {
  const table: string[][] = []
  for (const label of Object.keys(ROWS)) {
    const key = `${backend}|${label}`
    const r = real.get(key)
    const s = sim.get(key)
    if (!r || !s) continue
    BACKENDS[backend]!.phases.forEach((c, i) => {
      for (const m of METRICS) {
        if (label === 'perfect limit' && m.name === 'goodput / perfect') continue
        const a = range(r.map((x) => m.of(x[i]!)))
        const b = range(s.map((x) => m.of(x[i]!)))
        const ok = overlap(a, b)
        total++
        if (ok) agree++
        table.push([`${label}, C=${c}`, m.name, show(a, m.f), show(b, m.f), ok ? 'yes' : 'no'])
        out.push({ backend, row: label, capacity: c, metric: m.name, real: a, simulated: b, agree: ok })
      }
    })
  }
  if (table.length > 0)
    console.log(
      `## ${backend}\n\n${markdownTable(['row, phase', 'figure', 'real box', 'simulator', 'agree'], table)}\n`,
    )
}
console.log(`${agree} of ${total} figures agree (the simulator's range over the seeds meets the real runs' range)`)
const dir = process.env.BENCH_RESULTS ?? 'bench/results'
mkdirSync(dir, { recursive: true })
writeFileSync(
  join(dir, 'calibration.json'),
  `${JSON.stringify({ bench: 'calibration', date: new Date().toISOString(), realRuns: files.length, seeds: seeds.length, figures: out }, null, 1)}\n`,
)
