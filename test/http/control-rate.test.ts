/**
 * The live admission rate across a fleet, over three minutes: 60 new visitors a minute while ten
 * times that many arrive, shared by two instances on one private Redis.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { airlockControl } from '../../src/core/control.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep } from '../helpers/wait.js'
import { hit } from './harness.js'
import { startFleet, type Fleet } from './fleet.js'

requireRedis()

describe('admissionRate across two instances', () => {
  const priv = usePrivateRedis()
  let fleet: Fleet | undefined
  afterAll(async () => fleet?.stop())

  it('60/min over 3 minutes with 10x that demand: admissions per minute within ±10 %', {
    timeout: 240_000,
  }, async () => {
    fleet = await startFleet(2, {
      REDIS_URL: priv.redis.url,
      NAME: 'steer-rate',
      MODE: 'session',
      LIMIT: '100000',
      WORK_MS: '1',
    })
    await airlockControl({ name: 'steer-rate', store: priv.store }).set({ admissionRate: 60 })
    await sleep(1_000)
    const start = Date.now()
    const admitted: number[] = []
    let refused = 0
    // Ten new visitors (no cookie) a second, alternating instances: 600 a minute.
    for (let i = 0; Date.now() - start < 180_000; i++) {
      const due = start + i * 100
      if (due > Date.now()) await sleep(due - Date.now())
      void hit(`${fleet.urls[i % 2]}/work`, { headers: { accept: 'application/json' } }).then(
        (r) => (r.status === 200 ? admitted.push(Date.now() - start) : refused++),
        () => refused++,
      )
    }
    await sleep(1_000)
    const perMinute = [0, 1, 2].map((m) => admitted.filter((t) => t >= m * 60_000 && t < (m + 1) * 60_000).length)
    console.log(`admissionRate 60/min: admitted per minute ${perMinute.join(', ')}; refused ${refused}`)
    for (const n of perMinute) {
      expect(n).toBeGreaterThanOrEqual(54)
      expect(n).toBeLessThanOrEqual(66)
    }
    // Demand was ten times the rate: most were refused.
    expect(refused).toBeGreaterThan(1_400)
  })
})
