/**
 * What each client's share costs a new visitor's decision (`AcquireRequest.client`, issue 24): new
 * visitors' acquire + release pairs per second on the memory store and a private redis-server,
 * without a share, with one (every visitor its own client), and a client over its share (each
 * decision refused). Pass holders never reach the store's share (their decision is a cache hit),
 * so `bench:overhead` is unchanged by it. Scenarios alternate (A B C, A B C) so machine noise hits
 * all alike; the table shows the median of the rounds and the ratio to "no share".
 *
 *   npx tsx bench/share.ts        Env: SECONDS per run (2), ROUNDS (3), CALLERS (32), BENCH_RESULTS=<dir>
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { memoryStore } from '../src/stores/memory.js'
import { redisStore } from '../src/stores/redis.js'
import type { ClientShare, Store } from '../src/stores/types.js'
import { startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, machine, markdownTable, median, redisVersion, writeResults } from './lib.js'

const SECONDS = envNumber('SECONDS', 2)
const ROUNDS = envNumber('ROUNDS', 3)
const CALLERS = envNumber('CALLERS', 32)
const redis = await startRedis()
const client = new Redis(redis.url)
const stores: Record<string, Store> = { memory: memoryStore(), redis: redisStore({ client }) }
const kinds = ['no share', 'a share per visitor', 'over its share'] as const
const token = (): string => randomBytes(12).toString('base64url')

/** Decisions a second: each caller acquires a new token (a new visitor) and releases it. */
async function run(store: Store, kind: (typeof kinds)[number], round: number): Promise<number> {
  const name = `share-bench-${kind.replace(/ /g, '-')}-${round}`
  const crowd: ClientShare = { key: `ip:203.0.113.${round}`, places: 1, slots: 1, perMinute: 0 }
  if (kind === 'over its share')
    await store.acquire(name, { token: token(), limit: 1_000_000, ttl: 60_000, weight: 1, client: crowd })
  const until = Date.now() + SECONDS * 1000
  let n = 0
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (Date.now() < until) {
        const t = token()
        const share: ClientShare | undefined =
          kind === 'no share'
            ? undefined
            : kind === 'over its share'
              ? crowd
              : { key: `ip:${t}`, places: 20, slots: 25, perMinute: 60 }
        const r = await store.acquire(name, { token: t, limit: 1_000_000, ttl: 10_000, weight: 1, client: share })
        if (r.status === 'acquired') await store.release(name, t)
        else if (kind !== 'over its share') throw new Error(`unexpected ${r.status}`)
        n++
      }
    }),
  )
  return n / SECONDS
}

const results: Record<string, Record<string, number[]>> = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const [label, store] of Object.entries(stores)) {
    for (const kind of kinds) ((results[label] ??= {})[kind] ??= []).push(await run(store, kind, round))
  }
}
const rows = Object.entries(results).flatMap(([label, byKind]) =>
  kinds.map((kind) => {
    const m = median(byKind[kind]!)
    return [label, kind, Math.round(m), (m / median(byKind['no share']!)).toFixed(2)]
  }),
)
const m = machine(await redisVersion(client))
console.log(
  `\nA new visitor's decision with each client's share (${CALLERS} callers, ${ROUNDS} rounds of ${SECONDS} s; ${describeMachine(m)})\n`,
)
console.log(markdownTable(['store', 'decision', 'decisions/s (median)', 'vs no share'], rows))
const file = writeResults('share', { machine: m, callers: CALLERS, rounds: ROUNDS, seconds: SECONDS, results })
if (file) console.log(`\nwritten: ${file}`)
await Promise.all(Object.values(stores).map((s) => s.close()))
client.disconnect()
await redis.stop()
