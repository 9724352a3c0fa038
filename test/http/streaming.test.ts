/**
 * Request mode on the adapters whose route hands back a body that is still being made (a fetch
 * `Response` around a `ReadableStream`, Koa's stream body): the slot is the request's until the body
 * has been sent, or given up on because the client went away, and it is released exactly once.
 */
import { connect, type AddressInfo, type Socket } from 'node:net'
import { createServer, type Server } from 'node:http'
import { PassThrough } from 'node:stream'
import { createAdaptorServer } from '@hono/node-server'
import { Hono } from 'hono'
import Koa from 'koa'
import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import type { AdapterName } from '../../src/entries.js'
import { airlockShield } from '../../src/fastify.js'
import { airlock as fetchAirlock } from '../../src/fetch.js'
import { airlock as honoAirlock } from '../../src/hono.js'
import { airlock as koaAirlock } from '../../src/koa.js'
import { memoryStore } from '../../src/stores/memory.js'
import { countingStore, recordingLogger, type CountingStore } from '../helpers/stores.js'
import { until } from '../helpers/wait.js'
import { hit } from './harness.js'

/** A body that sends `first` at once and `last` when `end()` is called. */
interface Feed {
  end(): void
}

interface StreamApp {
  url: string
  feeds: Feed[]
  close(): Promise<void>
}

const encoder = new TextEncoder()

/** A Web `ReadableStream` body: `first` now, `last` (and the end) once its feed is ended. */
function webBody(feeds: Feed[]): ReadableStream<Uint8Array> {
  let ended: () => void = () => {}
  const last = new Promise<void>((r) => (ended = r))
  feeds.push({ end: () => ended() })
  let sent = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true
        controller.enqueue(encoder.encode('first\n'))
        return
      }
      await last
      controller.enqueue(encoder.encode('last\n'))
      controller.close()
    },
  })
}

async function listen(server: Server, gate: { close(): Promise<void> }, feeds: Feed[]): Promise<StreamApp> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    feeds,
    async close() {
      for (const f of feeds) f.end()
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await gate.close()
    },
  }
}

const gateOptions = (store: CountingStore) => ({
  mode: 'request' as const,
  limit: 1,
  reuseWindow: 0,
  store,
  logger: recordingLogger(),
})

/**
 * Every adapter of the list (src/entries.ts), with its app whose route hands back a streamed body,
 * or `null` where the route writes the body itself (Express, plain `node:http`: the route's work
 * ends with its `res.end`, which the behaviour suite's request mode covers). A `Record`: a new
 * adapter fails to compile here until it says which it is.
 */
const APPS: Record<AdapterName, ((store: CountingStore) => Promise<StreamApp>) | null> = {
  express: null,
  node: null,
  fastify: async (store) => {
    const feeds: Feed[] = []
    const app = Fastify()
    await app.register(airlockShield, gateOptions(store))
    app.get('/stream', async (_request, reply) => {
      const body = new PassThrough()
      body.write('first\n')
      feeds.push({ end: () => body.end('last\n') })
      return reply.type('text/plain').send(body)
    })
    app.get('/', async () => 'short')
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    return {
      url,
      feeds,
      async close() {
        for (const f of feeds) f.end()
        app.server.closeAllConnections()
        await app.close()
      },
    }
  },
  fetch: async (store) => {
    const feeds: Feed[] = []
    const gate = fetchAirlock(gateOptions(store))
    const handler = gate.wrap(
      (request: Request, _env: unknown) =>
        new Response(new URL(request.url).pathname === '/stream' ? webBody(feeds) : 'short'),
    )
    return listen(createAdaptorServer({ fetch: handler }) as Server, gate, feeds)
  },
  hono: async (store) => {
    const feeds: Feed[] = []
    const gate = honoAirlock(gateOptions(store))
    const app = new Hono()
    app.use(gate)
    app.get('/stream', (c) => c.body(webBody(feeds)))
    app.get('/', (c) => c.text('short'))
    return listen(createAdaptorServer({ fetch: app.fetch }) as Server, gate, feeds)
  },
  koa: async (store) => {
    const feeds: Feed[] = []
    const gate = koaAirlock(gateOptions(store))
    const app = new Koa()
    app.silent = true // the reader that goes away ends its body early: Koa would log that
    app.use(gate)
    app.use(async (ctx) => {
      if (ctx.path !== '/stream') {
        ctx.body = 'short'
        return
      }
      const body = new PassThrough()
      body.write('first\n')
      feeds.push({ end: () => body.end('last\n') })
      ctx.body = body
    })
    return listen(createServer(app.callback()), gate, feeds)
  },
}

/** A raw request to `/stream` that resolves once the first chunk of the body arrived. */
function openStream(url: string): Promise<{ socket: Socket; text: () => string; closed: Promise<void> }> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    let data = ''
    const socket = connect(Number(u.port), u.hostname, () => {
      socket.write(`GET /stream HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`)
    })
    const closed = new Promise<void>((r) => socket.once('close', () => r()))
    socket.on('data', (d) => {
      data += d.toString('latin1')
      if (data.includes('first')) resolve({ socket, text: () => data, closed })
    })
    socket.on('error', reject)
    socket.setTimeout(15_000, () => socket.destroy(new Error('no first chunk within 15 s')))
  })
}

const held = async (store: CountingStore): Promise<number> => (await store.state('default')).held

for (const [adapter, start] of Object.entries(APPS)) {
  if (start === null) continue
  describe(`${adapter}: request mode with a streamed body`, () => {
    let app: StreamApp | undefined
    afterEach(async () => {
      await app?.close()
      app = undefined
    })

    it('holds the slot while the body streams, and releases it once when the body has been sent', async () => {
      const store = countingStore(memoryStore())
      app = await start(store)
      const reader = await openStream(app.url)
      // The route returned long ago; its body is not over: the one slot is still the reader's.
      expect((await hit(`${app.url}/`)).status).toBe(503)
      expect(await held(store)).toBe(1)
      app.feeds[0]!.end()
      await reader.closed
      expect(reader.text()).toContain('last')
      await until(async () => (await held(store)) === 0, 5000)
      expect((await hit(`${app.url}/`)).status).toBe(200)
      await until(async () => (await held(store)) === 0, 5000)
      expect(store.calls.acquire).toBe(3) // the streamed one, the refused one, the short one
      expect(store.calls.release).toBe(2)
    })

    it('releases the slot of a HEAD request once its handler answered (no body is sent, nor read)', async () => {
      const store = countingStore(memoryStore())
      app = await start(store)
      for (let i = 0; i < 3; i++) {
        const head = await hit(`${app.url}/`, { method: 'HEAD' })
        expect([head.status, head.body]).toEqual([200, ''])
        await until(async () => (await held(store)) === 0, 5000)
      }
      expect(store.calls.release).toBe(3)
    })

    it('releases the slot once when the client goes away in the middle of the body', async () => {
      const store = countingStore(memoryStore())
      app = await start(store)
      const reader = await openStream(app.url)
      expect(await held(store)).toBe(1)
      reader.socket.destroy()
      await until(async () => (await held(store)) === 0, 5000)
      expect((await hit(`${app.url}/`)).status).toBe(200)
      // The body's feed ends after the client left: nothing is released twice.
      app.feeds[0]!.end()
      await until(async () => (await held(store)) === 0, 5000)
      expect(store.calls.release).toBe(2)
    })
  })
}
