import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Redis suites spawn their own private redis-server per file; files run in parallel.
    pool: 'forks',
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
  },
})
