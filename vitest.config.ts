import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * The longest files (measured: a full run's per-file times, 2026-11-26), started first in this
 * order. A fresh clone has no timing cache, and vitest then starts the largest files first: the
 * 3-minute control-rate file, small and mostly waiting, started last and left one core idle at
 * the end. The sleepy long one goes first, beside the CPU-heavy ones.
 */
const LONGEST_FIRST = [
  'test/http/control-rate.test.ts', // 183 s, mostly waiting out minutes
  // 70 s, the first 15 s of which a crowd and a flood take every core they can: run beside the
  // sleepy one above rather than beside a `next dev` compiling or a page in Chromium.
  'test/cli/hug.test.ts',
  'test/bench/smoke-live.test.ts', // 85 s
  'test/bench/smoke.test.ts', // 73 s
  'test/package.test.ts', // 71 s
  'test/prometheus/queue-wait.test.ts', // 55 s
  'test/browser/a11y.test.ts', // 47 s
]

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification): number => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(name))
      return i < 0 ? LONGEST_FIRST.length : i
    }
    // Array sort is stable: the rest keep vitest's order (failed first, then by time or size).
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

export default defineConfig({
  // `airlock-shield` and `airlock-shield/<entry>` (as the examples import them) resolve to src/
  // through tsconfig.json's "paths", as they do for tsc and tsx.
  resolve: { tsconfigPaths: true },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Redis suites spawn their own private redis-server per file; files run in parallel.
    pool: 'forks',
    // Two files at once on the 2-core CI box. Three fitted while the suite was lighter; with the
    // adapters, Redis clients and stacks of issue 29 (a Redis Cluster per client file, `next dev`
    // compiling, six HTTP behaviour suites) three at once starved the timing cases of CPU (a
    // clean-clone run at load 9 failed five of them; each passed alone).
    maxWorkers: 2,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    sequence: { sequencer: LongestFirst },
  },
})
