/**
 * The per-minute history on a real private redis-server: two instances (two clients, two stores)
 * add their parts and the minutes add up to what both saw; two real gates' admissions and busy
 * answers too; every key carries the gate's hash tag and an expiry; the line at the minute's end
 * is the store's count; and a week of minutes from two instances takes no more than the bytes
 * docs/observability.md states.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGate, type RequestView } from '../../src/gate/gate.js'
import { MinuteTally } from '../../src/core/history.js'
import { bucketOf } from '../../src/core/histogram.js'
import { airlockReport } from '../../src/core/report.js'
import { createWaitingRoom } from '../../src/core/waiting-room.js'
import { historyFor, type MinutePart } from '../../src/stores/history.js'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { expectCsvAgrees } from '../helpers/report.js'
import { recordingLogger } from '../helpers/stores.js'

requireRedis()
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0)
const MIN = 60_000
const DAY = 86_400_000

describe.runIf(redisAvailable)('history on Redis', () => {
  let redis: PrivateRedis
  let a: RedisStore
  let b: RedisStore
  beforeAll(async () => {
    redis = await startRedis()
    a = redisStore({ client: redis.client() })
    b = redisStore({ client: redis.client() })
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await redis?.stop()
  })

  it('two instances: each minute holds the sum of both parts, the waits merged, the line at the end', async () => {
    const clock = { t: T0 + 1_000 }
    const tallyOf = (store: RedisStore) =>
      new MinuteTally({ storage: historyFor(store)!, name: 'two', keepMs: DAY, now: () => clock.t, timer: false })
    const [ta, tb] = [tallyOf(a), tallyOf(b)]
    const seen = { a: 0, b: 0 }
    for (let minute = 0; minute < 3; minute++) {
      clock.t = T0 + minute * MIN + 1_000
      for (let i = 0; i <= minute * 4; i++) ta.admitted('line', 1_000 * (i + 1))
      for (let i = 0; i < 7; i++) tb.admitted('slot', null)
      seen.a += minute * 4 + 1
      seen.b += 7
      tb.turnedAway('full')
      ta.released('origin', 5_000)
    }
    // Two wait in line when the minutes are added.
    const room = createWaitingRoom({ name: 'two', limit: 1, ttl: 60_000, store: a })
    for (const v of ['v1', 'v2', 'v3']) await room.enter(v)
    clock.t = T0 + 3 * MIN + 2_000
    await Promise.all([ta.flush(), tb.flush()])
    const report = await airlockReport({ store: b, name: 'two', from: T0, to: T0 + 3 * MIN })
    expect(report.rows.map((r) => [r.admitted, r.admittedFromLine, r.turnedAway, r.released, r.inLine])).toEqual([
      [1 + 7, 1, 1, 1, null],
      [5 + 7, 5, 1, 1, null],
      [9 + 7, 9, 1, 1, 2],
    ])
    expect(report.totals.admitted).toBe(seen.a + seen.b)
    expect(report.totals.waitMax).toBe(9)
    // The range's median wait from the merged counts of its 15 waits (1 s to 9 s: the 8th is 4 s).
    expect(report.totals.waitP50!).toBeGreaterThanOrEqual(3.4)
    expect(report.totals.waitP50!).toBeLessThanOrEqual(4.8)
    expectCsvAgrees(report)
    const keys = await redis.client().keys('*:hm:*')
    expect(keys.length).toBe(3) // the line was read into the last minute that ended
    for (const key of keys) {
      expect(key.startsWith('{airlock:two}:hm:')).toBe(true)
      const ttl = await redis.client().pttl(key)
      expect(ttl).toBeGreaterThan(DAY - MIN)
      expect(ttl).toBeLessThanOrEqual(DAY)
    }
  })

  it("two gate instances: the history's admissions and busy answers are what both gates answered", async () => {
    const view = (ip: string): RequestView => ({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html' },
      secure: false,
      request: undefined,
      ip,
    })
    const options = { name: 'shop', limit: 3, logger: recordingLogger(), secret: 's'.repeat(32), history: { days: 2 } }
    const gates = [createGate({ ...options, store: a }), createGate({ ...options, store: b })]
    const t0 = Date.now()
    const answered = { admit: 0, busy: 0 }
    for (let i = 0; i < 12; i++) {
      const d = await gates[i % 2]!.decide(view(`10.1.${i}.1`))
      if (d.kind === 'admit' || d.kind === 'busy') answered[d.kind]++
    }
    expect(answered).toEqual({ admit: 3, busy: 9 })
    await Promise.all(gates.map((g) => g.close()))
    const report = await airlockReport({ store: a, name: 'shop', from: t0 - MIN, to: Date.now() })
    expect(report.totals).toMatchObject({ admitted: 3, turnedAway: 9, turnedAwayBy: { full: 9 } })
    for (const key of await redis.client().keys('{airlock:shop}:hm:*')) {
      const ttl = await redis.client().pttl(key)
      expect(ttl).toBeGreaterThan(DAY)
      expect(ttl).toBeLessThanOrEqual(2 * DAY)
    }
  })

  it('a week of minutes from two instances takes no more than the documented bytes', async () => {
    // The bar, as docs/observability.md states it ("A week of minutes ... at most N bytes").
    const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8')
    const bar = Number(/a week of busy minutes takes at most ([\d,]+) bytes/.exec(doc)?.[1]?.replace(/,/g, ''))
    expect(bar).toBeGreaterThan(0)
    const storage = historyFor(a)!
    const first = Math.floor(T0 / MIN)
    // A busy minute as an instance adds it: admissions from the line, busy answers of two reasons,
    // releases of two causes, waits over 12 buckets and visits over 10.
    const part = (minute: number, seed: number): MinutePart => {
      const add: Record<string, number> = {
        a: 120 + seed,
        al: 90,
        't.full': 40,
        't.client-share': 3,
        ab: 4,
        'r.visitor': 100,
        'r.expiry': 15,
      }
      for (let i = 0; i < 12; i++) add[`w${bucketOf(2_000 * 1.19 ** i)}`] = 5 + ((seed + i) % 7)
      for (let i = 0; i < 10; i++) add[`v${bucketOf(20_000 * 1.19 ** i)}`] = 8 + ((seed + i) % 5)
      return { minute, add, max: { wm: 180_000 + seed, vm: 600_000 + seed } }
    }
    const minutes = 7 * 1440
    for (let m = 0; m < minutes; m += 60) {
      const hour = (s: number) => Array.from({ length: 60 }, (_, i) => part(first + m + i, s + i))
      await Promise.all([storage.add('week', hour(1), 8 * DAY), historyFor(b)!.add('week', hour(2), 8 * DAY)])
    }
    const client = redis.client()
    const keys = await client.keys('{airlock:week}:hm:*')
    expect(keys.length).toBe(minutes)
    const pipeline = client.pipeline()
    for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '0')
    const sizes = ((await pipeline.exec()) ?? []).map(([, n]) => Number(n))
    const bytes = sizes.reduce((x, y) => x + y, 0)
    console.log(
      `history: a week of busy minutes (two instances) takes ${bytes} bytes in Redis (${Math.round(bytes / 7)} a day)`,
    )
    expect(bytes).toBeLessThanOrEqual(bar)
    // Every key expires.
    const ttls = await Promise.all(keys.slice(0, 50).map((k) => client.pttl(k)))
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(0)
  }, 120_000)
})
