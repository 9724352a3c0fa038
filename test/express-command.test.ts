/**
 * `Airlock-Command: release` on Express, every way a route can write its head: the shared
 * `writeHead` the middleware installs once on Express's response object must act on the command of
 * gated responses only (and never send it), whether the route sets it with `res.set`, in
 * `writeHead`'s object or its flat list, in two apps of one process, in a mounted sub-app, and on a
 * plain Node server (no Express prototype: the middleware's own per-response `writeHead`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { airlock, type AirlockMiddleware } from '../src/express.js'
import { memoryStore } from '../src/stores/memory.js'

const SECRET = 'express-command-test-secret-of-32-bytes'
const servers: Server[] = []
const gates: AirlockMiddleware[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((r) => s.close(r))
  }
  await Promise.all(gates.splice(0).map((g) => g.close()))
})

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

function gate(): AirlockMiddleware {
  const g = airlock({ limit: 1, store: memoryStore(), secret: SECRET })
  gates.push(g)
  return g
}

/** Takes the only slot with a pass, then calls `path` with it: the command must free the slot, clear the cookie and never be sent. */
async function expectRelease(base: string, path: string, g: AirlockMiddleware): Promise<void> {
  const first = await fetch(`${base}/`)
  expect(first.status).toBe(200)
  const pass = first.headers.getSetCookie()[0]!.split(';')[0]!
  expect((await fetch(`${base}/`)).status).toBe(503) // the one slot is held
  const done = await fetch(`${base}${path}`, { headers: { cookie: pass } })
  expect(done.status).toBe(200)
  expect(done.headers.get('airlock-command')).toBeNull()
  expect(done.headers.getSetCookie().some((c) => c.startsWith(`${g.gate.cookieName}=;`))).toBe(true)
  expect((await g.gate.state()).held).toBe(0)
  expect((await fetch(`${base}/`)).status).toBe(200)
}

function routes(app: express.Express): void {
  app.get('/', (_req, res) => {
    res.send('hello')
  })
  app.get('/set', (_req, res) => {
    res.set('Airlock-Command', 'release').send('thanks')
  })
  app.get('/object', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'Airlock-Command': 'release' }).end('thanks')
  })
  app.get('/list', (_req, res) => {
    res.writeHead(200, ['content-type', 'text/plain', 'airlock-command', 'release']).end('thanks')
  })
}

describe('Airlock-Command on Express', () => {
  for (const path of ['/set', '/object', '/list']) {
    it(`acts on it and never sends it: ${path}`, async () => {
      const app = express()
      const g = gate()
      app.use(g)
      routes(app)
      await expectRelease(await listen(app), path, g)
    })
  }

  it('two apps in one process: each gate acts on its own responses; an ungated app sends the header as its route set it', async () => {
    const a = express()
    const ga = gate()
    a.use(ga)
    routes(a)
    const b = express()
    const gb = gate()
    b.use(gb)
    routes(b)
    const plain = express()
    routes(plain)
    const [ba, bb, bp] = await Promise.all([listen(a), listen(b), listen(plain)])
    await expectRelease(ba, '/set', ga)
    await expectRelease(bb, '/object', gb)
    // Not gated: the app's own header goes out untouched (the shared writeHead finds no runner).
    expect((await fetch(`${bp}/set`)).headers.get('airlock-command')).toBe('release')
  })

  it('a gate in a mounted sub-app', async () => {
    const app = express()
    const shop = express()
    const g = gate()
    shop.use(g)
    routes(shop)
    app.use('/shop', shop)
    const base = await listen(app)
    await expectRelease(`${base}/shop`, '/list', g)
  })

  it('on a plain Node server (no Express prototype): its own writeHead', async () => {
    const g = gate()
    const base = await listen((req, res) => {
      g(req, res, () => {
        if (req.url === '/set') res.setHeader('Airlock-Command', 'release')
        res.writeHead(200, { 'content-type': 'text/plain' }).end('hello')
      })
    })
    await expectRelease(base, '/set', g)
  })
})
