/**
 * Raw semaphore throughput: acquire+release pairs per second against one private redis-server,
 * this package vs redis-semaphore, with 1 and 50 concurrent callers, on the same kind of ioredis
 * client (plain, and with auto-pipelining). Then ours on a second private server that has a replica
 * on loopback, with `replicas: 0` (the default) and `replicas: 1` (each grant waits for the
 * replica's acknowledgement, `WAIT`): what the option costs, side by side. Scenarios alternate
 * (A B A B ...) so machine noise hits all alike; the table shows the median of the rounds.
 *
 *   npm run bench:semaphore            (or: npx tsx bench/semaphore.ts [--seconds 2] [--rounds 3])
 *
 * Env (flags win): SECONDS per run (2), ROUNDS (3), WARMUP seconds per scenario (0.5),
 * BENCH_RESULTS=<dir> to write semaphore.json.
 */
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { Semaphore as RedisSemaphore } from 'redis-semaphore'
import { createSemaphore } from '../src/index.js'
import { redisStore } from '../src/redis.js'
import { startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, machine, markdownTable, median, redisVersion, writeResults } from './lib.js'

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, rounds: { type: 'string' } },
})
const seconds = values.seconds !== undefined ? Number(values.seconds) : envNumber('SECONDS', 2)
const rounds = values.rounds !== undefined ? Number(values.rounds) : envNumber('ROUNDS', 3)
const warmup = envNumber('WARMUP', 0.5)
const started = Date.now()

interface Scenario {
  label: string
  lib: 'airlock-shield' | 'redis-semaphore'
  callers: number
  pipelined: boolean
  /** Ours on the replicated server, with this `replicas` option. */
  replicas?: number
}

const redis = await startRedis()
// A primary with a replica on loopback, for the `replicas` rows.
const replicated = await startRedis()
const replica = await startRedis(['--replicaof', '127.0.0.1', String(replicated.port)])
const replicatedClient = new Redis(replicated.url)
const clients = {
  plain: new Redis(redis.url),
  pipelined: new Redis(redis.url, { enableAutoPipelining: true }),
}
// One store per client, as an application has (a store is shared by all its semaphores).
const stores = {
  plain: redisStore({ client: clients.plain }),
  pipelined: redisStore({ client: clients.pipelined }),
  replicas0: redisStore({ client: replicatedClient }),
  replicas1: redisStore({ client: replicatedClient, replicas: 1 }),
}

/** One caller's loop: acquire (never waiting), release; counts completed pairs. */
function pairLoop(s: Scenario, until: number): () => Promise<number> {
  const client = s.pipelined ? clients.pipelined : clients.plain
  const name = `bench-${s.lib}-${s.callers}-${s.pipelined}-${s.replicas ?? 0}`
  if (s.lib === 'airlock-shield') {
    const store =
      s.replicas === 1
        ? stores.replicas1
        : s.replicas === 0
          ? stores.replicas0
          : s.pipelined
            ? stores.pipelined
            : stores.plain
    const sem = createSemaphore({ name, limit: s.callers, ttl: 10_000, store })
    return async () => {
      let pairs = 0
      while (Date.now() < until) {
        const lease = await sem.acquire()
        if (lease && (await lease.release())) pairs++
      }
      return pairs
    }
  }
  return async () => {
    let pairs = 0
    while (Date.now() < until) {
      const sem = new RedisSemaphore(client, name, s.callers, {
        lockTimeout: 10_000,
        acquireAttemptsLimit: 1,
        refreshInterval: 0,
      })
      if (await sem.tryAcquire()) {
        await sem.release()
        pairs++
      }
    }
    return pairs
  }
}

async function measure(s: Scenario, runSeconds = seconds): Promise<number> {
  const until = Date.now() + runSeconds * 1000
  const started = Date.now()
  const loops = Array.from({ length: s.callers }, () => pairLoop(s, until)())
  const pairs = (await Promise.all(loops)).reduce((a, b) => a + b, 0)
  return pairs / ((Date.now() - started) / 1000)
}

const scenarios: Scenario[] = []
for (const pipelined of [false, true]) {
  for (const callers of [1, 50]) {
    for (const lib of ['airlock-shield', 'redis-semaphore'] as const) {
      scenarios.push({
        label: `${lib} ${callers} caller${callers > 1 ? 's' : ''}${pipelined ? ' (auto-pipelining)' : ''}`,
        lib,
        callers,
        pipelined,
      })
    }
  }
}
for (const callers of [1, 50]) {
  for (const replicas of [0, 1]) {
    scenarios.push({
      label: `airlock-shield ${callers} caller${callers > 1 ? 's' : ''}, with a replica, replicas: ${replicas}`,
      lib: 'airlock-shield',
      callers,
      pipelined: false,
      replicas,
    })
  }
}

const results = new Map<Scenario, number[]>()
if (warmup > 0) for (const s of scenarios) await measure({ ...s }, warmup) // warm-up: scripts loaded, JIT warm
for (let round = 0; round < rounds; round++) {
  for (const s of scenarios) {
    const list = results.get(s) ?? []
    list.push(await measure(s))
    results.set(s, list)
  }
}

const rows = scenarios.map((s) => {
  const pairs = median(results.get(s)!)
  return { ...s, pairs, runs: results.get(s)!.map(Math.round) }
})
const table = rows.map((r) => {
  // The rows on the replicated server compare with ours there at `replicas: 0`: what WAIT costs.
  const peer =
    r.replicas !== undefined
      ? rows.find((p) => p.replicas === 0 && p.callers === r.callers)!
      : rows.find(
          (p) =>
            p.lib === 'redis-semaphore' &&
            p.callers === r.callers &&
            p.pipelined === r.pipelined &&
            p.replicas === undefined,
        )!
  return { ...r, vsPeer: r.pairs / peer.pairs }
})
const m = machine(await redisVersion(clients.plain))
console.log(
  `\n${describeMachine(m)}\nacquire+release pairs/s, median of ${rounds} rounds x ${seconds} s, one private redis-server\n`,
)
const markdown = markdownTable(
  ['scenario', '>pairs/s', '>vs redis-semaphore (replica rows: vs replicas: 0)', 'runs (pairs/s)'],
  table.map((r) => [r.label, Math.round(r.pairs), `${r.vsPeer.toFixed(2)}x`, r.runs.join(' / ')]),
)
console.log(markdown)
const file = writeResults('semaphore', {
  machine: m,
  settings: { rounds, seconds, warmup },
  rows: table,
  markdown,
  elapsedSeconds: (Date.now() - started) / 1000,
})
if (file) console.log(`results: ${file}`)
console.log(`semaphore bench: ${((Date.now() - started) / 1000).toFixed(1)} s`)

await stores.plain.close()
await stores.pipelined.close()
await stores.replicas0.close()
await stores.replicas1.close()
replicatedClient.disconnect()
clients.plain.disconnect()
clients.pipelined.disconnect()
await replica.stop()
await replicated.stop()
await redis.stop()
