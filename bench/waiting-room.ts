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
 *
 * Env: BIG (100000 waiters), SMALL (100), POLL_ROUNDS (3000), WARMUP_MS (4000), MEASURE_MS (16000),
 * BENCH_RESULTS=<dir> to write waiting-room.json.
 */
import { performance } from 'node:perf_hooks'
import { createWaitingRoom, type WaitingRoom } from '../src/core/waiting-room.js'
import { redisStore } from '../src/stores/redis.js'
import { startRedis } from '../test/helpers/redis.js'
import {
  describeMachine,
  envNumber,
  fixed,
  machine,
  markdownTable,
  type Machine,
  redisVersion,
  writeResults,
} from './lib.js'

const SMALL = envNumber('SMALL', 100)
const BIG = envNumber('BIG', 100_000)
const ROUNDS = envNumber('POLL_ROUNDS', 3000)
const POLL_WARMUP = Math.min(200, ROUNDS)
const FILL_BATCH = 2000

const SLOTS = 4
const HOLD_MS = 200
const LINE = 40
const WARMUP_MS = envNumber('WARMUP_MS', 4000)
const MEASURE_MS = envNumber('MEASURE_MS', 16_000)

/** What the run found, for BENCH_RESULTS and the tables. */
const report: { poll?: Record<string, unknown>; eta?: Record<string, unknown>; markdown: string[] } = { markdown: [] }

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function summary(samples: number[]): { p50: number; p99: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: pct(sorted, 50), p99: pct(sorted, 99), mean: samples.reduce((a, b) => a + b, 0) / samples.length }
}

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

  const samples = {
    ping: [] as number[],
    smallPoll: [] as number[],
    bigPoll: [] as number[],
    smallEnter: [] as number[],
    bigEnter: [] as number[],
  }
  const time = async (into: number[], fn: () => Promise<unknown>): Promise<void> => {
    const t = performance.now()
    await fn()
    into.push(performance.now() - t)
  }
  const check = (pos: number | null, expected: number): void => {
    if (pos !== expected) throw new Error(`position ${pos}, expected ${expected}`)
  }
  for (let round = 0; round < ROUNDS + POLL_WARMUP; round++) {
    const keep = round >= POLL_WARMUP // the first rounds warm up
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
  const rows: [string, string, number[]][] = [
    ['PING (baseline)', '-', samples.ping],
    ['getPosition', String(SMALL), samples.smallPoll],
    ['getPosition', String(BIG), samples.bigPoll],
    ['enter (already in line)', String(SMALL), samples.smallEnter],
    ['enter (already in line)', String(BIG), samples.bigEnter],
  ]
  const us = (ms: number): string => (ms * 1000).toFixed(0)
  const markdown = markdownTable(
    ['operation', '>waiters', '>p50 µs', '>p99 µs', '>mean µs', '>p50 / PING p50'],
    rows.map(([label, waiters, s]) => {
      const x = summary(s)
      return [label, waiters, us(x.p50), us(x.p99), us(x.mean), `${(x.p50 / base).toFixed(2)}x`]
    }),
  )
  console.log(markdown)
  const ratio = summary(samples.bigPoll).p50 / summary(samples.smallPoll).p50
  const ratio99 = summary(samples.bigPoll).p99 / summary(samples.smallPoll).p99
  console.log(`getPosition at ${BIG} vs ${SMALL} waiters: p50 x${ratio.toFixed(2)}, p99 x${ratio99.toFixed(2)}`)
  report.poll = {
    small: SMALL,
    big: BIG,
    rounds: ROUNDS,
    fillMs: { small: fillSmall, big: fillBig },
    rows: rows.map(([label, waiters, s]) => ({ label, waiters, ...summary(s) })),
    bigVsSmall: { p50: ratio, p99: ratio99 },
  }
  report.markdown.push(markdown)
  for (const room of [small, big]) await room.lease('holder').release()
  await store.close()
  // The big line's keys expire by themselves (every key carries a PEXPIRE); the server is private anyway.
}

async function etaSimulation(redis: Awaited<ReturnType<typeof startRedis>>): Promise<void> {
  const client = redis.client({ maxRetriesPerRequest: 1 })
  await client.ping() // connected before the first burst of calls
  const store = redisStore({ client, commandTimeout: 5000 })
  const room = createWaitingRoom({
    name: 'bench-eta',
    limit: SLOTS,
    ttl: 30_000,
    store,
    idleTimeout: 30_000,
    claimWindow: 10_000,
  })
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
  const etaRows: [string, string][] = [
    ['visitors measured', `${samples.length} (eta known for ${known.length})`],
    ['mean position at arrival', fixed(mean(samples.map((s) => s.position)), 1)],
    ['actual wait, mean', `${fixed(mean(samples.map((s) => s.actual)))} ms`],
    ['ETA given, mean', `${fixed(mean(known.map((s) => s.eta!)))} ms`],
    ['ETA error, mean absolute', `${fixed(e.mean)} ms (p50 ${fixed(e.p50)} ms, p99 ${fixed(e.p99)} ms)`],
    ['ETA error, mean signed', `${fixed(mean(signed))} ms`],
    ['ETA error, mean relative', `${fixed(mean(rel) * 100, 1)} %`],
  ]
  console.log('')
  console.log(
    `ETA, steady state: ${SLOTS} slots held ${HOLD_MS} ms each (service ${(serviceRate * 1000).toFixed(0)}/s), ` +
      `arrivals at the same rate, line ~${LINE}, warm-up ${WARMUP_MS / 1000} s, measured ${MEASURE_MS / 1000} s`,
  )
  const markdown = markdownTable(['ETA, steady state', 'value'], etaRows)
  console.log(markdown)
  report.eta = {
    slots: SLOTS,
    holdMs: HOLD_MS,
    measured: samples.length,
    known: known.length,
    meanWaitMs: mean(samples.map((s) => s.actual)),
    meanEtaMs: mean(known.map((s) => s.eta!)),
    absErrorMs: e,
    signedErrorMs: mean(signed),
    relativeError: mean(rel),
  }
  report.markdown.push(markdown)
}

async function main(): Promise<void> {
  const started = performance.now()
  const redis = await startRedis()
  let m: Machine
  try {
    m = machine(await redisVersion(redis.client()))
    console.log(
      `airlock-shield waiting room bench: ${describeMachine(m)}; private redis-server on 127.0.0.1:${redis.port}`,
    )
    await pollLatency(redis)
    await etaSimulation(redis)
  } finally {
    await redis.stop()
  }
  const elapsedSeconds = (performance.now() - started) / 1000
  const file = writeResults('waiting-room', {
    machine: m,
    ...report,
    markdown: report.markdown.join('\n\n'),
    elapsedSeconds,
  })
  if (file) console.log(`results: ${file}`)
  console.log(`\nwaiting-room bench: ${elapsedSeconds.toFixed(1)} s`)
}

await main()
