/**
 * A small, strict flag parser: `--flag value`, `--flag=value`, short aliases, `--` to end the
 * flags. Unknown flags, missing values and repeated flags are usage errors naming the flag.
 */
import { trustPolicy } from '../base/client-address.js'
import { MAX_DURATION, nearest, safeName, TIMER_BOUND } from '../base/validate.js'
import { UsageError } from './exit.js'

export interface FlagSpec {
  /** Long name, without the dashes. */
  name: string
  /** One-letter alias, without the dash. */
  short?: string
  /** Placeholder of the value in help (`N`, `URL`); absent for a switch. */
  value?: string
  /** One line for `--help`. */
  help: string
}

/**
 * Flag specs from a table written as the help shows it, one flag a line:
 * `--port N  port to listen on (default 3000)`, `-h, --help  show this help` (two or more spaces
 * before the help text). The table is the one list: the parser's flags and the help's lines.
 */
export function flagTable(text: string): FlagSpec[] {
  const specs: FlagSpec[] = []
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const m = /^\s*(?:-([a-zA-Z]), )?--([a-z][a-z-]*)(?: ([A-Z][A-Za-z0-9:|/_.-]*))?\s{2,}(\S.*)$/.exec(line)
    if (!m) throw new Error(`flagTable: cannot read the line ${JSON.stringify(line)}`)
    specs.push({ name: m[2]!, help: m[4]!, ...(m[1] ? { short: m[1] } : {}), ...(m[3] ? { value: m[3] } : {}) })
  }
  return specs
}

/** The flags every command words the same. */
export const HELP_FLAG: FlagSpec = { name: 'help', short: 'h', help: 'show this help' }
export const PREFIX_FLAG: FlagSpec = {
  name: 'prefix',
  value: 'PREFIX',
  help: "the Redis store's key prefix (default airlock)",
}

/**
 * A command's flags: its table (see {@link flagTable}), then `--prefix` for a command on Redis and
 * `--help`, last as every command lists them.
 */
export function commandFlags(table: string, options: { prefix: boolean }): FlagSpec[] {
  return [...flagTable(table), ...(options.prefix ? [PREFIX_FLAG] : []), HELP_FLAG]
}

export interface ParsedFlags {
  /** Values of the flags given (switches hold `''`). */
  flags: Map<string, string>
  /** Everything after the flags: after `--`, or from the first non-flag word on. */
  rest: string[]
}

/**
 * Parses `argv` against `specs`. With `positionals: false` any non-flag word is a usage error;
 * with `true` the first one starts `rest` (a command and its own arguments, never parsed here).
 */
export function parseFlags(argv: readonly string[], specs: readonly FlagSpec[], positionals: boolean): ParsedFlags {
  const flags = new Map<string, string>()
  const byName = new Map(specs.map((s) => [s.name, s]))
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]))
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') return { flags, rest: argv.slice(i + 1) }
    if (!arg.startsWith('-') || arg === '-') {
      if (positionals) return { flags, rest: argv.slice(i) }
      throw new UsageError(`unexpected argument '${arg}'`)
    }
    let spec: FlagSpec | undefined
    let inline: string | undefined
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=')
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
      if (eq !== -1) inline = arg.slice(eq + 1)
      spec = byName.get(name)
      if (!spec) {
        const near = nearest(name, [...byName.keys()])
        throw new UsageError(`unknown flag --${name}${near === undefined ? '' : `; did you mean --${near}?`}`)
      }
    } else {
      spec = arg.length === 2 ? byShort.get(arg[1]!) : undefined
      if (!spec) throw new UsageError(`unknown flag ${arg}`)
    }
    const shown = `--${spec.name}`
    if (flags.has(spec.name)) throw new UsageError(`${shown} is given twice`)
    if (spec.value === undefined) {
      if (inline !== undefined) throw new UsageError(`${shown} takes no value`)
      flags.set(spec.name, '')
      continue
    }
    let value = inline
    if (value === undefined) {
      const next = argv[i + 1]
      if (next === undefined || next.startsWith('--'))
        throw new UsageError(`${shown} needs a value (${shown} ${spec.value})`)
      value = next
      i++
    }
    flags.set(spec.name, value)
  }
  return { flags, rest: [] }
}

/** Renders flags as aligned help lines. */
export function flagHelp(specs: readonly FlagSpec[]): string {
  const left = specs.map((s) => `${s.short ? `-${s.short}, ` : '    '}--${s.name}${s.value ? ` ${s.value}` : ''}`)
  const width = Math.max(...left.map((l) => l.length)) + 2
  return specs.map((s, i) => `  ${left[i]!.padEnd(width)}${s.help}`).join('\n')
}

/**
 * `--trust-proxy`: the proxies in front, whose forwarding headers count: addresses, CIDRs and the
 * names `loopback`, `linklocal`, `uniquelocal`, comma-separated (checked by the option's own
 * validator), a number of hops (`1`: the peer is your one proxy, as Express and Fastify read a
 * number), or `all` (every peer: only where nothing but your proxies can reach this port).
 */
export function trustFlag(value: string): true | number | string[] {
  if (value.trim() === 'all') return true
  if (/^\s*\d+\s*$/.test(value)) {
    const hops = Number(value)
    try {
      trustPolicy(hops, '--trust-proxy')
    } catch (err) {
      throw new UsageError((err as Error).message)
    }
    return hops
  }
  const list = value
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '')
  if (list.length === 0)
    throw new UsageError(
      `--trust-proxy needs the addresses of your proxies (127.0.0.1, 10.0.0.0/8, loopback) or all, got '${value}'`,
    )
  try {
    trustPolicy(list, '--trust-proxy')
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  return list
}

/** A positive integer flag (`--limit 3`). */
export function integerFlag(flag: string, value: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER
        ? min === 1
          ? 'a positive integer'
          : `an integer of at least ${min}`
        : `an integer from ${min} to ${max}`
    throw new UsageError(`--${flag} must be ${range}, got '${value}'`)
  }
  return n
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/**
 * A duration flag: milliseconds (`60000`) or a number with a unit (`500ms`, `30s`, `5m`, `1h`), at
 * most {@link MAX_DURATION} ms (about 24.8 days). With `forever`, the words `forever`/`infinity`
 * mean no limit.
 */
export function durationFlag(
  flag: string,
  value: string,
  options: { min: number; forever?: boolean; unitless?: number },
): number {
  if (options.forever && /^(forever|infinity)$/i.test(value)) return Infinity
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value)
  const ms = match ? Math.round(Number(match[1]) * UNITS[match[2] ?? 'ms']!) : NaN
  // A bare number this small is surely seconds (`--ttl 60`): say so rather than run with 60 ms.
  if (match && match[2] === undefined && options.unitless !== undefined && ms >= options.min && ms < options.unitless) {
    throw new UsageError(
      `--${flag} is in milliseconds without a unit: ${value} is ${value} ms; did you mean ${value}s? (write ${value}ms if you do mean milliseconds)`,
    )
  }
  if (!Number.isFinite(ms) || ms < options.min) {
    const what = options.min > 0 ? 'a positive duration' : 'a duration'
    throw new UsageError(
      `--${flag} must be ${what} in ms or with a unit (500ms, 30s, 5m, 1h)${options.forever ? ", or 'forever'" : ''}, got '${value}'`,
    )
  }
  if (ms > MAX_DURATION) {
    throw new UsageError(
      `--${flag} must be at most ${MAX_DURATION} ms (${TIMER_BOUND.why})${options.forever ? ", or 'forever'" : ''}, got '${value}'`,
    )
  }
  return ms
}

/** `--host`: an address to listen on (default 127.0.0.1); an empty one is refused. */
export function hostFlag(value: string | undefined): string {
  if (value === undefined) return '127.0.0.1'
  if (value.trim() === '' || /\s/.test(value))
    throw new UsageError(`--host must be an address such as 127.0.0.1 or 0.0.0.0, got '${value}'`)
  return value
}

/** `--port` (0 to 65535, default `port`) and `--host` (default 127.0.0.1): where a server listens. */
export function listenFlags(flags: ReadonlyMap<string, string>, port: number): { port: number; host: string } {
  return {
    port: flags.has('port') ? integerFlag('port', flags.get('port')!, 0, 65_535) : port,
    host: hostFlag(flags.get('host')),
  }
}

/** A name flag (`--name report`), with the same rule as semaphore names. */
export function nameFlag(flag: string, value: string): string {
  try {
    return safeName(`--${flag}`, value)
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}
