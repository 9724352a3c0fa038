/** `airlock control` and `airlock dashboard` as real processes, on a private Redis. */
import { describe, expect, it } from 'vitest'
import { airlockControl } from '../../src/core/control.js'
import { requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { airlock } from './harness.js'

requireRedis()

describe('airlock control', () => {
  const priv = usePrivateRedis()

  it('set changes the record every gate follows; get prints it, as text or JSON; clear empties it', async () => {
    const set = await airlock([
      'control',
      'set',
      '--name',
      'cli-shop',
      '--redis',
      priv.redis.url,
      '--limit',
      '3',
      '--mode',
      'queue-all',
      '--rate',
      '10/s',
      '--opens-at',
      '2030-01-01T09:00:00Z',
      '--by',
      'ops',
    ]).exited
    expect(set.code, set.stderr).toBe(0)
    expect(set.stdout).toContain("gate 'cli-shop'")
    expect(set.stdout).toContain('admissionRate  600/min')
    expect(await airlockControl({ name: 'cli-shop', store: priv.store }).get()).toMatchObject({
      limit: 3,
      mode: 'queue-all',
      admissionRate: 600,
      opensAt: new Date('2030-01-01T09:00:00Z'),
      updatedBy: 'ops',
      version: 1,
    })
    const get = await airlock(['control', 'get', '--name', 'cli-shop', '--redis', priv.redis.url, '--json']).exited
    expect(JSON.parse(get.stdout)).toMatchObject({ limit: 3, mode: 'queue-all', version: 1 })
    const none = await airlock(['control', 'set', '--name', 'cli-shop', '--redis', priv.redis.url, '--limit', 'none'])
      .exited
    expect(none.code).toBe(0)
    expect((await airlockControl({ name: 'cli-shop', store: priv.store }).get()).limit).toBeNull()
    expect((await airlock(['control', 'clear', '--name', 'cli-shop', '--redis', priv.redis.url]).exited).code).toBe(0)
    expect(await airlockControl({ name: 'cli-shop', store: priv.store }).get()).toMatchObject({
      mode: 'normal',
      admissionRate: null,
      opensAt: null,
      version: 3,
    })
  })

  it.each([
    [['--limit', '0'], '--limit must be an integer from 1 to 1000000000'],
    [['--mode', 'open'], '--mode must be one of normal, queue-all, closed, passthrough'],
    [['--rate', 'fast'], '--rate must be a number of visitors per minute'],
    [['--opens-at', 'tomorrow'], '--opens-at must be an ISO 8601 time'],
    [[], 'set needs at least one of'],
  ])('set %j exits 64 with one line: %s', async (flags, message) => {
    const r = await airlock(['control', 'set', '--name', 'cli-shop', '--redis', 'redis://127.0.0.1:1', ...flags]).exited
    expect(r.code).toBe(64)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toContain(message)
  })

  it('an unknown action or a missing --redis is a usage error; an unreachable Redis exits 69', async () => {
    expect((await airlock(['control', 'toggle']).exited).code).toBe(64)
    expect((await airlock(['control', 'get', '--name', 'x']).exited).stderr).toContain('--redis is required')
    const down = await airlock(['control', 'get', '--name', 'x', '--redis', 'redis://127.0.0.1:1']).exited
    expect(down.code).toBe(69)
  })
})

describe('airlock dashboard', () => {
  const priv = usePrivateRedis()

  it('refuses to start without a token (exit 78); serves the page behind it; stops on SIGTERM', async () => {
    const none = await airlock(['dashboard', '--redis', priv.redis.url]).exited
    expect(none.code).toBe(78)
    expect(none.stderr).toContain('AIRLOCK_DASHBOARD_TOKEN')
    const token = 'a-cli-dashboard-token-123'
    const run = airlock(['dashboard', '--redis', priv.redis.url, '--name', 'a,b', '--port', '0'], {
      AIRLOCK_DASHBOARD_TOKEN: token,
    })
    const line = await run.waitFor(/dashboard on (http:\/\/[^ ]+)/)
    const url = /dashboard on (http:\/\/[^ ]+\/)/.exec(line)![1]!
    expect((await fetch(url)).status).toBe(401)
    const page = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    expect(page.status).toBe(200)
    const state = (await (await fetch(`${url}state`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      views: { name: string }[]
    }
    expect(state.views.map((v) => v.name)).toEqual(['a', 'b'])
    run.proc.kill('SIGTERM')
    expect((await run.exited).code).toBe(0)
  })
})
