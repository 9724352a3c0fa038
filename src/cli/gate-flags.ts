/**
 * What `airlock proxy` and `airlock auth` share: the `--config` file, the gate's flags both take
 * (--bypass, --trust-proxy, --client-share, --metrics, --dashboard), the log's flags, and the
 * engine's errors (createProxy, createDecisionService) as the command's.
 */
import { readFileSync } from 'node:fs'
import { isAirlockError } from '../base/errors.js'
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../proxy/log.js'
import { integerFlag, listenFlags, trustFlag } from './args.js'
import { prefixFlag, redactUrl, redisFlag } from './redis.js'
import type { CliIo } from './exec.js'
import { CliError, EXIT, UsageError } from './exit.js'

/** The config file: a JSON object of options (checked by the engine, with the file named). */
export function readConfig(file: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new UsageError(
      `--config: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new UsageError(`--config: ${file} is not JSON: ${(err as Error).message}`)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`--config: ${file} must hold a JSON object of options`)
  if ('store' in value) throw new UsageError(`--config: ${file}: store cannot be set in a file; use --redis`)
  return value as Record<string, unknown>
}

/**
 * Where the engine listens (--port, default `port`; --host) and its store: --redis (else
 * $AIRLOCK_REDIS_URL; neither: memory) and --prefix (checked even without Redis: a bad one is a
 * mistake where it is not used yet too). `store`: the store in words, for the line that says it is up.
 */
export function serverFlags(
  flags: ReadonlyMap<string, string>,
  env: NodeJS.ProcessEnv,
  port: number,
): { address: { port: number; host: string }; url: string | undefined; prefix: string; store: string } {
  const address = listenFlags(flags, port)
  const url = redisFlag(flags, env)
  return { address, url, prefix: prefixFlag(flags), store: url === undefined ? 'memory' : `redis ${redactUrl(url)}` }
}

/**
 * --bypass, --trust-proxy, --client-share and --metrics into `options` (the gate's, the config
 * file's already in): a flag given wins, one not given leaves the file's.
 */
export function gateFlags(flags: ReadonlyMap<string, string>, options: Record<string, unknown>): void {
  const set = (key: string, value: unknown): void => {
    if (value !== undefined) options[key] = value
  }
  set(
    'bypass',
    flags
      .get('bypass')
      ?.split(',')
      .map((p) => p.trim()),
  )
  set('trustProxy', flags.has('trust-proxy') ? trustFlag(flags.get('trust-proxy')!) : undefined)
  if (flags.has('client-share'))
    set(
      'clientShare',
      flags.get('client-share') === 'off' ? false : { places: integerFlag('client-share', flags.get('client-share')!) },
    )
  set('metricsPath', flags.get('metrics'))
}

/** --dashboard PATH: the dashboard option, its token from $AIRLOCK_DASHBOARD_TOKEN (16+ characters, else exit 78). */
export function dashboardFlag(
  flags: ReadonlyMap<string, string>,
  env: NodeJS.ProcessEnv,
): { token: string; path: string } | undefined {
  if (!flags.has('dashboard')) return undefined
  const token = env.AIRLOCK_DASHBOARD_TOKEN
  if (!token || token.length < 16)
    throw new CliError(
      EXIT.CONFIG,
      '--dashboard needs AIRLOCK_DASHBOARD_TOKEN (16+ characters), e.g. $(openssl rand -hex 24)',
    )
  return { token, path: flags.get('dashboard')! }
}

/** --log-level (default `level`) and --log-format (default json), checked: the engine's log option, written to stdout. */
export function logFlags(
  flags: ReadonlyMap<string, string>,
  level: LogLevel,
  io: CliIo,
): { level: LogLevel; format: LogFormat; destination: { write(text: string): void } } {
  const given = flags.get('log-level') ?? level
  if (!LOG_LEVELS.includes(given as LogLevel))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got '${given}'`)
  const format = flags.get('log-format') ?? 'json'
  if (!LOG_FORMATS.includes(format as LogFormat))
    throw new UsageError(`--log-format must be json or pretty, got '${format}'`)
  return { level: given as LogLevel, format: format as LogFormat, destination: { write: (text) => io.out(text) } }
}

/**
 * The engine `build` makes, its errors as the command's: a bad option exits 64 naming it (and the
 * config file it came from), a missing peer 69.
 */
export async function built<T>(flags: ReadonlyMap<string, string>, build: () => Promise<T>): Promise<T> {
  try {
    return await build()
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_OPTION'))
      throw new UsageError(flags.has('config') ? `${flags.get('config')}: ${err.message}` : err.message)
    if (isAirlockError(err, 'ERR_AIRLOCK_PEER_MISSING')) throw new CliError(EXIT.UNAVAILABLE, err.message)
    throw err
  }
}
