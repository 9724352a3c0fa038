/**
 * The CLI's `--redis` with the client the user has: ioredis when installed, else node-redis
 * (`redis`); neither: one message naming both and how to install one. The peers are hidden from
 * `connectRedis` through its loader (both are installed here); Redis is a private redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AirlockError } from '../../src/base/errors.js'
import { loadPeer, type Peer } from '../../src/base/peer.js'
import { connectRedis } from '../../src/cli/redis.js'
import { CliError } from '../../src/cli/exit.js'
import { requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'

requireRedis()

/** A loader on which the peers in `hidden` are not installed. */
const without =
  (...hidden: Peer[]) =>
  <T>(name: Peer, feature: string): T => {
    if (hidden.includes(name))
      throw new AirlockError('ERR_AIRLOCK_PEER_MISSING', `${feature} needs ${name} (hidden by the test)`)
    return loadPeer<T>(name, feature)
  }

describe('airlock --redis: the Redis client the user has', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis.stop()
  })

  for (const [client, hidden] of [
    ['ioredis', []],
    ['node-redis, when ioredis is not installed', ['ioredis']],
  ] as const) {
    it(`connects with ${client}, and its store decides`, async () => {
      const conn = await connectRedis(
        `redis://127.0.0.1:${redis.port}`,
        `cli-${hidden.length}`,
        '--redis',
        5_000,
        without(...hidden),
      )
      try {
        const name = 'cli-client'
        const a = await conn.store.acquire(name, { token: 'a', limit: 1, ttl: 5_000, weight: 1 })
        const b = await conn.store.acquire(name, { token: 'b', limit: 1, ttl: 5_000, weight: 1 })
        expect([a.status, b.status]).toEqual(['acquired', 'busy'])
        expect(await conn.store.release(name, 'a')).toBe(true)
      } finally {
        await conn.close()
      }
    })
  }

  it('neither installed: exit 69 and one message naming both clients and the install command', async () => {
    const err = await connectRedis(
      `redis://127.0.0.1:${redis.port}`,
      'cli',
      '--redis',
      5_000,
      without('ioredis', 'redis'),
    ).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toMatch(
      /neither ioredis nor redis \(node-redis\) is installed: npm install ioredis \(or: npm install redis\)/,
    )
    expect((err as CliError).code).toBe(69)
  })

  it('node-redis on a dead port: exit 69 within the timeout', async () => {
    const t0 = Date.now()
    const err = await connectRedis('redis://127.0.0.1:1', 'cli', '--redis', 1_000, without('ioredis')).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(CliError)
    expect((err as CliError).message).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:1/)
    expect(Date.now() - t0).toBeLessThan(5_000)
  })
})
