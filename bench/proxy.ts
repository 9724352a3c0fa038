/**
 * `airlock proxy` against nginx (a program, not a test; part of `npm run bench`).
 *
 * One origin (bench/proxy/origin.ts, its own process: 1 KB answers), side by side in one run, each
 * measured with autocannon (CONNECTIONS 50, SECONDS 5, loopback): the origin direct; nginx
 * `proxy_pass` (Debian's nginx, one worker, a config written to a temp dir, keep-alive to the
 * origin; skipped with a reason when nginx is absent); our proxy without the gate; with pass
 * holders; in request mode on a private Redis. Then a hug through the proxy: HUG_CONNECTIONS (300)
 * connections on a fragile route (20 ms, 500 past 50 in flight) behind request mode at limit 50:
 * the origin must answer no 500. Env: SECONDS, CONNECTIONS, HUG_CONNECTIONS, BENCH_RESULTS.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { freePort, startRedis } from '../test/helpers/redis.js'
import { describeMachine, envNumber, fixed, machine, markdownTable, writeResults } from './lib.js'

const SECONDS = envNumber('SECONDS', 5)
const CONNECTIONS = envNumber('CONNECTIONS', 50)
const HUG_CONNECTIONS = envNumber('HUG_CONNECTIONS', 300)
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
const tsx = (file: string, env: Record<string, string>) => start(process.execPath, ['--import', 'tsx', new URL(file, import.meta.url).pathname], env)

async function nginx(originPort: number): Promise<number | string> {
  if (spawnSync('nginx', ['-v']).error) return 'nginx is not installed (apt-get install nginx)'
  const dir = mkdtempSync(join(tmpdir(), 'airlock-nginx-'))
  const port = await freePort()
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${dir}/${t};`).join(' ')
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 4096; }
http { access_log off; ${temp}
  upstream origin { server 127.0.0.1:${originPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } } }
`,
  )
  children.push(spawn('nginx', ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' }))
  for (let i = 0; i < 50; i++) {
    if (await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)) return port
    await new Promise((r) => setTimeout(r, 100))
  }
  return 'nginx did not start'
}

async function load(port: number, path = '/', headers: Record<string, string> = {}, connections = CONNECTIONS): Promise<autocannon.Result> {
  return autocannon({ url: `http://127.0.0.1:${port}${path}`, connections, duration: SECONDS, headers })
}

const redis = await startRedis()
try {
  const origin = (await tsx('./proxy/origin.ts', {}))!
  const target = `http://127.0.0.1:${origin}`
  const rows: { name: string; rps: number | null; p99: number | null; non2xx: number; note?: string }[] = []
  const row = (name: string, r: autocannon.Result) => rows.push({ name, rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx + r.errors })
  row('origin direct', await load(origin))
  const ng = await nginx(origin)
  if (typeof ng === 'number') row('nginx proxy_pass (1 worker)', await load(ng))
  else rows.push({ name: 'nginx proxy_pass (1 worker)', rps: null, p99: null, non2xx: 0, note: ng })
  row('airlock proxy, no gate', await load((await tsx('./proxy/server.ts', { TARGET: target, MODE: 'plain' }))!))
  const session = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'session' }))!
  const pass = (await fetch(`http://127.0.0.1:${session}/`)).headers.getSetCookie()[0]!.split(';')[0]!
  await fetch(`http://127.0.0.1:${session}/`, { headers: { cookie: pass } }) // confirmed: a full pass
  row('airlock proxy, pass holders', await load(session, '/', { cookie: pass }))
  const request = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'request', REDIS_URL: redis.url, LIMIT: '1000' }))!
  row('airlock proxy, request mode, redis', await load(request))
  // The hug through the proxy: request mode at the fragile route's capacity.
  const hug = (await tsx('./proxy/server.ts', { TARGET: target, MODE: 'request', REDIS_URL: redis.url, LIMIT: '50' }))!
  const before = (await (await fetch(`${target}/stats`)).json()) as { failures: number; served: number }
  const hugRun = await load(hug, '/fragile', {}, HUG_CONNECTIONS)
  const after = (await (await fetch(`${target}/stats`)).json()) as { failures: number; served: number }
  const hugFailures = after.failures - before.failures
  const nginxRps = rows.find((r) => r.name.startsWith('nginx'))?.rps ?? null
  console.log(`# airlock proxy against nginx\n\n${describeMachine(machine())}`)
  console.log(`one origin (1 KB answers), autocannon ${CONNECTIONS} connections for ${SECONDS} s per row, loopback\n`)
  console.log(
    markdownTable(
      ['', 'req/s', 'p99 ms', 'x nginx', 'non-2xx'],
      rows.map((r) => [r.name, r.rps === null ? (r.note ?? '-') : fixed(r.rps), r.p99 === null ? '-' : fixed(r.p99), r.rps !== null && nginxRps ? fixed(r.rps / nginxRps, 2) : '-', r.non2xx]),
    ),
  )
  console.log(
    `\nhug through the proxy: ${HUG_CONNECTIONS} connections on a route that fails past 50 in flight, request mode at limit 50: ` +
      `${after.served - before.served} requests reached the origin, ${hugFailures} origin failures (500), ${hugRun.non2xx} busy answers.`,
  )
  writeResults('proxy', { seconds: SECONDS, connections: CONNECTIONS, rows, hug: { connections: HUG_CONNECTIONS, reachedOrigin: after.served - before.served, originFailures: hugFailures, busy: hugRun.non2xx } })
} finally {
  await Promise.all(children.map((c) => new Promise<void>((done) => (c.exitCode !== null ? done() : (c.once('exit', () => done()), c.kill('SIGTERM'))))))
  await redis.stop()
}
