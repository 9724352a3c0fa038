/**
 * A pass holder's request to something the gate does not gate (an asset with `airlock: false`, a
 * bypassed path, a 404): the pass is confirmed or slid when due, and otherwise costs nothing. Before
 * issue 41, once the verified-pass cache's window (`recheckInterval`) had passed, every such request
 * verified the pass's HMAC again and went through a promise, for a pass that needed nothing.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createGate, type Gate, type RequestView } from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { recordingLogger } from '../helpers/stores.js'

const SECRET = 's'.repeat(32)
const view = (cookie?: string): RequestView => ({
  method: 'GET',
  url: '/',
  headers: cookie === undefined ? {} : { cookie },
  secure: false,
  request: {},
})
const passOf = (setCookie: string | undefined): string => setCookie!.split(';')[0]!
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The memory store, counting the calls made to it. */
function countingStore(): { store: Store; calls: () => number } {
  const inner = memoryStore()
  let calls = 0
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        calls++
        return (v as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  }) as Store
  return { store, calls: () => calls }
}

describe("a pass on a request the gate doesn't gate (Gate.confirm)", () => {
  const gates: Gate<unknown>[] = []
  afterEach(async () => {
    await Promise.all(gates.splice(0).map((g) => g.close()))
  })

  it('a full pass not yet due: synchronous, no store call and no cookie, also after the cached window', async () => {
    const { store, calls } = countingStore()
    const gate = createGate({
      limit: 2,
      store,
      secret: SECRET,
      passTtl: 60_000,
      recheckInterval: 50,
      logger: recordingLogger(),
    })
    gates.push(gate)
    await gate.ready
    const admitted = await gate.decide(view())
    const full = await gate.decide(view(passOf(admitted.setCookie)))
    expect(full.kind).toBe('pass')
    const pass = passOf(full.setCookie)
    await sleep(80) // past recheckInterval: the verified-pass cache no longer holds it
    const before = calls()
    for (let i = 0; i < 100; i++) {
      const d = gate.confirm(view(pass))
      expect(d).not.toBeInstanceOf(Promise)
      expect(d).toMatchObject({ kind: 'bypass', setCookie: undefined })
    }
    expect(calls() - before).toBe(0)
  })

  it('a provisional pass is still confirmed (a store call, a full pass back); a forged one gets nothing', async () => {
    const { store, calls } = countingStore()
    const gate = createGate({ limit: 2, store, secret: SECRET, logger: recordingLogger() })
    gates.push(gate)
    await gate.ready
    const provisional = passOf((await gate.decide(view())).setCookie)
    const before = calls()
    const confirmed = await gate.confirm(view(provisional))
    expect(calls() - before).toBeGreaterThan(0)
    expect(confirmed.setCookie).toMatch(/^airlock_pass=p1~default~.*~f~/)
    const forged = `${provisional.slice(0, -4)}AAAA`
    expect(await gate.confirm(view(forged))).toMatchObject({ kind: 'bypass', setCookie: undefined })
  })

  it('a pass given back here is forgotten: its old cookie is no pass on a gated request', async () => {
    const gate = createGate({ limit: 1, store: memoryStore(), secret: SECRET, logger: recordingLogger() })
    gates.push(gate)
    await gate.ready
    const full = await gate.decide(view(passOf((await gate.decide(view())).setCookie)))
    const pass = passOf(full.setCookie)
    expect(gate.confirm(view(pass))).toMatchObject({ kind: 'bypass' })
    expect(await gate.release(full)).toBe(true)
    const again = await gate.decide(view(pass))
    expect(again.kind).toBe('admit') // a new slot, not the old pass
  })
})
