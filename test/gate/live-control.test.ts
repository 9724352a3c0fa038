import { afterEach, describe, expect, it } from 'vitest'
import diagnostics from 'node:diagnostics_channel'
import { createGate, type Gate, type GateDecision, type GateOptions, type RequestView } from '../../src/gate/gate.js'
import { airlockControl, decodeControl, encodePatch, type ControlState } from '../../src/core/control.js'
import { isAirlockError } from '../../src/base/errors.js'
import { memoryStore } from '../../src/stores/memory.js'
import { recordingLogger } from '../helpers/stores.js'
import { until } from '../helpers/wait.js'

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const view = (cookie?: string): RequestView => ({
  method: 'GET',
  url: '/',
  headers: cookie ? { cookie, accept: 'text/html' } : { accept: 'text/html' },
  secure: false,
  request: undefined,
})
const cookieOf = (d: GateDecision): string => (d as { setCookie: string }).setCookie.split(';')[0]!

const gates: Gate[] = []
afterEach(async () => {
  await Promise.all(gates.splice(0).map((g) => g.close()))
})

async function setup(options: GateOptions = {}) {
  const store = memoryStore()
  const logger = recordingLogger()
  const gate = createGate({ name: 'shop', limit: 10, secret: SECRET, store, logger, ...options })
  gates.push(gate)
  await gate.ready
  const control = airlockControl({ name: 'shop', store })
  /** Sets and waits until the gate applied it (the memory store tells watchers at once). */
  const set = async (patch: Parameters<typeof control.set>[0]) => {
    const state = await control.set(patch)
    await until(() => gate.control.version === state.version, 2_000)
    return state
  }
  return { store, gate, control, set, logger }
}

describe('live control: the gate follows the record in its store', () => {
  it('a live limit applies from the next decision, never evicts, and clears back to the option', async () => {
    const { gate, set } = await setup({ limit: 5 })
    const passes: string[] = []
    for (let i = 0; i < 4; i++) passes.push(cookieOf(await gate.decide(view())))
    await set({ limit: 2 })
    expect(gate.limit).toBe(2)
    expect(gate.limitSource).toBe('control')
    expect((await gate.decide(view())).kind).toBe('busy')
    // Those inside keep their passes.
    for (const p of passes) expect((await gate.decide(view(p))).kind).toBe('pass')
    await set({ limit: null })
    expect([gate.limit, gate.limitSource]).toEqual([5, 'configured'])
    expect((await gate.decide(view())).kind).toBe('admit')
  })

  it('closed: newcomers get the busy answer (reason closed), pass holders carry on; passthrough gates nothing', async () => {
    const { gate, set } = await setup()
    const pass = cookieOf(await gate.decide(view()))
    await set({ mode: 'closed' })
    expect(await gate.decide(view())).toMatchObject({ kind: 'busy', reason: 'closed' })
    expect((await gate.decide(view(pass))).kind).toBe('pass')
    await set({ mode: 'passthrough' })
    expect((await gate.decide(view())).kind).toBe('bypass')
    await set({ mode: null })
    expect((await gate.decide(view())).kind).toBe('admit')
  })

  it('queue-all: with free room every newcomer takes a place and nobody is admitted until it is lifted', async () => {
    const { gate, set } = await setup({ queue: { pollInterval: 500 } })
    await set({ mode: 'queue-all' })
    const first = await gate.decide(view())
    expect(first).toMatchObject({ kind: 'queued', position: 1 })
    const ticket = cookieOf(first)
    expect(await gate.decide(view())).toMatchObject({ kind: 'queued', position: 2 })
    expect(await gate.decide(view(ticket))).toMatchObject({ kind: 'queued', position: 1 })
    await set({ mode: 'normal' })
    expect((await gate.decide(view(ticket))).kind).toBe('admit')
  })

  it('before opensAt newcomers wait on a countdown (no position), and are admitted from the opening on', async () => {
    const { gate, set } = await setup({ queue: { pollInterval: 500 } })
    const opensAt = Date.now() + 1_500
    await set({ opensAt })
    const d = await gate.decide(view())
    expect(d).toMatchObject({ kind: 'queued', position: null })
    const body = String((d as { response: { body: unknown } }).response.body)
    expect(body).toContain('Opening soon')
    const json = await gate.decide({
      ...view(cookieOf(d)),
      headers: { cookie: cookieOf(d), accept: 'application/json' },
    })
    expect(JSON.parse(String((json as { response: { body: unknown } }).response.body))).toMatchObject({
      status: 'queued',
      opensAt: new Date(opensAt).toISOString(),
    })
    expect((await gate.decide(view(cookieOf(d)))).kind).toBe('queued')
    await until(() => Date.now() >= opensAt + 50, 3_000)
    expect((await gate.decide(view(cookieOf(d)))).kind).toBe('admit')
  })

  it('after closesAt the gate acts as closed; without a waiting room, before opensAt too', async () => {
    const { gate, set } = await setup()
    await set({ opensAt: Date.now() + 60_000 })
    expect(await gate.decide(view())).toMatchObject({ kind: 'busy', reason: 'closed' })
    await set({ opensAt: null, closesAt: Date.now() + 300 })
    expect((await gate.decide(view())).kind).toBe('admit')
    await until(async () => (await gate.decide(view())).kind === 'busy', 2_000)
  })

  it('an admission rate caps newcomers; request mode then takes every slot from the store (no reuse)', async () => {
    const { gate, set } = await setup({ mode: 'request', reuseWindow: 1_000 })
    await set({ admissionRate: 60 })
    // A burst of two, then one a second: released slots are not reused past the rate.
    for (let i = 0; i < 2; i++) {
      const a = await gate.decide(view())
      expect(a.kind).toBe('admit')
      await gate.release(a)
    }
    expect(await gate.decide(view())).toMatchObject({ kind: 'busy', reason: 'full' })
  })

  it('a hand-edited record is ignored field by field with one warning each, never a crash', async () => {
    const { store, gate, logger } = await setup({ limit: 4 })
    await store.control('shop', { limit: 'lots', mode: 'weird', rate: '30' })
    await until(() => gate.control.version === 1, 2_000)
    expect(gate.control).toMatchObject({ limit: null, mode: 'normal', admissionRate: 30 })
    expect(gate.limit).toBe(4)
    await store.control('shop', { at: 'yesterday' })
    await until(() => gate.control.version === 2, 2_000)
    const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg)
    expect(warnings.filter((m) => m?.includes("control record's limit"))).toHaveLength(1)
    expect(warnings.filter((m) => m?.includes("control record's mode"))).toHaveLength(1)
    expect(warnings.filter((m) => m?.includes("control record's at"))).toHaveLength(1)
    expect((await gate.decide(view())).kind).toBe('admit')
  })

  it('control: false ignores the record; a gate reads the record in force when it starts', async () => {
    const store = memoryStore()
    await airlockControl({ name: 'shop', store }).set({ mode: 'closed' })
    const off = createGate({ name: 'shop', secret: SECRET, store, control: false })
    const on = createGate({ name: 'shop', secret: SECRET, store })
    gates.push(off, on)
    await Promise.all([off.ready, on.ready])
    expect((await off.decide(view())).kind).toBe('admit')
    expect(await on.decide(view())).toMatchObject({ kind: 'busy', reason: 'closed' })
  })

  it('every change is logged with who and what, and published on airlock:control (set and applied)', async () => {
    const events: { event: string; by: string | null }[] = []
    const listen = (e: unknown) => events.push(e as { event: string; by: string | null })
    diagnostics.subscribe('airlock:control', listen)
    try {
      const store = memoryStore()
      const logger = recordingLogger()
      const gate = createGate({ name: 'shop', secret: SECRET, store })
      gates.push(gate)
      await gate.ready
      const control = airlockControl({ name: 'shop', store, logger, by: 'ops@laptop' })
      await control.set({ limit: 7 })
      await until(() => gate.control.version === 1, 2_000)
      expect(logger.lines.find((l) => l.level === 'info')?.msg).toBe(
        "airlock-shield: control of 'shop' changed by ops@laptop: limit=7",
      )
      expect(events.map((e) => [e.event, e.by])).toEqual([
        ['set', 'ops@laptop'],
        ['applied', 'ops@laptop'],
      ])
    } finally {
      diagnostics.unsubscribe('airlock:control', listen)
    }
  })
})

describe('control records: validation', () => {
  const bad = (patch: object): string => {
    try {
      encodePatch(patch as never, 'test', 0)
    } catch (err) {
      if (isAirlockError(err) && err.code === 'ERR_AIRLOCK_OPTION') return err.message
      throw err
    }
    throw new Error('no error')
  }

  it.each([
    [{ limit: 0 }, 'limit must be a whole number from 1'],
    [{ limit: 2.5 }, 'limit must be a whole number'],
    [{ admissionRate: -1 }, 'admissionRate must be a whole number'],
    [{ mode: 'open' }, 'mode must be one of normal, queue-all, closed, passthrough'],
    [{ opensAt: 'tomorrow' }, 'opensAt must be a Date, an ISO 8601 time'],
    // Dates people get wrong (issue 25): seconds for milliseconds, 0, a fraction, a bare number as text.
    [
      { closesAt: 1_764_000_000 },
      'closesAt is before 2000 (1764000000 is 1970-01-21T10:00:00.000Z): times are ms since the epoch, a Date or an ISO 8601 time; 1764000000 looks like seconds since the epoch: that is 2025-11-24T16:00:00.000Z in milliseconds (1764000000000)',
    ],
    [{ opensAt: 0 }, 'opensAt is before 2000'],
    [{ opensAt: 0.5 }, 'opensAt is before 2000'],
    [{ opensAt: '10' }, 'opensAt must be a Date, an ISO 8601 time'],
    [{ opensAt: new Date(1_764_000_000) }, 'opensAt is before 2000'],
    [{ opensAt: '2026-12-01T10:00:00Z', closesAt: '2026-12-01T09:00:00Z' }, 'closesAt must be after opensAt'],
    [{}, 'control.set() needs at least one of'],
    [{ limt: 3 }, 'limt'],
  ])('%j is refused: %s', (patch, message) => {
    expect(bad(patch)).toContain(message)
  })

  it('decodes what it encodes', () => {
    const fields = encodePatch(
      { limit: 3, mode: 'queue-all', admissionRate: 120, opensAt: '2026-12-01T09:00:00Z' },
      'cli',
      1_000,
    )
    const state: ControlState = decodeControl({ fields: fields as Record<string, string>, version: 4, now: 0 }, () => {
      throw new Error('nothing is bad')
    })
    expect(state).toEqual({
      limit: 3,
      mode: 'queue-all',
      admissionRate: 120,
      opensAt: new Date('2026-12-01T09:00:00Z'),
      closesAt: null,
      updatedAt: new Date(1_000),
      updatedBy: 'cli',
      version: 4,
    })
  })
})
