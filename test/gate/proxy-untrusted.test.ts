/**
 * A Fastify or Express app behind a proxy on the same box, its trust left off (issue 39): every
 * visitor arrives as 127.0.0.1 with `X-Forwarded-For` naming someone else, so the client share
 * counts them all as one. The gate says so once (logger and stderr), with the fix; trusted, never.
 */
import express from 'express'
import Fastify from 'fastify'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { proxiedClient } from '../../src/base/client-address.js'
import { airlock } from '../../src/express.js'
import { airlockShield } from '../../src/fastify.js'
import { memoryStore } from '../../src/stores/memory.js'

const SECRET = 'a-test-secret-of-at-least-32-bytes-0001'

describe('proxiedClient', () => {
  it('names the forwarded client only when the peer is loopback or private and the header names someone else', () => {
    expect(proxiedClient('127.0.0.1', '203.0.113.9')).toBe('203.0.113.9')
    expect(proxiedClient('::ffff:10.0.0.5', '198.51.100.1, 203.0.113.9')).toBe('203.0.113.9')
    expect(proxiedClient('::1', '[2001:db8::1]:443')).toBe('2001:db8::1')
    expect(proxiedClient('203.0.113.5', '198.51.100.1')).toBeUndefined() // a public peer: its header is no proxy's
    expect(proxiedClient('127.0.0.1', '127.0.0.1')).toBeUndefined()
    expect(proxiedClient('127.0.0.1', 'junk')).toBeUndefined()
    expect(proxiedClient('127.0.0.1', undefined)).toBeUndefined()
    expect(proxiedClient(undefined, '203.0.113.9')).toBeUndefined()
  })
})

describe('a framework app behind a proxy it does not trust', () => {
  afterEach(() => vi.restoreAllMocks())

  it('Fastify without trustProxy: said once on the logger, with the fix; with trustProxy, never', async () => {
    for (const trustProxy of [false, true]) {
      const warn = vi.fn()
      const logger = {
        warn,
        info() {},
        error() {},
        debug() {},
        fatal() {},
        trace() {},
        child: () => logger,
        level: 'info',
        silent() {},
      }
      const app = Fastify({ trustProxy, loggerInstance: logger as never })
      await app.register(airlockShield, {
        name: `fastify-${trustProxy}`,
        limit: 1000,
        secret: SECRET,
        store: memoryStore(),
      })
      app.get('/', async () => 'ok')
      for (let i = 0; i < 5; i++) await app.inject({ url: '/', headers: { 'x-forwarded-for': `203.0.113.${i}` } })
      const said = warn.mock.calls.filter((c) => String(c[1] ?? c[0]).includes('is told every visitor is'))
      expect(said).toHaveLength(trustProxy ? 0 : 1)
      if (!trustProxy) expect(String(said[0]![1])).toContain("Fastify({ trustProxy: '127.0.0.1' })")
      await app.close()
    }
  })

  it('Express without trust proxy: said once, with the fix', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {})
    const warn = vi.fn()
    const app = express()
    app.use(
      airlock({
        name: 'express-untrusted',
        limit: 1000,
        secret: SECRET,
        store: memoryStore(),
        logger: { warn, info() {}, error() {}, debug() {} } as never,
      }),
    )
    app.get('/', (_req, res) => void res.send('ok'))
    const server = app.listen(0, '127.0.0.1')
    await new Promise((r) => server.once('listening', r))
    const { port } = server.address() as { port: number }
    for (let i = 0; i < 5; i++)
      await (await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-forwarded-for': `198.51.100.${i}` } })).text()
    server.close()
    const said = warn.mock.calls.filter((c) => String(c[1]).includes('is told every visitor is'))
    expect(said).toHaveLength(1)
    expect(String(said[0]![1])).toContain("app.set('trust proxy', 'loopback')")
  })
})
