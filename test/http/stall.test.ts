/**
 * A store stall never leaves ghost slots. While Redis is stalled (CLIENT PAUSE, SIGSTOP, DEBUG
 * SLEEP) or restarted, the gate gives up on its acquires (storeTimeout, then the store's
 * commandTimeout) and follows onStoreError; but the scripts still run once Redis answers again (a
 * paused server runs what queued up; ioredis re-sends unanswered commands after a reconnect). The
 * slots they take belong to tokens nobody has. Within 1 s of Redis answering again, the slots held
 * must be exactly those of live requests and passes.
 *
 * Real HTTP through Fastify, a real private redis-server per scenario.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { clientKind } from '../helpers/redis-clients.js'
import { sleep, until } from '../helpers/wait.js'
import { Browser, hit, nextAddress, SECRET, startApp, type TestApp } from './harness.js'

requireRedis()

type Stall = 'CLIENT PAUSE' | 'SIGSTOP' | 'DEBUG SLEEP' | 'restart'
const STALL_MS = 2_500
const LIMIT = 10
const silent = { warn() {}, info() {}, error() {} }

/**
 * Stalls the server, then starts `load`; stops it 500 ms before Redis answers again, so every
 * request it made was decided (given up on) during the stall. Resolves with the time Redis answered.
 */
async function stall(redis: PrivateRedis, kind: Stall, load: () => { stop(): Promise<void> }): Promise<number> {
  const admin = redis.client({ maxRetriesPerRequest: 0 })
  const probe = redis.client({ maxRetriesPerRequest: 20 })
  await Promise.all([admin.ping(), probe.ping()])
  let quieted: Promise<void> = Promise.resolve()
  const begin = (): void => {
    const running = load()
    quieted = sleep(STALL_MS - 500).then(() => running.stop())
  }
  switch (kind) {
    case 'CLIENT PAUSE':
      await admin.call('CLIENT', 'PAUSE', String(STALL_MS), 'ALL')
      begin()
      break
    case 'SIGSTOP':
      redis.signal('SIGSTOP')
      setTimeout(() => redis.signal('SIGCONT'), STALL_MS)
      begin()
      break
    case 'DEBUG SLEEP':
      void admin.call('DEBUG', 'SLEEP', String(STALL_MS / 1000)).catch(() => {})
      await sleep(20) // the sleep has begun: every other connection now queues
      begin()
      break
    case 'restart':
      await redis.kill()
      begin()
      await quieted
      await sleep(500)
      await redis.start()
      return Date.now()
  }
  await probe.ping() // answered once the server runs commands again
  const resumed = Date.now()
  await quieted
  return resumed
}

/** Keeps `concurrency` clients requesting until `stop()`; resolves once all have finished. */
function traffic(url: string, concurrency: number) {
  let running = true
  const loops = Array.from({ length: concurrency }, async () => {
    const from = nextAddress() // each loop one client
    while (running) await hit(url, { timeout: 20_000, from }).catch(() => undefined)
  })
  return {
    async stop() {
      running = false
      await Promise.all(loops)
    },
  }
}

describe.runIf(redisAvailable)('no ghost slots after a store stall', () => {
  let redis: PrivateRedis | undefined
  let app: TestApp | undefined
  let store: RedisStore | undefined
  let observer: RedisStore | undefined
  const nodeRedis = clientKind('node-redis 6')
  afterEach(async () => {
    await app?.close()
    await store?.close()
    await observer?.close()
    await nodeRedis.close()
    await redis?.stop()
    app = store = observer = redis = undefined
  })

  async function setup(mode: 'session' | 'request', client: 'ioredis' | 'node-redis' = 'ioredis'): Promise<TestApp> {
    redis = await startRedis(['--enable-debug-command', 'yes'])
    // ioredis' defaults: commands unanswered when a connection drops are re-sent after a reconnect.
    // node-redis's: they fail with the connection (and its offline queue holds new ones until it is back).
    store = redisStore({
      client: client === 'ioredis' ? redis.client({ maxRetriesPerRequest: 20 }) : await nodeRedis.single(redis.port),
    })
    observer = redisStore({ client: redis.client({ maxRetriesPerRequest: 20 }) })
    app = await startApp('fastify', { gate: { name: 'g', limit: LIMIT, mode, store, secret: SECRET, logger: silent } })
    return app
  }

  /** Slots held, asked once Redis answers. */
  const held = async (): Promise<number> => (await observer!.state('g')).held

  const cases = [
    ...(['CLIENT PAUSE', 'SIGSTOP', 'DEBUG SLEEP', 'restart'] as const).map((kind) => ({
      kind,
      client: 'ioredis' as const,
    })),
    // The same on node-redis, for a stall and for a restart.
    ...(['SIGSTOP', 'restart'] as const).map((kind) => ({ kind, client: 'node-redis' as const })),
  ]
  for (const { kind, client } of cases) {
    const on = client === 'ioredis' ? '' : ` (${client})`
    it(`request mode, ${kind}${on}: within 1 s of Redis answering again, no slot is held but by live requests`, async () => {
      const site = await setup('request', client)
      const warmup = traffic(`${site.url}/work?ms=20`, 20)
      await sleep(300)
      await warmup.stop()
      // No request is live once stall() returns: the traffic it ran was all decided during the stall.
      const resumed = await stall(redis!, kind, () => traffic(`${site.url}/work?ms=20`, 20))
      let after = -1
      const took = await until(async () => (after = await held()) === 0, 5_000, 25).catch(() => -1)
      const elapsed = took < 0 ? -1 : Date.now() - resumed
      console.log(
        `request mode, ${kind}${on}: ${after} slots held ${Date.now() - resumed} ms after Redis answered again (live: 0)`,
      )
      expect(after).toBe(0)
      expect(elapsed).toBeLessThanOrEqual(1_000)
      await until(() => store!.pendingCleanups === 0, 2_000, 25) // and the cleanup queue drains
      // And the gate admits again at full capacity.
      const answers = await Promise.all(Array.from({ length: LIMIT }, () => hit(`${site.url}/work?ms=300`)))
      expect(answers.map((a) => a.status)).toEqual(Array(LIMIT).fill(200))
    }, 60_000)

    it(`session mode, ${kind}${on}: within 1 s of Redis answering again, the slots held are the live passes'`, async () => {
      const site = await setup('session', client)
      // Three visitors hold passes (upgraded: they came back with their cookie).
      const visitors = [0, 1, 2].map(() => new Browser(site.url))
      for (const v of visitors) {
        expect((await v.get('/kind')).body).toBe('admit')
        expect((await v.get('/kind')).body).toBe('pass')
      }
      // Cookie-less newcomers arrive during the stall only (before it, they would fill the room
      // with live provisional slots): every acquire they cause is given up on.
      const resumed = await stall(redis!, kind, () => traffic(`${site.url}/`, 20))
      // A restart without persistence lost the passes' slots too.
      const live = kind === 'restart' ? 0 : visitors.length
      let after = -1
      const took = await until(async () => (after = await held()) === live, 5_000, 25).catch(() => -1)
      const elapsed = took < 0 ? -1 : Date.now() - resumed
      console.log(
        `session mode, ${kind}${on}: ${after} slots held ${Date.now() - resumed} ms after Redis answered again (live passes: ${live})`,
      )
      expect(after).toBe(live)
      expect(elapsed).toBeLessThanOrEqual(1_000)
      // The rest of the room is free for newcomers.
      const newcomers = await Promise.all(
        Array.from({ length: LIMIT - live }, () => hit(`${site.url}/kind`, { from: nextAddress() })),
      )
      expect(newcomers.map((a) => a.body)).toEqual(Array(LIMIT - live).fill('admit'))
    }, 60_000)
  }
})
