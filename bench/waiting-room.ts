/**
 * Waiting room benchmark (a program, not a test): `npx tsx bench/waiting-room.ts`.
 *
 * 1. Poll latency: `getPosition` (and a re-`enter`) of random waiters in a line of 100 and in a
 *    line of 100,000, measured interleaved in one run on one private redis-server, next to a
 *    PING baseline.
 * 2. ETA accuracy in a steady state: constant service rate (every admitted visitor holds its slot
 *    for exactly HOLD_MS), arrivals at the same rate, so the line stays about the same length. Each
 *    visitor's `eta` at arrival is compared with the wait it then actually had.
 *
 * Bounded: about 40 s in all. Loopback only; the server is private and stopped at the end.
 */
import { cpus } from 'node:os'
import { performance } from 'node:perf_hooks'
import { createWaitingRoom, type WaitingRoom } from '../src/core/waiting-room.js'
import { redisStore } from '../src/stores/redis.js'
import { startRedis } from '../test/helpers/redis.js'

const SMALL = 100
const BIG = 100_000
const ROUNDS = 3000
const FILL_BATCH = 2000

const SLOTS = 4
const HOLD_MS = 200
const LINE = 40
const WARMUP_MS = 4000
const MEASURE_MS = 16_000

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function summary(samples: number[]): { p50: number; p99: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: pct(sorted, 50), p99: pct(sorted, 99), mean: samples.reduce((a, b) => a + b, 0) / samples.length }
}

const fmt = (ms: number): string => `${(ms * 1000).toFixed(0).padStart(6)} µs`

async function fill(room: WaitingRoom, count: number, prefix: string): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < count; i += FILL_BATCH) {
    const batch = []
    for (let j = i; j < Math.min(count, i + FILL_BATCH); j++) batch.push(room.enter(`${prefix}${j}`))
    const results = await Promise.all(batch)
    for (const r of results) if (r.status !== 'queued') throw new Error(`fill: expected queued, got ${r.status}`)
  }
  return performance.now() - started
}

async function pollLatency(redis: Awaited<ReturnType<typeof startRedis>>): Promise<void> {
  const client = redis.client({ maxRetriesPerRequest: 1 })
  const store = redisStore({ client, commandTimeout: 30_000 })
  const line = { limit: 1, ttl: 600_000, store, idleTimeout: 600_000, claimWindow: 600_000, maxLength: 0 }
  const small = createWaitingRoom({ name: 'bench-small', ...line })
  const big = createWaitingRoom({ name: 'bench-big', ...line })
  for (const room of [small, big]) {
    const r = await room.enter('holder')
    if (r.status !== 'admitted') throw new Error('holder not admitted')
  }
  const fillSmall = await fill(small, SMALL, 's')
  const fillBig = await fill(big, BIG, 'b')
  console.log(`filled ${SMALL} waiters in ${fillSmall.toFixed(0)} ms, ${BIG} waiters in ${fillBig.toFixed(0)} ms`)
  console.log(`(${((BIG / fillBig) * 1000).toFixed(0)} enters/s, pipelined in batches of ${FILL_BATCH})`)
  const used = await client.info('memory')
  console.log(`redis used_memory_human: ${/used_memory_human:(\S+)/.exec(used)?.[1]}`)

  const samples = { ping: [] as number[], smallPoll: [] as number[], bigPoll: [] as number[], smallEnter: [] as number[], bigEnter: [] as number[] }
  const time = async (into: number[], fn: () => Promise<unknown>): Promise<void> => {
    const t = performance.now()
    await fn()
    into.push(performance.now() - t)
  }
  const check = (pos: number | null, expected: number): void => {
    if (pos !== expected) throw new Error(`position ${pos}, expected ${expected}`)
  }
  for (let round = 0; round < ROUNDS + 200; round++) {
    const keep = round >= 200 // the first 200 rounds warm up
    const i = Math.floor(Math.random() * SMALL)
    const j = Math.floor(Math.random() * BIG)
    const sink = { ping: [] as number[], a: [] as number[], b: [] as number[], c: [] as number[], d: [] as number[] }
    await time(keep ? samples.ping : sink.ping, () => client.ping())
    await time(keep ? samples.smallPoll : sink.a, async () => check(await small.getPosition(`s${i}`), i + 1))
    await time(keep ? samples.bigPoll : sink.b, async () => check(await big.getPosition(`b${j}`), j + 1))
    await time(keep ? samples.smallEnter : sink.c, () => small.enter(`s${i}`))
    await time(keep ? samples.bigEnter : sink.d, () => big.enter(`b${j}`))
  }
  const base = summary(samples.ping).p50
  console.log('')
  console.log(`poll latency, ${ROUNDS} sequential calls each, interleaved (one round trip per call)`)
  console.log('operation                     waiters      p50        p99       mean    p50 / PING p50')
  const row = (label: string, waiters: string, s: number[]): void => {
    const x = summary(s)
    console.log(
      `${label.padEnd(28)} ${waiters.padStart(8)}  ${fmt(x.p50)}  ${fmt(x.p99)}  ${fmt(x.mean)}   ${(x.p50 / base).toFixed(2)}x`,
    )
  }
  row('PING (baseline)', '-', samples.ping)
  row('getPosition', String(SMALL), samples.smallPoll)
  row('getPosition', String(BIG), samples.bigPoll)
  row('enter (already in line)', String(SMALL), samples.smallEnter)
  row('enter (already in line)', String(BIG), samples.bigEnter)
  const ratio = summary(samples.bigPoll).p50 / summary(samples.smallPoll).p50
  const ratio99 = summary(samples.bigPoll).p99 / summary(samples.smallPoll).p99
  console.log(`getPosition at ${BIG} vs ${SMALL} waiters: p50 x${ratio.toFixed(2)}, p99 x${ratio99.toFixed(2)}`)
  for (const room of [small, big]) await room.lease('holder').release()
  await store.close()
  // The big line's keys expire by themselves (every key carries a PEXPIRE); the server is private anyway.
}

async function etaSimulation(redis: Awaited<ReturnType<typeof startRedis>>): Promise<void> {
  const client = redis.client({ maxRetriesPerRequest: 1 })
  await client.ping() // connected before the first burst of calls
  const store = redisStore({ client, commandTimeout: 5000 })
  const room = createWaitingRoom({ name: 'bench-eta', limit: SLOTS, ttl: 30_000, store, idleTimeout: 30_000, claimWindow: 10_000 })
  const serviceRate = SLOTS / HOLD_MS // admissions per ms
  const interval = 1 / serviceRate
  const samples: { eta: number | null; actual: number; position: number }[] = []
  const start = performance.now()
  const jobs: Promise<void>[] = []
  let n = 0
  const visit = async (measured: boolean): Promise<void> => {
    const id = `e${n++}`
    const arrived = performance.now()
    const first = await room.enter(id)
    let eta: number | null = null
    let position = 0
    if (first.status === 'queued') {
      eta = first.eta
      position = first.position
    } else if (first.status === 'full') throw new Error('full')
    let admittedAt = arrived
    const hold = async (): Promise<void> => {
      await sleep(HOLD_MS)
    }
    if (first.status === 'admitted') {
      await hold()
      await first.lease.release()
    } else {
      await room.withAdmitted(
        id,
        async () => {
          admittedAt = performance.now()
          await hold()
        },
        { timeout: 60_000 },
      )
    }
    if (measured && position > 0) samples.push({ eta, actual: admittedAt - arrived, position })
  }
  // A line of LINE visitors plus SLOTS admitted at once, then one arrival per service interval.
  for (let i = 0; i < SLOTS + LINE; i++) jobs.push(visit(false))
  for (let k = 1; ; k++) {
    const at = start + k * interval
    if (at - start > WARMUP_MS + MEASURE_MS) break
    await sleep(Math.max(0, at - performance.now()))
    jobs.push(visit(at - start > WARMUP_MS))
  }
  await Promise.all(jobs)
  await store.close()

  const known = samples.filter((s) => s.eta !== null)
  const errors = known.map((s) => Math.abs(s.eta! - s.actual))
  const signed = known.map((s) => s.eta! - s.actual)
  const rel = known.map((s) => Math.abs(s.eta! - s.actual) / s.actual)
  const e = summary(errors)
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
  console.log('')
  console.log(
    `ETA, steady state: ${SLOTS} slots held ${HOLD_MS} ms each (service ${(serviceRate * 1000).toFixed(0)}/s), ` +
      `arrivals at the same rate, line ~${LINE}, warm-up ${WARMUP_MS / 1000} s, measured ${MEASURE_MS / 1000} s`,
  )
  console.log(`visitors measured: ${samples.length} (eta known for ${known.length}, null for ${samples.length - known.length})`)
  console.log(`mean position at arrival: ${mean(samples.map((s) => s.position)).toFixed(1)}`)
  console.log(`actual wait: mean ${mean(samples.map((s) => s.actual)).toFixed(0)} ms`)
  console.log(`ETA given:   mean ${mean(known.map((s) => s.eta!)).toFixed(0)} ms`)
  console.log(
    `ETA error:   mean absolute ${e.mean.toFixed(0)} ms (p50 ${e.p50.toFixed(0)} ms, p99 ${e.p99.toFixed(0)} ms), ` +
      `mean signed ${mean(signed).toFixed(0)} ms, mean relative ${(mean(rel) * 100).toFixed(1)}%`,
  )
}

async function main(): Promise<void> {
  const started = performance.now()
  const cpu = cpus()[0]
  console.log(`airlock-shield waiting room bench, node ${process.version}, ${cpus().length} x ${cpu?.model ?? 'cpu'}`)
  const redis = await startRedis()
  try {
    const info = await redis.client().info('server')
    console.log(`private redis-server ${/redis_version:(\S+)/.exec(info)?.[1]} on 127.0.0.1:${redis.port}`)
    await pollLatency(redis)
    await etaSimulation(redis)
  } finally {
    await redis.stop()
  }
  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

await main()
