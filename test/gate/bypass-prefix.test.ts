/**
 * A bypass prefix against every spelling an origin resolves (issue 38): `--bypass /static` with the
 * gate full, a corpus of paths that walk from `/static` to a gated page (`;` in every place a
 * segment may hold it, dot segments spelt plainly and escaped, encoded and doubled slashes,
 * backslashes), against what real origins serve: nginx and `php -S` behind `airlock proxy`, and
 * Fastify and Express apps with the gate in process. First the bare origin is asked which of the
 * corpus it serves as the gated page (so the corpus is known to bite); then, behind the gate, none
 * may, while `/static/` itself still goes through.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import express from 'express'
import Fastify from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import { airlock } from '../../src/express.js'
import { airlockShield } from '../../src/fastify.js'
import { createProxy, type AirlockProxy } from '../../src/proxy.js'
import { memoryStore } from '../../src/stores/memory.js'
import { freePort } from '../helpers/redis.js'
import { hasNginx, startNginx } from '../helpers/nginx.js'
import { spawned } from '../proxy/origins.js'

const SECRET = 'a-bypass-prefix-test-secret-of-32-bytes'
const GATED = 'GATED PAGE'
/** One visitor inside, nobody else: a request the gate judges gets 503. */
const gateOptions = () => ({
  limit: 1,
  bypass: ['/static'],
  secret: SECRET,
  clientShare: false as const,
  store: memoryStore(),
  logger: { warn: () => {} },
})

/** Spellings of a walk from `/static` to `target` (`admin` or `admin.php`). */
function corpus(target: string): string[] {
  const semis = ['', ';', ';x', ';a=b', '%3b', '%3B']
  const dots = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '..;', '..;x', '%2e%2e;']
  const slashes = ['/', '%2f', '%2F', '\\', '%5c', '//']
  const paths = new Set<string>()
  for (const semi of semis) {
    for (const dot of dots) {
      for (const slash of slashes) {
        paths.add(`/static${semi}${slash}${dot}${slash}${target}`)
        paths.add(`/static/x${semi}/${dot}${slash}${dot}/${target}`)
      }
      paths.add(`/static${semi}/./${dot}/${target}`)
      paths.add(`/static/${semi}${dot}/${target}`)
    }
  }
  return [...paths]
}

/** GET with the path exactly as written (fetch and undici would normalise it). */
function get(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve) => {
    const req = httpRequest({ host: hostname, port, path, headers: { accept: 'text/html' } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', () => resolve({ status: 0, body: '' }))
    req.end()
  })
}

interface Origin {
  url: string
  /** The corpus for this origin's gated page. */
  paths: string[]
  stop(): Promise<void>
}

const stops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const s of stops.splice(0).reverse()) await s()
})

/** nginx with `/admin...` as the gated pages and `/static/` as the public files (it routes after resolving the path). */
async function nginx(): Promise<Origin> {
  const o = await startNginx(`
    location /admin { return 200 "${GATED}"; }
    location /static/ { return 200 "static file"; }
    location / { return 200 "public"; }`)
  stops.push(o.stop)
  return { ...o, paths: corpus('admin') }
}

/** `php -S` on a document root with `admin.php` (the gated page) and `static/x`: docs/proxy.md's own example. */
async function php(): Promise<Origin> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bypass-php-'))
  mkdirSync(join(dir, 'static'))
  writeFileSync(join(dir, 'static', 'x'), 'static file')
  writeFileSync(join(dir, 'admin.php'), `<?php echo '${GATED}';`)
  writeFileSync(join(dir, 'index.php'), `<?php echo 'public';`)
  const port = await freePort()
  const o = await spawned('php', ['-S', `127.0.0.1:${port}`, '-t', dir], dir, port)
  stops.push(o.stop)
  return { ...o, paths: corpus('admin.php') }
}

async function behindProxy(origin: Origin): Promise<string> {
  const proxy: AirlockProxy = await createProxy({ target: origin.url, ...gateOptions() })
  stops.push(() => proxy.close())
  return proxy.listen({ port: 0 })
}

async function fastifyApp(gated: boolean): Promise<string> {
  const app = Fastify()
  if (gated) await app.register(airlockShield, gateOptions())
  app.get('/admin', async () => GATED)
  app.get('/admin.php', async () => GATED)
  app.get('/static/*', async () => 'static file')
  app.get('/*', async () => 'public')
  stops.push(() => app.close())
  return app.listen({ port: 0, host: '127.0.0.1' })
}

async function expressApp(gated: boolean): Promise<string> {
  const app = express()
  if (gated) app.use(airlock(gateOptions()))
  app.get(['/admin', '/admin.php'], (_req, res) => void res.send(GATED))
  app.use('/static', (_req, res) => void res.send('static file'))
  app.use((_req, res) => void res.send('public'))
  const server = await new Promise<import('node:http').Server>((ok) => {
    const s = app.listen(0, '127.0.0.1', () => ok(s))
  })
  stops.push(() => new Promise((ok) => server.close(() => ok())))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}

/** Which of `paths` the site answers with the gated page. */
async function reaching(base: string, paths: readonly string[]): Promise<string[]> {
  const hits: string[] = []
  for (const path of paths) if ((await get(base, path)).body.includes(GATED)) hits.push(path)
  return hits
}

/** Takes the only slot (another visitor, inside); then the gated page answers 503 to everyone else. */
async function fill(base: string, page: string): Promise<void> {
  expect((await get(base, page)).body, 'the first visitor gets in').toContain(GATED)
  expect((await get(base, page)).status, 'the gate is full').toBe(503)
}

const has = (cmd: string, arg: string): boolean => spawnSync(cmd, [arg]).error === undefined
const inCi = process.env.CI === 'true'

describe('a bypass prefix lets through only what every origin reads under it (issue 38)', () => {
  it.skipIf(!hasNginx && !inCi)(
    'nginx behind airlock proxy --bypass /static: none of the corpus reaches its gated page',
    async () => {
      const origin = await nginx()
      const bare = await reaching(origin.url, origin.paths)
      expect(bare.length, 'nginx resolves some of the corpus to /admin').toBeGreaterThan(10)
      expect(bare).toContain('/static;/../admin')
      const base = await behindProxy(origin)
      await fill(base, '/admin')
      expect(await reaching(base, origin.paths), `nginx serves ${bare.length} of them as /admin`).toEqual([])
      expect((await get(base, '/static/x')).body).toBe('static file')
    },
  )

  it.skipIf(!has('php', '-v') && !inCi)(
    'php -S behind airlock proxy --bypass /static: none of the corpus runs admin.php',
    async () => {
      const origin = await php()
      const bare = await reaching(origin.url, origin.paths)
      expect(bare.length, 'php -S resolves some of the corpus to admin.php').toBeGreaterThan(0)
      const base = await behindProxy(origin)
      await fill(base, '/admin.php')
      expect(await reaching(base, origin.paths), `php -S runs admin.php for ${bare.length} of them`).toEqual([])
      expect((await get(base, '/static/x')).body).toBe('static file')
    },
  )

  it.each([
    ['Fastify', fastifyApp],
    ['Express', expressApp],
  ] as const)('%s with the gate in process: none of the corpus reaches the gated route', async (_name, app) => {
    const paths = [...corpus('admin'), ...corpus('admin.php')]
    const bare = await reaching(await app(false), paths)
    const base = await app(true)
    await fill(base, '/admin')
    expect(await reaching(base, paths), `the router serves ${bare.length} of them as the gated route`).toEqual([])
    expect((await get(base, '/static/x')).body).toBe('static file')
  })
})
