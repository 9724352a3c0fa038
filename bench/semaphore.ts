/**
 * Raw semaphore throughput: acquire+release pairs per second against one private redis-server,
 * this package vs redis-semaphore, with 1 and 50 concurrent callers, on the same kind of ioredis
 * client (plain, and with auto-pipelining). Scenarios alternate (A B A B ...) so machine noise hits
 * all alike; the table shows the median of the rounds.
 *
 *   npx tsx bench/semaphore.ts [--seconds 2] [--rounds 3]
 */
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { Semaphore as RedisSemaphore } from 'redis-semaphore'
import { createSemaphore, redisStore } from '../src/index.js'
import { startRedis } from '../test/helpers/redis.js'

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '2' }, rounds: { type: 'string', default: '3' } },
})
const seconds = Number(values.seconds)
const rounds = Number(values.rounds)

interface Scenario {
  label: string
  lib: 'airlock-shield' | 'redis-semaphore'
  callers: number
  pipelined: boolean
}

const redis = await startRedis()
const clients = {
  plain: new Redis(redis.url),
  pipelined: new Redis(redis.url, { enableAutoPipelining: true }),
}
// One store per client, as an application has (a store is shared by all its semaphores).
const stores = { plain: redisStore({ client: clients.plain }), pipelined: redisStore({ client: clients.pipelined }) }

/** One caller's loop: acquire (never waiting), release; counts completed pairs. */
function pairLoop(s: Scenario, until: number): () => Promise<number> {
  const client = s.pipelined ? clients.pipelined : clients.plain
  const name = `bench-${s.lib}-${s.callers}-${s.pipelined}`
  if (s.lib === 'airlock-shield') {
    const store = s.pipelined ? stores.pipelined : stores.plain
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

async function measure(s: Scenario): Promise<number> {
  const until = Date.now() + seconds * 1000
  const started = Date.now()
  const loops = Array.from({ length: s.callers }, () => pairLoop(s, until)())
  const pairs = (await Promise.all(loops)).reduce((a, b) => a + b, 0)
  return pairs / ((Date.now() - started) / 1000)
}

const scenarios: Scenario[] = []
for (const pipelined of [false, true]) {
  for (const callers of [1, 50]) {
    for (const lib of ['airlock-shield', 'redis-semaphore'] as const) {
      scenarios.push({ label: `${lib} ${callers} caller${callers > 1 ? 's' : ''}${pipelined ? ' (auto-pipelining)' : ''}`, lib, callers, pipelined })
    }
  }
}

const results = new Map<Scenario, number[]>()
for (const s of scenarios) await measure({ ...s }) // warm-up: scripts loaded, JIT warm
for (let round = 0; round < rounds; round++) {
  for (const s of scenarios) {
    const list = results.get(s) ?? []
    list.push(await measure(s))
    results.set(s, list)
  }
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const rows = scenarios.map((s) => ({ s, pairs: median(results.get(s)!) }))
console.log(`\nacquire+release pairs/s, median of ${rounds} rounds x ${seconds}s, private redis-server, node ${process.version}\n`)
console.log('| scenario | pairs/s | vs redis-semaphore |')
console.log('|---|---:|---:|')
for (const { s, pairs } of rows) {
  const peer = rows.find((r) => r.s.lib === 'redis-semaphore' && r.s.callers === s.callers && r.s.pipelined === s.pipelined)!
  console.log(`| ${s.label} | ${Math.round(pairs)} | ${(pairs / peer.pairs).toFixed(2)}x |`)
}

await stores.plain.close()
await stores.pipelined.close()
clients.plain.disconnect()
clients.pipelined.disconnect()
await redis.stop()
