/**
 * Smoke runs of the live benches (the operator steering, the adaptive limit, the proxy against
 * nginx), one after the other: they start several processes each.
 */
import { describe, expect, it } from 'vitest'
import { redisAvailable } from '../helpers/redis.js'
import { json, row, runBench } from './run.js'

describe.runIf(redisAvailable)('live benches (smoke, one after the other)', () => {
  it('steer: the operator lowers and clears the limit mid-hug; in flight follows', { timeout: 90_000 }, async () => {
    // Read from 2.5 s into each 4 s phase: on a loaded CI box (this file runs beside the others) the
    // change reaches both instances later than on a quiet one (the bench itself reads from 1 s).
    const { code, out } = await runBench('steer.ts', {
      PHASE: '4',
      SETTLE_MS: '2500',
      CONNECTIONS: '20',
      LIMIT: '12',
      LOW: '4',
    })
    expect(code, out).toBe(0)
    for (const name of ['limit 12', 'lowered to 4', 'cleared (12)']) expect(row(out, name), name).toBeDefined()
    const r = json('steer')
    expect(r.phases).toHaveLength(3)
    // From 2.5 s into the lowered phase the fleet never ran more than the lowered limit.
    expect(r.phases[1].max).toBeLessThanOrEqual(4)
    expect(r.phases[1].followMs).not.toBeNull()
  })

  it('adaptive: the perfect limit, a static row, the adaptive row and the live-limit row run and report every phase', {
    timeout: 90_000,
  }, async () => {
    const { code, out } = await runBench('adaptive.ts', {
      PHASE_S: '3',
      HOLD_S: '3',
      CONNECTIONS: '30',
      BACKENDS: '^hard cliff$',
      ROWS: 'perfect|static, lowest C|^adaptive$|live limit',
      BENCH_CHART: '0',
    })
    expect(code, out).toBe(0)
    for (const name of [
      'goodput / ideal, C=30',
      'goodput / perfect, C=10',
      'failed runs, C=10',
      'good p99 ms, C=40',
      'bars met',
      'adaptive figure when cleared',
    ]) {
      expect(row(out, name), name).toBeDefined()
    }
    const r = json('adaptive')
    expect(r.rows.map((x: { label: string }) => x.label)).toEqual(['perfect limit', 'static, lowest C', 'adaptive'])
    // Each row's goodput read against the perfect limit's, phase by phase (the perfect row's own is 1).
    expect(r.rows[0].vsPerfect).toEqual([1, 1, 1])
    const adaptive = r.rows[2]
    expect(adaptive.vsPerfect).toHaveLength(3)
    expect(adaptive.phases).toHaveLength(3)
    expect(adaptive.limits.length).toBeGreaterThan(10)
    // Within its bounds all along, and it moved off its start.
    expect(Math.min(...adaptive.limits.map((l: { limit: number }) => l.limit))).toBeGreaterThanOrEqual(2)
    expect(Math.max(...adaptive.limits.map((l: { limit: number }) => l.limit))).toBeGreaterThan(2)
    // The live limit was in force while held.
    expect(r.override.held.runs).toBeGreaterThan(0)
    expect(r.override.adaptiveAtClear).not.toBeNull()
  })

  it('stall: a Redis pause during a crowd, each policy reports its handler runs and failures', {
    timeout: 90_000,
  }, async () => {
    const { code, out } = await runBench('stall.ts', {
      CONNECTIONS: '40',
      IMPATIENT: '5',
      PAUSES: '300',
      MODES: 'request,session',
      POLICIES: 'local,closed',
    })
    expect(code, out).toBe(0)
    const r = json('stall')
    expect(r.rows.map((x: { mode: string; policy: string }) => `${x.mode} ${x.policy}`)).toEqual([
      'request local',
      'request closed',
      'session local',
      'session closed',
    ])
    for (const x of r.rows) expect(x.runs, `${x.mode} ${x.policy}`).toBeGreaterThan(0)
  })

  it('proxy: origin, nginx, our proxy three ways, every core each, and the hug through it with no origin failure', {
    timeout: 120_000,
  }, async () => {
    const { code, out } = await runBench('proxy.ts', { SECONDS: '1', CONNECTIONS: '10', HUG_CONNECTIONS: '100' })
    expect(code, out).toBe(0)
    for (const name of [
      'origin direct',
      'nginx proxy_pass (1 worker)',
      'airlock proxy, no gate',
      'airlock proxy, pass holders',
      'airlock proxy, request mode, redis',
    ]) {
      expect(row(out, name), name).toBeDefined()
    }
    // Every core each (the count is the machine's).
    for (const start of ['| nginx proxy_pass (auto: ', '| airlock proxy --workers auto ('])
      expect(out.split('\n').filter((l) => l.startsWith(start)).length, start).toBeGreaterThan(0)
    const r = json('proxy')
    for (const x of r.rows.filter((y: { rps: number | null }) => y.rps !== null))
      expect(x.rps, x.name).toBeGreaterThan(0)
    expect(r.hug.reachedOrigin).toBeGreaterThan(0)
    expect(r.hug.originFailures).toBe(0)
  })
})
