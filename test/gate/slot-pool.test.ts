/**
 * Request mode's slot reuse (src/gate/slot-pool.ts), through the gate, on the memory store with
 * fake timers (the memory store reads Date.now at call time).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createGate,
  type AdmitDecision,
  type GateDecision,
  type GateOptions,
  type RequestView,
} from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import { countingStore, recordingLogger } from '../helpers/stores.js'

const view: RequestView = { method: 'GET', url: '/', headers: {}, secure: false, request: {} }

function requestGate(options: GateOptions = {}) {
  const store = countingStore(memoryStore())
  const gate = createGate({ mode: 'request', limit: 2, ttl: 8_000, store, logger: recordingLogger(), ...options })
  return { store, gate, held: async () => (await store.state('default')).held }
}

function admitted(d: GateDecision): AdmitDecision {
  expect(d.kind).toBe('admit')
  return d as AdmitDecision
}

describe('request mode slot reuse', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it("hands a finished request's slot to the next request without a store call, synchronously", async () => {
    const { store, gate } = requestGate()
    const first = admitted(await gate.decide(view))
    await first.slot!.release()
    store.reset()
    const next = gate.decide(view)
    expect(next).not.toBeInstanceOf(Promise) // decided from the pool
    expect(admitted(next as GateDecision).token).toBe(first.token)
    expect(store.total()).toBe(0)
  })

  it('never holds more than limit slots: requests in flight each hold their own, the rest are busy', async () => {
    const { gate, held } = requestGate({ limit: 2 })
    const a = admitted(await gate.decide(view))
    const b = admitted(await gate.decide(view))
    expect(a.token).not.toBe(b.token)
    expect((await gate.decide(view)).kind).toBe('busy')
    await a.slot!.release()
    const c = admitted(await gate.decide(view))
    expect(c.token).toBe(a.token)
    expect((await gate.decide(view)).kind).toBe('busy')
    expect(await held()).toBe(2)
  })

  it('releases a slot once it has waited reuseWindow for a next request', async () => {
    const { store, gate, held } = requestGate({ reuseWindow: 50 })
    const d = admitted(await gate.decide(view))
    await d.slot!.release()
    await d.slot!.release() // once only
    expect(await held()).toBe(1)
    await vi.advanceTimersByTimeAsync(49)
    expect(await held()).toBe(1)
    await vi.advanceTimersByTimeAsync(2)
    expect(await held()).toBe(0)
    expect(store.calls.release).toBe(1)
  })

  it('keeps reusing a slot under steady traffic and confirms it with the store once per second', async () => {
    const { store, gate } = requestGate({ reuseWindow: 50 })
    let token: string | undefined
    for (let i = 0; i < 100; i++) {
      const d = admitted(await gate.decide(view))
      token ??= d.token
      expect(d.token).toBe(token)
      await vi.advanceTimersByTimeAsync(30) // the next request comes 30 ms later
      await d.slot!.release()
    }
    expect(store.calls.acquire).toBe(1)
    expect(store.calls.refresh).toBe(2) // 3 s of traffic, confirmed after 1 s and after 2 s
    expect(store.calls.release ?? 0).toBe(0)
  })

  it('stops reusing a slot the store lost (forceReleaseAll) once a confirmation notices', async () => {
    const { store, gate } = requestGate({ reuseWindow: 5_000 })
    const d = admitted(await gate.decide(view))
    await d.slot!.release()
    await store.forceReleaseAll('default')
    await vi.advanceTimersByTimeAsync(1_001)
    // Confirmation due: this request still rides on the pooled slot while the refresh finds it gone.
    const riding = admitted(await gate.decide(view))
    expect(riding.token).toBe(d.token)
    await vi.advanceTimersByTimeAsync(0)
    await riding.slot!.release()
    const fresh = admitted(await gate.decide(view))
    expect(fresh.token).not.toBe(d.token)
    expect(store.calls.acquire).toBe(2)
  })

  it("does not reuse a slot whose store expiry may be near: a long request's slot is released, a new one acquired", async () => {
    const { store, gate, held } = requestGate({ ttl: 8_000, reuseWindow: 50 })
    const long = admitted(await gate.decide(view))
    await vi.advanceTimersByTimeAsync(7_500) // past ttl - confirmEvery (8 s - 1 s): its store expiry may be near
    await long.slot!.release()
    const next = admitted(await gate.decide(view))
    expect(next.token).not.toBe(long.token)
    expect(store.calls.acquire).toBe(2)
    await vi.advanceTimersByTimeAsync(0)
    expect(await held()).toBe(1)
  })

  it('close() releases idle slots; a slot given back after close is released at once', async () => {
    const { gate, held } = requestGate({ reuseWindow: 60_000 })
    const a = admitted(await gate.decide(view))
    const b = admitted(await gate.decide(view))
    await a.slot!.release()
    expect(await held()).toBe(2)
    await gate.close()
    expect(await held()).toBe(1)
    await b.slot!.release()
    await vi.advanceTimersByTimeAsync(0)
    expect(await held()).toBe(0)
  })

  it('reuseWindow 0 releases every slot at once (no reuse)', async () => {
    const { store, gate, held } = requestGate({ reuseWindow: 0 })
    for (let i = 0; i < 3; i++) {
      const d = admitted(await gate.decide(view))
      expect(await d.slot!.release()).toBe(true)
    }
    expect(store.calls.acquire).toBe(3)
    expect(store.calls.release).toBe(3)
    expect(await held()).toBe(0)
  })
})
