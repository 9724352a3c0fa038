/**
 * What a pass holder's request allocates through each adapter beyond the same app with an empty
 * middleware of the same shape (issue 41): counted in bytes by bench/alloc.mts, one process an
 * adapter (what one adapter's code leaves in the JIT changes another's count by up to 100 B), with
 * a young generation large enough that nothing is collected while it counts. No clock: the count
 * is the same on any machine for one Node version, so a regression of the kind that grew the hot
 * path 10 % unnoticed (a handle built of closures on every request, a view read eagerly) fails
 * here. Measured when the bounds were set (Node 20, 20k requests, Fastify through its router as
 * light-my-request drives it): Fastify 2-82, Express 360-420, Koa 270-325, fetch 405-465, Hono
 * 1,400-1,480 (Hono's own `c.set` takes about 1 KB of that); at the commit issue 41 started from
 * (6cae48a), Fastify 96-126, Express 1,790-1,860, Koa 840-890, fetch 480-505 and Hono 1,610-1,655.
 * The bounds leave room for what the gate's timers allocate while a slower (busier) machine counts
 * (a clean-clone CI run read Fastify at 146): they catch a regression of the kind above (hundreds
 * of bytes: Express's and Koa's bounds fail at 6cae48a), not a drift of tens.
 */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { AdapterName } from '../../src/entries.js'

const ROOT = resolve(import.meta.dirname, '../..')
/** Bytes a request, the gate's own (gate row less empty row), at most: every adapter of the list (src/entries.ts). */
const BOUND: Record<AdapterName, number> = { fastify: 320, express: 640, koa: 512, fetch: 640, hono: 1_792, node: 640 }

function ownBytes(framework: string): number {
  const run = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--min-semi-space-size=256',
      '--max-semi-space-size=256',
      '--import',
      'tsx',
      'bench/alloc.mts',
      '--json',
      framework,
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, N: '20000' }, timeout: 110_000 },
  )
  expect(run.status, run.stderr).toBe(0)
  const bytes = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, number>
  return bytes[`${framework} gate`]! - bytes[`${framework} empty`]!
}

describe("a pass holder's request: the gate's own allocations, per adapter", () => {
  for (const [framework, bound] of Object.entries(BOUND)) {
    it(`${framework}: at most ${bound} bytes a request over the empty middleware`, { timeout: 120_000 }, () => {
      expect(ownBytes(framework)).toBeLessThanOrEqual(bound)
    })
  }
})
