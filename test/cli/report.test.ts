/** `airlock report` as a real process on a private Redis: JSON, CSV and HTML of the same minutes agree; bad flags are usage errors. */
import { describe, expect, it } from 'vitest'
import { MinuteTally } from '../../src/core/history.js'
import { historyFor } from '../../src/stores/history.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { parseCsv } from '../helpers/report.js'
import { airlock } from './harness.js'

requireRedis()
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0)
type Ran = Awaited<ReturnType<typeof airlock>['exited']>

describe('airlock report', () => {
  const priv = usePrivateRedis()

  it('prints the same minutes as JSON, CSV and an HTML page', async () => {
    const clock = { t: T0 }
    const tally = new MinuteTally({
      storage: historyFor(priv.store)!,
      name: 'cli-shop',
      keepMs: 86_400_000,
      now: () => clock.t,
      timer: false,
    })
    for (let m = 0; m < 5; m++) {
      clock.t = T0 + m * 60_000 + 500
      for (let i = 0; i <= m; i++) tally.admitted('line', 1_000 * (m + 1))
      tally.turnedAway(m % 2 ? 'full' : 'store-unavailable')
      tally.released('visitor', 30_000)
    }
    await tally.close()
    const args = [
      'report',
      '--name',
      'cli-shop',
      '--redis',
      priv.redis.url,
      '--from',
      '2026-12-01T08:59:00Z',
      '--to',
      '2026-12-01T09:10:00Z',
    ]
    const [json, csv, html] = (await Promise.all(
      ['json', 'csv', 'html'].map((f) => airlock([...args, '--format', f]).exited),
    )) as [Ran, Ran, Ran]
    for (const r of [json, csv, html]) expect(r.code, r.stderr).toBe(0)
    const report = JSON.parse(json.stdout)
    expect(report.rows).toHaveLength(5)
    expect(report.totals).toMatchObject({
      admitted: 15,
      admittedFromLine: 15,
      turnedAway: 5,
      turnedAwayBy: { full: 2, 'store-unavailable': 3 },
      released: 5,
    })
    const rows = parseCsv(csv.stdout)
    expect(rows.map((r) => [r.minute, Number(r.admitted), Number(r['turnedAway.full']), Number(r.waitP50)])).toEqual(
      report.rows.map(
        (r: { minute: string; admitted: number; turnedAwayBy: Record<string, number>; waitP50: number }) => [
          r.minute,
          r.admitted,
          r.turnedAwayBy.full ?? 0,
          r.waitP50,
        ],
      ),
    )
    expect(html.stdout).toMatch(/^<!doctype html>/)
    expect(html.stdout.match(/<svg /g)?.length).toBe(4)
  })

  it.each([
    [['--format', 'pdf'], '--format must be one of json, csv, html'],
    [['--from', 'yesterday'], '--from must be an ISO 8601 time'],
    [['--from', '2026-12-02T00:00:00Z', '--to', '2026-12-01T00:00:00Z'], '--from must be before --to'],
  ])('%j is a usage error (exit 64)', async (flags, message) => {
    const r = await airlock(['report', '--name', 'x', '--redis', priv.redis.url, ...flags]).exited
    expect(r.code).toBe(64)
    expect(r.stderr).toContain(message)
  })
})
