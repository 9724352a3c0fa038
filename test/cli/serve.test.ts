/**
 * `airlock serve` as a real process: a private Redis, keys from the environment, real HTTP, a
 * clean stop on SIGTERM/SIGINT; and on the memory store, with its warning.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisResources } from '../../src/stores/resources.js'
import { freePort, redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { airlock, type Run } from './harness.js'

requireRedis()
const WRITE = 'serve-write-key-0123456789'
const READ = 'serve-read-key-0123456789'

async function serve(args: string[], ready = 'airlock lock service ready'): Promise<{ run: Run; url: string }> {
  const port = await freePort()
  const run = airlock(['serve', '--port', String(port), ...args], { AIRLOCK_WRITE_KEY: WRITE, AIRLOCK_READ_KEY: READ })
  await run.waitFor(ready)
  return { run, url: `http://127.0.0.1:${port}` }
}

describe.runIf(redisAvailable)('airlock serve (real process)', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  it('serves the lock API on Redis with keys from the environment, and stops cleanly on SIGTERM', async () => {
    const { run, url } = await serve(['--redis', redis.url, '--prefix', 'svc'])
    const post = await fetch(`${url}/resource`, {
      method: 'POST',
      headers: { 'x-api-key': WRITE },
      body: JSON.stringify({ name: 'printer', timeout: 300 }),
    })
    expect(post.status).toBe(201)
    const lock = await fetch(`${url}/resource/printer/tray1`, { headers: { authorization: `Bearer ${WRITE}` } })
    expect(lock.status).toBe(200)
    const ticket = lock.headers.get('x-ticket')!
    const put = await fetch(`${url}/resource/printer/tray1?unlock=1`, {
      method: 'PUT',
      headers: { 'x-api-key': WRITE, 'x-ticket': ticket, 'content-type': 'application/json' },
      body: '{"paper":"A4"}',
    })
    expect(put.status).toBe(204)
    // Reads answer the Small Resource Server's envelope by default (--data-format raw: the JSON itself).
    const read = await fetch(`${url}/resource/printer/tray1?lock=0`, { headers: { 'x-api-key': READ } })
    expect(await read.json()).toEqual({ resource: 'printer', selector: 'tray1', data: '{"paper":"A4"}' })
    expect((await fetch(`${url}/resource/printer/tray1`, { headers: { 'x-api-key': READ } })).status).toBe(401)
    // --prefix reaches the keys in Redis.
    const [, data] = redisResources({ client: redis.client(), prefix: 'svc' }).keys('printer')
    expect(data).toMatch(/^\{svc:lock\.[\w-]+\}:data$/)
    expect(await redis.client().hget(data, 'tray1')).toBe('{"paper":"A4"}')
    run.proc.kill('SIGTERM')
    const done = await run.exited
    expect(done.code).toBe(0)
    expect(done.stdout).toMatch(/"signal":"SIGTERM","msg":"stopping"/)
    expect(done.stdout).not.toContain(WRITE) // keys never reach the log
  })

  it('without --redis: memory, with a warning; SIGINT stops it', async () => {
    const { run, url } = await serve(['--log-level', 'warn'], 'no --redis')
    expect(run.stdout()).toMatch(/"level":40,.*no --redis: locks, resources and data live in this process only/)
    expect((await fetch(`${url}/health`)).status).toBe(200)
    run.proc.kill('SIGINT')
    expect((await run.exited).code).toBe(0)
  })

  it('exits 69 with one line when Redis cannot be reached, 1 when the port is taken', async () => {
    const port = await freePort()
    const unreachable = await airlock(['serve', '--redis', `redis://127.0.0.1:${port}`], { AIRLOCK_WRITE_KEY: WRITE })
      .exited
    expect(unreachable.code).toBe(69)
    expect(unreachable.stderr).toBe(
      `airlock: cannot reach Redis at redis://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    )
    const first = await serve([])
    const taken = await airlock(['serve', '--port', new URL(first.url).port, '--log-level', 'silent'], {
      AIRLOCK_WRITE_KEY: WRITE,
    }).exited
    expect(taken.code).toBe(1)
    expect(taken.stderr).toMatch(/^airlock: cannot listen on 127.0.0.1:\d+: .*EADDRINUSE/)
    first.run.proc.kill('SIGTERM')
    await first.run.exited
  })
})
