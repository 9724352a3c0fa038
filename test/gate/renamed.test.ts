/**
 * One word per idea (issue 42): the old names of renamed public options and contract methods keep
 * working until 0.3, and giving an old and a new name for one setting at once is refused.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { isAirlockError } from '../../src/base/errors.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { until } from '../helpers/wait.js'

const SECRET = 'renamed-options-secret-of-at-least-32-bytes'
const gates: Gate<unknown>[] = []
afterEach(async () => {
  await Promise.all(gates.splice(0).map((g) => g.close()))
})

/** A memory store whose status write is known only by its pre-0.2 name, `report`, and counted. */
function oldStore(): { store: Store; writes: () => number } {
  const inner = memoryStore()
  let writes = 0
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      if (key === 'writeStatus') return undefined
      if (key === 'report')
        return (...args: Parameters<NonNullable<Store['writeStatus']>>) => {
          writes++
          return inner.writeStatus(...args)
        }
      const v = Reflect.get(target, key, receiver)
      return typeof v === 'function' ? v.bind(target) : v
    },
  }) as Store
  return { store, writes: () => writes }
}

describe('renamed: statusInterval (was reportInterval), Store.writeStatus (was report)', () => {
  it('statusInterval writes the instance status; reportInterval, its deprecated name, still does', async () => {
    for (const option of ['statusInterval', 'reportInterval'] as const) {
      const store = memoryStore()
      const gate = createGate({ name: `shop-${option}`, store, secret: SECRET, [option]: 50 })
      gates.push(gate)
      await until(async () => (await gate.status()).instances.length === 1, 2_000)
    }
  })

  it('refuses both names at once, naming the one to keep', () => {
    let err: unknown
    try {
      createGate({ secret: SECRET, statusInterval: 100, reportInterval: 100 })
    } catch (e) {
      err = e
    }
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    expect((err as Error).message).toMatch(/statusInterval and reportInterval are one setting.*keep statusInterval/)
  })

  it('a custom store written before 0.2 (report, no writeStatus) still gets each instance status', async () => {
    const { store, writes } = oldStore()
    const gate = createGate({ name: 'shop', store, secret: SECRET, statusInterval: 50 })
    gates.push(gate)
    await until(() => writes() >= 2, 2_000)
    expect((await gate.status()).instances.map((i) => i.self)).toEqual([true])
  })
})
