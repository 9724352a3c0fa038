import { afterEach, describe, expect, it } from 'vitest'
import { memoryStore } from '../../src/stores/memory.js'
import { createLockServer } from '../../src/lock-server/server.js'
import { isAirlockError } from '../../src/base/errors.js'
import { lockServerBehaviour } from './behaviour.js'
import { srsExchange } from './srs.js'
import { KEYS, startService, uniqueName, type Service } from './harness.js'

lockServerBehaviour('memory', async () => {
  const store = memoryStore()
  return { store, close: () => store.close() }
})

srsExchange('memory', async () => {
  const store = memoryStore()
  return { store, close: () => store.close() }
})

describe('lock service options', () => {
  const opened: Service[] = []
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close()
  })

  it('reads keys from AIRLOCK_*_KEY when apiKeys is not given (comma-separated lists)', async () => {
    const env = {
      AIRLOCK_WRITE_KEY: 'env-write-key-0123456789, env-write-key-rotated-0123',
      AIRLOCK_READ_KEY: 'env-read-key-0123456789',
    }
    const saved = { ...process.env }
    Object.assign(process.env, env)
    try {
      const app = createLockServer({ store: memoryStore() })
      const name = uniqueName('env')
      const inject = (key: string, method: 'POST' | 'GET', url: string, payload?: object) =>
        app.inject({ method, url, headers: { 'x-api-key': key }, payload })
      expect((await inject('env-write-key-rotated-0123', 'POST', '/resource', { name })).statusCode).toBe(201)
      expect((await inject('env-read-key-0123456789', 'GET', `/resource/${name}/s?lock=0`)).statusCode).toBe(200)
      expect((await inject('env-read-key-0123456789', 'GET', `/resource/${name}/s`)).statusCode).toBe(401)
      expect((await inject(KEYS.write, 'GET', `/resource/${name}`)).statusCode).toBe(401) // option keys are not in effect
      await app.close()
    } finally {
      process.env = saved
    }
  })

  it.each([
    [
      { apiKeys: undefined },
      /needs at least one API key: pass apiKeys: \{ read, readLock, write \} or set AIRLOCK_WRITE_KEY/,
    ],
    [{ apiKeys: {} }, /apiKeys must hold at least one key/],
    [
      { apiKeys: { write: 'short' } },
      /apiKeys.write keys must be 16 to 256 visible ASCII characters .* got a string of 5 characters/,
    ],
    [{ apiKeys: { write: ['ok-ok-ok-ok-ok-ok-ok', 'has a space in it!!'] } }, /apiKeys.write keys must be/],
    [{ apiKeys: { wrte: KEYS.write } }, /apiKeys has no option 'wrte'/],
    [{ apiKeys: KEYS, bodyLimit: 0 }, /bodyLimit must be a positive integer, got 0/],
    [{ apiKeys: KEYS, queue: { claimWindow: -1 } }, /queue.claimWindow must be a positive number of milliseconds/],
    [{ apiKeys: KEYS, stor: memoryStore() }, /createLockServer\(\) has no option 'stor'/],
    [{ apiKeys: KEYS, store: { kind: 'x' } }, /store must implement the Store interface/],
  ])('fails at creation with ERR_AIRLOCK_OPTION naming the option (%#)', (options, message) => {
    const saved = { ...process.env }
    for (const k of ['AIRLOCK_READ_KEY', 'AIRLOCK_READ_LOCK_KEY', 'AIRLOCK_WRITE_KEY']) delete process.env[k]
    let err: unknown
    try {
      createLockServer(options as never)
    } catch (e) {
      err = e
    } finally {
      process.env = saved
    }
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    expect((err as Error).message).toMatch(message)
    expect((err as Error).message).not.toContain('0123456789abcdef') // never echoes a key
  })

  it('services on different memory stores do not share resources; on the same store they do', async () => {
    const shared = memoryStore()
    const a = await startService({ store: shared })
    const b = await startService({ store: shared })
    const c = await startService({ store: memoryStore() })
    opened.push(a, b, c)
    const name = uniqueName('shared')
    await a.call('POST', '/resource', { json: { name } })
    expect((await b.call('GET', `/resource/${name}`)).status).toBe(200)
    expect((await c.call('GET', `/resource/${name}`)).status).toBe(404)
  })

  it("logger options reach Fastify's logger; keys never reach the log", async () => {
    const lines: string[] = []
    const stream = { write: (line: string) => void lines.push(line) }
    const svc = await startService({ store: memoryStore(), logger: { level: 'info', stream } })
    opened.push(svc)
    await svc.call('GET', '/health')
    expect(lines.some((l) => l.includes('"url":"/health"'))).toBe(true)
    expect(lines.join('\n')).not.toContain(KEYS.write) // keys never reach the log
  })
})
