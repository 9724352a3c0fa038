/**
 * The hostile-client suite's parts (issue 38): a server under test as a process of its own (so that
 * "the process stays up" is what is checked), the hostile clients, each on a raw socket, and honest
 * requests that run meanwhile and must every one be answered.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { resolve } from 'node:path'
import { expect } from 'vitest'
import { ROOT } from '../cli/harness.js'
import { sleep } from '../helpers/wait.js'

export const TOKEN = 'a-hostile-suite-dashboard-token'

/** A server under test, running as a process. */
export interface Target {
  base: string
  proc: ChildProcess
  /** Everything it wrote on stderr. */
  stderr(): string
  stop(): Promise<void>
}

/** Starts `node [--import tsx] args...`, waits for `ready` on stdout; the URL is its first match group. */
export async function start(args: string[], env: Record<string, string>, ready: RegExp): Promise<Target> {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const base = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not ready in 30 s: ${out} ${err}`)), 30_000)
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = ready.exec(out)
      if (m) {
        clearTimeout(timer)
        ok(m[1]!.replace(/\/$/, ''))
      }
    })
    proc.once('exit', (code) => fail(new Error(`exited ${code} before it was ready: ${out} ${err}`)))
  })
  proc.stdout!.resume()
  return {
    base,
    proc,
    stderr: () => err,
    stop: () =>
      new Promise((done) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return done()
        proc.once('exit', () => done())
        proc.kill('SIGTERM')
      }),
  }
}

/** The site fixture (fixtures/site.ts) on `framework`. */
export const site = (framework: 'fastify' | 'express'): Promise<Target> =>
  start(
    [resolve(import.meta.dirname, 'fixtures/site.ts'), framework],
    { AIRLOCK_DASHBOARD_TOKEN: TOKEN },
    /listening (http:\/\/\S+)/,
  )

/** `airlock <args>` from src. */
export const cli = (
  args: string[],
  env: Record<string, string> = {},
  ready = /on (http:\/\/[^ /]+)/,
): Promise<Target> => start(['src/cli.ts', ...args], { AIRLOCK_DASHBOARD_TOKEN: TOKEN, ...env }, ready)

/** One request a client may send: what the hostile clients take apart. */
export interface Endpoint {
  method: string
  path: string
  headers?: Record<string, string>
  /** A body this endpoint takes (the hostile clients cut it, slow it, swell it). */
  body?: string
}

/** Opens a socket, writes `chunks` (strings written as latin1 bytes), keeps it `hold` ms, then destroys it. Never rejects. */
function socketDoing(base: string, act: (s: Socket) => void | Promise<void>, hold: number): Promise<string> {
  const { hostname, port } = new URL(base)
  return new Promise((done) => {
    let got = ''
    const s = connect(Number(port), hostname, () => void Promise.resolve(act(s)).catch(() => undefined))
    s.setEncoding('latin1')
    s.on('data', (d: string) => (got += d.length > 4096 ? d.slice(0, 4096) : d))
    s.on('error', () => undefined)
    const end = (): void => {
      clearTimeout(timer)
      s.destroy()
      done(got)
    }
    const timer = setTimeout(end, hold)
    s.on('close', end)
  })
}

const headLines = (ep: Endpoint, host: string, extra: Record<string, string> = {}, omit: string[] = []): string => {
  const headers = { Host: host, ...ep.headers, ...extra }
  const lines = Object.entries(headers).filter(([k]) => !omit.includes(k.toLowerCase()))
  return `${ep.method} ${ep.path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n`
}

/** A body cut off after `sent` bytes of the `declared` its Content-Length promised. */
export function cutBody(base: string, ep: Endpoint, sent: number, declared: number): Promise<string> {
  const body = (ep.body ?? 'x=1').padEnd(declared, 'x')
  return socketDoing(
    base,
    (s) =>
      void s.write(
        `${headLines(ep, new URL(base).host, { 'Content-Length': String(declared) })}\r\n${body.slice(0, sent)}`,
        'latin1',
      ),
    30,
  )
}

/** Every way one endpoint is abused: named hostile clients, each a promise-returning run. */
export function hostileClients(base: string, ep: Endpoint): [string, () => Promise<unknown>][] {
  const host = new URL(base).host
  const body = ep.body ?? 'x=1'
  const send = (head: string, payload: string | Buffer = '', hold = 300): Promise<string> =>
    socketDoing(
      base,
      (s) => {
        s.write(`${head}\r\n`, 'latin1')
        if (payload.length > 0) s.write(payload)
      },
      hold,
    )
  const runs: [string, () => Promise<unknown>][] = []
  // Bodies cut at every point (with and without a body promised by the method).
  for (let k = 0; k <= body.length; k++) runs.push([`body cut at ${k}`, () => cutBody(base, ep, k, body.length + 10)])
  runs.push(['a promised byte never sent', () => cutBody(base, ep, 0, 1)])
  runs.push([
    'a slow body: a byte every 100 ms, then gone',
    () =>
      socketDoing(
        base,
        async (s) => {
          s.write(`${headLines(ep, host, { 'Content-Length': '40' })}\r\n`)
          for (let i = 0; i < 12 && !s.destroyed; i++) {
            s.write('x')
            await sleep(100)
          }
        },
        1_400,
      ),
  ])
  runs.push([
    '100 MB promised, 256 KB sent',
    () =>
      send(headLines(ep, host, { 'Content-Length': String(100 * 1024 * 1024) }), Buffer.alloc(256 * 1024, 120), 500),
  ])
  runs.push([
    'a chunked body that never ends',
    () =>
      socketDoing(
        base,
        async (s) => {
          s.write(`${headLines(ep, host, { 'Transfer-Encoding': 'chunked' })}\r\n`)
          for (let i = 0; i < 16 && !s.destroyed; i++) {
            s.write(`10000\r\n${'y'.repeat(0x10000)}\r\n`)
            await sleep(20)
          }
        },
        800,
      ),
  ])
  runs.push([
    'fifty requests pipelined, the answers never read',
    () =>
      socketDoing(
        base,
        (s) => {
          s.pause()
          const one = headLines({ method: 'GET', path: ep.path, headers: ep.headers }, host)
          s.write(`${one}\r\n`.repeat(50))
        },
        1_000,
      ),
  ])
  runs.push([
    'a body said to be gzip',
    () => send(headLines(ep, host, { 'Content-Encoding': 'gzip', 'Content-Length': '12' }), 'not gzip!!!!'),
  ])
  runs.push([
    'a body that is not UTF-8',
    () => send(headLines(ep, host, { 'Content-Length': '6' }), Buffer.from([0x7b, 0xff, 0xfe, 0xc0, 0xaf, 0x7d])),
  ])
  for (const path of [
    `${ep.path}%zz`,
    `${ep.path}?%ff%fe=%e0%80`,
    `${ep.path}/%c0%ae%c0%ae/x`,
    `${ep.path}?a=${'%'.repeat(500)}`,
    `/${'a/'.repeat(3000)}`,
  ]) {
    runs.push([
      `the path ${path.slice(0, 40)}`,
      () => send(headLines({ ...ep, path }, host, { 'Content-Length': '0' })),
    ])
  }
  runs.push(['bytes no URL may hold', () => send(`${ep.method} /\xff\xfe HTTP/1.1\r\nHost: ${host}\r\n`)])
  const odd: Record<string, string>[] = [
    { 'Content-Length': 'abc' },
    { 'Content-Length': '-1' },
    { 'Content-Length': '3', 'Transfer-Encoding': 'chunked' },
    {
      Cookie: Array.from({ length: 300 }, (_, i) => `airlock_pass_shop=p1~shop~x${i}~zzzzzz~f~${'A'.repeat(43)}`)
        .join('; ')
        .slice(0, 14_000),
    },
    { 'Accept-Language': `${'xx-YY;q=0.5, '.repeat(600)}`, Accept: `${'a/b;q=0.1, '.repeat(600)}` },
    {
      'X-Forwarded-For': Array.from({ length: 500 }, (_, i) => `10.0.${i % 250}.${i % 200}`).join(', '),
      Forwarded: 'for="[::1',
      'X-Real-IP': '\u00ff',
    },
    { 'X-Airlock-Solution': 'c1~shop~x~y~z 123', 'X-Airlock-Poll': '1', Authorization: `Bearer ${'z'.repeat(8000)}` },
    { 'Content-Type': 'application/json; charset=utf-7', Expect: '100-continue', 'Content-Length': '2' },
  ]
  for (const h of odd) runs.push([`odd headers ${Object.keys(h).join(', ')}`, () => send(headLines(ep, host, h), '{}')])
  runs.push([
    'repeated headers',
    () =>
      send(
        `${headLines(ep, host)}Content-Type: text/plain\r\nContent-Type: application/json\r\nCookie: a=1\r\nCookie: b=2\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nContent-Length: 2\r\n`,
        '{}',
      ),
  ])
  runs.push(['HTTP/1.0 without Host', () => send(`${ep.method} ${ep.path} HTTP/1.0\r\n`, '', 300)])
  runs.push([
    'a folded header',
    () => send(`${ep.method} ${ep.path} HTTP/1.1\r\nHost: ${host}\r\nX-Folded: a\r\n b\r\n`),
  ])
  for (const upgrade of [
    'websocket',
    'WebSocket',
    'h2c',
    'websocket, h2c',
    'TLS/1.0',
    'HTTP/2.0',
    '',
    'x'.repeat(2000),
  ]) {
    const ws = {
      Connection: 'Upgrade, HTTP2-Settings',
      Upgrade: upgrade,
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'HTTP2-Settings': 'AAMAAABkAARAAAAAAAIAAAAA',
    }
    runs.push([`Upgrade: ${upgrade.slice(0, 20)}`, () => send(headLines({ ...ep, method: 'GET' }, host, ws), '', 400)])
  }
  return runs
}

/** Every hostile client against one endpoint, all at once. */
export async function abuse(base: string, ep: Endpoint): Promise<void> {
  await Promise.all(hostileClients(base, ep).map(([, run]) => run()))
}

/** Honest requests, one after another until stopped: each must get an answer of `expected`. */
export function honest(
  label: string,
  request: () => Promise<Response>,
  expected: (status: number) => boolean,
): { stop(): Promise<{ answered: number; failures: string[] }> } {
  let running = true
  let answered = 0
  const failures: string[] = []
  const loop = (async () => {
    while (running) {
      try {
        const r = await request()
        await r.arrayBuffer()
        if (expected(r.status)) answered++
        else failures.push(`${label}: ${r.status}`)
      } catch (err) {
        failures.push(`${label}: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`)
      }
      await sleep(20)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return { answered, failures }
    },
  }
}

/** A fetch that gives up after 10 s, on a connection of its own. */
export const get = (url: string, init: RequestInit = {}): Promise<Response> =>
  fetch(url, {
    ...init,
    headers: { connection: 'close', ...(init.headers as Record<string, string>) },
    signal: AbortSignal.timeout(10_000),
  })

/** The process is still the one started: not exited, not restarted. */
export function expectAlive(target: Target): void {
  expect(target.proc.exitCode, `exited; stderr: ${target.stderr().slice(-2000)}`).toBeNull()
  expect(target.proc.signalCode).toBeNull()
  expect(() => process.kill(target.proc.pid!, 0)).not.toThrow()
}

/** SIGTERM ends it within 5 s with exit 0: nothing a client left behind keeps it up. */
export async function stopsCleanly(target: Target): Promise<void> {
  const exited = new Promise<number | null>((done) => target.proc.once('exit', (code) => done(code)))
  target.proc.kill('SIGTERM')
  const code = await Promise.race([exited, sleep(5_000).then(() => 'still running' as const)])
  if (code === 'still running') target.proc.kill('SIGKILL')
  expect(code).toBe(0)
}

/** The dashboard cookie of a signed-in operator (the form's POST). */
export async function signIn(dashboard: string): Promise<string> {
  const r = await fetch(`${dashboard}/`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${TOKEN}`,
  })
  expect(r.status).toBe(303)
  return r.headers.get('set-cookie')!.split(';')[0]!
}

/** `count` requests to `ep` whose bodies are cut off, each at another point, twenty at a time. */
export function cutOffs(base: string, ep: Endpoint, count = 1_000): Promise<void> {
  const body = ep.body ?? 'x=1'
  return pooled(
    Array.from({ length: count }, (_, i) => () => cutBody(base, ep, i % body.length, body.length + 50)),
    20,
  )
}

/** Runs `tasks` with at most `width` at once. */
async function pooled(tasks: (() => Promise<unknown>)[], width: number): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) await tasks[next++]!()
    }),
  )
}
