/**
 * `airlock proxy` as a real process: the access log on stdout (JSON and pretty), its flags checked,
 * and `--workers` (several processes on one port sharing a private Redis and one pass secret).
 */
import { spawnSync } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { airlock } from './harness.js'
import { hit, nextAddress } from '../http/harness.js'

let origin: Server
let target: string
beforeAll(async () => {
  origin = createServer((_req, res) => res.end('ok'))
  await new Promise<void>((ok) => origin.listen(0, '127.0.0.1', ok))
  target = `http://127.0.0.1:${(origin.address() as { port: number }).port}`
})
afterAll(async () => {
  origin.closeAllConnections()
  await new Promise((done) => origin.close(done))
})

describe('airlock proxy: the log', () => {
  it('writes an access line per request on stdout: JSON in pino shape by default, one short line with --log-format pretty', {
    timeout: 30_000,
  }, async () => {
    const json = airlock(['proxy', '--target', target, '--port', '0'])
    const base = /airlock proxy on (http:\/\/[^ ]+)\//.exec(
      await json.waitFor(/airlock proxy on http:\/\/[^ ]+\//),
    )![1]!
    expect((await fetch(`${base}/hello?x=1`)).status).toBe(200)
    await json.waitFor('"url":"/hello?x=1"')
    const line = json
      .stdout()
      .split('\n')
      .find((l) => l.includes('/hello?x=1'))!
    expect(JSON.parse(line)).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'GET',
      status: 200,
      decision: 'admit',
      upstream: 200,
    })
    json.proc.kill('SIGTERM')
    expect((await json.exited).code).toBe(0)
    const pretty = airlock(['proxy', '--target', target, '--port', '0', '--log-format', 'pretty'])
    const base2 = /airlock proxy on (http:\/\/[^ ]+)\//.exec(
      await pretty.waitFor(/airlock proxy on http:\/\/[^ ]+\//),
    )![1]!
    await (await fetch(`${base2}/p`)).text()
    await pretty.waitFor(/INFO {2}request method=GET url=\/p status=200/)
    pretty.proc.kill('SIGTERM')
    expect((await pretty.exited).code).toBe(0)
  })

  it('refuses a bad --log-level, --log-format or --workers, and --workers without Redis, naming the fix (exit 64)', async () => {
    for (const [args, message] of [
      [['--log-level', 'loud'], '--log-level must be one of debug, info, warn, error, silent'],
      [['--log-format', 'xml'], '--log-format must be json or pretty'],
      [['--workers', 'many'], '--workers must be a number of processes (1 to 256) or auto'],
      [['--workers', '2'], '--workers 2 needs --redis (or AIRLOCK_REDIS_URL)'],
      [['--upstream-timeout', 'soon'], '--upstream-timeout'],
    ] as const) {
      const run = airlock(['proxy', '--target', target, '--port', '0', ...args])
      const done = await run.exited
      expect(done.code).toBe(64)
      expect(done.stderr).toContain(message)
    }
  })
})

describe('airlock proxy --trust-proxy (issue 38)', () => {
  it('takes the addresses of the proxies in front; bare, it is refused naming the fix (it trusted every client)', async () => {
    for (const [args, message] of [
      [['--trust-proxy'], '--trust-proxy needs a value (--trust-proxy ADDRESSES)'],
      [['--trust-proxy', '10.0.0.0/33'], "'10.0.0.0/33' is not an address, a CIDR or one of loopback"],
      [['--trust-proxy', ','], '--trust-proxy needs the addresses of your proxies'],
    ] as const) {
      const done = await airlock(['proxy', '--target', target, '--port', '0', ...args]).exited
      expect(done.code, args.join(' ')).toBe(64)
      expect(done.stderr).toContain(message)
    }
  })

  it('behind a trusted proxy, a visitor rotating X-Forwarded-For gains nothing: it is counted as the address the proxy saw', {
    timeout: 30_000,
  }, async () => {
    const run = airlock([
      'proxy',
      '--target',
      target,
      '--port',
      '0',
      '--limit',
      '10',
      '--trust-proxy',
      '127.0.0.1,::1',
      '--log-level',
      'warn',
    ])
    const base = /airlock proxy on (http:\/\/[^ ]+)\//.exec(await run.waitFor(/airlock proxy on http:\/\/[^ ]+\//))![1]!
    try {
      const statuses: number[] = []
      // As nginx's $proxy_add_x_forwarded_for writes it: what the visitor sent, then the visitor's address.
      for (let i = 0; i < 10; i++)
        statuses.push(
          (
            await fetch(`${base}/`, {
              headers: { accept: 'application/json', 'x-forwarded-for': `198.51.100.${i}, 203.0.113.5` },
            })
          ).status,
        )
      // Before: `--trust-proxy` trusted every client, the rotating first entry was the client, 8 of 10 got in for a share of 2.
      expect(statuses.filter((x) => x === 200).length, 'its share of 10: a quarter, rounded up').toBe(3)
    } finally {
      run.proc.kill('SIGTERM')
      await run.exited
    }
  })
})

describe.runIf(redisAvailable || process.env.CI)('airlock proxy --workers', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    requireRedis()
    redis = await startRedis()
  })
  afterAll(async () => redis?.stop())

  it('--workers checks the options once, before any worker starts: a bad one exits 64 naming it', async () => {
    const run = airlock(['proxy', '--target', 'ftp://nowhere', '--port', '0', '--workers', '2', '--redis', redis.url])
    const done = await run.exited
    expect(done.code).toBe(64)
    expect(done.stderr).toContain('target must be an http:// or https:// URL')
  })

  it('two workers on one port share the limit and the pass secret; SIGTERM stops them all (exit 0)', {
    timeout: 40_000,
  }, async () => {
    const run = airlock(
      [
        'proxy',
        '--target',
        target,
        '--port',
        '0',
        '--workers',
        '2',
        '--redis',
        redis.url,
        '--limit',
        '2',
        '--log-level',
        'silent',
      ],
      { AIRLOCK_SECRET: undefined },
    )
    const line = await run.waitFor(/\(2 workers\)/, 30_000)
    const base = /airlock proxy on (http:\/\/[^ ]+)\//.exec(line)![1]!
    expect(
      spawnSync('pgrep', ['-P', String(run.proc.pid)])
        .stdout.toString()
        .trim()
        .split('\n'),
    ).toHaveLength(2)
    // Two visitors in (their passes good at either worker), a third turned away.
    const passes: string[] = []
    // Each visitor from its own address (the client share counts by address).
    for (let i = 0; i < 2; i++) {
      const r = await hit(`${base}/`, { from: nextAddress() })
      expect(r.status).toBe(200)
      passes.push(r.cookies[0]!.split(';')[0]!)
    }
    const third = await hit(`${base}/`, { headers: { accept: 'application/json' }, from: nextAddress() })
    expect([third.status, third.body]).toEqual([503, '{"status":"busy","reason":"full","retryAfter":5}'])
    // Fresh connections land on either worker: every one lets both pass holders through.
    for (let i = 0; i < 8; i++)
      expect((await fetch(`${base}/`, { headers: { cookie: passes[i % 2]!, connection: 'close' } })).status).toBe(200)
    run.proc.kill('SIGTERM')
    expect((await run.exited).code).toBe(0)
  })
})
