/**
 * The hot path against a named commit, one command (issue 41's guard):
 *   npm run bench:compare -- <git ref>        (default: origin/main, else HEAD~1)
 * Runs bench/overhead.ts with COMPARE=<ref> over the rows a pass holder and request mode cost
 * (every framework's pass holders on memory, request mode on Redis, and the bare and empty rows
 * they are read against), ROUNDS=7 alternating rounds, both commits built (BUILT=1); bench:overhead
 * then prints each gated row's server and user CPU per request now against the same row at <ref>
 * (the median of each round's ratio): the ratio a change that touches the gate, an adapter or a
 * store's hot path lands with. ROUNDS, SECONDS, SCENARIOS and BUILT can be set as for
 * bench:overhead.
 */
import { execFileSync, spawnSync } from 'node:child_process'

const git = (...args: string[]): string | undefined => {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return undefined
  }
}
const ref = process.argv[2] ?? (git('rev-parse', '-q', '--verify', 'origin/main') ? 'origin/main' : 'HEAD~1')
if (git('rev-parse', '-q', '--verify', `${ref}^{commit}`) === undefined) {
  console.error(`bench:compare: '${ref}' is not a commit here`)
  process.exit(64)
}
const env = {
  ...process.env,
  COMPARE: ref,
  ROUNDS: process.env.ROUNDS ?? '9',
  SECONDS: process.env.SECONDS ?? '4',
  TOGETHER: process.env.TOGETHER ?? '1',
  BUILT: process.env.BUILT ?? '1',
  SCENARIOS: process.env.SCENARIOS ?? 'bare$|empty|pass holders, memory$|request mode, redis$',
}
const run = spawnSync(process.execPath, ['--import', 'tsx', new URL('./overhead.ts', import.meta.url).pathname], {
  env,
  stdio: 'inherit',
})
process.exit(run.status ?? 1)
