import { defineConfig } from 'vitest/config'

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
  },
})
