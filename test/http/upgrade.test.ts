/**
 * Request mode in the adapters that see WebSocket upgrades (@fastify/websocket, express-ws, the
 * proxy): an open socket holds its slot; closed, the slot is free at once (before: held until
 * `ttl`); open past `ttl`, it still holds it (issue 38: before, its slot expired and new sockets got
 * in beside it, 12 open at once for a limit of 3).
 */
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import Fastify from 'fastify'
import fastifyWebsocket from '@fastify/websocket'
import express from 'express'
import expressWs from 'express-ws'
import { afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { airlock } from '../../src/express.js'
import { airlockShield } from '../../src/fastify.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { createProxy } from '../../src/proxy.js'
import { nodeOrigin } from '../proxy/origins.js'
import { closeAll, sleep } from '../helpers/wait.js'

const closers: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of closers.splice(0)) await c()
})

const held = async (store: Store): Promise<number> => (await store.state('default')).held

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    ws.on('open', () => resolve(ws))
    ws.on('unexpected-response', (_q, r) => reject(new Error(`status ${r.statusCode}`)))
    ws.on('error', reject)
  })
}

/** A site with a WebSocket echo at /ws: its address, and how many sockets its handler has open now. */
interface Site {
  host: string
  openSockets: () => number
}

async function fastifyApp(store: Store, ttl = 30_000): Promise<Site> {
  const app = Fastify()
  await app.register(fastifyWebsocket)
  await app.register(airlockShield, { mode: 'request', limit: 3, ttl, store, logger: { warn: () => {} } })
  let open = 0
  app.get('/ws', { websocket: true }, (socket) => {
    open++
    socket.on('close', () => open--)
    socket.on('message', (d: Buffer) => socket.send(d))
  })
  app.get('/', async () => 'home')
  await app.listen({ port: 0, host: '127.0.0.1' })
  closers.push(() => app.close())
  return { host: `127.0.0.1:${(app.server.address() as AddressInfo).port}`, openSockets: () => open }
}

async function expressApp(store: Store, ttl = 30_000): Promise<Site> {
  const app = express()
  const { app: wsApp } = expressWs(app)
  const mw = airlock({ mode: 'request', limit: 3, ttl, store, logger: { warn: () => {} } })
  wsApp.use(mw)
  let open = 0
  wsApp.ws('/ws', (ws) => {
    open++
    ws.on('close', () => open--)
    ws.on('message', (d: Buffer) => ws.send(d))
  })
  wsApp.get('/', (_req, res) => void res.send('home'))
  const server: Server = await new Promise((resolve) => {
    const s = wsApp.listen(0, '127.0.0.1', () => resolve(s))
  })
  closers.push(async () => {
    server.closeAllConnections()
    await new Promise((done) => server.close(done))
    await mw.close()
  })
  return { host: `127.0.0.1:${(server.address() as AddressInfo).port}`, openSockets: () => open }
}

async function proxyApp(store: Store, ttl = 30_000): Promise<Site> {
  const origin = await nodeOrigin()
  const proxy = await createProxy({
    target: origin.url,
    mode: 'request',
    limit: 3,
    ttl,
    store,
    logger: { warn: () => {} },
  })
  await proxy.listen({ port: 0 })
  closers.push(async () => {
    await proxy.close()
    await origin.stop()
  })
  return { host: `127.0.0.1:${(proxy.server.address() as AddressInfo).port}`, openSockets: origin.openSockets }
}

/** Opens a socket, or `null` when the gate refuses the upgrade. */
const tryOpen = (url: string): Promise<WebSocket | null> => open(url).catch(() => null)

describe.each([
  ['fastify (@fastify/websocket)', fastifyApp],
  ['express (express-ws)', expressApp],
  ['airlock proxy', proxyApp],
] as const)('%s, request mode', (_label, start) => {
  it('an open WebSocket holds its slot; three opened and closed leave the site open at once, not after ttl', {
    timeout: 15_000,
  }, async () => {
    const store = memoryStore()
    const { host } = await start(store)
    const sockets = await Promise.all([1, 2, 3].map(() => open(`ws://${host}/ws`)))
    expect(await held(store)).toBe(3)
    expect((await fetch(`http://${host}/`, { headers: { accept: 'application/json' } })).status).toBe(503)
    await closeAll(sockets)
    await sleep(100)
    expect(await held(store)).toBe(0)
    expect((await fetch(`http://${host}/`)).status).toBe(200)
  })

  it('open sockets never outnumber the limit over 5 x ttl: each keeps its slot alive while open (issue 38)', {
    timeout: 30_000,
  }, async () => {
    const store = memoryStore()
    const ttl = 1_000
    const site = await start(store, ttl)
    const opened: WebSocket[] = []
    let most = 0
    // Three new sockets every 1.25 ttl, for 5 ttl: before the fix, each round's three got in beside
    // the first three once their slots had expired in the store.
    for (let round = 0; round < 5; round++) {
      for (const ws of await Promise.all([1, 2, 3].map(() => tryOpen(`ws://${site.host}/ws`)))) if (ws) opened.push(ws)
      await sleep(100)
      most = Math.max(most, site.openSockets())
      // express-ws opens the socket before the app runs: a refused one is closed right after.
      for (const ws of opened.splice(0))
        if (ws.readyState === WebSocket.OPEN) opened.push(ws)
        else ws.terminate()
      await sleep(ttl * 1.25 - 100)
    }
    most = Math.max(most, site.openSockets())
    expect(opened.length, 'sockets opened through the gate').toBe(3)
    expect(most, 'open at the site at once').toBeLessThanOrEqual(3)
    // The first three are still open and answer: their slots were kept, not lost.
    const echoes = await Promise.all(
      opened.map(
        (ws) =>
          new Promise<string>((ok) => {
            ws.once('message', (d) => ok(String(d)))
            ws.send('still here')
          }),
      ),
    )
    expect(echoes).toEqual(['still here', 'still here', 'still here'])
    expect(await held(store)).toBe(3)
    await closeAll(opened)
  })
})
