/**
 * examples/nextjs: the gate in Next.js 16's `proxy.ts` (Node.js runtime) on the Redis store, run as
 * `next dev` (webpack; see examples/nextjs/next.config.mjs) over real HTTP against a private
 * redis-server (issue 29's bars for Next.js): two visitors get in, the third gets the busy page, a
 * pass holder goes on, and the passes are the Redis store's. Session mode only: a proxy never sees
 * the route's response end, so request mode has no place there (docs/stacks.md).
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisStore } from '../src/stores/redis.js'
import { cleanUpExamples, root, startIn } from './helpers/examples.js'
import { freePort, redisAvailable, requireRedis, startRedis, type PrivateRedis } from './helpers/redis.js'
import { until } from './helpers/wait.js'
import { Browser, hit, nextAddress, SECRET } from './http/harness.js'

requireRedis()
cleanUpExamples()

describe.runIf(redisAvailable)('examples/nextjs: the gate in proxy.ts, Redis store', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  it('two visitors get in, the third gets the busy page, a pass holder goes on; /health is never gated', async () => {
    const port = await freePort()
    const next = join(root, 'node_modules', 'next', 'dist', 'bin', 'next')
    const env = { REDIS_URL: redis.url, AIRLOCK_LIMIT: '2', AIRLOCK_SECRET: SECRET, NEXT_TELEMETRY_DISABLED: '1' }
    await startIn(
      root,
      process.execPath,
      [next, 'dev', '--webpack', 'examples/nextjs', '-p', String(port), '-H', '127.0.0.1'],
      env,
      /Ready in/,
      true,
    )
    const url = `http://127.0.0.1:${port}`
    // `next dev` compiles the proxy and each route on its first request (seconds on a busy box): a
    // first visitor has the page compiled, then its pass, never confirmed, lapses (confirmTimeout).
    const store = redisStore({ client: redis.client() })
    expect(
      (await hit(`${url}/`, { from: nextAddress(), headers: { accept: 'text/html' }, timeout: 120_000 })).status,
    ).toBe(200)
    await until(async () => (await store.state('default')).held === 0, 30_000, 200)
    const [first, second, third] = [new Browser(url), new Browser(url), new Browser(url)]
    for (const visitor of [first, second]) {
      const answer = await visitor.get('/')
      expect(answer.status).toBe(200)
      expect(answer.body).toContain('Welcome in: you hold a pass.')
      expect(visitor.jar.has('airlock_pass')).toBe(true)
      // As a browser does: it follows the Link header at once and confirms its new pass.
      expect(answer.headers.get('link')).toBe('<?__airlock=confirm>; rel=prefetch')
      expect((await visitor.get('/?__airlock=confirm')).status).toBe(204)
    }
    const busy = await third.get('/')
    expect(busy.status).toBe(503)
    expect(busy.headers.get('content-type')).toMatch(/^text\/html/)
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(busy.body).not.toContain('Welcome in')
    expect(third.jar.has('airlock_pass')).toBe(false)
    expect((await third.get('/health')).body).toBe('ok')
    const again = await first.get('/')
    expect(again.status).toBe(200)
    expect(again.body).toContain('Welcome in')
    // The two passes are held in Redis (any other instance of the site would see them).
    expect((await store.state('default')).held).toBe(2)
    await store.close()
  }, 180_000)
})
