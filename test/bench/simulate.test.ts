/**
 * The fleet simulator in `npm test` (docs/simulate.md): a small matrix of cells, each checked
 * against the bars, so an estimator change that floods a simulated fleet, starves it or leaves it
 * over a dropped capacity fails CI, with no timing at all (a virtual clock: the same figures on any
 * machine, at any load). And the simulator itself: deterministic, and its bars catch a flood.
 */
import { describe, expect, it } from 'vitest'
import { seeded, VirtualClock } from '../../bench/simulate/clock.js'
import { BACKENDS, judge, runMatrix } from '../../bench/simulate/matrix.js'
import { type Cell, runCell } from '../../bench/simulate/run.js'
import { json, row, runBench } from './run.js'

const backend = (kind: string) => BACKENDS.filter((b) => b.label === kind)

describe('the virtual clock', () => {
  it('runs events in time order, ties in the order they were scheduled, and only up to the end', async () => {
    const clock = new VirtualClock()
    const seen: string[] = []
    clock.at(20, () => seen.push('b'))
    clock.at(10, () => seen.push('a'))
    clock.at(20, () => seen.push('c'))
    clock.after(5, () => clock.after(100, () => seen.push('late')))
    await clock.run(50)
    expect(seen).toEqual(['a', 'b', 'c'])
    expect(clock.now).toBe(50)
  })

  it('lets awaited answers go on before the next event (a store round trip)', async () => {
    const clock = new VirtualClock()
    const seen: string[] = []
    void (async () => {
      const v = await clock.answer(3, () => 'answer')
      seen.push(`${v} at ${clock.now}`)
      await clock.answer(3, () => null)
      seen.push(`second at ${clock.now}`)
    })()
    clock.at(4, () => seen.push('event at 4'))
    await clock.run(10)
    expect(seen).toEqual(['answer at 3', 'event at 4', 'second at 6'])
  })

  it('draws the same numbers from the same seed', () => {
    const a = seeded(7)
    const b = seeded(7)
    const xs = Array.from({ length: 5 }, a)
    expect(xs).toEqual(Array.from({ length: 5 }, b))
    expect(new Set(xs).size).toBe(5)
  })
})

describe('the simulator', () => {
  it('gives the same figures for the same seed, and others for another', async () => {
    const cell: Omit<Cell, 'seed'> = {
      backend: 'cliff',
      phases: [30, 10],
      schedule: 'steady',
      instances: 2,
      shield: 'adaptive',
    }
    const a = await runCell({ ...cell, seed: 3 })
    const b = await runCell({ ...cell, seed: 3 })
    const c = await runCell({ ...cell, seed: 4 })
    expect(b.phases).toEqual(a.phases)
    expect(b.timeline).toEqual(a.timeline)
    expect(c.timeline).not.toEqual(a.timeline)
  })

  it('has bars that catch a flood: a static limit at the highest C fails when C drops', async () => {
    const r = await runCell({
      backend: 'cliff',
      phases: [30, 10],
      schedule: 'steady',
      instances: 8,
      shield: 'static',
      seed: 1,
    })
    const perfect = await runCell({
      backend: 'cliff',
      phases: [30, 10],
      schedule: 'steady',
      instances: 8,
      shield: 'perfect',
      seed: 1,
    })
    const misses = judge(
      r,
      perfect.phases.map((p) => p.goodput),
    )
    expect(misses.some((m) => m.startsWith('C=10: failures'))).toBe(true)
    expect(misses.some((m) => m.startsWith('C=10: under C after never'))).toBe(true)
    expect(r.phases[1]!.failureRate).toBeGreaterThan(0.5)
  })
})

// Each cell with the perfect limit beside it: about a second of CPU a cell. Cells that meet every
// bar today (docs/simulate.md has the whole matrix, and the cells that miss one, with why).
describe('the adaptive limit meets the bars in a small matrix (1 to 32 instances)', () => {
  const cells = [
    { backends: backend('capacity halved, recovered'), schedules: ['steady'], instances: [1, 8, 32] },
    { backends: backend('fast cliff'), schedules: ['ramp'], instances: [1, 2, 8] },
    { backends: backend('slow failure'), schedules: ['steady'], instances: [8] },
    { backends: backend('slow failure'), schedules: ['spike'], instances: [1] },
    { backends: backend('worker pool'), schedules: ['steady'], instances: [1, 32] },
    { backends: backend('gradual slowdown'), schedules: ['ramp'], instances: [1, 32] },
  ] as const
  for (const c of cells)
    it(`${c.backends[0]!.label}: ${c.schedules.join(', ')} x N = ${c.instances.join(', ')}`, {
      timeout: 120_000,
    }, async () => {
      const judged = await runMatrix({ backends: c.backends, schedules: [...c.schedules], instances: [...c.instances] })
      expect(judged).toHaveLength(c.instances.length)
      const misses = judged.flatMap((r) => r.misses.map((m) => `${r.schedule}, N = ${r.instances}: ${m}`))
      expect(misses).toEqual([])
    })
})

describe('the commands (smoke: a cell or two)', () => {
  it('bench:simulate prints a table per backend, writes its JSON, and traces a cell', { timeout: 60_000 }, async () => {
    const env = { BACKENDS: '^fast cliff$', INSTANCES: '1,8', SCHEDULES: 'spike', BENCH_CHART: '0' }
    const { code, out } = await runBench('simulate.ts', env, 55_000)
    expect(code, out).toBe(0)
    expect(out).toContain('## fast cliff')
    expect(row(out, 'spike, 8'), out).toBeDefined()
    const r = json('simulate')
    expect(r.cells.map((c: { instances: number }) => c.instances)).toEqual([1, 8])
    expect(r.cells[0].perfect).toHaveLength(3)
    const trace = await runBench('simulate.ts', { TRACE: 'cliff steady 2' }, 55_000)
    expect(trace.code, trace.out).toBe(0)
    expect(trace.out).toMatch(/ms {2}\d+ -> \d+ {2}growth/)
  })

  it('bench:calibrate sets the simulator beside real runs, figure by figure', { timeout: 60_000 }, async () => {
    // The committed run of bench/adaptive.ts, one seed.
    const { code, out } = await runBench('calibrate.ts', { REAL: 'bench/results/adaptive.json', SEEDS: '1' }, 55_000)
    expect(code, out).toBe(0)
    expect(row(out, 'adaptive, C=30'), out).toBeDefined()
    const r = json('calibration')
    expect(r.figures.length).toBeGreaterThan(40)
    expect(r.figures.every((f: { agree: boolean }) => typeof f.agree === 'boolean')).toBe(true)
  })
})
