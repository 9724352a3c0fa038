/**
 * The operator's control survives a Redis that lost its data (issue 22). Before: Redis killed and
 * restarted empty while a live limit of 20 was set, every gate silently went back to its configured
 * limit; a gate set to `closed` reopened the same way; nothing was logged.
 *
 * Real gates on a real private redis-server (no persistence), restarted empty or flushed.
 */
import diagnostics from 'node:diagnostics_channel'
import { afterEach, describe, expect, it } from 'vitest'
import { airlockControl } from '../../src/core/control.js'
import { createGate, type Gate } from '../../src/gate/gate.js'
import type { ControlEvent } from '../../src/base/events.js'
import { redisStore } from '../../src/stores/redis.js'
import { requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { until } from '../helpers/wait.js'

requireRedis()

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const view = () => ({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

function logger() {
  const lines: { level: string; msg?: string }[] = []
  return {
    lines,
    warn: (_o: object, msg?: string) => void lines.push({ level: 'warn', msg }),
    info: () => {},
    error: (_o: object, msg?: string) => void lines.push({ level: 'error', msg }),
  }
}

async function fleet(redis: PrivateRedis, name: string) {
  const stores = [0, 1].map(() => redisStore({ client: redis.client({ maxRetriesPerRequest: 1 }) }))
  const logs = [logger(), logger()]
  const gates = stores.map((store, i) =>
    createGate({ name, store, secret: SECRET, limit: 40, logger: logs[i]!, onStoreError: 'closed' }),
  )
  await Promise.all(gates.map((g) => g.ready))
  closers.push(async () => {
    for (const g of gates) await g.close()
    for (const s of stores) await s.close()
  })
  return { gates: gates as Gate[], logs, control: airlockControl({ name, store: stores[0]!, by: 'test' }) }
}

describe('the live control after the store lost its data', () => {
  let redis: PrivateRedis
  afterEach(async () => {
    await redis?.stop()
  })

  it('Redis restarted empty: a live limit and a closed gate stay in force, are written back, logged at error level and published', {
    timeout: 30_000,
  }, async () => {
    redis = await startRedis()
    const { gates, logs, control } = await fleet(redis, 'lost-restart')
    const events: ControlEvent[] = []
    const onControl = (m: unknown) => void events.push(m as ControlEvent)
    diagnostics.subscribe('airlock:control', onControl)
    closers.push(() => diagnostics.unsubscribe('airlock:control', onControl))
    await control.set({ limit: 20, mode: 'closed' })
    await until(() => gates.every((g) => g.control.mode === 'closed' && g.limit === 20))
    const version = gates[0]!.control.version
    await redis.kill()
    await redis.start()
    // The gates re-read the record (every 5 s): gone. Before, they applied "nothing set".
    await until(async () => (await control.get()).version > version, 12_000)
    for (const g of gates) {
      expect(g.control).toMatchObject({ mode: 'closed', limit: 20 })
      expect(g.limit).toBe(20)
      expect((await g.decide(view())).kind).toBe('busy')
    }
    // Written back above every version seen, with what was in force.
    expect(await control.get()).toMatchObject({ mode: 'closed', limit: 20, updatedBy: 'test' })
    expect(logs.some((l) => l.lines.some((x) => x.level === 'error' && /gone from the store/.test(x.msg ?? '')))).toBe(
      true,
    )
    expect(events.some((e) => e.event === 'restored' && e.version === version)).toBe(true)
    // The operator can still change it, and every gate follows.
    await control.set({ mode: null })
    await until(() => gates.every((g) => g.control.mode === 'normal' && g.limit === 20))
  })

  it('FLUSHDB: the same, and a gate started after the loss learns the written-back control', {
    timeout: 30_000,
  }, async () => {
    redis = await startRedis()
    const { gates, control } = await fleet(redis, 'lost-flush')
    await control.set({ mode: 'queue-all' })
    await until(() => gates.every((g) => g.control.mode === 'queue-all'))
    const admin = redis.client()
    await admin.flushdb() // a private server: nobody else's data
    admin.disconnect()
    await until(async () => (await control.get()).mode === 'queue-all', 12_000)
    for (const g of gates) expect(g.control.mode).toBe('queue-all')
    const late = await fleet(redis, 'lost-flush')
    await until(() => late.gates[0]!.control.mode === 'queue-all')
  })
})
