/**
 * One path (issue 25): bypass rules judge the path the framework routes, under every router option
 * that changes it. For each set-up, the test first asks the router without the gate which tricky
 * spellings of `/admin` it serves as `/admin`; then, with the only slot held, none of them may reach
 * the gated `/admin` handler, while the paths the rules mean still go through.
 *
 * The rules are the kind a site writes: everything outside `/admin` is public (`/^\/(?!admin)/`),
 * directory indexes are public (`/\/$/`), so are stylesheets (`/\.css$/`).
 */
import { request as httpRequest, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import express5 from 'express'
import express4 from 'express4'
import Fastify, { type FastifyServerOptions } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import { airlock } from '../../src/express.js'
import { airlockShield } from '../../src/fastify.js'
import { createProxy } from '../../src/proxy.js'
import { memoryStore } from '../../src/stores/memory.js'
import { hasNginx, startNginx } from '../helpers/nginx.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep } from '../helpers/wait.js'

const SECRET = 'a-one-path-test-secret-of-32-bytes!!'
const BYPASS = [/^\/(?!admin)/, /\/$/, /\.css$/]
/** Each site its own store: a slot another set-up still held would pass for this one's hold. */
const gateOptions = () => ({
  mode: 'request' as const,
  limit: 1,
  bypass: BYPASS,
  secret: SECRET,
  logger: recordingLogger(),
  clientShare: false as const,
  store: memoryStore(),
})

/** Spellings of `/admin` some router or origin serves as `/admin`. */
const TRICKS = [
  '/ADMIN',
  '/Admin',
  '/admin/',
  '/admin//',
  '//admin',
  '///admin',
  '/%61dmin',
  '/%41DMIN',
  '/adm%69n',
  '/./admin',
  '/x/../admin',
  '/%2e/admin',
  '/x/%2e%2e/admin',
  '/admin;.css',
  '/admin;x/',
  '/admin%3B.css',
  '/admin/.',
  '/ADMIN/',
  '/x/..%2fadmin',
  '/x\\..\\admin',
  '/public/../admin',
]
/** Paths the rules are meant for: never gated. */
const MEANT = ['/public/app.js', '/about/', '/app.css', '/static/site.css', '/']

/** GET with the path exactly as written (fetch and undici would normalise it). */
function get(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, headers: { accept: 'application/json' } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

interface Site {
  base: string
  /** Holds the gate's only slot until `free()`. */
  hold(): Promise<void>
  free(): void
  close(): Promise<void>
}

/** A hanging handler for `/admin/hold`: `wait()` says it was entered, then waits for `free()`. */
interface Holder {
  wait: () => Promise<void>
  free: () => void
  /** Resolves once a request is inside the handler (it holds the only slot). */
  entered: Promise<void>
}
function holder(): Holder {
  let release: () => void = () => {}
  let enter: () => void = () => {}
  const waiting = new Promise<void>((r) => (release = r))
  const entered = new Promise<void>((r) => (enter = r))
  return {
    wait: () => {
      enter()
      return waiting
    },
    free: () => release(),
    entered,
  }
}

async function holdSlot(base: string, h: Holder): Promise<{ hold(): Promise<void>; free(): void }> {
  return {
    hold: async () => {
      // Closing the site ends this request unanswered: its error is expected.
      void get(base, '/admin/hold').catch(() => undefined)
      await Promise.race([
        h.entered,
        sleep(5_000).then(() => Promise.reject(new Error('the hold never reached its handler'))),
      ])
      expect((await get(base, '/admin')).status, 'the only slot is held').toBe(503)
    },
    free: h.free,
  }
}

async function fastifySite(options: FastifyServerOptions, gated: boolean): Promise<Site> {
  const app = Fastify(options)
  const h = holder()
  if (gated) await app.register(airlockShield, gateOptions())
  app.get('/admin', async () => 'admin')
  app.get('/admin/hold', async () => {
    await h.wait()
    return 'held'
  })
  app.get('/*', async () => 'other')
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { base, ...(await holdSlot(base, h)), close: () => app.close() }
}

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ base: string; server: Server }> {
  const server = createServer(handler)
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server }
}

async function expressSite(version: 4 | 5, settings: Record<string, boolean>, gated: boolean): Promise<Site> {
  const app = (version === 4 ? express4 : express5) as unknown as typeof express5
  const site = app()
  for (const [k, v] of Object.entries(settings)) site.set(k, v)
  const h = holder()
  if (gated) site.use(airlock(gateOptions()))
  site.get('/admin', (_req, res) => void res.send('admin'))
  site.get('/admin/hold', (_req, res) => void h.wait().then(() => res.send('held')))
  site.use((_req, res) => void res.send('other'))
  const { base, server } = await listen(site)
  return {
    base,
    ...(await holdSlot(base, h)),
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok())
        server.closeAllConnections()
      }),
  }
}

/** nginx as the origin (it resolves `..`, escapes and doubled slashes before it routes), behind `airlock proxy`. */
async function nginxOrigin(): Promise<{ url: string; stop(): Promise<void>; free(): void; holder: Holder }> {
  const h = holder()
  const hang = await listen((_req, res) => void h.wait().then(() => res.end('held')))
  const nginx = await startNginx(`
    location = /admin { return 200 "admin"; }
    location = /admin/hold { proxy_pass ${hang.base}; }
    location / { return 200 "other"; }`)
  return {
    url: nginx.url,
    free: h.free,
    holder: h,
    stop: async () => {
      h.free()
      hang.server.close()
      await nginx.stop()
    },
  }
}

interface SetUp {
  name: string
  site(gated: boolean): Promise<Site>
  /** A router that serves no other spelling of /admin (Express strict and case-sensitive): nothing to get past. */
  routesNone?: true
}

const origins: Array<{ stop(): Promise<void> }> = []
afterAll(async () => {
  for (const o of origins.splice(0)) await o.stop()
})

const SET_UPS: SetUp[] = [
  { name: 'Fastify, defaults', site: (g) => fastifySite({}, g) },
  {
    name: 'Fastify, useSemicolonDelimiter',
    site: (g) => fastifySite({ routerOptions: { useSemicolonDelimiter: true } as never }, g),
  },
  {
    name: 'Fastify, ignoreTrailingSlash',
    site: (g) => fastifySite({ routerOptions: { ignoreTrailingSlash: true } }, g),
  },
  {
    name: 'Fastify, ignoreDuplicateSlashes',
    site: (g) => fastifySite({ routerOptions: { ignoreDuplicateSlashes: true } }, g),
  },
  { name: 'Fastify, caseSensitive: false', site: (g) => fastifySite({ routerOptions: { caseSensitive: false } }, g) },
  {
    name: 'Fastify, all of them',
    site: (g) =>
      fastifySite(
        {
          routerOptions: {
            caseSensitive: false,
            ignoreTrailingSlash: true,
            ignoreDuplicateSlashes: true,
            useSemicolonDelimiter: true,
          } as never,
        },
        g,
      ),
  },
  { name: 'Express 5, defaults (case-insensitive, not strict)', site: (g) => expressSite(5, {}, g) },
  {
    name: 'Express 5, strict and case-sensitive routing',
    site: (g) => expressSite(5, { 'strict routing': true, 'case sensitive routing': true }, g),
    routesNone: true,
  },
  { name: 'Express 4, defaults', site: (g) => expressSite(4, {}, g) },
  {
    name: 'airlock proxy in front of nginx',
    site: async (gated) => {
      const origin = await nginxOrigin()
      origins.push(origin)
      if (!gated) return { base: origin.url, hold: async () => {}, free: origin.free, close: async () => {} }
      const proxy = await createProxy({ target: origin.url, ...gateOptions(), logger: { warn: () => {} } })
      const base = await proxy.listen({ port: 0 })
      return { base, ...(await holdSlot(base, origin.holder)), close: () => proxy.close() }
    },
  },
]

describe('bypass rules judge the path the framework routes (issue 25)', () => {
  for (const setUp of SET_UPS) {
    const skip = setUp.name.includes('nginx') && !hasNginx && process.env.CI !== 'true'
    it.skipIf(skip)(
      `${setUp.name}: no spelling of /admin reaches it past the gate; the meant paths still go through`,
      async () => {
        // Which spellings does this router serve as /admin?
        const plain = await setUp.site(false)
        const routed: string[] = []
        try {
          for (const path of TRICKS) if ((await get(plain.base, path)).body === 'admin') routed.push(path)
        } finally {
          await plain.close()
        }
        if (setUp.routesNone) expect(routed, 'a strict, case-sensitive router serves only /admin itself').toEqual([])
        else expect(routed.length, 'the router serves some spelling of /admin besides /admin itself').toBeGreaterThan(0)

        const site = await setUp.site(true)
        try {
          await site.hold()
          const reached: string[] = []
          for (const path of routed) {
            const r = await get(site.base, path)
            if (r.body === 'admin') reached.push(path)
            else expect(r.status, path).toBe(503)
          }
          expect(reached, `routed as /admin: ${routed.join(' ')}`).toEqual([])
          for (const path of MEANT) expect((await get(site.base, path)).body, path).toBe('other')
        } finally {
          site.free()
          await site.close()
        }
      },
    )
  }
})
