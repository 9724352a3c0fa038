/**
 * Contract cases for the live control: the control record and its watchers (stores with
 * `control`), a held line, the pre-queue of a scheduled opening, and the admission rate.
 */
import type { ContractContext, TestApi } from './types.js'
import { LINE, sleep } from './util.js'

export function controlCases(api: TestApi, ctx: ContractContext): void {
  const { it, expect } = api

  it('keeps a control record: patches apply atomically, null removes a field, each change bumps the version and tells watchers', async () => {
    const { name, store } = ctx.fresh()
    if (typeof store.control !== 'function') return // optional: this store has no live control
    expect(await store.control(name)).toMatchObject({ fields: {}, version: 0 })
    let told = 0
    const unwatch = (await store.watchControl?.(name, () => told++)) ?? (() => {})
    const one = await store.control(name, { limit: '3', mode: 'closed' })
    expect(one).toMatchObject({ fields: { limit: '3', mode: 'closed' }, version: 1 })
    expect(one.now).toBeGreaterThan(1_600_000_000_000)
    const two = await store.control(name, { mode: null, rate: '60' })
    expect(two).toMatchObject({ fields: { limit: '3', rate: '60' }, version: 2 })
    expect(Object.keys(two.fields).sort()).toEqual(['limit', 'rate'])
    expect({ ...(await store.control(name)), now: 0 }).toEqual({ ...two, now: 0 })
    for (let i = 0; i < 100 && told < 2; i++) await sleep(20)
    unwatch()
    expect(told).toBe(2)
  })

  it('a held line keeps and takes places but admits nobody, even with room free; released, it admits in order', async () => {
    const { name, store } = ctx.fresh()
    const held = { ...LINE, hold: true }
    const a = ctx.req({ limit: 5, queue: held })
    const b = ctx.req({ limit: 5, queue: held })
    expect(await store.acquire(name, a)).toMatchObject({ status: 'queued', position: 1 })
    expect(await store.acquire(name, b)).toMatchObject({ status: 'queued', position: 2 })
    expect(await store.acquire(name, a)).toMatchObject({ status: 'queued', position: 1 })
    expect(await store.acquire(name, ctx.req({ limit: 5 }))).toMatchObject({ status: 'busy' })
    expect(await store.state(name)).toEqual({ held: 0, waiting: 2 })
    expect((await store.acquire(name, { ...b, queue: LINE })).status).toBe('acquired')
    expect((await store.acquire(name, { ...a, queue: LINE })).status).toBe('acquired')
  })

  it('pre-queue places (shuffle keys) go ahead of every arrival-ordered place, lowest key first', async () => {
    const { name, store } = ctx.fresh()
    const held = { ...LINE, hold: true }
    const keys = [30, 10, 20]
    const pre = keys.map((shuffle) => ctx.req({ limit: 1, queue: { ...held, shuffle } }))
    const late = ctx.req({ limit: 1, queue: held })
    for (const r of pre) expect((await store.acquire(name, r)).status).toBe('queued')
    expect(await store.acquire(name, late)).toMatchObject({ status: 'queued', position: 4 })
    expect(await store.acquire(name, pre[1]!)).toMatchObject({ position: 1 })
    expect(await store.acquire(name, pre[2]!)).toMatchObject({ position: 2 })
    expect(await store.acquire(name, pre[0]!)).toMatchObject({ position: 3 })
    // The hold lifted: one slot, so the lowest key is admitted and the others wait their turn.
    expect((await store.acquire(name, { ...late, queue: LINE })).status).toBe('queued')
    expect((await store.acquire(name, { ...pre[1]!, queue: LINE })).status).toBe('acquired')
  })

  it('the pre-queue is admitted whole before anyone behind it, even with room for more', async () => {
    const { name, store } = ctx.fresh()
    const pre = ctx.req({ limit: 3, queue: { ...LINE, hold: true, shuffle: 5 } })
    const late = ctx.req({ limit: 3, queue: { ...LINE, hold: true } })
    expect((await store.acquire(name, pre)).status).toBe('queued')
    expect((await store.acquire(name, late)).status).toBe('queued')
    // Opened: room is reserved for the pre-queue place only; the late one waits until it is in.
    expect(await store.acquire(name, { ...late, queue: LINE })).toMatchObject({ status: 'queued', position: 2 })
    expect((await store.acquire(name, { ...pre, queue: LINE })).status).toBe('acquired')
    expect((await store.acquire(name, { ...late, queue: LINE })).status).toBe('acquired')
  })

  it('an admission rate spaces admissions across callers; refused ones are busy, or take a place in line', async () => {
    const { name, store } = ctx.fresh()
    // 60 a minute: a burst of two now, the next a second after the first.
    expect((await store.acquire(name, ctx.req({ limit: 10, admissionRate: 60 }))).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 10, admissionRate: 60 }))).status).toBe('acquired')
    expect((await store.acquire(name, ctx.req({ limit: 10, admissionRate: 60 }))).status).toBe('busy')
    const waiter = ctx.req({ limit: 10, admissionRate: 60, queue: LINE })
    expect(await store.acquire(name, waiter)).toMatchObject({ status: 'queued', position: 1 })
    // Without the rate the same call is admitted at once: only the rate held it back.
    expect((await store.acquire(name, { ...waiter, admissionRate: undefined })).status).toBe('acquired')
    expect(await store.state(name)).toEqual({ held: 3, waiting: 0 })
  })

  it("keeps one adaptive figure per name: every instance's window adds up, one judge per interval moves it, within bounds", async () => {
    const { name, store } = ctx.fresh()
    if (typeof store.adapt !== 'function') return // optional: this store keeps no fleet figure
    expect(typeof store.adaptCommit).toBe('function') // the two come together
    // Intervals of 500 ms: the four calls of the first window fit in one on a busy machine.
    const bounds = { min: 4, max: 50, initial: 20, every: 500, minSamples: 1 }
    const report = (samples: number, buckets: [number, number][], more: { failures?: number; refused?: number } = {}) =>
      store.adapt!(name, { samples, failures: 0, refused: 0, buckets, ...more, ...bounds })
    const sorted = (b: [number, number][] | undefined) => [...(b ?? [])].sort((x, y) => x[0] - y[0])
    // The first report makes its caller the judge of what it brought.
    const first = await report(3, [[10, 3]])
    expect(first).toMatchObject({ limit: 20, state: null, judge: { samples: 3, failures: 0, refused: 0 } })
    expect(sorted(first.judge?.buckets)).toEqual([[10, 3]])
    // Within the interval windows add up, and nobody judges.
    expect(
      await report(
        5,
        [
          [10, 2],
          [12, 3],
        ],
        { failures: 1 },
      ),
    ).toEqual({ limit: 20, state: null })
    expect(await report(4, [[12, 4]], { refused: 7 })).toEqual({ limit: 20, state: null })
    expect(await store.adaptCommit!(name, { turn: first.judge!.turn, limit: 30, state: 'S1', min: 4, max: 50 })).toBe(
      true,
    )
    expect(await report(0, [])).toEqual({ limit: 30, state: 'S1' })
    // After the interval the next caller judges the fleet's window since the last judging.
    await sleep(600)
    const second = await report(1, [[10, 1]])
    expect(second).toMatchObject({ limit: 30, state: 'S1', judge: { samples: 10, failures: 1, refused: 7 } })
    expect(second.judge!.turn).toBeGreaterThan(first.judge!.turn)
    expect(sorted(second.judge!.buckets)).toEqual([
      [10, 3],
      [12, 7],
    ])
    // A window with too few samples waits (up to four intervals) for more: a percentile of none says nothing.
    await sleep(600)
    expect(await report(0, [])).toEqual({ limit: 30, state: 'S1' })
    await sleep(1_500)
    const third = await report(0, [])
    expect(third.judge).toMatchObject({ samples: 0, failures: 0, refused: 0, buckets: [] })
    // A judge that comes after another has nothing left to commit.
    expect(await store.adaptCommit!(name, { turn: second.judge!.turn, limit: 5, state: 'S2', min: 4, max: 50 })).toBe(
      false,
    )
    expect((await report(0, [])).limit).toBe(30)
    // Commits are held within the bounds.
    expect(
      await store.adaptCommit!(name, { turn: third.judge!.turn, limit: 1_000, state: 'S3', min: 4, max: 50 }),
    ).toBe(true)
    expect(await report(0, [])).toEqual({ limit: 50, state: 'S3' })
  })

  it("tells the judge what was inside: the most live slots counted at the window's reports", async () => {
    const { name, store } = ctx.fresh()
    if (typeof store.adapt !== 'function') return // optional: this store keeps no fleet figure
    const bounds = { min: 1, max: 50, initial: 20, every: 150, minSamples: 1 }
    const report = () => store.adapt!(name, { samples: 0, failures: 0, refused: 0, buckets: [], ...bounds })
    const slot = (token: string) => store.acquire(name, { token, limit: 20, ttl: 10_000, weight: 1 })
    expect((await report()).judge).toMatchObject({ inside: 0 })
    for (const token of ['a', 'b', 'c']) expect((await slot(token)).status).toBe('acquired')
    expect(await report()).toEqual({ limit: 20, state: null }) // counted 3, not judged yet
    expect(await store.release(name, 'b')).toBe(true)
    expect(await store.release(name, 'c')).toBe(true)
    expect(await report()).toEqual({ limit: 20, state: null }) // counted 1
    await sleep(650)
    // The window's most, not the last count; a new window counts afresh.
    expect((await report()).judge).toMatchObject({ inside: 3 })
    await sleep(650)
    expect((await report()).judge).toMatchObject({ inside: 1 })
  })
}
