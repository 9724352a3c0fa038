/**
 * `airlock exec`: run a command only when admitted by a semaphore on Redis, keep the slot alive
 * while it runs, forward signals and the exit status, release on exit.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import { isAirlockError } from '../base/errors.js'
import { createSemaphore, type Semaphore } from '../core/semaphore.js'
import { commandFlags, durationFlag, flagHelp, integerFlag, nameFlag, parseFlags } from './args.js'
import { CliError, EXIT, UsageError } from './exit.js'
import { inMs } from '../base/validate.js'
import { connectRedis, prefixFlag, redactUrl, redisUrlFlag } from './redis.js'

/** Signals passed on to the command while it runs. (SIGUSR1 is Node's debugger signal.) */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const

export const EXEC_FLAGS = commandFlags(
  `
    --name NAME            semaphore name, shared by every run that must not overlap (required; 1-64 of A-Z a-z 0-9 . _ : -)
    --limit N              runs allowed at once (default 1)
    --weight N             units of the limit this run takes (default 1)
    --ttl DURATION         the slot's life if airlock dies without releasing it; refreshed every ttl/3 while the command runs (default 60s)
    --wait DURATION        how long to wait for a slot, in arrival order; 0 tries once (default 0); 'forever' waits
    --kill-after DURATION  after a lost slot, SIGKILL the command if SIGTERM has not stopped it within this (default 10s)
    --redis URL            Redis holding the slots: redis://[:password@]host[:port][/db] or rediss:// (default $AIRLOCK_REDIS_URL; required)
  `,
  { prefix: true },
)

export const EXEC_HELP = `Usage: airlock exec --name NAME --redis URL [options] [--] COMMAND [ARGS...]

Runs COMMAND only when the semaphore NAME admits it: at most --limit runs at once across every
process and machine using the same Redis. The slot is refreshed while COMMAND runs and released
when it exits; if airlock itself is killed, the slot frees itself after --ttl.

Options:
${flagHelp(EXEC_FLAGS)}

DURATION is milliseconds (60000) or a number with a unit: 500ms, 30s, 5m, 1h; at most
2147483647 ms (about 24.8 days, the longest a timer can wait).
The memory store cannot see other processes, so exec always needs Redis: --redis or
AIRLOCK_REDIS_URL. Redis >= 6.2; needs the ioredis package (npm install ioredis).

Exit status:
  N      COMMAND's own exit status
  128+N  COMMAND was killed by signal N (130 SIGINT, 137 SIGKILL, 143 SIGTERM)
  64     usage error: a bad, missing or unknown flag
  69     Redis unreachable or ioredis not installed
  70     the slot was lost while COMMAND ran (a refresh failed); COMMAND was sent SIGTERM
  75     not admitted within --wait: another run holds the slot (nothing was run)
  126    COMMAND could not be executed
  127    COMMAND was not found

Signals: ${FORWARDED_SIGNALS.join(', ')} sent to airlock are passed on to COMMAND. While waiting
for a slot they stop the wait (exit 128+N). airlock waits for COMMAND to exit, then releases.

Example (crontab): run the nightly report, skip it while the previous one still runs:
  */5 * * * * cd /srv/app && AIRLOCK_REDIS_URL=redis://10.0.0.5:6379 node_modules/.bin/airlock exec --name report --ttl 60s -- node report.js
From cron, call the airlock installed in your app (node_modules/.bin/airlock), not npx: cron
starts in your home directory, where npx would download an unrelated package named airlock.
`

interface ExecOptions {
  name: string
  limit: number
  weight: number
  ttl: number
  wait: number
  killAfter: number
  redis: string
  prefix: string
  command: string
  args: string[]
}

/** Parses `airlock exec` arguments. `'help'` when help was asked for. */
export function parseExec(argv: readonly string[], env: NodeJS.ProcessEnv): ExecOptions | 'help' {
  const { flags, rest } = parseFlags(argv, EXEC_FLAGS, true)
  if (flags.has('help')) return 'help'
  const name = flags.get('name')
  if (name === undefined) throw new UsageError('--name is required (the semaphore that runs must share)')
  const limit = flags.has('limit') ? integerFlag('limit', flags.get('limit')!) : 1
  const weight = flags.has('weight') ? integerFlag('weight', flags.get('weight')!) : 1
  if (weight > limit) throw new UsageError(`--weight must be at most --limit (${limit}), got '${weight}'`)
  const redis = flags.get('redis') ?? env.AIRLOCK_REDIS_URL
  if (redis === undefined || redis === '') {
    throw new UsageError(
      '--redis URL (or AIRLOCK_REDIS_URL) is required: without Redis each airlock process has its own memory and nothing stops two runs from overlapping',
    )
  }
  if (rest.length === 0)
    throw new UsageError('no command given: airlock exec --name NAME --redis URL -- COMMAND [ARGS...]')
  return {
    name: nameFlag('name', name),
    limit,
    weight,
    ttl: flags.has('ttl') ? durationFlag('ttl', flags.get('ttl')!, { min: 1, unitless: 1000 }) : 60_000,
    wait: flags.has('wait') ? durationFlag('wait', flags.get('wait')!, { min: 0, forever: true }) : 0,
    killAfter: flags.has('kill-after') ? durationFlag('kill-after', flags.get('kill-after')!, { min: 0 }) : 10_000,
    redis: flags.has('redis') ? redisUrlFlag('redis', redis) : redisUrlFlag('redis (AIRLOCK_REDIS_URL)', redis),
    prefix: prefixFlag(flags),
    command: rest[0]!,
    args: rest.slice(1),
  }
}

/** Runs `airlock exec`; resolves the exit status. */
export async function execCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const options = parseExec(argv, io.env)
  if (options === 'help') {
    io.out(EXEC_HELP)
    return EXIT.OK
  }
  const redis = await connectRedis(options.redis, options.prefix)
  try {
    const semaphore = createSemaphore({
      name: options.name,
      limit: options.limit,
      ttl: inMs(options.ttl),
      store: redis.store,
    })
    return await supervise(semaphore, options, io)
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_STORE_UNAVAILABLE')) {
      throw new CliError(EXIT.UNAVAILABLE, `Redis at ${redactUrl(options.redis)} is unavailable: ${err.message}`)
    }
    throw err
  } finally {
    await redis.close()
  }
}

/** Where the CLI writes: stdout for help, stderr for its one-line messages. */
export interface CliIo {
  out(text: string): void
  err(line: string): void
  env: NodeJS.ProcessEnv
  /** Whether `out` is a terminal (live lines are rewritten in place). */
  tty?: boolean
}

/** Waits for a slot, runs the command holding it, and maps every ending to an exit status. */
async function supervise(semaphore: Semaphore, options: ExecOptions, io: CliIo): Promise<number> {
  let child: ChildProcess | undefined
  let caught: NodeJS.Signals | undefined
  const interrupted = new AbortController()
  const handlers = FORWARDED_SIGNALS.map((signal) => {
    const handler = (): void => {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill(signal)
      } else if (!child) {
        caught ??= signal
        interrupted.abort()
      }
    }
    process.on(signal, handler)
    return () => process.off(signal, handler)
  })
  try {
    return await semaphore.run(
      ({ signal: lost }) => {
        if (caught) return signalStatus(caught) // interrupted while taking the slot: run nothing
        return runChild(options, lost, io, (c) => (child = c))
      },
      // Without --wait one try (never joins the line); with it, a fair wait that a signal stops.
      { timeout: options.wait, weight: options.weight, signal: options.wait > 0 ? interrupted.signal : undefined },
    )
  } catch (err) {
    if (caught) return signalStatus(caught)
    if (isAirlockError(err, 'ERR_AIRLOCK_TIMEOUT')) {
      const held = options.limit === 1 ? 'another run holds it' : `its ${options.limit} slots are taken`
      const waited = options.wait > 0 ? ` after waiting ${formatMs(options.wait)}` : ''
      io.err(`airlock: '${options.name}' is busy (${held})${waited}; not running ${options.command}`)
      return EXIT.BUSY
    }
    throw err
  } finally {
    for (const off of handlers) off()
  }
}

/** Spawns the command and resolves its exit status; on a lost slot, stops it and resolves 70. */
function runChild(
  options: ExecOptions,
  lost: AbortSignal,
  io: CliIo,
  started: (child: ChildProcess) => void,
): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = spawn(options.command, options.args, { stdio: 'inherit' })
    started(child)
    let leaseLost = false
    let killTimer: NodeJS.Timeout | undefined
    let settled = false
    const settle = (status: number): void => {
      if (settled) return
      settled = true
      clearTimeout(killTimer)
      lost.removeEventListener('abort', onLost)
      resolve(status)
    }
    const onLost = (): void => {
      leaseLost = true
      const cause = (lost.reason as Error & { cause?: Error })?.cause
      const why = cause ? `a refresh failed: ${cause.message}` : 'a refresh found it expired or force-released'
      io.err(`airlock: lost the slot of '${options.name}' (${why}); stopping ${options.command} with SIGTERM`)
      child.kill('SIGTERM')
      killTimer = setTimeout(() => {
        io.err(
          `airlock: ${options.command} still running ${formatMs(options.killAfter)} after SIGTERM; sending SIGKILL`,
        )
        child.kill('SIGKILL')
      }, options.killAfter)
    }
    lost.addEventListener('abort', onLost, { once: true })
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return // a failed kill(), not a failed start; 'exit' follows
      const notFound = err.code === 'ENOENT'
      io.err(
        `airlock: ${notFound ? 'command not found' : 'cannot execute'}: ${options.command} (${err.code ?? err.message})`,
      )
      settle(notFound ? EXIT.NOT_FOUND : EXIT.CANNOT_EXECUTE)
    })
    child.once('exit', (code, signal) => {
      if (leaseLost) settle(EXIT.LEASE_LOST)
      else settle(signal ? signalStatus(signal) : (code ?? EXIT.FAILURE))
    })
  })
}

/** 128 + the signal's number, as shells report a death by signal. */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0)
}

function formatMs(ms: number): string {
  if (ms === Infinity) return 'forever'
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`
  if (ms % 60_000 === 0) return `${ms / 60_000}m`
  if (ms % 1000 === 0) return `${ms / 1000}s`
  return `${ms}ms`
}
