/**
 * Contract cases for per-client shares (`AcquireRequest.client`): what a client holds, what frees
 * its share, and its rate of new slots and places.
 */
import type { ClientShare } from '../stores/types.js'
import type { ContractContext, TestApi } from './types.js'
import { LINE, sleep } from './util.js'

export function shareCases(api: TestApi, ctx: ContractContext): void {
  const { it, expect } = api
  const share = (over: Partial<ClientShare> = {}): ClientShare => ({
    key: `client-${ctx.token()}`,
    places: 2,
    slots: 2,
    perMinute: 0,
    ...over,
  })

  it('a client gets at most its places; another client is not touched; a refresh or a release gives one back', async () => {
    const { name, store } = ctx.fresh()
    const client = share()
    const a = ctx.req({ limit: 10, client })
    const b = ctx.req({ limit: 10, client })
    expect((await store.acquire(name, a)).status).toBe('acquired')
    expect((await store.acquire(name, b)).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('client-share')
    expect((await store.acquire(name, ctx.req({ limit: 10, client: share() }))).status).toBe('acquired')
    // The holder's own slot is found again, over its share or not.
    expect((await store.acquire(name, a)).status).toBe('acquired')
    expect((await store.refresh(name, a.token, 5_000)).ok).toBe(true)
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('client-share')
    expect(await store.release(name, b.token)).toBe(true)
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('acquired')
    expect(await store.state(name)).toEqual({ held: 4, waiting: 0 })
  })

  it('decided together (one batch on Redis), a client still gets no more than its share', async () => {
    const { name, store } = ctx.fresh()
    const client = share()
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => store.acquire(name, ctx.req({ limit: 10, client }))),
    )
    expect(answers.filter((a) => a.status === 'acquired')).toHaveLength(2)
    expect(answers.filter((a) => a.status === 'client-share')).toHaveLength(4)
    const others = await Promise.all(
      Array.from({ length: 3 }, () => store.acquire(name, ctx.req({ limit: 10, client: share() }))),
    )
    expect(others.map((a) => a.status)).toEqual(['acquired', 'acquired', 'acquired'])
    expect(await store.state(name)).toEqual({ held: 5, waiting: 0 })
  })

  it('unconfirmed slots are capped apart from places; a refused request takes nothing', async () => {
    const { name, store } = ctx.fresh()
    const client = share({ places: 5, slots: 1 })
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('acquired')
    const refused = ctx.req({ limit: 10, client, queue: LINE })
    expect((await store.acquire(name, refused)).status).toBe('client-share')
    expect(await store.state(name)).toEqual({ held: 1, waiting: 0 })
    expect(await store.leaseState(name, refused.token)).toBe('expired')
  })

  it('places in line count; a waiter is never refused its own place; one that leaves gives its share back', async () => {
    const { name, store } = ctx.fresh()
    expect((await store.acquire(name, ctx.req({ limit: 1 }))).status).toBe('acquired')
    const client = share()
    const a = ctx.req({ limit: 1, client, queue: LINE })
    const b = ctx.req({ limit: 1, client, queue: LINE })
    expect(await store.acquire(name, a)).toMatchObject({ status: 'queued', position: 1 })
    expect(await store.acquire(name, b)).toMatchObject({ status: 'queued', position: 2 })
    expect((await store.acquire(name, ctx.req({ limit: 1, client, queue: LINE }))).status).toBe('client-share')
    expect(await store.acquire(name, a)).toMatchObject({ status: 'queued', position: 1 })
    expect(await store.acquire(name, { ...b, queue: { ...LINE, admit: false } })).toMatchObject({
      status: 'queued',
      position: 2,
    })
    expect(await store.acquire(name, ctx.req({ limit: 1, client: share(), queue: LINE }))).toMatchObject({
      status: 'queued',
      position: 3,
    })
    expect(await store.leave(name, a.token)).toBe(true)
    expect(await store.acquire(name, ctx.req({ limit: 1, client, queue: LINE }))).toMatchObject({
      status: 'queued',
      position: 3,
    })
  })

  it('a waiter admitted from the line counts as an unconfirmed slot until refreshed', async () => {
    const { name, store } = ctx.fresh()
    const first = ctx.req({ limit: 1 })
    expect((await store.acquire(name, first)).status).toBe('acquired')
    const client = share({ places: 1, slots: 1 })
    const a = ctx.req({ limit: 1, client, queue: LINE })
    expect((await store.acquire(name, a)).status).toBe('queued')
    expect(await store.release(name, first.token)).toBe(true)
    expect((await store.acquire(name, a)).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 5, client, queue: LINE }))).status).toBe('client-share')
    expect((await store.refresh(name, a.token, 5_000)).ok).toBe(true)
    expect((await store.acquire(name, ctx.req({ limit: 5, client, queue: LINE }))).status).toBe('acquired')
  })

  it('a place that lapses no longer counts', async () => {
    const { name, store } = ctx.fresh()
    expect((await store.acquire(name, ctx.req({ limit: 1 }))).status).toBe('acquired')
    const client = share({ places: 1 })
    const brief = { ...LINE, confirmTimeout: 200 }
    expect((await store.acquire(name, ctx.req({ limit: 1, client, queue: brief }))).status).toBe('queued')
    expect((await store.acquire(name, ctx.req({ limit: 1, client, queue: brief }))).status).toBe('client-share')
    await sleep(300)
    expect((await store.acquire(name, ctx.req({ limit: 1, client, queue: brief }))).status).toBe('queued')
  })

  it('at most perMinute new slots and places a minute, in a burst of that many, whatever was given back', async () => {
    const { name, store } = ctx.fresh()
    const client = share({ places: 10, slots: 10, perMinute: 3 })
    for (let i = 0; i < 3; i++) {
      const r = ctx.req({ limit: 10, client })
      expect((await store.acquire(name, r)).status).toBe('acquired')
      expect(await store.release(name, r.token)).toBe(true)
    }
    expect((await store.acquire(name, ctx.req({ limit: 10, client }))).status).toBe('client-share')
    expect((await store.acquire(name, ctx.req({ limit: 10, client: share({ perMinute: 3 }) }))).status).toBe('acquired')
  })
}
