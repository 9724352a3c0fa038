/**
 * `airlock auth`: the decision service for nginx, Caddy or Traefik (src/proxy/decide.ts); and
 * `airlock nginx-config` / `airlock caddy-config`: their configurations (src/connector/).
 * Both read the same `--config` file and secret, so nginx checks passes the way the service signs them.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isAirlockError } from '../base/errors.js'
import { secretList } from '../base/signing.js'
import { caddyConfig, nginxConfig, type ConnectorConfigOptions } from '../connector/configs.js'
import { njsSettings, NJS_MODULE } from '../connector/njs.js'
import { createGate } from '../gate/gate.js'
import { REQUEST_MODE_REFUSED, type DecisionServiceOptions } from '../proxy/decide.js'
import { noticeLine } from '../proxy/log.js'
import { memoryStore } from '../stores/memory.js'
import { commandFlags, durationFlag, flagHelp, integerFlag, nameFlag, parseFlags } from './args.js'
import type { CliIo } from './exec.js'
import { CliError, EXIT, UsageError } from './exit.js'
import { built, dashboardFlag, gateFlags, logFlags, readConfig, serverFlags } from './gate-flags.js'
import { connectRedis } from './redis.js'
import { listenOrExit, untilStopped } from './serving.js'

const GATE_FLAGS = `
    --config FILE                a JSON file of gate options, the same for airlock auth and nginx-config (flags win)
    --secret-file FILE           the pass secrets, one a line, the first signs (or $AIRLOCK_SECRET); nginx checks passes with them
    --name NAME                  the gate's name (default 'default')
    --pass-ttl DURATION          a pass's life after the visitor's last renewal (default 60s)
`

const AUTH_FLAGS = commandFlags(
  `
    --port N                     port to listen on (default 8787)
    --host ADDRESS               address to listen on (default 127.0.0.1: only the proxy on this machine asks)
    --redis URL                  Redis for slots shared by several services (default $AIRLOCK_REDIS_URL; else in memory)
    --limit N                    visitors on the site at once (default 100)
    --no-queue                   the busy page for those who find the site full, instead of the fair line
    --bypass PATHS               comma-separated path prefixes never gated (/static,/health)
    --trust-proxy ADDRESSES      the proxies whose X-Forwarded-For names the visitor (default loopback), a number of hops, or all
    --client-share N|off         places in line plus unconfirmed slots one client address may hold (default 20, and at most a quarter of the limit in unconfirmed slots, 60 new a minute); off: no share
    --refusal-cache SECONDS      how long nginx may keep a refusal that is everyone's (default 1; 0: never)
    --metrics PATH               serve Prometheus metrics at PATH (needs prom-client)
    --dashboard PATH             serve the dashboard at PATH (token: $AIRLOCK_DASHBOARD_TOKEN)
    --log-level LEVEL            debug, info (a line per decision), warn (default), error or silent
    --log-format FORMAT          json (default) or pretty
    --mode MODE                  session only: request mode needs airlock proxy (see below)
  ${GATE_FLAGS}`,
  { prefix: true },
)

export const AUTH_HELP = `Usage: airlock auth --limit N --secret-file FILE [--port 8787] [--redis URL] [options]

The gate for a proxy you already run (nginx, Caddy, Traefik): it answers their forward-auth
subrequests on ${'/'}.airlock/decide with the gate's whole behaviour in session mode (a pass for who
gets in; the busy page, the fair line and its polls for the others; live control, metrics, the
dashboard). With nginx's njs module a valid pass is checked inside nginx: only visitors without one
ever reach this service. The line is on by default (those who follow the waiting page get in, in
turn); --no-queue gives the busy page instead. Request mode is refused: ${REQUEST_MODE_REFUSED}.

Options:
${flagHelp(AUTH_FLAGS)}

Exit status: 0 stopped by SIGINT/SIGTERM; 64 bad flag or config; 69 Redis unreachable or a
dependency missing; 78 bad environment (no secret); 1 cannot listen.

Example (then: airlock nginx-config, see docs/nginx.md):
  head -c 32 /dev/urandom | base64 > /etc/airlock/secret
  npx airlock-shield auth --limit 20 --secret-file /etc/airlock/secret
`

const CONFIG_FLAGS = commandFlags(
  `
    --origin ORIGIN              fastcgi:unix:/run/php/php8.2-fpm.sock, fastcgi:HOST:PORT or http://HOST:PORT (required)
    --service HOST:PORT          where airlock auth listens (default 127.0.0.1:8787)
    --server-name NAME           nginx's server_name, Caddy's site address (default _ / :80)
    --listen PORT                what nginx listens on (default 80)
    --root DIR                   the site's document root, for FastCGI origins (default /var/www/html)
    --dir DIR                    where airlock.js and airlock.json go (default /etc/nginx/airlock)
    --cache-dir DIR              nginx's cache of shared refusals (default /var/cache/nginx/airlock)
    --check CHECK                njs (default: passes checked in nginx) or auth_request (no njs: every request asks)
    --fail MODE                  the service down: closed (default: nginx's busy page) or open (let everyone in)
    --bypass PATHS               comma-separated path prefixes never gated (HTTP origins)
    --dashboard PATH             serve the service's dashboard through nginx at PATH
    --write                      also write DIR/airlock.js, DIR/airlock.json (the secrets: mode 0640) and DIR/busy.html
  ${GATE_FLAGS}`,
  { prefix: false },
)

export const NGINX_CONFIG_HELP = `Usage: airlock nginx-config --origin ORIGIN [--write --dir DIR] [options]

Prints an nginx configuration (a file for conf.d/ or sites-enabled/) that shields ORIGIN: a
visitor with a valid pass goes straight to it, checked inside nginx by an njs module (Debian's
libnginx-mod-http-js); anyone else asks airlock auth. With --write, also writes the module and its
settings (the gate's name, pass life and secrets: give the same --config and secret as to airlock
auth). --check auth_request needs no njs, at the cost of asking the service on every request.

Options:
${flagHelp(CONFIG_FLAGS)}

Example:
  sudo npx airlock-shield nginx-config --origin fastcgi:unix:/run/php/php8.2-fpm.sock \\
    --server-name example.com --secret-file /etc/airlock/secret --write > /etc/nginx/sites-enabled/airlock
  sudo nginx -t && sudo systemctl reload nginx
`

export const CADDY_CONFIG_HELP = `Usage: airlock caddy-config --origin ORIGIN [options]

Prints a Caddyfile site block that shields ORIGIN with airlock auth (forward-auth: Caddy asks the
service for every gated request; a refusal's page is the service's, passed through unchanged).

Options:
${flagHelp(CONFIG_FLAGS.filter((f) => !['dir', 'cache-dir', 'check', 'listen', 'write', 'fail', 'dashboard'].includes(f.name)))}

Example:
  npx airlock-shield caddy-config --origin fastcgi:unix:/run/php/php8.2-fpm.sock --server-name example.com >> /etc/caddy/Caddyfile
`

/** The secrets from --secret-file (one a line) or $AIRLOCK_SECRET; required here. */
function secretsOf(flags: Map<string, string>, io: CliIo): string[] {
  let list: string[]
  if (flags.has('secret-file')) {
    let text: string
    try {
      text = readFileSync(flags.get('secret-file')!, 'utf8')
    } catch (err) {
      throw new CliError(
        EXIT.CONFIG,
        `--secret-file: cannot read ${flags.get('secret-file')}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    list = text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
  } else if (io.env.AIRLOCK_SECRET) list = [io.env.AIRLOCK_SECRET]
  else
    throw new CliError(
      EXIT.CONFIG,
      'a secret is needed (nginx checks passes with it): --secret-file FILE (one a line, the first signs; make one with: head -c 32 /dev/urandom | base64 > FILE) or AIRLOCK_SECRET',
    )
  try {
    return secretList('--secret-file', list.length === 0 ? [] : list)
  } catch (err) {
    throw new CliError(EXIT.CONFIG, (err as Error).message)
  }
}

/** The gate options both commands share: --config, --name, --pass-ttl. */
function gateOptions(flags: Map<string, string>): Record<string, unknown> {
  const options: Record<string, unknown> = flags.has('config') ? readConfig(flags.get('config')!) : {}
  if (flags.has('name')) options.name = nameFlag('name', flags.get('name')!)
  if (flags.has('pass-ttl'))
    options.passTtl = durationFlag('pass-ttl', flags.get('pass-ttl')!, { min: 1, unitless: 1000 })
  return options
}

/** Runs `airlock auth` until SIGINT or SIGTERM. */
export async function authCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { flags } = parseFlags(argv, AUTH_FLAGS, false)
  if (flags.has('help')) {
    io.out(AUTH_HELP)
    return EXIT.OK
  }
  if (flags.has('mode') && flags.get('mode') !== 'session')
    throw new UsageError(
      flags.get('mode') === 'request' ? REQUEST_MODE_REFUSED : `--mode must be session, got '${flags.get('mode')}'`,
    )
  const options = gateOptions(flags) as Partial<DecisionServiceOptions> & Record<string, unknown>
  if (flags.has('limit')) options.limit = integerFlag('limit', flags.get('limit')!)
  if (options.queue === undefined) options.queue = !flags.has('no-queue')
  else if (flags.has('no-queue')) options.queue = false
  gateFlags(flags, options)
  if (flags.has('refusal-cache'))
    options.refusalCache = integerFlag('refusal-cache', flags.get('refusal-cache')!, 0, 60)
  const log = logFlags(flags, 'warn', io)
  const dashboard = dashboardFlag(flags, io.env)
  if (dashboard !== undefined) options.dashboard = dashboard
  options.secret = secretsOf(flags, io)
  const { address, url, prefix, store } = serverFlags(flags, io.env, 8787)
  const redis = url === undefined ? undefined : await connectRedis(url, prefix)
  try {
    const { createDecisionService } = await import('../proxy/decide.js')
    const service = await built(flags, () =>
      createDecisionService({ ...(options as DecisionServiceOptions), store: redis?.store, log }),
    )
    const stopped = untilStopped()
    const listening = await listenOrExit(
      address,
      (a) => service.listen(a),
      () => service.close(),
    )
    const g = service.gate
    io.out(
      noticeLine(
        log.format,
        `airlock auth on ${listening}/.airlock/decide: gate '${g.name}', ${options.queue ? 'the line' : 'the busy page'} past the limit (${store})`,
      ),
    )
    await stopped
    await service.close()
    return EXIT.OK
  } finally {
    await redis?.close()
  }
}

/** Runs `airlock nginx-config` or `airlock caddy-config`: prints the configuration (and writes the njs files). */
export async function configCommand(kind: 'nginx' | 'caddy', argv: readonly string[], io: CliIo): Promise<number> {
  const specs =
    kind === 'nginx'
      ? CONFIG_FLAGS
      : CONFIG_FLAGS.filter(
          (f) => !['dir', 'cache-dir', 'check', 'listen', 'write', 'fail', 'dashboard'].includes(f.name),
        )
  const { flags } = parseFlags(argv, specs, false)
  if (flags.has('help')) {
    io.out(kind === 'nginx' ? NGINX_CONFIG_HELP : CADDY_CONFIG_HELP)
    return EXIT.OK
  }
  if (!flags.has('origin'))
    throw new UsageError('--origin is required (fastcgi:unix:/run/php/php8.2-fpm.sock or http://127.0.0.1:8080)')
  const check = flags.get('check')
  if (check !== undefined && check !== 'njs' && check !== 'auth_request')
    throw new UsageError(`--check must be njs or auth_request, got '${check}'`)
  const fail = flags.get('fail')
  if (fail !== undefined && fail !== 'closed' && fail !== 'open')
    throw new UsageError(`--fail must be closed or open, got '${fail}'`)
  const options: ConnectorConfigOptions = {
    origin: flags.get('origin')!,
    service: flags.get('service') ?? '127.0.0.1:8787',
    ...(flags.has('server-name') ? { serverName: flags.get('server-name')! } : {}),
    ...(flags.has('listen') ? { listen: flags.get('listen')! } : {}),
    ...(flags.has('root') ? { root: flags.get('root')! } : {}),
    ...(flags.has('dir') ? { dir: flags.get('dir')! } : {}),
    ...(flags.has('cache-dir') ? { cacheDir: flags.get('cache-dir')! } : {}),
    ...(check ? { check } : {}),
    ...(fail ? { fail } : {}),
    ...(flags.has('bypass')
      ? {
          bypass: flags
            .get('bypass')!
            .split(',')
            .map((p) => p.trim()),
        }
      : {}),
    ...(flags.has('dashboard') ? { dashboard: flags.get('dashboard')! } : {}),
  }
  let text: string
  try {
    text = kind === 'nginx' ? nginxConfig(options) : caddyConfig(options)
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_OPTION'))
      throw new UsageError(
        err.message.replace(
          /^(\w+) must/,
          (_, k: string) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must`,
        ),
      )
    throw err
  }
  if (kind === 'nginx' && flags.has('write')) {
    const secrets = secretsOf(flags, io)
    const gate = createGate({
      ...gateOptions(flags),
      secret: secrets,
      store: memoryStore(),
      control: false,
      history: false,
    } as Parameters<typeof createGate>[0])
    await gate.close()
    const dir = options.dir ?? '/etc/nginx/airlock'
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'airlock.js'), NJS_MODULE)
    const settings = njsSettings(gate, secrets, fail === 'open' ? 'open' : 'closed')
    writeFileSync(join(dir, 'airlock.json'), `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o640 })
    chmodSync(join(dir, 'airlock.json'), 0o640)
    writeFileSync(join(dir, 'busy.html'), settings.busyPage)
    io.err(
      `airlock: wrote ${dir}/airlock.js, ${dir}/airlock.json (the secrets: keep it readable by nginx only) and ${dir}/busy.html`,
    )
  }
  io.out(text)
  return EXIT.OK
}
