/**
 * The look back includes the minute in progress: the store has a minute only once it ended (each
 * instance adds its part 1 to 5 s later), so the dashboard takes the newest minutes from the
 * instances' live counters (src/dashboard/live-minutes.ts) until the store has them.
 */
import { createServer } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { createDashboard } from '../../src/dashboard/server.js'
import { LiveMinutes, type LiveMinute } from '../../src/dashboard/live-minutes.js'
import { LookBacks, type LookBack } from '../../src/dashboard/look-back.js'
import { createGate, type RequestView } from '../../src/gate/gate.js'
import type { GateCounters } from '../../src/gate/status-types.js'
import { zeroCounters } from '../../src/gate/stats.js'
import { historyFor } from '../../src/stores/history.js'
import { memoryStore } from '../../src/stores/memory.js'
import { until } from '../helpers/wait.js'

const TOKEN = 'a-dashboard-token-for-tests'
const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const MIN = 60_000
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

const view = (): RequestView => ({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })

/** Counters with the given figures (the rest 0). */
function counters(c: Partial<GateCounters>): GateCounters {
  return { ...zeroCounters(), ...c }
}

describe('the look back over HTTP', () => {
  it("shows the minute in progress at once: admissions and refusals of this minute are in the hour's totals and its last point, marked open", async () => {
    const store = memoryStore()
    const gate = createGate({ name: 'shop', store, limit: 3, secret: SECRET, statusInterval: 100 })
    closers.push(() => gate.close())
    const dash = createDashboard({ token: TOKEN, store, names: ['shop'], interval: 100 })
    closers.push(() => dash.close())
    const server = createServer((req, res) => dash.handle(req, res))
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    closers.push(() => new Promise((ok) => server.close(ok)))
    await dash.ready
    const kinds: string[] = []
    for (let i = 0; i < 5; i++) kinds.push((await gate.decide(view())).kind)
    expect(kinds).toEqual(['admit', 'admit', 'admit', 'busy', 'busy'])
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/history?name=shop&range=hour`
    let answer: LookBack | undefined
    // Within a few samples (100 ms each), not once the minute has ended.
    await until(
      async () => {
        answer = (await (await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as LookBack
        return answer.totals.admitted === 3 && answer.totals.turnedAway === 2
      },
      3_000,
      100,
    ).catch(() => undefined)
    expect(answer?.totals).toMatchObject({ admitted: 3, turnedAway: 2 })
    const last = answer!.points.at(-1)!
    expect(last.open).toBe(true)
    expect(answer!.open).toBe(last.t)
    expect(answer!.points.filter((p) => p.open)).toHaveLength(1)
  })
})

describe('LookBacks', () => {
  it('merges the live minutes the store does not have yet; a settled minute is the store’s', async () => {
    const store = memoryStore()
    const now = Date.now()
    const open = Math.floor(now / MIN)
    // The store has the minute before the last one (settled) and a part of the last one.
    await historyFor(store)!.add(
      'shop',
      [
        { minute: open - 2, add: { a: 7 }, max: {} },
        { minute: open - 1, add: { a: 2 }, max: {} },
      ],
      MIN * 60,
    )
    const live: LiveMinute[] = [
      { minute: open - 2, fields: { a: 1 }, open: false, since: (open - 2) * MIN }, // older than the store's: ignored
      { minute: open - 1, fields: { a: 5, 't.other': 1 }, open: false, since: (open - 1) * MIN },
      { minute: open, fields: { a: 4, q: 9 }, open: true, since: open * MIN },
    ]
    const backs = new LookBacks(store, { liveMinutes: () => live })
    const hour = await backs.get('shop', 'hour')
    const byMinute = new Map(hour.points.map((p) => [p.t / MIN, p]))
    expect(byMinute.get(open - 2)?.admitted).toBe(7)
    // The minute that ended seconds ago: the larger of the store's part and the live figure (the
    // store's alone once its instances have surely added their parts, 10 s after its end).
    expect(byMinute.get(open - 1)?.admitted).toBe(now % MIN < 10_000 ? 5 : 2)
    expect(byMinute.get(open)).toMatchObject({ admitted: 4, inLine: 9, open: true })
    expect(hour.open).toBe(open * MIN)
    // The store's answer is kept briefly; the minute in progress is merged into every answer.
    live[2] = { ...live[2]!, fields: { a: 6, q: 2 } }
    const again = await backs.get('shop', 'hour')
    expect(again.points.at(-1)).toMatchObject({ t: open * MIN, admitted: 6, inLine: 2, open: true })
    expect(again.totals.admitted).toBe(hour.totals.admitted + 2)
    expect(again.points).toHaveLength(60)
    // 30 days, an hour a point: the hour in progress is the open one.
    const month = await backs.get('shop', '30d')
    expect(month.points.at(-1)).toMatchObject({ open: true })
    expect(month.points.filter((p) => p.open)).toHaveLength(1)
    expect(month.totals.admitted).toBeGreaterThanOrEqual(11)
  })
})

describe('LiveMinutes', () => {
  const at = (minute: number, s: number): number => minute * MIN + s * 1000
  const M = 29_000_000

  it("counts each instance's growth since the minute began; the dashboard started within the minute counts from its first reading", () => {
    const live = new LiveMinutes()
    live.take(at(M, 20), [{ id: 'a', counters: counters({ admitted: 100, busy: 50 }) }], 0)
    expect(live.minutes()).toEqual([{ minute: M, fields: { q: 0 }, open: true, since: at(M, 20) }])
    live.take(
      at(M, 21),
      [{ id: 'a', counters: counters({ admitted: 103, busy: 52, clientShare: 1, abandoned: 2, admittedFromLine: 1 }) }],
      4,
    )
    expect(live.minutes()).toEqual([
      {
        minute: M,
        fields: { a: 3, al: 1, ab: 2, 't.client-share': 1, 't.other': 1, q: 4 },
        open: true,
        since: at(M, 20),
      },
    ])
  })

  it('a new instance counts from zero, one that stopped reporting keeps what it had; the minute that ended stays until the next one begins', () => {
    const live = new LiveMinutes()
    live.take(at(M, 50), [{ id: 'a', counters: counters({ admitted: 10 }) }], 0)
    live.take(at(M, 59), [{ id: 'a', counters: counters({ admitted: 12 }) }], 1)
    live.take(at(M + 1, 0), [{ id: 'a', counters: counters({ admitted: 13 }) }], 2)
    live.take(at(M + 1, 10), [{ id: 'b', counters: counters({ admitted: 4 }) }], 3) // a went away; b started
    expect(live.minutes()).toEqual([
      { minute: M, fields: { a: 2, q: 1 }, open: false, since: at(M, 50) },
      { minute: M + 1, fields: { a: 5, q: 3 }, open: true, since: at(M + 1, 0) },
    ])
    // A later minute: the ended one is M + 1 only if it was read; a gap forgets it.
    live.take(at(M + 3, 1), [{ id: 'b', counters: counters({ admitted: 6 }) }], 0)
    expect(live.minutes()).toEqual([{ minute: M + 3, fields: { a: 2, q: 0 }, open: true, since: at(M + 3, 0) }])
  })
})
