/** The store contract: slots (acquire, refresh, release, states, fences, weights, batches). */
import type { ContractContext, TestApi } from './types.js'
import { LINE, sleep } from './util.js'

export function slotCases({ it, expect }: TestApi, ctx: ContractContext): void {
  it('admits up to the limit, then answers busy with the next expiry', async () => {
    const { name, store } = ctx.fresh()
    const a = await store.acquire(name, ctx.req())
    const b = await store.acquire(name, ctx.req())
    const c = await store.acquire(name, ctx.req())
    expect(a.status).toBe('acquired')
    expect(b.status).toBe('acquired')
    expect(c.status).toBe('busy')
    if (a.status !== 'acquired' || c.status !== 'busy') throw new Error('unreachable')
    expect(c.nextExpiry).toBe(a.expiresAt)
    expect(a.expiresAt - a.now).toBe(5_000)
  })

  it('decides concurrent calls one by one (the Redis store batches them)', async () => {
    const { name, store } = ctx.fresh()
    const reqs = Array.from({ length: 40 }, () => ctx.req({ limit: 7 }))
    const results = await Promise.all(reqs.map((r) => store.acquire(name, r)))
    const won = reqs.filter((_, i) => results[i]!.status === 'acquired')
    expect(won).toHaveLength(7)
    const fences = results.flatMap((r) => (r.status === 'acquired' ? [r.fence] : []))
    expect(new Set(fences).size).toBe(7)
    // The same token twice in one burst: one slot, returned twice.
    const releases = await Promise.all([...won, won[0]!].map((r) => store.release(name, r.token)))
    expect(releases.filter(Boolean)).toHaveLength(7)
    expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
    const again = ctx.req({ limit: 7 })
    const twice = await Promise.all([store.acquire(name, again), store.acquire(name, again)])
    expect(twice.map((r) => r.status)).toEqual(['acquired', 'acquired'])
    expect((await store.state(name)).held).toBe(1)
  })

  it('answers concurrent plain acquires busy while someone waits in line', async () => {
    const { name, store } = ctx.fresh()
    const holder = ctx.req({ limit: 2 })
    await store.acquire(name, holder)
    await store.acquire(name, ctx.req({ limit: 2 }))
    await store.acquire(name, ctx.req({ limit: 2, queue: LINE }))
    await store.release(name, holder.token)
    const burst = await Promise.all(Array.from({ length: 5 }, () => store.acquire(name, ctx.req({ limit: 2 }))))
    expect(burst.map((r) => r.status)).toEqual(['busy', 'busy', 'busy', 'busy', 'busy'])
  })

  it('hands out strictly increasing fences', async () => {
    const { name, store } = ctx.fresh()
    const fences: number[] = []
    for (let i = 0; i < 5; i++) {
      const t = ctx.req()
      const r = await store.acquire(name, t)
      if (r.status !== 'acquired') throw new Error('expected a slot')
      fences.push(r.fence)
      await store.release(name, t.token)
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!)
  })

  it('gives a live holder its own slot back unchanged (idempotent)', async () => {
    const { name, store } = ctx.fresh()
    const t = ctx.req()
    const first = await store.acquire(name, t)
    const again = await store.acquire(name, t)
    expect(again).toMatchObject({ status: 'acquired' })
    if (first.status !== 'acquired' || again.status !== 'acquired') throw new Error('unreachable')
    expect(again.fence).toBe(first.fence)
    expect(again.expiresAt).toBe(first.expiresAt)
    expect((await store.state(name)).held).toBe(1)
  })

  it('counts weight units against the limit', async () => {
    const { name, store } = ctx.fresh()
    expect((await store.acquire(name, ctx.req({ limit: 3, weight: 2 }))).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 3, weight: 2 }))).status).toBe('busy')
    expect((await store.acquire(name, ctx.req({ limit: 3, weight: 1 }))).status).toBe('acquired')
    expect(await store.state(name)).toEqual({ held: 3, waiting: 0 })
  })

  it('frees a slot by itself after ttl', async () => {
    const { name, store } = ctx.fresh()
    const t = ctx.req({ limit: 1, ttl: 150 })
    expect((await store.acquire(name, t)).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 1 }))).status).toBe('busy')
    await sleep(250)
    expect(await store.leaseState(name, t.token)).toBe('expired')
    expect((await store.acquire(name, ctx.req({ limit: 1 }))).status).toBe('acquired')
  })

  it('refreshes only a live slot of the owner, and never re-creates an expired one', async () => {
    const { name, store } = ctx.fresh()
    const t = ctx.req({ ttl: 150 })
    const got = await store.acquire(name, t)
    if (got.status !== 'acquired') throw new Error('expected a slot')
    expect(await store.refresh(name, ctx.token(), 10_000)).toEqual({ ok: false })
    const r = await store.refresh(name, t.token, 300)
    expect(r).toMatchObject({ ok: true, fence: got.fence })
    if (!r.ok) throw new Error('unreachable')
    expect(r.expiresAt).toBeGreaterThanOrEqual(got.expiresAt)
    await sleep(400)
    expect(await store.refresh(name, t.token, 10_000)).toEqual({ ok: false })
    expect(await store.leaseState(name, t.token)).toBe('expired')
    expect((await store.state(name)).held).toBe(0)
  })

  it('releases once: true for the owner, false again, false for strangers and expired slots', async () => {
    const { name, store } = ctx.fresh()
    const t = ctx.req()
    await store.acquire(name, t)
    expect(await store.release(name, ctx.token())).toBe(false)
    expect(await store.release(name, t.token)).toBe(true)
    expect(await store.release(name, t.token)).toBe(false)
    expect(await store.leaseState(name, t.token)).toBe('released')
    expect(await store.refresh(name, t.token, 1_000)).toEqual({ ok: false })

    const short = ctx.req({ ttl: 100 })
    await store.acquire(name, short)
    await sleep(200)
    expect(await store.release(name, short.token)).toBe(false)
    expect((await store.state(name)).held).toBe(0)
  })

  it('releaseHeld tells how long the freed slot was held, refreshes included, once', async () => {
    const { name, store } = ctx.fresh()
    if (!store.releaseHeld) return
    const t = ctx.req()
    await store.acquire(name, t)
    await sleep(150)
    expect(await store.refresh(name, t.token, 5_000)).toMatchObject({ ok: true })
    await sleep(150)
    expect(await store.releaseHeld(name, ctx.token())).toBe(false)
    const freed = await store.releaseHeld(name, t.token)
    if (freed === false || freed.heldMs === null) throw new Error(`no visit length: ${JSON.stringify(freed)}`)
    expect(freed.heldMs).toBeGreaterThanOrEqual(290)
    expect(freed.heldMs).toBeLessThanOrEqual(5_000)
    expect(await store.releaseHeld(name, t.token)).toBe(false)
    expect(await store.leaseState(name, t.token)).toBe('released')
  })

  it('reports lease states', async () => {
    const { name, store } = ctx.fresh()
    const t = ctx.req()
    await store.acquire(name, t)
    expect(await store.leaseState(name, t.token)).toBe('acquired')
    expect(await store.leaseState(name, ctx.token())).toBe('expired')
    await store.release(name, t.token)
    expect(await store.leaseState(name, t.token)).toBe('released')
  })

  it('forceReleaseAll drops every slot; their refreshes fail', async () => {
    const { name, store } = ctx.fresh()
    const a = ctx.req()
    const b = ctx.req()
    await store.acquire(name, a)
    await store.acquire(name, b)
    expect(await store.forceReleaseAll(name)).toBe(2)
    expect(await store.refresh(name, a.token, 1_000)).toEqual({ ok: false })
    expect(await store.leaseState(name, b.token)).toBe('released')
    expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
    expect(await store.forceReleaseAll(name)).toBe(0)
  })

  it('status and report (optional, both or neither): slots, line, line admissions, and live instance reports', async () => {
    const { name, store } = ctx.fresh()
    // A custom store written before 0.2 names it `report` (deprecated).
    const write = (store.writeStatus ?? store.report)?.bind(store)
    if (write === undefined || store.status === undefined) {
      expect([write, store.status]).toEqual([undefined, undefined])
      return
    }
    const holder = ctx.req({ limit: 1 })
    await store.acquire(name, holder)
    const waiter = ctx.req({ limit: 1, queue: LINE })
    await store.acquire(name, waiter)
    // Each report answers how many instances' reports are live (the gate's share while the store is down), or nothing.
    const counts = [
      await write(name, 'instance-a', '{"n":1}', 300),
      await write(name, 'instance-b', 'two', 10_000),
      await write(name, 'instance-a', '{"n":2}', 300), // replaces its earlier report
    ]
    if (counts.some((c) => c !== undefined)) expect(counts).toEqual([1, 2, 2])
    let st = await store.status(name)
    expect(st).toMatchObject({ held: 1, waiting: 1, admitted: 0 })
    expect(st.instances.map((i) => [i.id, i.data]).sort()).toEqual([
      ['instance-a', '{"n":2}'],
      ['instance-b', 'two'],
    ])
    const a = st.instances.find((i) => i.id === 'instance-a')!
    expect(a.expiresAt - st.now).toBeGreaterThan(0)
    expect(a.expiresAt - st.now).toBeLessThanOrEqual(300)
    // The waiter is admitted from the line: one admission counted.
    await store.release(name, holder.token)
    expect((await store.acquire(name, waiter)).status).toBe('acquired')
    await sleep(400)
    st = await store.status(name)
    expect(st).toMatchObject({ held: 1, waiting: 0, admitted: 1 })
    expect(st.instances.map((i) => i.id)).toEqual(['instance-b']) // a's report lapsed
    if (counts.some((c) => c !== undefined)) expect(await write(name, 'instance-c', 'three', 300)).toBe(2)
  })
}
