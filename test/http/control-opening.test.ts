/**
 * A scheduled opening across a fleet: 200 visitors arrive before `opensAt` on two instances; at the
 * opening they are admitted in uniformly random order, and those who came after wait behind them.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { airlockControl } from '../../src/core/control.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'
import { Browser } from './harness.js'
import { startFleet, type Fleet } from './fleet.js'

requireRedis()

/** Spearman's rank correlation of two orderings of the same items (no ties). */
function spearman(a: readonly number[], b: readonly number[]): number {
  const n = a.length
  let d2 = 0
  for (let i = 0; i < n; i++) d2 += (a[i]! - b[i]!) ** 2
  return 1 - (6 * d2) / (n * (n * n - 1))
}

describe('a scheduled opening', () => {
  const priv = usePrivateRedis()
  let fleet: Fleet | undefined
  afterAll(async () => fleet?.stop())

  it('those who came before opensAt are admitted in uniformly random order, all before anyone who came after', {
    timeout: 120_000,
  }, async () => {
    // 220 browsers polling two instances on a busy CI box: a store call may take longer than the
    // default 200 ms budget there, which would answer a poll 503 (store unavailable) and end the test.
    fleet = await startFleet(2, {
      REDIS_URL: priv.redis.url,
      NAME: 'steer-open',
      MODE: 'session',
      LIMIT: '8',
      WORK_MS: '1',
      QUEUE: '1',
      POLL_MS: '300',
      STORE_TIMEOUT: '2000',
    })
    // Opening far ahead while the 200 arrive (however slow the machine), then moved to shortly after.
    const control = airlockControl({ name: 'steer-open', store: priv.store })
    await control.set({ opensAt: Date.now() + 600_000 })
    await sleep(1_000)
    const order: { id: number; late: boolean }[] = []
    let arrived = 0
    const visit = async (id: number, late: boolean): Promise<void> => {
      const b = new Browser(fleet!.urls[id % 2]!)
      const first = await b.get('/')
      arrived++
      if (first.status !== 202 || (!late && !first.body.includes('Opening soon')))
        throw new Error(`visitor ${id}: ${first.status} ${first.body.slice(0, 80)}`)
      for (const deadline = Date.now() + 90_000; Date.now() < deadline; ) {
        await sleep(250 + Math.random() * 100)
        const r = await b.get('/', { headers: { accept: 'application/json', 'x-airlock-poll': '1' } })
        if (r.status === 200) {
          order.push({ id, late })
          await b.get('/leave')
          return
        }
        if (r.status !== 202) throw new Error(`visitor ${id} polled ${r.status} ${r.body.slice(0, 120)}`)
      }
      throw new Error(`visitor ${id} was never admitted`)
    }
    const errors: unknown[] = []
    const track = (p: Promise<void>): Promise<void> => p.catch((err: unknown) => void errors.push(err))
    const early: Promise<void>[] = []
    for (let id = 0; id < 200; id++) {
      early.push(track(visit(id, false)))
      await sleep(15)
    }
    await until(() => arrived === 200 || errors.length > 0, 60_000)
    expect(errors).toEqual([])
    const opensAt = Date.now() + 1_500
    await control.set({ opensAt })
    await sleep(opensAt - Date.now() + 300)
    const late: Promise<void>[] = []
    for (let id = 200; id < 220; id++) late.push(track(visit(id, true)))
    await Promise.all([...early, ...late])
    expect(errors).toEqual([])

    // Every visitor who came before the opening was admitted before anyone who came after.
    expect(order.map((v) => v.late)).toEqual([...Array<boolean>(200).fill(false), ...Array<boolean>(20).fill(true)])
    const ranks = order.filter((v) => !v.late).map((v) => v.id)
    const rho = spearman(
      ranks,
      ranks.map((_, i) => i),
    )
    console.log(
      `scheduled opening: Spearman rho between arrival and admission order ${rho.toFixed(3)} (FIFO 1, LIFO -1)`,
    )
    // A uniform shuffle of 200 has sd 1/sqrt(199) = 0.071: |rho| < 0.3 fails FIFO (1) and LIFO (-1).
    expect(Math.abs(rho)).toBeLessThan(0.3)
    // And arriving in the first quarter gives no edge: about a quarter of the first 50 admitted came then.
    const firstQuarter = ranks.slice(0, 50).filter((id) => id < 50).length
    expect(firstQuarter).toBeLessThan(25)
  })
})
