/**
 * Contract cases for what a store tells of its visitors as it decides (the gate's figures): the
 * wait of a place admitted from the line, and each slot that expired or place that lapsed, told
 * once by the call that dropped it (`AcquireResult.waited`, `AcquireResult.ended`).
 */
import type { ContractContext, TestApi } from './types.js'
import { LINE, sleep } from './util.js'

export function figureCases({ it, expect }: TestApi, ctx: ContractContext): void {
  it('an admission from the line tells how long its place waited; a direct one does not', async () => {
    const { name, store } = ctx.fresh()
    const holder = ctx.req({ limit: 1 })
    const direct = await store.acquire(name, holder)
    expect(direct.status).toBe('acquired')
    expect(direct.status === 'acquired' ? direct.waited : 0).toBe(undefined)
    const waiter = ctx.req({ limit: 1, queue: LINE })
    expect((await store.acquire(name, waiter)).status).toBe('queued')
    await sleep(250)
    await store.release(name, holder.token)
    const admitted = await store.acquire(name, waiter)
    expect(admitted.status).toBe('acquired')
    const waited = admitted.status === 'acquired' ? (admitted.waited ?? -1) : -1
    expect(waited).toBeGreaterThanOrEqual(200)
    expect(waited).toBeLessThanOrEqual(5_000)
    // Found again: no second admission, no wait told twice.
    const again = await store.acquire(name, waiter)
    expect(again.status === 'acquired' ? again.waited : 0).toBe(undefined)
  })

  it('a slot that expired (with how long it lived) and a place that lapsed are told once, by the call that dropped them', async () => {
    const { name, store } = ctx.fresh()
    await store.acquire(name, ctx.req({ limit: 2, ttl: 300 }))
    await store.acquire(name, ctx.req({ limit: 2, ttl: 5_000 }))
    const ghost = ctx.req({ limit: 2, queue: { ...LINE, confirmTimeout: 200 } })
    expect((await store.acquire(name, ghost)).status).toBe('queued')
    await sleep(450)
    const next = ctx.req({ limit: 2 })
    const first = await store.acquire(name, next)
    expect(first.status).toBe('acquired')
    expect(first.ended).toEqual({ expired: 1, lapsed: 1, visits: [300] })
    expect((await store.acquire(name, next)).ended).toBe(undefined)
    expect((await store.acquire(name, ctx.req({ limit: 2 }))).ended).toBe(undefined)
  })
}
