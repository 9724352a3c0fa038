/**
 * The live control across a fleet: two gated site processes on one private Redis, steered from the
 * CLI (a real `airlock control` process) and the API.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { airlockControl } from '../../src/core/control.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep } from '../helpers/wait.js'
import { airlock } from '../cli/harness.js'
import { Browser, hit } from './harness.js'
import { maxInFlight, startFleet, type Fleet } from './fleet.js'

requireRedis()

describe('live control across two instances on one Redis', () => {
  const priv = usePrivateRedis()
  let fleet: Fleet | undefined
  afterEach(async () => {
    await fleet?.stop()
    fleet = undefined
  })

  it('limit 10 -> 3 through the CLI while both are busy: from 1 s after the change at most 3 handlers run at once', async () => {
    const WORK = 150
    fleet = await startFleet(2, {
      REDIS_URL: priv.redis.url,
      NAME: 'steer-limit',
      MODE: 'request',
      LIMIT: '10',
      WORK_MS: String(WORK),
    })
    const { urls } = fleet
    let running = true
    const client = async (i: number): Promise<void> => {
      while (running) {
        const r = await hit(`${urls[i % 2]}/work`).catch(() => null)
        if (r?.status !== 200) await sleep(20)
      }
    }
    const clients = Array.from({ length: 30 }, (_, i) => client(i))
    await sleep(1_500)
    const run = airlock(['control', 'set', '--name', 'steer-limit', '--redis', priv.redis.url, '--limit', '3'])
    const done = await run.exited
    const changed = Date.now()
    expect(done.code, done.stderr).toBe(0)
    expect(done.stdout).toContain('limit          3')
    await sleep(3_000)
    running = false
    await Promise.all(clients)
    const events = fleet.events
    // Before: both instances together ran up to the configured 10 (so the check below can fail).
    expect(maxInFlight(events, 0, changed - 200)).toBeGreaterThanOrEqual(8)
    expect(maxInFlight(events, changed + 1_000 + WORK)).toBeLessThanOrEqual(3)
    expect(maxInFlight(events, changed + 1_000 + WORK)).toBeGreaterThanOrEqual(2)
    const get = await airlock(['control', 'get', '--name', 'steer-limit', '--redis', priv.redis.url, '--json']).exited
    expect(JSON.parse(get.stdout)).toMatchObject({ limit: 3, mode: 'normal', version: 1 })
  })

  it('closed: after 1 s no new visitor is admitted on either instance, pass holders still get 200; reopened, newcomers get in', async () => {
    fleet = await startFleet(2, {
      REDIS_URL: priv.redis.url,
      NAME: 'steer-closed',
      MODE: 'session',
      LIMIT: '50',
      WORK_MS: '5',
    })
    const holders = fleet.urls.flatMap((u) => [new Browser(u), new Browser(u)])
    for (const b of holders) expect((await b.get('/work')).status).toBe(200)
    const control = airlockControl({ name: 'steer-closed', store: priv.store })
    await control.set({ mode: 'closed' }, { by: 'test' })
    await sleep(1_000)
    for (let i = 0; i < 20; i++) {
      const r = await hit(`${fleet.urls[i % 2]}/work`, { headers: { accept: 'application/json' } })
      expect(r.status).toBe(503)
    }
    for (const b of holders) expect((await b.get('/work')).status).toBe(200)
    await control.set({ mode: 'normal' })
    await sleep(1_000)
    for (const u of fleet.urls) expect((await hit(`${u}/work`)).status).toBe(200)
  })

  it('a hand-edited control record is ignored where it is bad, on every instance, without a crash', async () => {
    fleet = await startFleet(2, {
      REDIS_URL: priv.redis.url,
      NAME: 'steer-bad',
      MODE: 'session',
      LIMIT: '50',
      WORK_MS: '5',
    })
    const client = priv.redis.client()
    await client.hset('{airlock:steer-bad}:ctl', 'limit', 'many', 'mode', 'closed', 'opensAt', 'soon', '#v', '7')
    await client.publish('{airlock:steer-bad}:control', '7')
    await sleep(1_000)
    for (const u of fleet.urls) {
      // mode closed (valid) applies; the bad limit and opening time are ignored.
      expect((await hit(`${u}/work`)).status).toBe(503)
      expect(await hit(`${u}/`)).toMatchObject({ status: 503 })
    }
    await client.hdel('{airlock:steer-bad}:ctl', 'mode')
    await client.hincrby('{airlock:steer-bad}:ctl', '#v', 1)
    await client.publish('{airlock:steer-bad}:control', '8')
    await sleep(1_000)
    for (const u of fleet.urls) expect((await hit(`${u}/work`)).status).toBe(200)
  })
})
