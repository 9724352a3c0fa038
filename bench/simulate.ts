/**
 * The adaptive limit on a virtual clock, for fleets of 1 to 32 instances (`npm run bench:simulate`;
 * docs/simulate.md). Runs the real AdaptiveGate and estimator (src/gate/adaptive.ts,
 * src/core/adaptive.ts) and the store's real fleet figure (AdaptiveBoard) for every backend x
 * arrival schedule x fleet size, each cell beside the same cell under the perfect limit; prints a
 * table per backend, writes the figures as JSON (`${BENCH_RESULTS ?? 'bench/results'}/simulate.json`)
 * and a chart per backend (docs/simulate-<backend>.svg). The same seed gives the same figures.
 *
 * Env: SEED (1), BACKENDS (a RegExp on the labels), SCHEDULES and INSTANCES (comma lists),
 * BENCH_CHART=0 (no charts), TRACE=`<backend kind> <schedule> <N>` (prints that cell's every move of
 * the limit, with its reason, and nothing else).
 */
import diagnostics from 'node:diagnostics_channel'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fixed, markdownTable } from './lib.js'
import type { VirtualClock } from './simulate/clock.js'
import { chart } from './simulate/chart.js'
import { BACKENDS, BARS, INSTANCES, type Judged, runMatrix, SCHEDULES } from './simulate/matrix.js'
import { DEFAULTS, runCell, type Schedule, WARM_MS } from './simulate/run.js'
import type { BackendKind } from './simulate/backends.js'

const seed = Number(process.env.SEED ?? 1)

if (process.env.TRACE) {
  const [kind, schedule, n] = process.env.TRACE.split(/\s+/)
  const row = BACKENDS.find((b) => b.kind === kind)
  if (!row) throw new Error(`TRACE: no backend '${kind}' (one of ${BACKENDS.map((b) => b.kind).join(', ')})`)
  let clock: VirtualClock | undefined
  let last = ''
  // Every instance tells of the fleet's move when it learns it: the first one is the move.
  diagnostics.subscribe('airlock:limit', (m) => {
    const e = m as { previous: number; limit: number; reason: string; recent: number | null; baseline: number | null }
    const move = `${e.previous} -> ${e.limit}  ${e.reason}  p95 ${fixed(e.recent ?? NaN)} / baseline ${fixed(e.baseline ?? NaN)} ms`
    if (move !== last) console.log(`${fixed(clock!.now - WARM_MS)} ms  ${move}`)
    last = move
  })
  await runCell(
    {
      backend: kind as BackendKind,
      phases: row.phases,
      schedule: schedule as Schedule,
      instances: Number(n),
      shield: 'adaptive',
      seed,
    },
    DEFAULTS,
    (c) => (clock = c),
  )
  process.exit(0)
}

const list = (name: string): string[] | undefined => process.env[name]?.split(',').map((x) => x.trim())
const re = process.env.BACKENDS ? new RegExp(process.env.BACKENDS) : undefined
const backends = BACKENDS.filter((b) => !re || re.test(b.label))
const schedules = (list('SCHEDULES') as Schedule[] | undefined) ?? SCHEDULES
const instances = list('INSTANCES')?.map(Number) ?? INSTANCES

const cpu0 = process.cpuUsage()
const cells = await runMatrix({ backends, schedules, instances, seed })
const cpu = process.cpuUsage(cpu0)
const cpuS = (cpu.user + cpu.system) / 1e6

const s = DEFAULTS
console.log(`# The adaptive limit on a virtual clock (seed ${seed})\n`)
console.log(
  `${s.work} ms a request up to C inside (+ up to ${s.jitter} ms), ${s.net} ms client to gate and ${s.backendNet} ms gate to backend each way, a store round trip of ${s.storeRtt} ms; ` +
    `${s.clients} clients (the ramp: ${2 * s.clients} arriving over 10 s; the spike: ${s.clients / 4}, and ${5 * s.clients} more for 4 s mid first phase); ` +
    `${s.phaseMs / 1000} s a phase, counted from ${s.settleMs / 1000} s after each change. ` +
    `Bars: failed handler runs <= ${100 * BARS.failures} %, goodput >= ${BARS.goodput} of the perfect limit's, p99 of good requests <= ${BARS.p99}x unloaded, under C within ${BARS.underMs} ms of a drop.\n`,
)
for (const b of backends) {
  const rows = cells.filter((c) => c.label === b.label)
  const phases = b.phases.map((c) => `C=${c}`)
  console.log(`## ${b.label} (C = ${b.phases.join(', then ')}${b.slowsOnly ? '; only slows past C' : ''})\n`)
  console.log(
    markdownTable(
      ['schedule, N', ...phases.map((p) => `${p}: goodput, failed, p99`), 'under C after the drop', 'bars'],
      rows.map((r) => [
        `${r.schedule}, ${r.instances}`,
        ...r.phases.map(
          (p, i) =>
            `${fixed(p.goodput / r.perfect[i]!, 2)} · ${fixed(100 * p.failureRate, 2)} % · ${fixed(p.p99 / r.unloadedMs, 2)}x`,
        ),
        r.phases
          .filter((p) => p.under !== undefined)
          .map((p) => (p.under === null ? 'never' : `${p.under} ms`))
          .join(', '),
        r.misses.length === 0 ? 'met' : r.misses.join('; '),
      ]),
    ),
  )
  console.log('')
}
const missed = cells.filter((c) => c.misses.length > 0)
console.log(
  `${cells.length} cells (and as many under the perfect limit), ${cells.reduce((n, c) => n + c.events, 0).toLocaleString('en')} events, ${fixed(cpuS, 1)} s of CPU; bars met in ${cells.length - missed.length} of ${cells.length}`,
)

const dir = process.env.BENCH_RESULTS ?? 'bench/results'
mkdirSync(dir, { recursive: true })
const thin = (c: Judged) => c.timeline.filter((_, i) => i % 10 === 0)
writeFileSync(
  join(dir, 'simulate.json'),
  `${JSON.stringify({ bench: 'simulate', seed, settings: s, bars: BARS, cpuSeconds: cpuS, cells: cells.map((c) => ({ ...c, timeline: thin(c) })) }, null, 1)}\n`,
)
if (process.env.BENCH_CHART !== '0')
  for (const b of backends) {
    const file = new URL(`../docs/simulate-${b.label.replace(/[^a-z]+/g, '-')}.svg`, import.meta.url)
    writeFileSync(
      file,
      chart(
        `${b.label}: C = ${b.phases.join(' -> ')}, ${s.phaseMs / 1000} s each`,
        cells.filter((c) => c.label === b.label),
      ),
    )
  }
