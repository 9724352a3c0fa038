/**
 * `airlock proxy`: the shield in front of any website, in one command (src/proxy.ts); with
 * `--workers`, one per core (src/cli/workers.ts).
 */
import cluster from 'node:cluster'
import { randomSecret } from '../base/signing.js'
import { noticeLine } from '../proxy/log.js'
import type { ProxyOptions } from '../proxy/proxy.js'
import { commandFlags, durationFlag, flagHelp, integerFlag, nameFlag, parseFlags } from './args.js'
import type { CliIo } from './exec.js'
import { EXIT, UsageError } from './exit.js'
import { built, dashboardFlag, gateFlags, logFlags, readConfig, serverFlags } from './gate-flags.js'
import { connectRedis } from './redis.js'
import { listenOrExit, untilStopped } from './serving.js'
import { runPrimary, workersFlag, type WorkerReady } from './workers.js'

const FLAGS = commandFlags(
  `
    --target URL                 the origin to shield: http://127.0.0.1:8080 (required, here or in --config)
    --port N                     port to listen on (default 3000)
    --host ADDRESS               address to listen on (default 127.0.0.1)
    --redis URL                  Redis for slots shared by several proxies (default $AIRLOCK_REDIS_URL; else in memory)
    --config FILE                a JSON file of gate and proxy options (flags win)
    --name NAME                  the gate's name (default 'default')
    --limit N                    visitors (session mode) or requests (request mode) at once (default 100)
    --adaptive MIN:MAX           learn the limit between MIN and MAX instead (e.g. 5:500)
    --mode MODE                  session (visitors, a pass cookie; default) or request (requests in flight)
    --queue                      a fair waiting room instead of the busy page
    --pass-ttl DURATION          a pass's life after the visitor's last request (default 60s)
    --bypass PATHS               comma-separated path prefixes never gated (/static,/health)
    --trust-proxy ADDRESSES      your proxies, whose X-Forwarded-For/-Proto count: addresses, CIDRs, loopback, uniquelocal (comma-separated), a number of hops (1: the peer is your one proxy), or all
    --client-share N|off         places in line plus unconfirmed slots one client address may hold (default 20, and at most a quarter of the limit in unconfirmed slots, 60 new a minute); off: no share
    --metrics PATH               serve Prometheus metrics at PATH (needs prom-client)
    --dashboard PATH             serve the dashboard at PATH (token: $AIRLOCK_DASHBOARD_TOKEN)
    --upstream-timeout DURATION  how long the origin may take to connect, answer, or between body chunks; then 504 (default 60s)
    --keep-pass-cookie           forward the gate's pass cookie to the origin too (default: removed)
    --log-level LEVEL            debug, info (default: a line per request), warn, error or silent
    --log-format FORMAT          json (default: a JSON object per line, as pino) or pretty
    --workers N|auto             processes sharing the port (auto: one per core; more than 1 needs --redis)
    --no-gate                    forward without the gate (to compare)
  `,
  { prefix: true },
)

export const PROXY_HELP = `Usage: airlock proxy --target URL [--port 3000] [--limit N] [--redis URL] [options]

Shields any website (PHP, Rails, Django, static): visitors go through the gate, then to the origin.
Methods, paths, queries, headers, bodies (streamed; Expect: 100-continue answered once admitted) and
WebSocket upgrades are forwarded (no other Upgrade); the origin gets the proxy's own
X-Forwarded-For/-Proto/-Host, X-Real-IP and Forwarded (what a client sends in them, or in
Client-IP and the like, is dropped), never the pass cookie. Behind nginx or a load balancer, name
it with --trust-proxy (127.0.0.1, or its CIDR) so each visitor is counted as itself. An origin
answer with \`Airlock-Command: release\` frees the visitor's place. The pass secret comes from
$AIRLOCK_SECRET (32+ bytes; needed to share passes between several proxies or across restarts).
A line per request is logged on stdout.

Options:
${flagHelp(FLAGS)}

Exit status: 0 stopped by SIGINT/SIGTERM (open requests finish first); 64 bad flag or config;
69 Redis unreachable or a dependency missing; 78 bad environment; 1 cannot listen.

Example:
  php -S 127.0.0.1:8080 &
  npx airlock-shield proxy --target http://127.0.0.1:8080 --limit 20
`

/** Runs `airlock proxy` until SIGINT or SIGTERM; resolves the exit status. */
export async function proxyCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { flags } = parseFlags(argv, FLAGS, false)
  if (flags.has('help')) {
    io.out(PROXY_HELP)
    return EXIT.OK
  }
  const options: Partial<ProxyOptions> & Record<string, unknown> = flags.has('config')
    ? readConfig(flags.get('config')!)
    : {}
  const set = (key: string, value: unknown): void => {
    if (value !== undefined) options[key] = value
  }
  set('target', flags.get('target'))
  set('name', flags.has('name') ? nameFlag('name', flags.get('name')!) : undefined)
  set('limit', flags.has('limit') ? integerFlag('limit', flags.get('limit')!) : undefined)
  if (flags.has('adaptive')) {
    const m = /^(\d+):(\d+)$/.exec(flags.get('adaptive')!)
    if (!m) throw new UsageError(`--adaptive must be MIN:MAX (5:500), got '${flags.get('adaptive')}'`)
    set('limit', { min: Number(m[1]), max: Number(m[2]) })
  }
  if (flags.has('mode') && !['session', 'request'].includes(flags.get('mode')!))
    throw new UsageError(`--mode must be session or request, got '${flags.get('mode')}'`)
  set('mode', flags.get('mode'))
  set('queue', flags.has('queue') ? true : undefined)
  set(
    'passTtl',
    flags.has('pass-ttl') ? durationFlag('pass-ttl', flags.get('pass-ttl')!, { min: 1, unitless: 1000 }) : undefined,
  )
  gateFlags(flags, options)
  set('gated', flags.has('no-gate') ? false : undefined)
  set(
    'upstreamTimeout',
    flags.has('upstream-timeout')
      ? durationFlag('upstream-timeout', flags.get('upstream-timeout')!, { min: 1 })
      : undefined,
  )
  set('keepPassCookie', flags.has('keep-pass-cookie') ? true : undefined)
  const log = logFlags(flags, 'info', io)
  const workers = flags.has('workers') ? workersFlag(flags.get('workers')!) : 1
  set('dashboard', dashboardFlag(flags, io.env))
  if (io.env.AIRLOCK_SECRET) set('secret', io.env.AIRLOCK_SECRET)
  if (options.target === undefined)
    throw new UsageError('--target is required (the origin: --target http://127.0.0.1:8080)')
  const { address, url, prefix, store } = serverFlags(flags, io.env, 3000)
  const describe = (listening: string): string => `airlock proxy on ${listening}/ -> ${options.target} (${store})`
  /** createProxy, its errors as the command's (a bad option exits 64 naming it; a missing peer 69). */
  const build = async (more: Partial<ProxyOptions>) => {
    const { createProxy } = await import('../proxy/proxy.js')
    return built(flags, () => createProxy({ ...(options as ProxyOptions), ...more }))
  }
  if (workers > 1 && cluster.isPrimary) {
    if (url === undefined) {
      throw new UsageError(
        `--workers ${workers} needs --redis (or AIRLOCK_REDIS_URL): the in-memory store is one process's, so each worker would let in up to the limit`,
      )
    }
    // The options are checked here once (exit 64 naming the option), not by each worker as it dies.
    await (await build({ log: false })).close()
    // One secret for every worker, so a pass one gives is good at the others.
    return runPrimary(
      workers,
      { ...io.env, AIRLOCK_SECRET: io.env.AIRLOCK_SECRET || randomSecret() },
      (at) => noticeLine(log.format, `${describe(at)} (${workers} workers)`),
      io,
    )
  }
  const redis = url === undefined ? undefined : await connectRedis(url, prefix)
  try {
    const app = await build({ store: redis?.store, log })
    const stopped = untilStopped()
    const listening = await listenOrExit(
      address,
      (a) => app.listen(a),
      () => app.close(),
    )
    if (cluster.isWorker) process.send?.({ airlockProxy: 'listening', url: listening } satisfies WorkerReady)
    else io.out(noticeLine(log.format, describe(listening)))
    await stopped
    await app.close() // stops accepting, lets open requests finish
    return EXIT.OK
  } finally {
    await redis?.close()
  }
}
