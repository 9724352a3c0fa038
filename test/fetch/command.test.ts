/**
 * `Airlock-Command` on `@hono/node-server`, whose light `Response` keeps the headers it was given
 * unbuilt: the adapter reads them as given (issue 41) and must still find the command however the
 * route set it, and never send it.
 */
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { afterEach, describe, expect, it } from 'vitest'
import { airlock, type FetchAirlock } from '../../src/fetch.js'
import { commandOf } from '../../src/fetch/web.js'
import { memoryStore } from '../../src/stores/memory.js'
import { recordingLogger } from '../helpers/stores.js'

const SECRET = 'fetch-command-secret-of-at-least-32-bytes'
const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()))
})

/** A route's answers, one per path, each setting the command another way (or not at all). */
const answers: Record<string, () => Response> = {
  '/plain-object': () => new Response('done', { headers: { 'Airlock-Command': 'release' } }),
  '/headers': () => new Response('done', { headers: new Headers([['airlock-command', 'RELEASE']]) }),
  '/pairs': () => new Response('done', { headers: [['Airlock-Command', 'release']] }),
  '/set-later': () => {
    const r = new Response('done')
    r.headers.set('airlock-command', 'release')
    return r
  },
  '/json': () => Response.json({ ok: true }, { headers: { 'airlock-command': 'release' } }),
  '/none': () => new Response('page'),
  '/other-headers': () =>
    new Response('page', { headers: { 'x-airlock-commander': 'release', 'content-type': 'text/plain' } }),
}

async function site(): Promise<{ url: string; gate: FetchAirlock }> {
  const gate = airlock({ limit: 1, store: memoryStore(), secret: SECRET, logger: recordingLogger() })
  const server = createAdaptorServer({
    fetch: gate.wrap((request: Request) => answers[new URL(request.url).pathname]!()),
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  closers.push(async () => {
    await gate.close()
    await new Promise((r) => server.close(r))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, gate }
}

describe('Airlock-Command on @hono/node-server', () => {
  for (const path of ['/plain-object', '/headers', '/pairs', '/set-later', '/json']) {
    it(`${path}: the slot is given back, the cookie cleared, the header not sent`, async () => {
      const { url, gate } = await site()
      const admitted = await fetch(`${url}/none`)
      const pass = admitted.headers.getSetCookie()[0]!.split(';')[0]!
      expect((await gate.gate.state()).held).toBe(1)
      const done = await fetch(`${url}${path}`, { headers: { cookie: pass } })
      expect(done.status).toBe(200)
      expect(done.headers.get('airlock-command')).toBeNull()
      expect(done.headers.getSetCookie().some((c) => /^airlock_pass=;.*Max-Age=0/.test(c))).toBe(true)
      expect((await gate.gate.state()).held).toBe(0)
    })
  }

  it('a response without the command keeps its slot and its body, headers as given', async () => {
    const { url, gate } = await site()
    const admitted = await fetch(`${url}/none`)
    const provisional = admitted.headers.getSetCookie()[0]!.split(';')[0]!
    // Back once: the provisional pass becomes a full one (its only new cookie).
    const full = await fetch(`${url}/none`, { headers: { cookie: provisional } })
    const pass = full.headers.getSetCookie()[0]!.split(';')[0]!
    for (const path of ['/none', '/other-headers']) {
      const r = await fetch(`${url}${path}`, { headers: { cookie: pass } })
      expect([r.status, await r.text()]).toEqual([200, 'page'])
      expect(r.headers.getSetCookie()).toEqual([])
    }
    expect(
      (await fetch(`${url}/other-headers`, { headers: { cookie: pass } })).headers.get('x-airlock-commander'),
    ).toBe('release')
    expect((await gate.gate.state()).held).toBe(1)
  })

  it("commandOf reads any runtime's Response by its headers", () => {
    expect(commandOf(new Response('x', { headers: { 'AIRLOCK-COMMAND': 'release' } }))).toBe('release')
    expect(commandOf(new Response('x'))).toBeNull()
  })
})
