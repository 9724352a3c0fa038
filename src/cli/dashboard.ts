/**
 * `airlock dashboard`: the operator's dashboard served alone, for a fleet on Redis (the token from
 * the environment only: flags show up in `ps`).
 */
import { createServer } from 'node:http'
import { isAirlockError } from '../base/errors.js'
import { createDashboard, type Dashboard } from '../dashboard/server.js'
import { commandFlags, flagHelp, listenFlags, nameFlag, parseFlags, trustFlag } from './args.js'
import type { CliIo } from './exec.js'
import { CliError, EXIT } from './exit.js'
import { connectRedis, prefixFlag, redactUrl, redisFlag } from './redis.js'
import { listenOrExit, untilStopped } from './serving.js'

const TOKEN_ENV = 'AIRLOCK_DASHBOARD_TOKEN'
const FLAGS = commandFlags(
  `
    --redis URL     Redis the gates use: redis://[:password@]host[:port][/db] (default $AIRLOCK_REDIS_URL; required)
    --name NAMES    gate names to show, comma-separated (default 'default')
    --port N        port to listen on (default 9090)
    --host ADDRESS  address to listen on (default 127.0.0.1)
    --read-only     show the gates without the live controls
    --trust-proxy ADDRESSES  your proxies in front (addresses, CIDRs, loopback, comma-separated, a number of hops, or all): wrong tokens are slowed down per visitor behind them
  `,
  { prefix: true },
)

export const DASHBOARD_HELP = `Usage: airlock dashboard --redis URL [--name NAMES] [--port 9090] [--host 127.0.0.1]

Serves the operator's dashboard for gates on Redis: slots held against the limit, the line,
admitted and busy per second, ETA, store latency, breakers, instances, the last 15 minutes as
charts, and the live controls (limit, mode, admission rate, opening time).

The token comes from the environment only: ${TOKEN_ENV} (at least 16 characters). Open
http://HOST:PORT/ and paste it in the form (it becomes an HttpOnly cookie), or send Authorization:
Bearer TOKEN. With $AIRLOCK_SECRET (the gates' secret) the cookie is good after a restart too.

Options:
${flagHelp(FLAGS)}

Exit status: 0 stopped by SIGINT/SIGTERM; 64 bad flag; 69 Redis unreachable or ioredis not
installed; 78 no or too short token; 1 cannot listen.

Example:
  ${TOKEN_ENV}=$(openssl rand -hex 24) npx airlock-shield dashboard --redis redis://127.0.0.1:6379 --name shop,api
`

/** Runs `airlock dashboard` until SIGINT or SIGTERM; resolves the exit status. */
export async function dashboardCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { flags } = parseFlags(argv, FLAGS, false)
  if (flags.has('help')) {
    io.out(DASHBOARD_HELP)
    return EXIT.OK
  }
  const url = redisFlag(flags, io.env, true)
  const names = (flags.get('name') ?? 'default').split(',').map((n) => nameFlag('name', n.trim()))
  const address = listenFlags(flags, 9090)
  const token = io.env[TOKEN_ENV]
  if (token === undefined || token.length < 16) {
    throw new CliError(
      EXIT.CONFIG,
      `${token === undefined ? 'no' : 'a too short'} dashboard token: set ${TOKEN_ENV} (16+ characters), e.g. ${TOKEN_ENV}=$(openssl rand -hex 24)`,
    )
  }
  const trustProxy = flags.has('trust-proxy') ? trustFlag(flags.get('trust-proxy')!) : undefined
  const redis = await connectRedis(url, prefixFlag(flags))
  try {
    let dashboard: Dashboard
    try {
      const logger = {
        info: (_o: object, m?: string) => m && io.err(`${m}\n`),
        warn: (_o: object, m?: string) => m && io.err(`${m}\n`),
        error: (o: object, m?: string) => io.err(`${m} ${String((o as { err?: unknown }).err)}\n`),
      }
      dashboard = createDashboard({
        token,
        store: redis.store,
        names,
        controls: !flags.has('read-only'),
        trustProxy,
        secret: io.env.AIRLOCK_SECRET || undefined,
        logger,
      })
    } catch (err) {
      if (isAirlockError(err, 'ERR_AIRLOCK_OPTION')) throw new CliError(EXIT.CONFIG, err.message)
      throw err
    }
    const server = createServer((req, res) => dashboard.handle(req, res))
    const stopped = untilStopped()
    await listenOrExit(
      address,
      ({ port, host }) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject)
          server.listen(port, host, () => resolve())
        }),
      () => dashboard.close(),
    )
    const { port } = server.address() as { port: number }
    io.out(
      `airlock dashboard on http://${address.host}:${port}/ for ${names.join(', ')} (redis ${redactUrl(url)}); open it with ?token=<${TOKEN_ENV}>\n`,
    )
    await stopped
    dashboard.close()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    return EXIT.OK
  } finally {
    await redis.close()
  }
}
