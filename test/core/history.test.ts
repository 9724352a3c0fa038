/**
 * The per-minute history on the memory store: an instance's tally (fed directly, on a clock the
 * test moves) adds up minute by minute; waits and visits merge as histograms; the line at the
 * minute's end; the gate's own figures (admitted, turned away) reach the history through its
 * `history` option; the report's rows, totals and CSV say the same.
 */
import { describe, expect, it } from 'vitest'
import { createGate, type RequestView } from '../../src/gate/gate.js'
import { MinuteTally } from '../../src/core/history.js'
import { bucketBounds, bucketOf, BUCKETS, quantile } from '../../src/core/histogram.js'
import { airlockReport, reportCsv, summarize } from '../../src/core/report.js'
import { createWaitingRoom } from '../../src/core/waiting-room.js'
import { historyFor } from '../../src/stores/history.js'
import { memoryStore } from '../../src/stores/memory.js'
import { csvRecords, expectCsvAgrees } from '../helpers/report.js'
import { recordingLogger } from '../helpers/stores.js'

const T0 = Date.UTC(2026, 11, 1, 9, 0, 0)
const MIN = 60_000

/** A tally on `store` whose clock the test sets. */
function tally(store: ReturnType<typeof memoryStore>, name: string, clock: { t: number }) {
  return new MinuteTally({
    storage: historyFor(store)!,
    name,
    keepMs: 30 * 86_400_000,
    now: () => clock.t,
    timer: false,
  })
}

describe('histogram buckets', () => {
  it('cover a quarter of a power of two each, from 250 ms to over an hour', () => {
    expect(bucketOf(0)).toBe(0)
    expect(bucketOf(249)).toBe(0)
    expect(bucketOf(250)).toBe(1)
    expect(bucketOf(3_600_000)).toBeLessThan(BUCKETS - 1)
    expect(bucketOf(5_000_000)).toBe(BUCKETS - 1)
    for (const ms of [1, 300, 999, 1000, 1500, 61_000, 3_599_999]) {
      const [from, to] = bucketBounds(bucketOf(ms))
      expect(ms).toBeGreaterThanOrEqual(from)
      expect(ms).toBeLessThan(to)
    }
  })

  it('percentiles from counts are within a bucket of the true ones, never above the maximum', () => {
    const waits = Array.from({ length: 1000 }, (_, i) => 1000 + i * 59) // 1 s to about 60 s
    const counts = new Map<number, number>()
    for (const w of waits) counts.set(bucketOf(w), (counts.get(bucketOf(w)) ?? 0) + 1)
    const p50 = quantile(counts, 0.5, Math.max(...waits))!
    const p90 = quantile(counts, 0.9, Math.max(...waits))!
    expect(Math.abs(p50 - waits[499]!) / waits[499]!).toBeLessThan(0.1)
    expect(Math.abs(p90 - waits[899]!) / waits[899]!).toBeLessThan(0.1)
    const beyond = quantile(new Map([[BUCKETS - 1, 3]]), 0.9, 7_000_000)!
    expect(beyond).toBeGreaterThanOrEqual(bucketBounds(BUCKETS - 1)[0])
    expect(beyond).toBeLessThanOrEqual(7_000_000)
    expect(quantile(new Map([[bucketOf(3000), 5]]), 0.5, 2_100)).toBe(2_100)
    expect(quantile(new Map(), 0.5)).toBeNull()
  })
})

describe('history on the memory store', () => {
  it('adds each minute of two instances up, merges their waits as histograms, keeps the largest maximum', async () => {
    const store = memoryStore()
    const clock = { t: T0 + 5_000 }
    const a = tally(store, 'shop', clock)
    const b = tally(store, 'shop', clock)
    for (let i = 0; i < 10; i++) a.admitted('line', 2_000)
    for (let i = 0; i < 10; i++) b.admitted('line', 40_000)
    b.admitted('slot', null)
    a.turnedAway('full')
    b.turnedAway('full')
    b.turnedAway('store-unavailable')
    a.abandoned(3)
    a.released('visitor', 30_000)
    b.released('expiry', 60_000)
    clock.t = T0 + MIN + 10_000 // the next minute
    a.admitted('slot', null)
    b.released('operator', null)
    await Promise.all([a.flush(), b.flush()]) // the first minute only
    let report = await airlockReport({ store, name: 'shop', from: T0, to: T0 + 10 * MIN })
    expect(report.rows).toHaveLength(1)
    const first = report.rows[0]!
    expect(first).toMatchObject({
      minute: new Date(T0).toISOString(),
      admitted: 21,
      admittedFromLine: 20,
      turnedAway: 3,
      turnedAwayBy: { full: 2, 'store-unavailable': 1 },
      abandoned: 3,
      released: 2,
      releasedBy: { visitor: 1, expiry: 1 },
      inLine: 0, // read when the minute was added: nobody in line
      waitMax: 40,
    })
    // The fleet's median is the short waits' (within their bucket, 19 % wide), from the merged
    // counts; its 90th percentile among the long ones.
    expect(first.waitP50!).toBeGreaterThanOrEqual(2)
    expect(first.waitP50!).toBeLessThanOrEqual(2.4)
    expect(first.waitP90!).toBeGreaterThan(36)
    expect(first.waitP90!).toBeLessThanOrEqual(40)
    expect(first.visitP50!).toBeGreaterThan(27)
    expect(first.visitP90!).toBeLessThanOrEqual(60)
    await Promise.all([a.close(), b.close()])
    report = await airlockReport({ store, name: 'shop', from: T0, to: T0 + 10 * MIN })
    expect(report.rows.map((r) => [r.admitted, r.released])).toEqual([
      [21, 2],
      [1, 1],
    ])
    expect(report.totals).toMatchObject({
      minutes: 2,
      admitted: 22,
      turnedAway: 3,
      released: 3,
      abandoned: 3,
      admittedPeak: 21,
      waitMax: 40,
    })
    expect(report.totals.releasedBy).toEqual({ expiry: 1, operator: 1, visitor: 1 })
    expectCsvAgrees(report)
  })

  it('records the line at the minute end, also for a minute nobody was admitted in', async () => {
    const store = memoryStore()
    const room = createWaitingRoom({ name: 'line', limit: 1, ttl: 60_000, store })
    await room.enter('v1')
    await room.enter('v2')
    await room.enter('v3') // two wait
    const clock = { t: T0 + 61_000 }
    const t = tally(store, 'line', clock)
    await t.flush() // nothing counted: the minute that ended is sent for its line
    const report = await airlockReport({ store, name: 'line', from: T0, to: T0 + MIN })
    expect(report.rows.map((r) => [r.minute, r.inLine, r.admitted])).toEqual([[new Date(T0).toISOString(), 2, 0]])
    await t.close()
  })

  it('keeps pending minutes when the store fails, and sends them with the next flush', async () => {
    const store = memoryStore()
    const storage = historyFor(store)!
    let fail = true
    const errors: unknown[] = []
    const flaky = {
      kind: 'flaky',
      add: (n: string, p: never, k: number) => (fail ? Promise.reject(new Error('down')) : storage.add(n, p, k)),
      read: storage.read.bind(storage),
    }
    const clock = { t: T0 }
    const t = new MinuteTally({
      storage: flaky,
      name: 'f',
      keepMs: 86_400_000,
      now: () => clock.t,
      timer: false,
      onError: (e) => errors.push(e),
    })
    t.admitted('slot', null)
    clock.t += MIN
    await t.flush()
    expect(errors).toHaveLength(1)
    t.admitted('slot', null)
    clock.t += MIN
    fail = false
    await t.flush()
    const report = await airlockReport({ store, name: 'f', from: T0, to: T0 + 5 * MIN })
    expect(report.rows.map((r) => r.admitted)).toEqual([1, 1])
  })

  it("a gate's history: its admissions and busy answers reach the store at close; history: false keeps none", async () => {
    const store = memoryStore()
    const view = (ip: string): RequestView => ({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html' },
      secure: false,
      request: undefined,
      ip,
    })
    const gate = createGate({ name: 'g', limit: 2, store, logger: recordingLogger(), secret: 's'.repeat(32) })
    const off = createGate({
      name: 'off',
      limit: 2,
      store,
      logger: recordingLogger(),
      secret: 's'.repeat(32),
      history: false,
    })
    const t0 = Date.now()
    for (let i = 0; i < 5; i++) {
      await gate.decide(view(`10.0.${i}.1`))
      await off.decide(view(`10.0.${i}.1`))
    }
    await gate.close()
    await off.close()
    const report = await airlockReport({ store, name: 'g', from: t0 - MIN, to: Date.now() })
    expect(report.totals).toMatchObject({ admitted: 2, turnedAway: 3, turnedAwayBy: { full: 3 } })
    expect((await airlockReport({ store, name: 'off', from: t0 - MIN, to: Date.now() })).rows).toEqual([])
  })

  it('the CSV quotes what needs quoting and never writes a formula, whatever names the store holds (issue 38)', () => {
    const report = summarize('g', 0, 0, [])
    const row = {
      ...report.totals,
      minute: '2026-11-27T10:00:00.000Z',
      inLine: null,
      turnedAwayBy: {
        '=HYPERLINK("http://evil","x")': 2,
        'a,b': 1,
        '@SUM(A1)': 1,
        '+1': 1,
        '-1': 1,
        'say "hi"\r\nbye': 1,
        'x\r\n=1+1': 1,
        full: 3,
      },
    }
    const csv = reportCsv({ ...report, rows: [row] })
    const records = csvRecords(csv)
    expect(records.length, 'a header and one row').toBe(2)
    const [header, values] = records
    expect(header!.length).toBe(values!.length)
    for (const cell of [...header!, ...values!]) expect(cell, cell).not.toMatch(/^[=+\-@\t\r]/)
    expect(header).toEqual(
      expect.arrayContaining([
        'turnedAway.full',
        'turnedAway.a,b',
        'turnedAway.=HYPERLINK("http://evil","x")',
        'turnedAway.say "hi"\r\nbye',
      ]),
    )
    expect(csv).toContain('"turnedAway.a,b"')
  })

  it('airlockReport checks its options', async () => {
    await expect(airlockReport({ name: 'has space' })).rejects.toThrow(/name must be/)
    await expect(airlockReport({ from: 'tomorrow' })).rejects.toThrow(/from must be a Date/)
    await expect(airlockReport({ from: 2000, to: 1000 })).rejects.toThrow(/from must be before to/)
    await expect(airlockReport({ bogus: 1 } as never)).rejects.toThrow(/bogus/)
  })
})
