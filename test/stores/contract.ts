/**
 * The one Store contract. Every store runs this suite unchanged (memory.test.ts, redis.test.ts);
 * a case one store passes and another skips is a bug in one of them. Real time, short ttls.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AcquireRequest, QueueRequest, Store } from '../../src/stores/types.js'

export interface ContractTarget {
  store: Store
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const token = () => randomBytes(9).toString('base64url')
const LINE: QueueRequest = { order: 'fifo', idleTimeout: 5_000, claimWindow: 5_000, maxLength: 0 }

export function storeContract(label: string, make: () => Promise<ContractTarget>): void {
  describe(`Store contract: ${label}`, () => {
    let target: ContractTarget
    let store: Store
    let n = 0
    /** A fresh semaphore name per test, so tests never see each other's slots. */
    let name = ''
    const fresh = () => (name = `contract-${label}-${++n}-${token()}`)
    const req = (over: Partial<AcquireRequest> = {}): AcquireRequest => ({
      token: token(),
      limit: 2,
      ttl: 5_000,
      weight: 1,
      ...over,
    })

    beforeAll(async () => {
      target = await make()
      store = target.store
    })
    afterAll(async () => {
      await target?.close()
    })

    it('admits up to the limit, then answers busy with the next expiry', async () => {
      fresh()
      const a = await store.acquire(name, req())
      const b = await store.acquire(name, req())
      const c = await store.acquire(name, req())
      expect(a.status).toBe('acquired')
      expect(b.status).toBe('acquired')
      expect(c.status).toBe('busy')
      if (a.status !== 'acquired' || c.status !== 'busy') throw new Error('unreachable')
      expect(c.nextExpiry).toBe(a.expiresAt)
      expect(a.expiresAt - a.now).toBe(5_000)
    })

    it('decides concurrent calls one by one (the Redis store batches them)', async () => {
      fresh()
      const reqs = Array.from({ length: 40 }, () => req({ limit: 7 }))
      const results = await Promise.all(reqs.map((r) => store.acquire(name, r)))
      const won = reqs.filter((_, i) => results[i]!.status === 'acquired')
      expect(won).toHaveLength(7)
      const fences = results.flatMap((r) => (r.status === 'acquired' ? [r.fence] : []))
      expect(new Set(fences).size).toBe(7)
      // The same token twice in one burst: one slot, returned twice.
      const releases = await Promise.all([...won, won[0]!].map((r) => store.release(name, r.token)))
      expect(releases.filter(Boolean)).toHaveLength(7)
      expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
      const again = req({ limit: 7 })
      const twice = await Promise.all([store.acquire(name, again), store.acquire(name, again)])
      expect(twice.map((r) => r.status)).toEqual(['acquired', 'acquired'])
      expect((await store.state(name)).held).toBe(1)
    })

    it('answers concurrent plain acquires busy while someone waits in line', async () => {
      fresh()
      const holder = req({ limit: 2 })
      await store.acquire(name, holder)
      await store.acquire(name, req({ limit: 2 }))
      await store.acquire(name, req({ limit: 2, queue: LINE }))
      await store.release(name, holder.token)
      const burst = await Promise.all(Array.from({ length: 5 }, () => store.acquire(name, req({ limit: 2 }))))
      expect(burst.map((r) => r.status)).toEqual(['busy', 'busy', 'busy', 'busy', 'busy'])
    })

    it('hands out strictly increasing fences', async () => {
      fresh()
      const fences: number[] = []
      for (let i = 0; i < 5; i++) {
        const t = req()
        const r = await store.acquire(name, t)
        if (r.status !== 'acquired') throw new Error('expected a slot')
        fences.push(r.fence)
        await store.release(name, t.token)
      }
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!)
    })

    it('gives a live holder its own slot back unchanged (idempotent)', async () => {
      fresh()
      const t = req()
      const first = await store.acquire(name, t)
      const again = await store.acquire(name, t)
      expect(again).toMatchObject({ status: 'acquired' })
      if (first.status !== 'acquired' || again.status !== 'acquired') throw new Error('unreachable')
      expect(again.fence).toBe(first.fence)
      expect(again.expiresAt).toBe(first.expiresAt)
      expect((await store.state(name)).held).toBe(1)
    })

    it('counts weight units against the limit', async () => {
      fresh()
      expect((await store.acquire(name, req({ limit: 3, weight: 2 }))).status).toBe('acquired')
      expect((await store.acquire(name, req({ limit: 3, weight: 2 }))).status).toBe('busy')
      expect((await store.acquire(name, req({ limit: 3, weight: 1 }))).status).toBe('acquired')
      expect(await store.state(name)).toEqual({ held: 3, waiting: 0 })
    })

    it('frees a slot by itself after ttl', async () => {
      fresh()
      const t = req({ limit: 1, ttl: 150 })
      expect((await store.acquire(name, t)).status).toBe('acquired')
      expect((await store.acquire(name, req({ limit: 1 }))).status).toBe('busy')
      await sleep(250)
      expect(await store.leaseState(name, t.token)).toBe('expired')
      expect((await store.acquire(name, req({ limit: 1 }))).status).toBe('acquired')
    })

    it('refreshes only a live slot of the owner, and never re-creates an expired one', async () => {
      fresh()
      const t = req({ ttl: 150 })
      const got = await store.acquire(name, t)
      if (got.status !== 'acquired') throw new Error('expected a slot')
      expect(await store.refresh(name, token(), 10_000)).toEqual({ ok: false })
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
      fresh()
      const t = req()
      await store.acquire(name, t)
      expect(await store.release(name, token())).toBe(false)
      expect(await store.release(name, t.token)).toBe(true)
      expect(await store.release(name, t.token)).toBe(false)
      expect(await store.leaseState(name, t.token)).toBe('released')
      expect(await store.refresh(name, t.token, 1_000)).toEqual({ ok: false })

      const short = req({ ttl: 100 })
      await store.acquire(name, short)
      await sleep(200)
      expect(await store.release(name, short.token)).toBe(false)
      expect((await store.state(name)).held).toBe(0)
    })

    it('reports lease states', async () => {
      fresh()
      const t = req()
      await store.acquire(name, t)
      expect(await store.leaseState(name, t.token)).toBe('acquired')
      expect(await store.leaseState(name, token())).toBe('expired')
      await store.release(name, t.token)
      expect(await store.leaseState(name, t.token)).toBe('released')
    })

    it('forceReleaseAll drops every slot; their refreshes fail', async () => {
      fresh()
      const a = req()
      const b = req()
      await store.acquire(name, a)
      await store.acquire(name, b)
      expect(await store.forceReleaseAll(name)).toBe(2)
      expect(await store.refresh(name, a.token, 1_000)).toEqual({ ok: false })
      expect(await store.leaseState(name, b.token)).toBe('released')
      expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
      expect(await store.forceReleaseAll(name)).toBe(0)
    })

    describe('the line', () => {
      it('queues in arrival order and shows exact positions', async () => {
        fresh()
        await store.acquire(name, req({ limit: 1 }))
        const waiters = [req({ limit: 1, queue: LINE }), req({ limit: 1, queue: LINE }), req({ limit: 1, queue: LINE })]
        for (const [i, w] of waiters.entries()) {
          expect(await store.acquire(name, w)).toMatchObject({ status: 'queued', position: i + 1, waiting: i + 1 })
        }
        // Re-entering keeps the place; it never takes a second one.
        expect(await store.acquire(name, waiters[1]!)).toMatchObject({ status: 'queued', position: 2, waiting: 3 })
        expect(await store.state(name)).toEqual({ held: 1, waiting: 3 })
      })

      it('lets only the head in: not a later waiter, not a newcomer without a place', async () => {
        fresh()
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const head = req({ limit: 1, queue: LINE })
        const second = req({ limit: 1, queue: LINE })
        await store.acquire(name, head)
        await store.acquire(name, second)
        await store.release(name, holder.token)
        expect((await store.acquire(name, second)).status).toBe('queued')
        expect((await store.acquire(name, req({ limit: 1 }))).status).toBe('busy')
        expect((await store.acquire(name, req({ limit: 1, queue: LINE }))).status).toBe('queued')
        expect((await store.acquire(name, head)).status).toBe('acquired')
        expect(await store.acquire(name, second)).toMatchObject({ status: 'queued', position: 1 })
      })

      it('reserves freed room for as many waiters as fit, in order: each may claim, later ones and newcomers may not', async () => {
        fresh()
        const holders = [req({ limit: 3 }), req({ limit: 3 }), req({ limit: 3 })]
        for (const h of holders) await store.acquire(name, h)
        const ws = Array.from({ length: 5 }, () => req({ limit: 3, queue: LINE }))
        for (const w of ws) await store.acquire(name, w)
        for (const h of holders) await store.release(name, h.token)
        // The third waiter asks first: room is reserved for the first three, so it is admitted.
        expect((await store.acquire(name, ws[2]!)).status).toBe('acquired')
        expect(await store.acquire(name, ws[3]!)).toMatchObject({ status: 'queued', position: 3 })
        expect((await store.acquire(name, req({ limit: 3 }))).status).toBe('busy')
        expect((await store.acquire(name, req({ limit: 3, queue: LINE }))).status).toBe('queued')
        expect((await store.acquire(name, ws[1]!)).status).toBe('acquired')
        expect((await store.acquire(name, ws[0]!)).status).toBe('acquired')
        expect(await store.acquire(name, ws[3]!)).toMatchObject({ status: 'queued', position: 1 })
        expect(await store.state(name)).toEqual({ held: 3, waiting: 3 })
      })

      it('a new place with confirmTimeout is lost quickly unless the waiter comes back; room held for it passes on', async () => {
        fresh()
        const confirming: QueueRequest = { ...LINE, confirmTimeout: 300 }
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const ghost = req({ limit: 1, queue: confirming }) // never comes back (keeps no cookies)
        const real = req({ limit: 1, queue: confirming })
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
        fresh()
        const confirming: QueueRequest = { ...LINE, confirmTimeout: 300 }
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const w = req({ limit: 1, queue: confirming })
        expect((await store.acquire(name, w)).status).toBe('queued')
        // A poll is a sign of life (and never admits): from now on idleTimeout applies.
        expect(await store.acquire(name, { ...w, queue: { ...confirming, admit: false } })).toMatchObject({ status: 'queued', position: 1 })
        await sleep(400)
        expect(await store.acquire(name, { ...w, queue: { ...confirming, admit: false } })).toMatchObject({ status: 'queued', position: 1 })
        await store.release(name, holder.token)
        expect((await store.acquire(name, w)).status).toBe('acquired')
        expect(await store.state(name)).toEqual({ held: 1, waiting: 0 })
      })

      it('does not let a light waiter overtake a heavy head', async () => {
        fresh()
        const holder = req({ limit: 3, weight: 2 })
        await store.acquire(name, holder)
        const heavy = req({ limit: 3, weight: 3, queue: LINE })
        const light = req({ limit: 3, weight: 1, queue: LINE })
        expect((await store.acquire(name, heavy)).status).toBe('queued')
        expect((await store.acquire(name, light)).status).toBe('queued')
        // One unit is free, enough for `light`, but the heavy head goes first.
        expect((await store.acquire(name, light)).status).toBe('queued')
        await store.release(name, holder.token)
        expect((await store.acquire(name, heavy)).status).toBe('acquired')
        expect((await store.acquire(name, light)).status).toBe('queued')
      })

      it('admits directly while the line is empty and there is room', async () => {
        fresh()
        expect((await store.acquire(name, req({ queue: LINE }))).status).toBe('acquired')
        expect(await store.state(name)).toEqual({ held: 1, waiting: 0 })
      })

      it('drops waiters not seen for their idle timeout; those behind move up', async () => {
        fresh()
        await store.acquire(name, req({ limit: 1 }))
        const idle = { ...LINE, idleTimeout: 200 }
        const gone = req({ limit: 1, queue: idle })
        const stays = req({ limit: 1, queue: idle })
        await store.acquire(name, gone)
        await store.acquire(name, stays)
        for (let i = 0; i < 4; i++) {
          await sleep(100)
          expect((await store.acquire(name, stays)).status).toBe('queued') // sign of life
        }
        expect(await store.acquire(name, stays)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
      })

      it('skips a head that does not claim its reserved slot within the claim window', async () => {
        fresh()
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const line = { ...LINE, claimWindow: 200 }
        const head = req({ limit: 1, queue: line })
        const next = req({ limit: 1, queue: line })
        await store.acquire(name, head)
        await store.acquire(name, next)
        await store.release(name, holder.token)
        // `next` polls: the slot is reserved for `head` for its claim window.
        expect(await store.acquire(name, next)).toMatchObject({ status: 'queued', position: 2 })
        await sleep(300)
        expect((await store.acquire(name, next)).status).toBe('acquired')
        // The skipped head comes back: it lost its place and joins at the back.
        expect(await store.acquire(name, head)).toMatchObject({ status: 'queued', position: 1 })
      })

      it('leave() takes a waiter out; positions shift up', async () => {
        fresh()
        await store.acquire(name, req({ limit: 1 }))
        const a = req({ limit: 1, queue: LINE })
        const b = req({ limit: 1, queue: LINE })
        await store.acquire(name, a)
        await store.acquire(name, b)
        expect(await store.leave(name, a.token)).toBe(true)
        expect(await store.leave(name, a.token)).toBe(false)
        expect(await store.acquire(name, b)).toMatchObject({ status: 'queued', position: 1, waiting: 1 })
      })

      it('answers full at maxLength', async () => {
        fresh()
        await store.acquire(name, req({ limit: 1 }))
        const capped = { ...LINE, maxLength: 2 }
        await store.acquire(name, req({ limit: 1, queue: capped }))
        const second = req({ limit: 1, queue: capped })
        await store.acquire(name, second)
        expect(await store.acquire(name, req({ limit: 1, queue: capped }))).toMatchObject({ status: 'full', waiting: 2 })
        // A waiter already in line keeps its place.
        expect(await store.acquire(name, second)).toMatchObject({ status: 'queued', position: 2 })
      })

      it('a poll (admit: false) neither admits nor joins', async () => {
        fresh()
        const poll = { ...LINE, admit: false }
        expect((await store.acquire(name, req({ limit: 1, queue: poll }))).status).toBe('absent')
        expect(await store.state(name)).toEqual({ held: 0, waiting: 0 })
        await store.acquire(name, req({ limit: 1 }))
        const w = req({ limit: 1, queue: LINE })
        await store.acquire(name, w)
        expect(await store.acquire(name, { ...w, queue: poll })).toMatchObject({ status: 'queued', position: 1 })
      })

      it('reports recent admissions from the line (not direct ones) for an ETA', async () => {
        fresh()
        const direct = req({ limit: 1, queue: LINE })
        expect((await store.acquire(name, direct)).status).toBe('acquired')
        let holder = direct
        const line = Array.from({ length: 4 }, () => req({ limit: 1, queue: LINE }))
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
        fresh()
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const line = { ...LINE, claimWindow: 150 }
        const head = req({ limit: 1, queue: line })
        const next = req({ limit: 1, queue: line })
        await store.acquire(name, head)
        await store.acquire(name, next)
        await store.release(name, holder.token)
        expect(await store.acquire(name, { ...next, queue: { ...line, admit: false } })).toMatchObject({ position: 2 })
        await sleep(250)
        expect((await store.acquire(name, { ...head, queue: { ...line, admit: false } })).status).toBe('absent')
        expect(await store.acquire(name, head)).toMatchObject({ status: 'queued', position: 2 })
      })

      it('wakes subscribers with the head token when room appears', async () => {
        fresh()
        const holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const head = req({ limit: 1, queue: LINE })
        await store.acquire(name, head)
        const heard: string[] = []
        const unsubscribe = await store.subscribe(name, (t) => heard.push(t))
        await store.release(name, holder.token)
        for (let i = 0; i < 50 && heard.length === 0; i++) await sleep(10)
        unsubscribe()
        expect(heard).toContain(head.token)
      })

      it('wakes each waiter that room is reserved for, so blocking waiters fill freed slots at once', async () => {
        fresh()
        const holders = [req({ limit: 2 }), req({ limit: 2 })]
        for (const h of holders) await store.acquire(name, h)
        const first = req({ limit: 2, queue: LINE })
        const second = req({ limit: 2, queue: LINE })
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
        fresh()
        const lottery: QueueRequest = { ...LINE, order: 'random' }
        let holder = req({ limit: 1 })
        await store.acquire(name, holder)
        const ws = Array.from({ length: 12 }, () => req({ limit: 1, queue: lottery }))
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
    })
  })
}
