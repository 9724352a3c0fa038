/**
 * `airlock proxy` against nginx (a program, not a test; part of `npm run bench`).
 *
 * One origin (bench/proxy/origin.ts, its own process: 1 KB answers), side by side in one run, each
 * measured with autocannon (CONNECTIONS 50, SECONDS 5, loopback): the origin direct; nginx
 * `proxy_pass` (Debian's nginx, one worker, a config written to a temp dir, keep-alive to the
 * origin; skipped with a reason when nginx is absent); our proxy without the gate; with pass
 * holders; in request mode on a private Redis; the nginx connector (njs checking passes inside nginx,
 * and the auth_request fallback, both with airlock auth); the Node proxies beside ours (the floor of
 * a Node proxy: node:http + undici written here, @fastify/http-proxy, http-proxy). Then a hug through the proxy: HUG_CONNECTIONS (300)
 * connections on a fragile route (20 ms, 500 past 50 in flight) behind request mode at limit 50:
 * the origin must answer no 500. Then every core each: nginx `worker_processes auto` against
 * `airlock proxy --workers auto` (pass holders and request mode, on the private Redis).
 * PROFILE=1: the single-process proxies run under `--cpu-prof`; the top entries by self time are
 * printed per row (the gate's part and the proxying part). WORKERS=0 skips the every-core rows.
 * The rows a bar is read from run in turns, ROUNDS (3) times each, and report their median: nginx
 * alone against njs, the floor against airlock proxy's pass holders.
 * Env: SECONDS, CONNECTIONS, HUG_CONNECTIONS, ROUNDS, PROFILE, WORKERS, BENCH_RESULTS.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { nginxConfig } from '../src/connector/configs.js'
import { NJS_MODULE, njsSettings } from '../src/connector/njs.js'
import { hasNjs, startNginxWith } from '../test/helpers/nginx.js'
import { freePort, startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, fixed, machine, markdownTable, writeResults, stopChild } from './lib.js'

const SECONDS = envNumber('SECONDS', 5)
const CONNECTIONS = envNumber('CONNECTIONS', 50)
const HUG_CONNECTIONS = envNumber('HUG_CONNECTIONS', 300)
const ROUNDS = envNumber('ROUNDS', 3)
/** The run of median req/s among `runs`. */
const medianRun = (runs: autocannon.Result[]): autocannon.Result =>
  [...runs].sort((a, b) => a.requests.average - b.requests.average)[Math.floor(runs.length / 2)]!
const children: ChildProcess[] = []

function start(cmd: string, args: string[], env: Record<string, string> = {}): Promise<number | null> {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`${cmd} ${args.join(' ')} exited ${code}`)))
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString())
      if (m) resolve(Number(m[1]))
    })
  })
}
const PROFILE = process.env.PROFILE === '1'
const profiles = mkdtempSync(join(tmpdir(), 'airlock-proxy-prof-'))
let profiled = 0
/** Starts a bench process; with PROFILE, under --cpu-prof into its own directory (named by the row). */
const tsx = (file: string, env: Record<string, string>, profile?: string) =>
  start(
    process.execPath,
    [
      ...(PROFILE && profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profiles, `${++profiled}-${profile}`)}`] : []),
      '--import',
      'tsx',
      new URL(file, import.meta.url).pathname,
    ],
    env,
  )

/** The top `n` functions by self time in the .cpuprofile under `dir`, as "name (file) x %". */
function topOfProfile(dir: string, n = 12): string[] {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
  if (!file) return ['(no profile written)']
  const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]
    samples: number[]
  }
  const byId = new Map(prof.nodes.map((node) => [node.id, node]))
  const self = new Map<string, number>()
  for (const id of prof.samples) {
    const f = byId.get(id)!.callFrame
    const where = f.url
      .replace(/^.*node_modules\//, '')
      .replace(/^.*\/(src|bench)\//, '$1/')
      .replace(/^file:\/\//, '')
    const key = `${f.functionName || '(anonymous)'} (${where || 'native'}${f.url ? `:${f.lineNumber + 1}` : ''})`
    self.set(key, (self.get(key) ?? 0) + 1)
  }
  const total = prof.samples.length
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${fixed((100 * v) / total, 1)} % ${k}`)
}

async function load(
  port: number,
  path = '/',
  headers: Record<string, string> = {},
  connections = CONNECTIONS,
): Promise<autocannon.Result> {
  return autocannon({ url: `http://127.0.0.1:${port}${path}`, connections, duration: SECONDS, headers })
}

/** nginx, one worker or one per core (`auto`), as a site sets it up: keep-alive to the origin, the forwarding headers (as the connector's own configuration sets them). */
async function nginxWith(originPort: number, workers: string): Promise<number | string> {
  if (spawnSync('nginx', ['-v']).error) return 'nginx is not installed (apt-get install nginx)'
  const dir = mkdtempSync(join(tmpdir(), 'airlock-nginx-'))
  const port = await freePort()
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ')
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes ${workers}; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 4096; }
http { access_log off; ${temp}
  upstream origin { server 127.0.0.1:${originPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection "";
    proxy_set_header Host $host; proxy_set_header X-Forwarded-For $remote_addr; proxy_set_header X-Forwarded-Proto $scheme; } } }
`,
  )
  children.push(spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' }))
  for (let i = 0; i < 50; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/`).then(
        () => true,
        () => false,
      )
    )
      return port
    await new Promise((r) => setTimeout(r, 100))
  }
  return 'nginx did not start'
}

const SECRET = 'proxy-bench-secret-that-is-at-least-32-bytes'
/** `airlock proxy --workers auto` as a real command (its own processes), on Redis; resolves its port. */
async function workersProxy(target: string, redisUrl: string, mode: string, prefix: string): Promise<number> {
  const port = await freePort()
  const cli = new URL('../src/cli.ts', import.meta.url).pathname
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      cli,
      'proxy',
      '--target',
      target,
      '--port',
      String(port),
      '--workers',
      'auto',
      '--redis',
      redisUrl,
      '--prefix',
      prefix,
      '--mode',
      mode,
      '--limit',
      '1000',
      '--pass-ttl',
      '10m',
      '--log-level',
      'silent',
    ],
    {
      env: { ...process.env, AIRLOCK_SECRET: SECRET },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`airlock proxy --workers exited ${code}`)))
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('workers') && resolve())
  })
  return port
}

/** A pass cookie (confirmed) from the proxy at `port`. */
async function passOf(port: number): Promise<string> {
  const pass = (await fetch(`http://127.0.0.1:${port}/`)).headers.getSetCookie()[0]!.split(';')[0]!
  await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie: pass } }) // confirmed: a full pass
  return pass
}

/** The confirmed (full) pass itself, as a browser holds it after its second request: what nginx's njs checks. */
async function fullPassOf(port: number): Promise<string> {
  const provisional = (await fetch(`http://127.0.0.1:${port}/`)).headers.getSetCookie()[0]!.split(';')[0]!
  return (await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie: provisional } })).headers
    .getSetCookie()[0]!
    .split(';')[0]!
}

const redis = await startRedis()
try {
  const origin = (await tsx('./proxy/origin.ts', {}))!
  const target = `http://127.0.0.1:${origin}`
  const rows: {
    name: string
    rps: number | null
    p99: number | null
    non2xx: number
    note?: string
    profile?: string[]
  }[] = []
  const row = (name: string, r: autocannon.Result, profile?: string[]) =>
    rows.push({
      name,
      rps: r.requests.average,
      p99: r.latency.p99,
      non2xx: r.non2xx + r.errors,
      ...(profile ? { profile } : {}),
    })
  const missing = (name: string, note: string) => rows.push({ name, rps: null, p99: null, non2xx: 0, note })
  /** Stops the last bench process started (so its profile is written) and reads its profile. */
  const stopLast = async (): Promise<string[] | undefined> => {
    const child = children.pop()!
    await stopChild(child)
    if (!PROFILE) return undefined
    const dir = readdirSync(profiles)
      .sort((a, b) => parseInt(a, 10) - parseInt(b, 10))
      .at(-1)
    return dir ? topOfProfile(join(profiles, dir)) : undefined
  }
  row('origin direct', await load(origin))
  const ng = await nginxWith(origin, '1')
  // The nginx connector (issue 39): njs checks the pass inside nginx (its bar: 0.9x nginx alone),
  // auth_request asks airlock auth each time. nginx alone and njs run in turns, ROUNDS times each:
  // this box's noise moves a single run by 20 %; each row is the median of its turns.
  const connector = async (check: 'njs' | 'auth_request') => {
    const auth = (await tsx('./proxy/auth.ts', { LIMIT: '1000' }))!
    const dir = mkdtempSync(join(tmpdir(), 'airlock-njs-'))
    writeFileSync(join(dir, 'airlock.js'), NJS_MODULE)
    writeFileSync(
      join(dir, 'airlock.json'),
      JSON.stringify(
        njsSettings(
          {
            name: 'default',
            cookieName: 'airlock_pass',
            ticketCookieName: 'airlock_ticket',
            passTtl: 600_000,
            retryAfter: 5,
          },
          [SECRET],
          'closed',
        ),
      ),
    )
    const nginx = await startNginxWith(
      (listen, own) =>
        nginxConfig({
          origin: target,
          service: `127.0.0.1:${auth}`,
          listen: `127.0.0.1:${listen}`,
          dir,
          cacheDir: join(own, 'cache'),
          check,
        }),
      { connections: 4096 },
    )
    return { nginx, cookie: await fullPassOf(nginx.port) }
  }
  if (typeof ng === 'number') {
    const njs = hasNjs ? await connector('njs') : undefined
    const alone: autocannon.Result[] = []
    const checked: autocannon.Result[] = []
    for (let i = 0; i < ROUNDS; i++) {
      alone.push(await load(ng))
      if (njs) checked.push(await load(njs.nginx.port, '/', { cookie: njs.cookie }))
    }
    row('nginx proxy_pass (1 worker)', medianRun(alone))
    if (njs) {
      row('nginx + njs pass check (1 worker), pass holders', medianRun(checked))
      await njs.nginx.stop()
      await stopLast()
    } else
      missing(
        'nginx + njs pass check (1 worker), pass holders',
        'njs is not installed (apt-get install libnginx-mod-http-js)',
      )
    const viaAuth = await connector('auth_request')
    row('nginx auth_request (1 worker), pass holders', await load(viaAuth.nginx.port, '/', { cookie: viaAuth.cookie }))
    await viaAuth.nginx.stop()
    await stopLast()
  } else {
    for (const name of [
      'nginx proxy_pass (1 worker)',
      'nginx + njs pass check (1 worker), pass holders',
      'nginx auth_request (1 worker), pass holders',
    ])
      missing(name, ng)
  }
  const plain = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'plain' }, 'no-gate'))!
  const plainRun = await load(plain)
  row('airlock proxy, no gate', plainRun, await stopLast())
  // airlock proxy's pass holders against the floor of a Node proxy (its bar: 0.9x), in turns too.
  const floor = (await tsx('./proxy/peers.ts', { TARGET: target, PEER: 'floor' }))!
  const session = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'session' }, 'pass-holders'))!
  const sessionCookie = await fullPassOf(session)
  const floorRuns: autocannon.Result[] = []
  const sessionRuns: autocannon.Result[] = []
  for (let i = 0; i < ROUNDS; i++) {
    floorRuns.push(await load(floor))
    sessionRuns.push(await load(session, '/', { cookie: sessionCookie }))
  }
  row('airlock proxy, pass holders', medianRun(sessionRuns), await stopLast())
  await stopLast()
  const request = (await tsx(
    './proxy/server.ts',
    { TARGET: target, MODE: 'request', REDIS_URL: redis.url, LIMIT: '1000' },
    'request-redis',
  ))!
  const requestRun = await load(request)
  row('airlock proxy, request mode, redis', requestRun, await stopLast())
  // Refusals: what a busy answer costs the Node side (the site full: every request turned away),
  // against a bare node:http 503. µs a refusal = 1e6 / req/s with this box's load generator.
  const bare = (await tsx('./proxy/peers.ts', { TARGET: target, PEER: '503' }))!
  row('node:http 503 (a bare refusal)', await load(bare))
  await stopLast()
  const full = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'session', LIMIT: '1' }, 'refusals'))!
  await fetch(`http://127.0.0.1:${full}/`) // the one slot, taken
  row('airlock proxy, refusals (site full)', await load(full), await stopLast())
  const service = (await tsx('./proxy/auth.ts', { LIMIT: '1', QUEUE: '0' }, 'auth-refusals'))!
  const ask = { 'x-original-uri': '/', 'x-original-method': 'GET', 'x-forwarded-for': '203.0.113.1' }
  await fetch(`http://127.0.0.1:${service}/.airlock/decide`, { headers: ask })
  row('airlock auth, refusals (site full)', await load(service, '/.airlock/decide', ask), await stopLast())
  // The Node proxies beside it: the floor (node:http + undici, written in the bench) and the peers as their READMEs set them up.
  row('node:http + undici pass-through (the floor)', medianRun(floorRuns))
  for (const [peer, name] of [
    ['fastify-http-proxy', '@fastify/http-proxy'],
    ['http-proxy', 'http-proxy (node-http-proxy)'],
  ] as const) {
    const port = (await tsx('./proxy/peers.ts', { TARGET: target, PEER: peer }, peer))!
    row(name, await load(port), await stopLast())
  }
  // The hug through the proxy: request mode at the fragile route's capacity.
  const hug = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'request', REDIS_URL: redis.url, LIMIT: '50' }))!
  const before = (await (await fetch(`${target}/stats`)).json()) as { failures: number; served: number }
  const hugRun = await load(hug, '/fragile', {}, HUG_CONNECTIONS)
  const after = (await (await fetch(`${target}/stats`)).json()) as { failures: number; served: number }
  await stopLast()
  const hugFailures = after.failures - before.failures
  // Every core each: nginx's worker per core against --workers auto.
  const cores = availableParallelism()
  const ngAll = process.env.WORKERS === '0' ? 'skipped (WORKERS=0)' : await nginxWith(origin, 'auto')
  if (typeof ngAll === 'number') row(`nginx proxy_pass (auto: ${cores} workers)`, await load(ngAll))
  else missing(`nginx proxy_pass (auto: ${cores} workers)`, ngAll)
  if (process.env.WORKERS !== '0') {
    const wSession = await workersProxy(target, redis.url, 'session', 'proxy-bench-w1')
    row(
      `airlock proxy --workers auto (${cores}), pass holders, redis`,
      await load(wSession, '/', { cookie: await passOf(wSession) }),
    )
    await stopLast()
    const wRequest = await workersProxy(target, redis.url, 'request', 'proxy-bench-w2')
    row(`airlock proxy --workers auto (${cores}), request mode, redis`, await load(wRequest))
    await stopLast()
  }
  const nginxRps = rows.find((r) => r.name.startsWith('nginx proxy_pass (1'))?.rps ?? null
  const nginxAllRps = rows.find((r) => r.name.startsWith('nginx proxy_pass (auto'))?.rps ?? null
  const floorRps = rows.find((r) => r.name.includes('(the floor)'))?.rps ?? null
  const ratio = (r: (typeof rows)[number]): string => {
    const base = r.name.includes('auto') ? nginxAllRps : nginxRps
    return r.rps !== null && base ? fixed(r.rps / base, 2) : '-'
  }
  /** Node proxies against the floor of a Node proxy (the bar for airlock proxy: 0.9x); refusals against a bare 503. */
  const bareRps = rows.find((r) => r.name.startsWith('node:http 503'))?.rps ?? null
  const ofFloor = (r: (typeof rows)[number]): string => {
    if (r.rps === null || r.name.startsWith('nginx') || r.name.startsWith('origin') || r.name.includes('auto'))
      return '-'
    if (r.name.includes('refusal')) return bareRps ? `${fixed(r.rps / bareRps, 2)} of a bare 503` : '-'
    return floorRps ? fixed(r.rps / floorRps, 2) : '-'
  }
  console.log(`# airlock proxy against nginx\n\n${describeMachine(machine())}`)
  console.log(
    `one origin (1 KB answers), autocannon ${CONNECTIONS} connections for ${SECONDS} s per row, loopback; "x nginx": against nginx with as many workers\n`,
  )
  console.log(
    markdownTable(
      ['', 'req/s', 'p99 ms', 'x nginx', 'x Node floor', 'non-2xx'],
      rows.map((r) => [
        r.name,
        r.rps === null ? (r.note ?? '-') : fixed(r.rps),
        r.p99 === null ? '-' : fixed(r.p99),
        ratio(r),
        ofFloor(r),
        r.non2xx,
      ]),
    ),
  )
  console.log(
    `\nhug through the proxy: ${HUG_CONNECTIONS} connections on a route that fails past 50 in flight, request mode at limit 50: ` +
      `${after.served - before.served} requests reached the origin, ${hugFailures} origin failures (500), ${hugRun.non2xx} busy answers.`,
  )
  for (const r of rows.filter((x) => x.profile))
    console.log(`\n### profile: ${r.name} (self time, top entries)\n\n${r.profile!.map((l) => `    ${l}`).join('\n')}`)
  writeResults('proxy', {
    seconds: SECONDS,
    connections: CONNECTIONS,
    cores,
    rows,
    hug: {
      connections: HUG_CONNECTIONS,
      reachedOrigin: after.served - before.served,
      originFailures: hugFailures,
      busy: hugRun.non2xx,
    },
  })
} finally {
  await Promise.all(children.map(stopChild))
  await redis.stop()
}
