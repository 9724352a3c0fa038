/**
 * The waiting room's behaviour, run against every store (memory and a private Redis). Each case
 * names the issue-5 bullet it proves. The memory store runs these on a manual clock; Redis on real
 * time (its clock is the server's), so durations here are generous for a shared 2-core machine.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createSemaphore } from '../../src/core/semaphore.js'
import { createWaitingRoom, type EnterResult, type WaitingRoomOptions } from '../../src/core/waiting-room.js'
import { isAirlockError } from '../../src/base/errors.js'
import { LEFT_KEEP_MS, type Store } from '../../src/stores/types.js'
import { sleep, until } from '../helpers/wait.js'

export { sleep, until }

export interface RoomHarness {
  /** A store whose clock the test drives through `advance` (memory: a manual clock; Redis: real time). */
  store(): Store
  /** Lets `ms` of store time pass. */
  advance(ms: number): Promise<void>
  /** A store on real time, for `withAdmitted` (which sleeps on real timers). */
  realStore(): Store
}

let counter = 0
/** A room name no other test uses (tests never flush a shared server). */
export function uniqueName(prefix = 'room'): string {
  return `${prefix}-${process.pid}-${++counter}-${randomBytes(3).toString('hex')}`
}

function queued(r: EnterResult): { position: number; waiting: number; eta: number | null } {
  if (r.status !== 'queued') throw new Error(`expected queued, got ${JSON.stringify(r)}`)
  return r
}

async function admitted(r: Promise<EnterResult> | EnterResult) {
  const x = await r
  if (x.status !== 'admitted') throw new Error(`expected admitted, got ${JSON.stringify(x)}`)
  return x.lease
}

/** Idle and claim durations used with the driven clock; steps between sign-of-life polls. */
const IDLE = 1500
const CLAIM = 800
const STEP = 300

export function waitingRoomSuite(label: string, h: RoomHarness): void {
  const room = (options: Partial<WaitingRoomOptions> = {}) =>
    createWaitingRoom({
      name: uniqueName(),
      limit: 1,
      ttl: 60_000,
      store: h.store(),
      idleTimeout: IDLE,
      claimWindow: CLAIM,
      ...options,
    })

  describe(`waiting room on ${label}`, () => {
    it('admits directly while there is room and nobody waits', async () => {
      const r = room({ limit: 2 })
      const a = await admitted(r.enter('a'))
      const b = await admitted(r.enter('b'))
      expect(a.token).toBe('a')
      expect(b.fence).toBeGreaterThan(a.fence)
      expect(queued(await r.enter('c')).position).toBe(1)
      expect(await r.getState()).toEqual({ limit: 2, held: 2, available: 0, waiting: 1 })
    })

    it('re-entering keeps the place (idempotent), never a second place; an admitted visitor gets its lease back', async () => {
      const r = room()
      const holder = await admitted(r.enter('holder'))
      expect(queued(await r.enter('v1')).position).toBe(1)
      expect(queued(await r.enter('v2')).position).toBe(2)
      for (let i = 0; i < 5; i++) {
        expect(queued(await r.enter('v1'))).toMatchObject({ position: 1, waiting: 2 })
        expect(queued(await r.enter('v2'))).toMatchObject({ position: 2, waiting: 2 })
      }
      expect((await r.getState()).waiting).toBe(2)
      const again = await admitted(r.enter('holder'))
      expect(again.fence).toBe(holder.fence)
      expect(again.expiresAt).toBe(holder.expiresAt)
      expect(await r.getPosition('holder')).toBeNull() // admitted: not in line
    })

    it('positions are exact, 1-based, and those behind a leaver move up at once', async () => {
      const r = room()
      await admitted(r.enter('holder'))
      const ids = Array.from({ length: 30 }, (_, i) => `w${i}`)
      for (const [i, id] of ids.entries())
        expect(queued(await r.enter(id))).toMatchObject({ position: i + 1, waiting: i + 1 })
      for (const [i, id] of ids.entries()) expect(await r.getPosition(id)).toBe(i + 1)
      expect(await r.leave('w9')).toBe(true)
      expect(await r.leave('w9')).toBe(false)
      expect(await r.leave('w0')).toBe(true) // the head
      const rest = ids.filter((id) => id !== 'w9' && id !== 'w0')
      for (const [i, id] of rest.entries()) expect(await r.getPosition(id)).toBe(i + 1)
      expect(await r.getPosition('w9')).toBeNull()
      expect(await r.getPosition('never-came')).toBeNull()
      expect(await r.poll('never-came')).toEqual({ status: 'absent' })
      expect((await r.getState()).waiting).toBe(28)
    })

    it('a poll on its way when the visitor left takes no place and no slot (issue 27: the race on leave)', async () => {
      const r = room()
      const holder = await admitted(r.enter('holder'))
      queued(await r.enter('a'))
      queued(await r.enter('b'))
      // "Leave the line", then the page's poll that was already on its way arrives.
      expect(await r.leave('a', { keepOut: true })).toBe(true)
      expect(await r.enter('a')).toEqual({ status: 'left' })
      expect(await r.getPosition('a')).toBeNull()
      expect(queued(await r.enter('b'))).toMatchObject({ position: 1, waiting: 1 })
      // Nobody in line and a slot free: a late poll is not admitted either.
      expect(await r.leave('b', { keepOut: true })).toBe(true)
      await holder.release()
      expect(await r.enter('b')).toEqual({ status: 'left' })
      expect(await r.getState()).toEqual({ limit: 1, held: 0, available: 1, waiting: 0 })
      // Another visitor is not affected; an admitted visitor that "leaves" keeps its slot.
      const c = await admitted(r.enter('c'))
      expect(await r.leave('c', { keepOut: true })).toBe(false)
      expect((await admitted(r.enter('c'))).fence).toBe(c.fence)
      // Without keepOut (the default), a leaver may take a place again at once.
      queued(await r.enter('d'))
      expect(await r.leave('d')).toBe(true)
      queued(await r.enter('d'))
      if (label === 'memory') {
        // The mark lapses after LEFT_KEEP_MS: the id may take a place again (at the back).
        await h.advance(LEFT_KEEP_MS + 1)
        await c.release()
        await admitted(r.enter('a'))
      }
    })

    it('getPosition is a poll: it never admits and never joins', async () => {
      const r = room()
      expect(await r.getPosition('x')).toBeNull() // empty room, free slot: still not admitted
      expect(await r.getState()).toEqual({ limit: 1, held: 0, available: 1, waiting: 0 })
      await admitted(r.enter('holder'))
      await r.enter('head')
      await r.lease('holder').release()
      for (let i = 0; i < 3; i++) expect(await r.getPosition('head')).toBe(1) // a slot is free, yet no admission
      expect((await r.getState()).held).toBe(0)
      await admitted(r.enter('head'))
    })

    it('exact FIFO: 200 waiters are admitted in arrival order, 0 inversions (independent recorder)', async () => {
      const r = room({ limit: 3, idleTimeout: 60_000, claimWindow: 30_000 })
      const holders = [await admitted(r.enter('h0')), await admitted(r.enter('h1')), await admitted(r.enter('h2'))]
      const arrival: string[] = []
      for (let i = 0; i < 200; i++) {
        const id = `v${String(i).padStart(3, '0')}`
        arrival.push(id) // recorded by the test, in the order the visitors arrived
        expect(queued(await r.enter(id)).position).toBe(i + 1)
      }
      // Sequential asks, so the order of admissions is unambiguous. Each pass asks the next few in
      // line plus a few from the back, shuffled, so later arrivals often ask before the head does.
      // Up to `limit` visitors hold a slot at once; the oldest holder leaves when all are taken.
      const held = [...holders]
      const recorder: string[] = []
      let passes = 0
      while (recorder.length < 200) {
        if (++passes > 2000) throw new Error(`stuck after ${recorder.length} admissions`)
        if (held.length === 3) await held.shift()!.release()
        const remaining = arrival.filter((id) => !recorder.includes(id))
        const asking = shuffle([...new Set([...remaining.slice(0, 6), ...remaining.slice(-3)])])
        for (const id of asking) {
          const res = await r.enter(id)
          if (res.status === 'admitted') {
            recorder.push(id)
            held.push(res.lease)
            if (held.length === 3) break
          }
        }
      }
      expect(inversions(arrival, recorder)).toBe(0)
      expect(recorder).toEqual(arrival)
    })

    it('newcomers and later waiters cannot jump the head during its claim window', async () => {
      const r = room()
      const holder = await admitted(r.enter('holder'))
      expect(queued(await r.enter('head')).position).toBe(1)
      expect(queued(await r.enter('second')).position).toBe(2)
      await holder.release()
      const plain = createSemaphore({ name: r.name, limit: 1, ttl: 60_000, store: r.store })
      for (let i = 0; i < 3; i++) {
        expect(queued(await r.enter('newcomer')).position).toBe(3)
        expect(queued(await r.enter('second')).position).toBe(2)
        expect(await plain.acquire()).toBeNull() // not through the line: busy while anyone waits
        await h.advance(CLAIM / 8)
      }
      expect((await r.getState()).held).toBe(0) // the free slot stayed reserved
      await admitted(r.enter('head'))
      expect(queued(await r.enter('second')).position).toBe(1)
      expect(queued(await r.enter('newcomer')).position).toBe(2)
    })

    it('a reserved head that does not claim within its window is skipped; those behind move up', async () => {
      const r = room()
      const holder = await admitted(r.enter('holder'))
      for (const id of ['head', 'b', 'c']) await r.enter(id)
      await holder.release()
      // The head stays alive (it polls) but never comes to claim.
      expect(await r.getPosition('head')).toBe(1) // its reservation starts
      let waited = 0
      while (waited <= CLAIM + STEP) {
        await h.advance(STEP)
        waited += STEP
        await r.getPosition('head')
        await r.getPosition('b')
        await r.getPosition('c')
      }
      expect(await r.getPosition('head')).toBeNull()
      expect(await r.getPosition('b')).toBe(1)
      expect(await r.getPosition('c')).toBe(2)
      await admitted(r.enter('b'))
      // The skipped head may come back, at the back of the line.
      expect(queued(await r.enter('head')).position).toBe(2)
    })

    it('a head whose claim window ran out asks itself: it is skipped, a poll reads null, enter gives a place at the back', async () => {
      // Regression: the store used to answer the skipped head's own call from its stale place
      // (Redis: a Lua error on a nil rank, surfacing as ERR_AIRLOCK_STORE_UNAVAILABLE; memory: a
      // made-up position).
      for (const how of ['poll', 'enter'] as const) {
        const r = room()
        const holder = await admitted(r.enter('holder'))
        for (const id of ['late', 'b']) await r.enter(id)
        await holder.release()
        expect(await r.getPosition('b')).toBe(2) // the head's reservation starts
        let waited = 0
        while (waited <= CLAIM + STEP) {
          await h.advance(STEP)
          waited += STEP
          expect(await r.getState()).toMatchObject({ waiting: 2 }) // a state call settles nothing
        }
        if (how === 'poll') {
          expect(await r.poll('late')).toEqual({ status: 'absent' })
          expect(await r.getPosition('b')).toBe(1)
        } else {
          // b is now the head, with a free slot reserved for it: the late head joins behind it.
          expect(queued(await r.enter('late'))).toMatchObject({ position: 2, waiting: 2 })
          await admitted(r.enter('b'))
        }
      }
    })

    it('waiters that vanish (the head included) lose their place after idleTimeout', async () => {
      const r = room()
      await admitted(r.enter('holder'))
      for (const id of ['gone-head', 'a', 'gone-mid', 'b', 'gone-tail']) await r.enter(id)
      let waited = 0
      while (waited <= IDLE + STEP) {
        await h.advance(STEP)
        waited += STEP
        expect(await r.getPosition('a')).not.toBeNull()
        expect(await r.getPosition('b')).not.toBeNull()
      }
      expect(await r.getPosition('a')).toBe(1)
      expect(await r.getPosition('b')).toBe(2)
      for (const id of ['gone-head', 'gone-mid', 'gone-tail']) expect(await r.getPosition(id)).toBeNull()
      expect((await r.getState()).waiting).toBe(2)
      expect(queued(await r.enter('gone-head')).position).toBe(3) // a fresh place at the back
    })

    it('a vanished head with a free slot is skipped (idle or claim window), the next one is admitted', async () => {
      const r = room()
      const holder = await admitted(r.enter('holder'))
      await r.enter('ghost')
      await r.enter('next')
      await holder.release()
      let waited = 0
      let result: EnterResult | undefined
      while (waited <= Math.max(IDLE, CLAIM) + 2 * STEP) {
        await h.advance(STEP)
        waited += STEP
        result = await r.enter('next')
        if (result.status === 'admitted') break
      }
      expect(result?.status).toBe('admitted')
      expect(await r.getPosition('ghost')).toBeNull()
    })

    it('maxLength: the line takes no more, answers full; those in line keep their place', async () => {
      const r = room({ maxLength: 3 })
      await admitted(r.enter('holder'))
      for (const id of ['a', 'b', 'c']) queued(await r.enter(id))
      expect(await r.enter('d')).toEqual({ status: 'full', waiting: 3 })
      expect(await r.getPosition('d')).toBeNull()
      expect(queued(await r.enter('c')).position).toBe(3) // re-entering is not joining
      await r.leave('a')
      expect(queued(await r.enter('d')).position).toBe(3)
      expect(await r.enter('e')).toEqual({ status: 'full', waiting: 3 })
    })

    it('random order: each admission picks roughly uniformly among the waiters (chi-square)', async () => {
      const n = 6
      const trials = label === 'memory' ? 600 : 180
      const wins = new Array<number>(n).fill(0)
      for (let t = 0; t < trials; t++) {
        const r = room({ order: 'random' })
        const holder = await admitted(r.enter('holder'))
        const ids = Array.from({ length: n }, (_, i) => `p${i}`)
        for (const id of ids) await r.enter(id)
        const positions = await Promise.all(ids.map((id) => r.getPosition(id)))
        expect([...positions].sort((a, b) => a! - b!)).toEqual([1, 2, 3, 4, 5, 6])
        await holder.release()
        let winner = -1
        for (const [i, id] of ids.entries()) {
          const res = await r.enter(id)
          if (res.status === 'admitted') {
            expect(winner).toBe(-1) // exactly one while the slot is held
            winner = i
          }
        }
        await r.lease(ids[winner]!).release()
        wins[winner]!++
        for (const id of ids) await r.leave(id)
      }
      const expected = trials / n
      const chi2 = wins.reduce((sum, w) => sum + (w - expected) ** 2 / expected, 0)
      // 5 degrees of freedom: p = 0.001 at 20.5. A FIFO line would score 5 * trials.
      expect(chi2, `wins ${wins.join(',')}`).toBeLessThan(25)
      expect(Math.min(...wins)).toBeGreaterThan(0)
    })

    it('random order: a waiter who survived a draw and a newcomer have even chances at the next one', async () => {
      // A lottery that fixes each waiter's draw at arrival favours newcomers: the survivors of
      // earlier draws are those who drew badly. Each admission must draw afresh.
      const trials = label === 'memory' ? 400 : 300
      let newcomerWins = 0
      for (let t = 0; t < trials; t++) {
        const r = room({ order: 'random' })
        const holder = await admitted(r.enter('holder'))
        await r.enter('a')
        await r.enter('b')
        await holder.release()
        const first = (await r.enter('a')).status === 'admitted' ? 'a' : 'b'
        if (first === 'b') await admitted(r.enter('b'))
        const survivor = first === 'a' ? 'b' : 'a'
        await r.enter('newcomer')
        await r.lease(first).release()
        const s = await r.enter(survivor)
        const n = await r.enter('newcomer')
        expect([s.status, n.status].filter((x) => x === 'admitted')).toHaveLength(1)
        if (n.status === 'admitted') newcomerWins++
        for (const id of ['a', 'b', 'newcomer']) {
          await r.leave(id)
          await r.lease(id).release()
        }
      }
      const share = newcomerWins / trials
      expect(share, `newcomer won ${newcomerWins} of ${trials}`).toBeGreaterThan(0.38)
      expect(share, `newcomer won ${newcomerWins} of ${trials}`).toBeLessThan(0.62)
    })

    it('fifo order control: the first arrival always wins the same draw', async () => {
      for (let t = 0; t < 20; t++) {
        const r = room()
        const holder = await admitted(r.enter('holder'))
        for (let i = 0; i < 6; i++) await r.enter(`p${i}`)
        await holder.release()
        for (let i = 5; i >= 1; i--) expect((await r.enter(`p${i}`)).status).toBe('queued')
        expect((await r.enter('p0')).status).toBe('admitted')
      }
    })

    it('eta comes from the measured admission rate: null before any, position / rate after, scales with the rate', async () => {
      const etaAt = async (
        serviceMs: number,
      ): Promise<{ before: (number | null)[]; after: number[]; rate: number }> => {
        const r = room({ idleTimeout: 60_000, claimWindow: 30_000 })
        let lease = await admitted(r.enter('first'))
        for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) await r.enter(id)
        const before = [queued(await r.enter('e')).eta, queued(await r.enter('f')).eta]
        for (const id of ['a', 'b', 'c']) {
          await h.advance(serviceMs)
          await lease.release()
          lease = await admitted(r.enter(id))
        }
        const d = queued(await r.enter('d'))
        const f = queued(await r.enter('f'))
        expect(d.position).toBe(1)
        expect(f.position).toBe(3)
        const res = await r.enter('e')
        if (res.status !== 'queued' || res.rate === null) throw new Error('no rate')
        return { before, after: [d.eta!, f.eta!], rate: res.rate }
      }
      const slow = await etaAt(400)
      const fast = await etaAt(100)
      expect(slow.before).toEqual([null, null])
      // position / rate: d is 1st, f is 3rd; one admission every serviceMs.
      expect(slow.after[0]).toBeGreaterThan(400 * 0.6)
      expect(slow.after[0]).toBeLessThan(400 * 1.6)
      expect(slow.after[1]).toBeGreaterThan(1200 * 0.6)
      expect(slow.after[1]).toBeLessThan(1200 * 1.6)
      expect(fast.after[0]).toBeGreaterThan(100 * 0.6)
      expect(fast.after[0]).toBeLessThan(100 * 2)
      expect(slow.rate).toBeGreaterThan(2.5 * 0.6)
      expect(slow.rate).toBeLessThan(2.5 * 1.6)
      expect(slow.after[1]! / fast.after[1]!).toBeGreaterThan(2)
    })

    it('eta measures the line, not arrivals: direct admissions while nobody waits do not count', async () => {
      // Slots filled one by one before any line formed say nothing about how fast the line will move.
      const r = room({ limit: 3, idleTimeout: 60_000, claimWindow: 30_000 })
      const direct = []
      for (const id of ['a', 'b', 'c']) {
        direct.push(await admitted(r.enter(id)))
        await h.advance(50)
      }
      expect(queued(await r.enter('d')).eta).toBeNull()
      expect(queued(await r.enter('e')).eta).toBeNull()
      await direct[0]!.release()
      await admitted(r.enter('d')) // the first admission from the line: no rate yet
      expect(queued(await r.enter('e')).eta).toBeNull()
      await h.advance(400)
      await direct[1]!.release()
      await admitted(r.enter('e')) // the second, 400 ms later
      const f = queued(await r.enter('f'))
      expect(f.eta).toBeGreaterThan(400 * 0.6)
      expect(f.eta).toBeLessThan(400 * 1.6)
    })

    it('a plain semaphore of the same name shares the slots and respects the line', async () => {
      const r = room({ limit: 2 })
      const plain = createSemaphore({ name: r.name, limit: 2, ttl: 60_000, store: r.store })
      const l = await plain.acquire()
      expect(l).not.toBeNull()
      await admitted(r.enter('a'))
      queued(await r.enter('b'))
      await l!.release()
      expect(await plain.acquire()).toBeNull()
      await admitted(r.enter('b'))
    })

    describe('withAdmitted (real time)', () => {
      const realRoom = (options: Partial<WaitingRoomOptions> = {}) =>
        createWaitingRoom({ name: uniqueName('wa'), limit: 1, ttl: 10_000, store: h.realStore(), ...options })

      it('runs fn with the lease, returns its value and always releases (also when fn throws)', async () => {
        const r = realRoom()
        const value = await r.withAdmitted('job-1', async ({ lease, signal }) => {
          expect(lease.token).toBe('job-1')
          expect(await lease.state()).toBe('acquired')
          expect(signal.aborted).toBe(false)
          expect((await r.getState()).held).toBe(1)
          return 42
        })
        expect(value).toBe(42)
        expect((await r.getState()).held).toBe(0)
        await expect(r.withAdmitted('job-2', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
        expect(await r.getState()).toEqual({ limit: 1, held: 0, available: 1, waiting: 0 })
      })

      it('waits in line and is woken by the release message, not by its slow poll', async () => {
        const r = realRoom({ retryInterval: 8000, idleTimeout: 30_000, claimWindow: 20_000 })
        const holder = await admitted(r.enter('holder'))
        let admittedAt = 0
        const job = r.withAdmitted('waiter', () => {
          admittedAt = Date.now()
        })
        await until(async () => (await r.getPosition('waiter')) === 1)
        await sleep(300)
        const releasedAt = Date.now()
        await holder.release()
        await job
        expect(admittedAt - releasedAt).toBeLessThan(3000) // the safety poll would take 8000
        expect(await r.getState()).toEqual({ limit: 1, held: 0, available: 1, waiting: 0 })
      })

      it('many withAdmitted callers run one at a time in arrival order', async () => {
        const r = realRoom({ limit: 1 })
        const holder = await admitted(r.enter('holder'))
        const order: string[] = []
        let inside = 0
        const jobs: Promise<void>[] = []
        for (let i = 0; i < 20; i++) {
          const id = `j${i}`
          expect(queued(await r.enter(id)).position).toBe(i + 1)
          jobs.push(
            r.withAdmitted(id, async () => {
              expect(++inside).toBe(1)
              order.push(id)
              await sleep(5)
              inside--
            }),
          )
        }
        await holder.release()
        await Promise.all(jobs)
        expect(order).toEqual(Array.from({ length: 20 }, (_, i) => `j${i}`))
      })

      it('timeout: throws ERR_AIRLOCK_TIMEOUT and leaves the line', async () => {
        const r = realRoom()
        await admitted(r.enter('holder'))
        queued(await r.enter('before'))
        const started = Date.now()
        const err = await r.withAdmitted('late', () => 'never', { timeout: 400 }).catch((e: unknown) => e)
        expect(isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')).toBe(true)
        expect(Date.now() - started).toBeGreaterThanOrEqual(390)
        expect(await r.getPosition('late')).toBeNull()
        expect(await r.getPosition('before')).toBe(1)
        expect((await r.getState()).waiting).toBe(1)
      })

      it('abort: rejects promptly with the reason and leaves the line', async () => {
        const r = realRoom({ retryInterval: 5000, idleTimeout: 30_000, claimWindow: 20_000 })
        await admitted(r.enter('holder'))
        const ac = new AbortController()
        const job = r.withAdmitted('aborter', () => 'never', { signal: ac.signal })
        await until(async () => (await r.getPosition('aborter')) === 1)
        const started = Date.now()
        ac.abort(new Error('user left'))
        await expect(job).rejects.toThrow('user left')
        expect(Date.now() - started).toBeLessThan(2000)
        expect(await r.getPosition('aborter')).toBeNull()
        expect((await r.getState()).waiting).toBe(0)
      })

      it('a line at maxLength times out with ERR_AIRLOCK_TIMEOUT naming it', async () => {
        const r = realRoom({ maxLength: 1 })
        await admitted(r.enter('holder'))
        queued(await r.enter('only'))
        const err = await r.withAdmitted('extra', () => 'never', { timeout: 300 }).catch((e: unknown) => e)
        expect(isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')).toBe(true)
        expect((err as Error).message).toMatch(/full/)
      })
    })
  })
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

/** Pairs admitted in the opposite order of their arrival. */
export function inversions(arrival: readonly string[], admitted: readonly string[]): number {
  const rank = new Map(arrival.map((id, i) => [id, i]))
  let count = 0
  for (let i = 0; i < admitted.length; i++) {
    for (let j = i + 1; j < admitted.length; j++) {
      if (rank.get(admitted[i]!)! > rank.get(admitted[j]!)!) count++
    }
  }
  return count
}
