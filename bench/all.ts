/**
 * Runs every bench, one after the other, each in its own process: `npm run bench`.
 * Results go to bench/results/*.json (or BENCH_RESULTS), then bench/chart.ts draws docs/*.svg.
 * Prints how long each bench took and fails if any failed. BENCHES=overhead,hug runs only those.
 * Every bench's own env knobs (SECONDS, ROUNDS, ...) pass through.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ALL = ['overhead', 'semaphore', 'waiting-room', 'hug', 'steer', 'adaptive', 'stall', 'proxy'] as const
const FILES: Record<string, string> = {
  overhead: 'overhead.ts',
  semaphore: 'semaphore.ts',
  'waiting-room': 'waiting-room.ts',
  hug: 'hug.ts',
  steer: 'steer.ts',
  adaptive: 'adaptive.ts',
  stall: 'stall.ts',
  proxy: 'proxy.ts',
  chart: 'chart.ts',
}
const wanted = process.env.BENCHES ? process.env.BENCHES.split(',').map((s) => s.trim()) : [...ALL]
for (const w of wanted) {
  if (!ALL.includes(w as (typeof ALL)[number]))
    throw new Error(`BENCHES: unknown bench '${w}'; known: ${ALL.join(', ')}`)
}
const env = {
  ...process.env,
  BENCH_RESULTS: process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./results', import.meta.url)),
}

const times: [string, number, number | null][] = []
const started = Date.now()
for (const name of [...wanted, 'chart']) {
  console.log(`\n=== ${name} ===`)
  const t0 = Date.now()
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL(`./${FILES[name]}`, import.meta.url))],
    {
      env,
      stdio: 'inherit',
      timeout: 10 * 60_000,
    },
  )
  times.push([name, (Date.now() - t0) / 1000, r.status])
}
const total = (Date.now() - started) / 1000
console.log('\n| bench | seconds | exit |\n| --- | ---: | ---: |')
for (const [name, s, status] of times) console.log(`| ${name} | ${s.toFixed(1)} | ${status ?? 'killed'} |`)
console.log(`| total | ${total.toFixed(1)} | |`)
if (times.some(([, , status]) => status !== 0)) process.exitCode = 1
