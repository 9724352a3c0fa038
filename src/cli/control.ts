/**
 * `airlock control`: reads and changes a gate's live control in Redis (src/core/control.ts); every
 * instance of the gate applies a change within about a second.
 */
import { hostname, userInfo } from 'node:os'
import { airlockControl, CONTROL_MODES, type ControlPatch, type ControlState } from '../core/control.js'
import { isAirlockError } from '../base/errors.js'
import { flagHelp, integerFlag, nameFlag, parseFlags, HELP_FLAG, PREFIX_FLAG, type FlagSpec } from './args.js'
import type { CliIo } from './exec.js'
import { EXIT, UsageError } from './exit.js'
import { connectRedis, prefixFlag, redactUrl, redisFlag } from './redis.js'

const COMMON: FlagSpec[] = [
  { name: 'name', value: 'NAME', help: "the gate's name option (default 'default')" },
  {
    name: 'redis',
    value: 'URL',
    help: 'Redis the gates use: redis://[:password@]host[:port][/db] (default $AIRLOCK_REDIS_URL; required)',
  },
  PREFIX_FLAG,
]
const GET_FLAGS: FlagSpec[] = [...COMMON, { name: 'json', help: 'print the control as JSON' }, HELP_FLAG]
const SET_FLAGS: FlagSpec[] = [
  ...COMMON,
  { name: 'limit', value: 'N', help: "slots at once, overriding the gates' limit; 'none' clears it" },
  { name: 'mode', value: 'MODE', help: `${CONTROL_MODES.join(' | ')}` },
  {
    name: 'rate',
    value: 'N/min',
    help: "new visitors admitted per minute across the fleet (N, N/min or N/s); 'none' clears it",
  },
  {
    name: 'opens-at',
    value: 'TIME',
    help: "ISO 8601 time of a scheduled opening (2026-12-01T09:00:00Z); 'none' clears it",
  },
  { name: 'closes-at', value: 'TIME', help: "ISO 8601 time from which the gate acts as closed; 'none' clears it" },
  { name: 'by', value: 'WHO', help: 'who makes the change, for the logs (default cli:<user>@<host>)' },
  { name: 'json', help: 'print the new control as JSON' },
  HELP_FLAG,
]

export const CONTROL_HELP = `Usage: airlock control get --name NAME --redis URL [--json]
       airlock control set --name NAME --redis URL [--limit N] [--mode MODE] [--rate N/min] [--opens-at TIME] [--closes-at TIME]
       airlock control clear --name NAME --redis URL

Reads or changes the live control of a gate on Redis. Every instance of the gate applies a change
within about a second, without a restart; pass holders are never turned away.

Modes: normal; queue-all (every new visitor takes a place in line, the line is held; needs the
waiting room, else acts as closed); closed (new visitors get the busy answer); passthrough (no gating).

Options of set:
${flagHelp(SET_FLAGS)}

Exit status: 0 done; 64 bad flag or value; 69 Redis unreachable or ioredis not installed.

Examples:
  airlock control set --name shop --redis redis://127.0.0.1:6379 --limit 3
  airlock control set --name shop --redis redis://127.0.0.1:6379 --mode closed
  airlock control set --name shop --redis redis://127.0.0.1:6379 --opens-at 2026-12-01T09:00:00Z --rate 600/min
  airlock control get --name shop --redis redis://127.0.0.1:6379 --json
`

/** Runs `airlock control …`; resolves the exit status. */
export async function controlCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [action, ...rest] = argv
  if (action === undefined || action === '-h' || action === '--help') {
    io.out(CONTROL_HELP)
    return EXIT.OK
  }
  if (action !== 'get' && action !== 'set' && action !== 'clear')
    throw new UsageError(`unknown action '${action}'; the actions are get, set and clear`)
  const { flags } = parseFlags(rest, action === 'set' ? SET_FLAGS : GET_FLAGS, false)
  if (flags.has('help')) {
    io.out(CONTROL_HELP)
    return EXIT.OK
  }
  const name = nameFlag('name', flags.get('name') ?? 'default')
  const url = redisFlag(flags, io.env, true)
  const patch = action === 'set' ? patchOf(flags) : undefined
  const by = flags.get('by') ?? `cli:${safeUser()}@${hostname()}`
  const redis = await connectRedis(url, prefixFlag(flags))
  try {
    const control = airlockControl({ name, store: redis.store, by })
    let state: ControlState
    try {
      state =
        action === 'get' ? await control.get() : action === 'clear' ? await control.clear() : await control.set(patch!)
    } catch (err) {
      // The store validates nothing the patch did not: only option errors are the user's.
      if (isAirlockError(err, 'ERR_AIRLOCK_OPTION')) throw new UsageError(err.message)
      throw err
    }
    io.out(
      flags.has('json') ? `${JSON.stringify(state)}\n` : describeState(name, redactUrl(url), state, action !== 'get'),
    )
    return EXIT.OK
  } finally {
    await redis.close()
  }
}

function patchOf(flags: Map<string, string>): ControlPatch {
  const patch: ControlPatch = {}
  const cleared = (v: string): boolean => v === 'none' || v === 'null'
  const limit = flags.get('limit')
  if (limit !== undefined) patch.limit = cleared(limit) ? null : integerFlag('limit', limit, 1, 1_000_000_000)
  const mode = flags.get('mode')
  if (mode !== undefined) {
    if (!(CONTROL_MODES as readonly string[]).includes(mode))
      throw new UsageError(`--mode must be one of ${CONTROL_MODES.join(', ')}, got '${mode}'`)
    patch.mode = mode as ControlPatch['mode']
  }
  const rate = flags.get('rate')
  if (rate !== undefined) patch.admissionRate = cleared(rate) ? null : rateFlag(rate)
  for (const [flag, key] of [
    ['opens-at', 'opensAt'],
    ['closes-at', 'closesAt'],
  ] as const) {
    const v = flags.get(flag)
    if (v === undefined) continue
    if (cleared(v)) patch[key] = null
    else if (Number.isNaN(Date.parse(v)) || !/^\d{4}-\d\d-\d\d/.test(v))
      throw new UsageError(`--${flag} must be an ISO 8601 time (2026-12-01T09:00:00Z) or 'none', got '${v}'`)
    else patch[key] = v
  }
  if (Object.keys(patch).length === 0)
    throw new UsageError('set needs at least one of --limit, --mode, --rate, --opens-at, --closes-at')
  return patch
}

/** `600`, `600/min` or `10/s`: admissions per minute. */
function rateFlag(value: string): number {
  const m = /^(\d+)(?:\/(min|m|s))?$/.exec(value)
  const perMinute = m ? Number(m[1]) * (m[2] === 's' ? 60 : 1) : NaN
  if (!Number.isSafeInteger(perMinute) || perMinute < 1 || perMinute > 1_000_000_000) {
    throw new UsageError(
      `--rate must be a number of visitors per minute (600, 600/min or 10/s) or 'none', got '${value}'`,
    )
  }
  return perMinute
}

function safeUser(): string {
  try {
    return userInfo().username
  } catch {
    return 'unknown'
  }
}

function describeState(name: string, where: string, s: ControlState, changed: boolean): string {
  const none = (v: unknown): string => (v === null ? 'none' : v instanceof Date ? v.toISOString() : String(v))
  const lines = [
    `gate '${name}' on ${where}: control version ${s.version}${changed ? ' (every instance applies it within about 1 s)' : ''}`,
    `  limit          ${s.limit === null ? "none (the gates' own limit)" : s.limit}`,
    `  mode           ${s.mode}`,
    `  admissionRate  ${s.admissionRate === null ? 'none' : `${s.admissionRate}/min`}`,
    `  opensAt        ${none(s.opensAt)}`,
    `  closesAt       ${none(s.closesAt)}`,
  ]
  if (s.updatedAt !== null) lines.push(`  changed        ${s.updatedAt.toISOString()} by ${s.updatedBy ?? 'unknown'}`)
  return `${lines.join('\n')}\n`
}
