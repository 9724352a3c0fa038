/**
 * The operator steers a hug (a program, not a test; part of `npm run hug`).
 *
 * Two instances of a gated site (test/fixtures/fleet-server.ts: request mode, each handler waits
 * WORK_MS) share one private Redis at limit LIMIT (40). autocannon drives both with CONNECTIONS
 * (60) connections each for 3 x PHASE seconds (5). After the first phase the operator lowers the
 * limit to LOW (10) with `airlockControl().set({ limit })`; after the second it clears it. The
 * table shows how long the backend's in-flight count (across both instances, from the handlers'
 * own enter/exit events) took to follow each change, and the throughput of each phase.
 *
 * Env: LIMIT, LOW, WORK_MS, CONNECTIONS, PHASE (s), BENCH_RESULTS=<dir>.
 */
import autocannon from 'autocannon'
import { Redis } from 'ioredis'
import { airlockControl } from '../src/core/control.js'
import { redisStore } from '../src/redis.js'
import { startRedis } from '../test/helpers/redis.js'
import { startFleet, type FleetEvent } from '../test/http/fleet.js'
import { describeMachine, envNumber, fixed, machine, markdownTable, redisVersion, writeResults } from './lib.js'

const LIMIT = envNumber('LIMIT', 40)
const LOW = envNumber('LOW', 10)
const WORK_MS = envNumber('WORK_MS', 50)
const CONNECTIONS = envNumber('CONNECTIONS', 60)
/** Phase time not counted after each change (ms): the fleet's figures are read from then on. */
const SETTLE_MS = envNumber('SETTLE_MS', 1000)
const PHASE = envNumber('PHASE', 5)

/** In flight across the fleet, sampled every 10 ms from `from` to `to` (ms, wall clock). */
function timeline(events: readonly FleetEvent[], from: number, to: number): { t: number; n: number }[] {
  const sorted = [...events].sort((a, b) => a.t - b.t)
  const out: { t: number; n: number }[] = []
  let i = 0
  let n = 0
  for (let t = from; t <= to; t += 10) {
    while (i < sorted.length && sorted[i]!.t <= t) n += sorted[i++]!.e === 'enter' ? 1 : -1
    out.push({ t, n })
  }
  return out
}

/**
 * ms from `at` until the in-flight count meets `ok`: from then on to the phase's end (`stays`, for
 * a lowered limit: nothing above it after), or first (for a raised one: it fluctuates below).
 */
function followedAfter(
  points: { t: number; n: number }[],
  at: number,
  end: number,
  ok: (n: number) => boolean,
  stays: boolean,
): number | null {
  let since: number | null = null
  for (const p of points) {
    if (p.t < at || p.t > end) continue
    if (ok(p.n)) since ??= p.t
    else if (stays) since = null
    if (since !== null && !stays) break
  }
  return since === null ? null : since - at
}

const redis = await startRedis()
const client = new Redis(redis.url)
const store = redisStore({ client })
const fleet = await startFleet(2, {
  REDIS_URL: redis.url,
  NAME: 'steer-bench',
  MODE: 'request',
  LIMIT: String(LIMIT),
  WORK_MS: String(WORK_MS),
})
const control = airlockControl({ name: 'steer-bench', store, by: 'bench' })
try {
  const t0 = Date.now()
  const runs = fleet.urls.map((url) =>
    autocannon({ url: `${url}/work`, connections: CONNECTIONS, duration: PHASE * 3 }),
  )
  const lowered = t0 + PHASE * 1000
  const raised = t0 + PHASE * 2000
  setTimeout(() => void control.set({ limit: LOW }), lowered - Date.now())
  setTimeout(() => void control.set({ limit: null }), raised - Date.now())
  const results = await Promise.all(runs)
  const end = t0 + PHASE * 3000
  const points = timeline(fleet.events, t0, end)
  const phaseStats = (from: number, to: number) => {
    const inPhase = fleet.events.filter((e) => e.e === 'exit' && e.t >= from + SETTLE_MS && e.t < to)
    const max = Math.max(0, ...points.filter((p) => p.t >= from + SETTLE_MS && p.t < to).map((p) => p.n))
    return { perSecond: inPhase.length / ((to - from - SETTLE_MS) / 1000), max }
  }
  const phases = [
    { label: `limit ${LIMIT}`, ...phaseStats(t0, lowered), followMs: null as number | null },
    {
      label: `lowered to ${LOW}`,
      ...phaseStats(lowered, raised),
      followMs: followedAfter(points, lowered, raised, (n) => n <= LOW, true),
    },
    {
      label: `cleared (${LIMIT})`,
      ...phaseStats(raised, end),
      followMs: followedAfter(points, raised, end, (n) => n >= LIMIT * 0.9, false),
    },
  ]
  const refused = results.reduce((sum, r) => sum + r.non2xx, 0)
  console.log(`# The operator steers a hug\n\n${describeMachine(machine(await redisVersion(client)))}`)
  console.log(
    `2 instances on one Redis, request mode, handlers ${WORK_MS} ms, ${CONNECTIONS * 2} connections; phases of ${PHASE} s (figures from ${SETTLE_MS / 1000} s into each)\n`,
  )
  console.log(
    markdownTable(
      [
        'phase',
        'handlers done/s',
        'max in flight (both)',
        'in flight followed the change after (lowered: at most the new limit from then on; raised: first at 90 % of it)',
      ],
      phases.map((p) => [
        p.label,
        fixed(p.perSecond),
        p.max,
        p.followMs === null ? (p.label.startsWith('limit') ? '' : 'did not') : `${p.followMs} ms`,
      ]),
    ),
  )
  console.log(`\nbusy answers: ${refused}; the change applies on every instance from the store's pub/sub (no restart).`)
  writeResults('steer', {
    limit: LIMIT,
    low: LOW,
    workMs: WORK_MS,
    connections: CONNECTIONS * 2,
    phaseSeconds: PHASE,
    phases,
    refused,
  })
} finally {
  await fleet.stop()
  await store.close()
  client.disconnect()
  await redis.stop()
}
