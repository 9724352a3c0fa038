/**
 * `airlock serve`: the HTTP lock service as a process, on Redis (shared by any number of
 * instances, kept across restarts) or on this process's memory.
 */
import { isAirlockError } from '../base/errors.js'
import { apiKeysFromEnv, KEY_ENV, type ApiKeys } from '../lock-server/keys.js'
import { createLockServer } from '../lock-server/server.js'
import { memoryStore } from '../stores/memory.js'
import { flagHelp, hostFlag, integerFlag, parseFlags, HELP_FLAG, PREFIX_FLAG, type FlagSpec } from './args.js'
import type { CliIo } from './exec.js'
import { CliError, EXIT, UsageError } from './exit.js'
import { connectRedis, prefixFlag, redactUrl, redisUrlFlag } from './redis.js'
import { listenOrExit, untilStopped } from './serving.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export const SERVE_FLAGS: readonly FlagSpec[] = [
  { name: 'port', short: 'p', value: 'PORT', help: 'port to listen on (default 8080)' },
  { name: 'host', value: 'HOST', help: 'address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)' },
  {
    name: 'redis',
    value: 'URL',
    help: 'Redis for locks, resources and data: redis://[:password@]host[:port][/db] or rediss:// (default $AIRLOCK_REDIS_URL; without it: memory)',
  },
  PREFIX_FLAG,
  { name: 'body-limit', value: 'BYTES', help: 'largest request body; larger gets 413 (default 1048576)' },
  {
    name: 'data-format',
    value: 'FORMAT',
    help: "reads answer 'envelope' ({\"data\":\"<json>\"}, the Small Resource Server's) or 'raw' (the JSON itself); default envelope",
  },
  {
    name: 'log-level',
    value: 'LEVEL',
    help: `JSON log lines on stdout at this level: ${LOG_LEVELS.join(', ')} (default info)`,
  },
  HELP_FLAG,
]

export const SERVE_HELP = `Usage: airlock serve [--port 8080] [--host 127.0.0.1] [--redis URL] [options]

Serves the HTTP lock service: named resources with selectors, each (resource, selector) a lock
with its own JSON data, for services in any language (see docs/lock-server.md in the package).

Options:
${flagHelp(SERVE_FLAGS)}

API keys come from the environment, never from flags (flags show up in ps):
  ${KEY_ENV.read}        read data without locking
  ${KEY_ENV.readLock}   also lock and unlock
  ${KEY_ENV.write}       also define and delete resources and write data
Each is one key or a comma-separated list (to rotate keys); each level includes the ones above.
At least one is required. Clients send theirs as x-api-key: KEY or Authorization: Bearer KEY.

With --redis any number of instances share the locks, and resources and data survive restarts.
Without it everything lives in this process and is lost when it stops.
Stops cleanly on SIGINT or SIGTERM.

Exit status: 0 stopped by a signal, 64 usage error, 69 Redis unreachable or a dependency
(ioredis, fastify) not installed, 78 no or invalid API keys, 1 could not listen.

Example:
  ${KEY_ENV.write}=$(openssl rand -hex 24) npx airlock-shield serve --port 8080 --redis redis://127.0.0.1:6379
`

interface ServeOptions {
  port: number
  host: string
  redis: string | undefined
  prefix: string
  bodyLimit: number
  dataFormat: 'envelope' | 'raw'
  logLevel: (typeof LOG_LEVELS)[number]
}

export function parseServe(argv: readonly string[], env: NodeJS.ProcessEnv): ServeOptions | 'help' {
  const { flags } = parseFlags(argv, SERVE_FLAGS, false)
  if (flags.has('help')) return 'help'
  const logLevel = flags.get('log-level') ?? 'info'
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got '${logLevel}'`)
  }
  const host = hostFlag(flags.get('host'))
  const redis = flags.get('redis') ?? (env.AIRLOCK_REDIS_URL || undefined)
  const dataFormat = flags.get('data-format') ?? 'envelope'
  if (dataFormat !== 'envelope' && dataFormat !== 'raw')
    throw new UsageError(`--data-format must be envelope or raw, got '${dataFormat}'`)
  return {
    port: flags.has('port') ? integerFlag('port', flags.get('port')!, 0, 65_535) : 8080,
    host,
    redis:
      redis === undefined ? undefined : redisUrlFlag(flags.has('redis') ? 'redis' : 'redis (AIRLOCK_REDIS_URL)', redis),
    prefix: prefixFlag(flags),
    bodyLimit: flags.has('body-limit') ? integerFlag('body-limit', flags.get('body-limit')!) : 1024 * 1024,
    dataFormat,
    logLevel: logLevel as ServeOptions['logLevel'],
  }
}

/** Runs `airlock serve` until SIGINT or SIGTERM; resolves the exit status. */
export async function serveCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const options = parseServe(argv, io.env)
  if (options === 'help') {
    io.out(SERVE_HELP)
    return EXIT.OK
  }
  const apiKeys = keysFrom(io.env)
  const redis = options.redis === undefined ? undefined : await connectRedis(options.redis, options.prefix)
  const store = redis?.store ?? memoryStore()
  try {
    let app: ReturnType<typeof createLockServer>
    try {
      app = createLockServer({
        store,
        apiKeys,
        bodyLimit: options.bodyLimit,
        dataFormat: options.dataFormat,
        logger: { level: options.logLevel },
      })
    } catch (err) {
      if (isAirlockError(err, 'ERR_AIRLOCK_OPTION')) throw new CliError(EXIT.CONFIG, err.message)
      if (isAirlockError(err, 'ERR_AIRLOCK_PEER_MISSING'))
        throw new CliError(EXIT.UNAVAILABLE, err.message.replace('createLockServer()', 'serve'))
      throw err
    }
    const stopped = untilStopped()
    await listenOrExit(
      { port: options.port, host: options.host },
      (a) => app.listen(a),
      () => app.close(),
    )
    app.log.info(
      { store: redis ? `redis ${redactUrl(options.redis!)}` : 'memory', prefix: options.prefix },
      'airlock lock service ready',
    )
    if (!redis) {
      app.log.warn('no --redis: locks, resources and data live in this process only and are lost when it stops')
    }
    const signal = await stopped
    app.log.info({ signal }, 'stopping')
    await app.close()
    return EXIT.OK
  } finally {
    await redis?.close()
  }
}

/** The API keys from the environment, checked before anything is opened. */
function keysFrom(env: NodeJS.ProcessEnv): ApiKeys {
  let keys: ApiKeys
  try {
    keys = apiKeysFromEnv(env)
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_OPTION')) throw new CliError(EXIT.CONFIG, err.message)
    throw err
  }
  if (Object.keys(keys).length === 0) {
    throw new CliError(
      EXIT.CONFIG,
      `no API key: set ${KEY_ENV.write} (and optionally ${KEY_ENV.readLock}, ${KEY_ENV.read}), e.g. ${KEY_ENV.write}=$(openssl rand -hex 24)`,
    )
  }
  return keys
}
