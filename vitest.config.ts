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
    // Three files at once on the 2-core CI box: most slow files mostly wait (a 3-minute admission
    // rate run, browsers, spawned servers), and vitest's default (cores - 1) would run them one by one.
    maxWorkers: 3,
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
  },
})
