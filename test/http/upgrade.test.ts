/**
 * Request mode in the adapters that see WebSocket upgrades (@fastify/websocket, express-ws): an
 * open socket holds its slot; closed, the slot is free at once (before: held until `ttl`).
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

async function fastifyApp(store: Store): Promise<string> {
  const app = Fastify()
  await app.register(fastifyWebsocket)
  await app.register(airlockShield, { mode: 'request', limit: 3, ttl: 30_000, store, logger: { warn: () => {} } })
  app.get('/ws', { websocket: true }, (socket) => {
    socket.on('message', (d: Buffer) => socket.send(d))
  })
  app.get('/', async () => 'home')
  await app.listen({ port: 0, host: '127.0.0.1' })
  closers.push(() => app.close())
  return `127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

async function expressApp(store: Store): Promise<string> {
  const app = express()
  const { app: wsApp } = expressWs(app)
  const mw = airlock({ mode: 'request', limit: 3, ttl: 30_000, store, logger: { warn: () => {} } })
  wsApp.use(mw)
  wsApp.ws('/ws', (ws) => ws.on('message', (d: Buffer) => ws.send(d)))
  wsApp.get('/', (_req, res) => void res.send('home'))
  const server: Server = await new Promise((resolve) => {
    const s = wsApp.listen(0, '127.0.0.1', () => resolve(s))
  })
  closers.push(async () => {
    server.closeAllConnections()
    await new Promise((done) => server.close(done))
    await mw.close()
  })
  return `127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe.each([
  ['fastify (@fastify/websocket)', fastifyApp],
  ['express (express-ws)', expressApp],
] as const)('%s, request mode', (_label, start) => {
  it('an open WebSocket holds its slot; three opened and closed leave the site open at once, not after ttl', { timeout: 15_000 }, async () => {
    const store = memoryStore()
    const host = await start(store)
    const sockets = await Promise.all([1, 2, 3].map(() => open(`ws://${host}/ws`)))
    expect(await held(store)).toBe(3)
    expect((await fetch(`http://${host}/`, { headers: { accept: 'application/json' } })).status).toBe(503)
    await closeAll(sockets)
    await sleep(100)
    expect(await held(store)).toBe(0)
    expect((await fetch(`http://${host}/`)).status).toBe(200)
  })
})
