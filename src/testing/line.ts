/** The store contract: the line (positions, reservations, eviction, claim windows, wake-ups, lottery). */
import type { AcquireRequest, QueueRequest, Store } from '../stores/types.js'
import type { ContractContext, TestApi } from './types.js'
import { LINE, sleep } from './util.js'

/**
 * A semaphore of one slot, held by `holder`, with `head` and `next` in line behind it (in that order,
 * each with the line settings `queue`).
 */
async function twoInLine(
  ctx: ContractContext,
  queue: QueueRequest = LINE,
): Promise<{ name: string; store: Store; holder: AcquireRequest; head: AcquireRequest; next: AcquireRequest }> {
  const { name, store } = ctx.fresh()
  const holder = ctx.req({ limit: 1 })
  await store.acquire(name, holder)
  const head = ctx.req({ limit: 1, queue })
  const next = ctx.req({ limit: 1, queue })
  await store.acquire(name, head)
  await store.acquire(name, next)
  return { name, store, holder, head, next }
}

export function lineCases({ it, expect }: TestApi, ctx: ContractContext): void {
  it('queues in arrival order and shows exact positions', async () => {
    const { name, store } = ctx.fresh()
    await store.acquire(name, ctx.req({ limit: 1 }))
    const waiters = [
      ctx.req({ limit: 1, queue: LINE }),
      ctx.req({ limit: 1, queue: LINE }),
      ctx.req({ limit: 1, queue: LINE }),
    ]
    for (const [i, w] of waiters.entries()) {
      expect(await store.acquire(name, w)).toMatchObject({ status: 'queued', position: i + 1, waiting: i + 1 })
    }
    // Re-entering keeps the place; it never takes a second one.
    expect(await store.acquire(name, waiters[1]!)).toMatchObject({ status: 'queued', position: 2, waiting: 3 })
    expect(await store.state(name)).toEqual({ held: 1, waiting: 3 })
  })

  it('lets only the head in: not a later waiter, not a newcomer without a place', async () => {
    const { name, store, holder, head, next: second } = await twoInLine(ctx)
    await store.release(name, holder.token)
    expect((await store.acquire(name, second)).status).toBe('queued')
    expect((await store.acquire(name, ctx.req({ limit: 1 }))).status).toBe('busy')
    expect((await store.acquire(name, ctx.req({ limit: 1, queue: LINE }))).status).toBe('queued')
    expect((await store.acquire(name, head)).status).toBe('acquired')
    expect(await store.acquire(name, second)).toMatchObject({ status: 'queued', position: 1 })
  })

  it('reserves freed room for as many waiters as fit, in order: each may claim, later ones and newcomers may not', async () => {
    const { name, store } = ctx.fresh()
    const holders = [ctx.req({ limit: 3 }), ctx.req({ limit: 3 }), ctx.req({ limit: 3 })]
    for (const h of holders) await store.acquire(name, h)
    const ws = Array.from({ length: 5 }, () => ctx.req({ limit: 3, queue: LINE }))
    for (const w of ws) await store.acquire(name, w)
    for (const h of holders) await store.release(name, h.token)
    // The third waiter asks first: room is reserved for the first three, so it is admitted.
    expect((await store.acquire(name, ws[2]!)).status).toBe('acquired')
    expect(await store.acquire(name, ws[3]!)).toMatchObject({ status: 'queued', position: 3 })
    expect((await store.acquire(name, ctx.req({ limit: 3 }))).status).toBe('busy')
    expect((await store.acquire(name, ctx.req({ limit: 3, queue: LINE }))).status).toBe('queued')
    expect((await store.acquire(name, ws[1]!)).status).toBe('acquired')
    expect((await store.acquire(name, ws[0]!)).status).toBe('acquired')
    expect(await store.acquire(name, ws[3]!)).toMatchObject({ status: 'queued', position: 1 })
    expect(await store.state(name)).toEqual({ held: 3, waiting: 3 })
  })

  it('a new place with confirmTimeout is lost quickly unless the waiter comes back; room held for it passes on', async () => {
    const { name, store } = ctx.fresh()
    const confirming: QueueRequest = { ...LINE, confirmTimeout: 300 }
    const holder = ctx.req({ limit: 1 })
    await store.acquire(name, holder)
    const ghost = ctx.req({ limit: 1, queue: confirming }) // never comes back (keeps no cookies)
    const real = ctx.req({ limit: 1, queue: confirming })
    expect(await store.acquire(name, ghost)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
    expect(await store.acquire(name, real)).toMatchObject({ status: 'queued', position: 2, waiting: 2 })
    // Exact arrival order: the freed slot is held for the ghost, who came first...
    await store.release(name, holder.token)
    expect(await store.acquire(name, real)).toMatchObject({ status: 'queued', position: 2 }) // also a sign of life
    // ...but only until its place lapses, confirmTimeout after it arrived (not idleTimeout).
    await sleep(400)
    expect((await store.acquire(name, { ...ghost, queue: { ...confirming, admit: false } })).status).toBe('absent')
    expect((await store.acquire(name, real)).status).toBe('acquired')
  })

  it('a waiter that came back keeps its place past confirmTimeout, and is admitted when room frees', async () => {
    const { name, store } = ctx.fresh()
    const confirming: QueueRequest = { ...LINE, confirmTimeout: 300 }
    const holder = ctx.req({ limit: 1 })
    await store.acquire(name, holder)
    const w = ctx.req({ limit: 1, queue: confirming })
    expect((await store.acquire(name, w)).status).toBe('queued')
    // A poll is a sign of life (and never admits): from now on idleTimeout applies.
    expect(await store.acquire(name, { ...w, queue: { ...confirming, admit: false } })).toMatchObject({
      status: 'queued',
      position: 1,
    })
    await sleep(400)
    expect(await store.acquire(name, { ...w, queue: { ...confirming, admit: false } })).toMatchObject({
      status: 'queued',
      position: 1,
    })
    await store.release(name, holder.token)
    expect((await store.acquire(name, w)).status).toBe('acquired')
    expect(await store.state(name)).toEqual({ held: 1, waiting: 0 })
  })

  it('does not let a light waiter overtake a heavy head', async () => {
    const { name, store } = ctx.fresh()
    const holder = ctx.req({ limit: 3, weight: 2 })
    await store.acquire(name, holder)
    const heavy = ctx.req({ limit: 3, weight: 3, queue: LINE })
    const light = ctx.req({ limit: 3, weight: 1, queue: LINE })
    expect((await store.acquire(name, heavy)).status).toBe('queued')
    expect((await store.acquire(name, light)).status).toBe('queued')
    // One unit is free, enough for `light`, but the heavy head goes first.
    expect((await store.acquire(name, light)).status).toBe('queued')
    await store.release(name, holder.token)
    expect((await store.acquire(name, heavy)).status).toBe('acquired')
    expect((await store.acquire(name, light)).status).toBe('queued')
  })

  it('admits directly while the line is empty and there is room', async () => {
    const { name, store } = ctx.fresh()
    expect((await store.acquire(name, ctx.req({ queue: LINE }))).status).toBe('acquired')
    expect(await store.state(name)).toEqual({ held: 1, waiting: 0 })
  })

  it('drops waiters not seen for their idle timeout; those behind move up', async () => {
    const { name, store } = ctx.fresh()
    await store.acquire(name, ctx.req({ limit: 1 }))
    const idle = { ...LINE, idleTimeout: 200 }
    const gone = ctx.req({ limit: 1, queue: idle })
    const stays = ctx.req({ limit: 1, queue: idle })
    await store.acquire(name, gone)
    await store.acquire(name, stays)
    for (let i = 0; i < 4; i++) {
      await sleep(100)
      expect((await store.acquire(name, stays)).status).toBe('queued') // sign of life
    }
    expect(await store.acquire(name, stays)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
  })

  it('skips a head that does not claim its reserved slot within the claim window', async () => {
    const { name, store, holder, head, next } = await twoInLine(ctx, { ...LINE, claimWindow: 200 })
    await store.release(name, holder.token)
    // `next` polls: the slot is reserved for `head` for its claim window.
    expect(await store.acquire(name, next)).toMatchObject({ status: 'queued', position: 2 })
    await sleep(300)
    expect((await store.acquire(name, next)).status).toBe('acquired')
    // The skipped head comes back: it lost its place and joins at the back.
    expect(await store.acquire(name, head)).toMatchObject({ status: 'queued', position: 1 })
  })

  it('leave() takes a waiter out; positions shift up', async () => {
    const { name, store, head: a, next: b } = await twoInLine(ctx)
    expect(await store.leave(name, a.token)).toBe(true)
    expect(await store.leave(name, a.token)).toBe(false)
    expect(await store.acquire(name, b)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
  })

  it('leave(keepOut) keeps the leaver out for a moment: a line request for it is absent, takes no place, no slot', async () => {
    const { name, store, holder, head: a, next: b } = await twoInLine(ctx)
    expect(await store.leave(name, a.token, true)).toBe(true)
    expect((await store.acquire(name, a)).status).toBe('absent') // a poll already on its way
    expect(await store.acquire(name, b)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
    // Nobody in line, a slot free: still no slot for it.
    expect(await store.leave(name, b.token)).toBe(true)
    await store.release(name, holder.token)
    expect((await store.acquire(name, a)).status).toBe('absent')
    expect((await store.acquire(name, b)).status).toBe('acquired') // left without keepOut
  })

  it('answers full at maxLength', async () => {
    const { name, store } = ctx.fresh()
    await store.acquire(name, ctx.req({ limit: 1 }))
    const capped = { ...LINE, maxLength: 2 }
    await store.acquire(name, ctx.req({ limit: 1, queue: capped }))
    const second = ctx.req({ limit: 1, queue: capped })
    await store.acquire(name, second)
    expect(await store.acquire(name, ctx.req({ limit: 1, queue: capped }))).toMatchObject({
      status: 'full',
      waiting: 2,
    })
    // A waiter already in line keeps its place.
    expect(await store.acquire(name, second)).toMatchObject({ status: 'queued', position: 2 })
  })

  it('positions, waiting and the length cap count live places only, after thousands lapsed at once', async () => {
    const { name, store } = ctx.fresh()
    // The holder outlives the burst however long a busy machine takes over it (seconds, at worst).
    await store.acquire(name, ctx.req({ limit: 1, ttl: 60_000 }))
    // A burst of clients that keep no cookies: 2,500 places taken together, never confirmed.
    const burst: QueueRequest = { ...LINE, confirmTimeout: 500, maxLength: 3_000 }
    const ghosts = Array.from({ length: 2_500 }, () => store.acquire(name, ctx.req({ limit: 1, queue: burst })))
    expect((await Promise.all(ghosts)).every((r) => r.status === 'queued')).toBe(true)
    await sleep(600)
    const capped: QueueRequest = { ...LINE, maxLength: 2 }
    expect(await store.acquire(name, ctx.req({ limit: 1, queue: capped }))).toMatchObject({
      status: 'queued',
      position: 1,
      waiting: 1,
    })
    expect(await store.acquire(name, ctx.req({ limit: 1, queue: capped }))).toMatchObject({
      status: 'queued',
      position: 2,
      waiting: 2,
    })
    expect(await store.acquire(name, ctx.req({ limit: 1, queue: capped }))).toMatchObject({
      status: 'full',
      waiting: 2,
    })
    expect(await store.state(name)).toEqual({ held: 1, waiting: 2 })
  })

  it('a poll (admit: false) neither admits nor joins', async () => {
    const { name, store } = ctx.fresh()
    const poll = { ...LINE, admit: false }
    expect((await store.acquire(name, ctx.req({ limit: 1, queue: poll }))).status).toBe('absent')
    expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
    await store.acquire(name, ctx.req({ limit: 1 }))
    const w = ctx.req({ limit: 1, queue: LINE })
    await store.acquire(name, w)
    expect(await store.acquire(name, { ...w, queue: poll })).toMatchObject({ status: 'queued', position: 1 })
  })

  it('reports recent admissions from the line (not direct ones) for an ETA', async () => {
    const { name, store } = ctx.fresh()
    const direct = ctx.req({ limit: 1, queue: LINE })
    expect((await store.acquire(name, direct)).status).toBe('acquired')
    let holder = direct
    const line = Array.from({ length: 4 }, () => ctx.req({ limit: 1, queue: LINE }))
    for (const w of line) await store.acquire(name, w)
    for (const w of line.slice(0, 3)) {
      await sleep(20)
      await store.release(name, holder.token)
      expect((await store.acquire(name, w)).status).toBe('acquired')
      holder = w
    }
    const last = await store.acquire(name, line[3]!)
    expect(last).toMatchObject({ status: 'queued', position: 1, admitted: 3 })
    if (last.status !== 'queued') throw new Error('unreachable')
    expect(last.windowMs).toBeGreaterThanOrEqual(30)
  })

  it('treats a head that let its claim window pass as a newcomer when it calls itself', async () => {
    const line = { ...LINE, claimWindow: 150 }
    const { name, store, holder, head, next } = await twoInLine(ctx, line)
    await store.release(name, holder.token)
    expect(await store.acquire(name, { ...next, queue: { ...line, admit: false } })).toMatchObject({ position: 2 })
    await sleep(250)
    expect((await store.acquire(name, { ...head, queue: { ...line, admit: false } })).status).toBe('absent')
    expect(await store.acquire(name, head)).toMatchObject({ status: 'queued', position: 2 })
  })

  it('wakes subscribers with the head token when room appears', async () => {
    const { name, store } = ctx.fresh()
    const holder = ctx.req({ limit: 1 })
    await store.acquire(name, holder)
    const head = ctx.req({ limit: 1, queue: LINE })
    await store.acquire(name, head)
    const heard: string[] = []
    const unsubscribe = await store.subscribe(name, (t) => heard.push(t))
    await store.release(name, holder.token)
    for (let i = 0; i < 50 && heard.length === 0; i++) await sleep(10)
    unsubscribe()
    expect(heard).toContain(head.token)
  })

  it('wakes each waiter that room is reserved for, so blocking waiters fill freed slots at once', async () => {
    const { name, store } = ctx.fresh()
    const holders = [ctx.req({ limit: 2 }), ctx.req({ limit: 2 })]
    for (const h of holders) await store.acquire(name, h)
    const first = ctx.req({ limit: 2, queue: LINE })
    const second = ctx.req({ limit: 2, queue: LINE })
    await store.acquire(name, first)
    await store.acquire(name, second)
    const heard: string[] = []
    const unsubscribe = await store.subscribe(name, (t) => heard.push(t))
    await store.release(name, holders[0]!.token)
    await store.release(name, holders[1]!.token)
    for (let i = 0; i < 50 && !heard.includes(first.token); i++) await sleep(10)
    expect(heard).toContain(first.token) // a release wakes the first waiter without a reservation
    expect((await store.acquire(name, first)).status).toBe('acquired') // reserves for both, admits itself
    for (let i = 0; i < 50 && !heard.includes(second.token); i++) await sleep(10)
    unsubscribe()
    expect(heard).toContain(second.token) // told that room is reserved for it
    expect((await store.acquire(name, second)).status).toBe('acquired')
  })

  it('random order admits from the line without arrival order', async () => {
    const { name, store } = ctx.fresh()
    const lottery: QueueRequest = { ...LINE, order: 'random' }
    let holder = ctx.req({ limit: 1 })
    await store.acquire(name, holder)
    const ws = Array.from({ length: 12 }, () => ctx.req({ limit: 1, queue: lottery }))
    for (const [i, w] of ws.entries()) {
      expect(await store.acquire(name, w)).toMatchObject({ status: 'queued', position: i + 1 }) // arrival rank
    }
    const order: number[] = []
    while (order.length < ws.length) {
      await store.release(name, holder.token)
      const won = []
      for (const [i, w] of ws.entries()) {
        if (order.includes(i)) continue
        if ((await store.acquire(name, w)).status === 'acquired') won.push(i)
      }
      expect(won).toHaveLength(1) // one slot, one winner
      order.push(won[0]!)
      holder = ws[won[0]!]!
    }
    // 12! orders; arrival order comes up once in 479 million.
    expect(order).not.toEqual([...order].sort((x, y) => x - y))
  })
}
