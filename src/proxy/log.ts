/**
 * The proxy's log: one line per request (the access log) and every 5xx the proxy makes itself, with
 * its cause. JSON lines in pino's shape (`level` 20/30/40/50, `time` in ms, `msg`), so pino-pretty,
 * jq and log shippers read them as they read Fastify's; or `pretty`, one short human line each.
 * Lines are gathered and written once per turn of the event loop (a line per request must not cost
 * a write per request).
 */
import { hostname } from 'node:os'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export const LOG_FORMATS = ['json', 'pretty'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

const NUMBER: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50, silent: Infinity }

/** Where lines go: anything with `write(text)` (default `process.stdout`). */
export interface LogDestination {
  write(text: string): unknown
}

/** `log` of `createProxy`. */
export interface ProxyLogOptions {
  /** Lines below this level are not written. Default `'info'` (an access line per request). */
  level?: LogLevel
  /** `'json'` (default): a JSON object per line, pino's fields. `'pretty'`: a short line for a person. */
  format?: LogFormat
  /** Default `process.stdout`. */
  destination?: LogDestination
}

/** One line's fields beyond level, time and message. */
export type LogFields = object

export class ProxyLog {
  readonly #min: number
  readonly #pretty: boolean
  readonly #to: LogDestination
  readonly #base: string
  #pending = ''
  #scheduled = false

  constructor(options: ProxyLogOptions = {}) {
    this.#min = NUMBER[options.level ?? 'info']
    this.#pretty = options.format === 'pretty'
    this.#to = options.destination ?? process.stdout
    this.#base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`
  }

  /** True when lines of `level` are written (so callers can skip building them). */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean {
    return NUMBER[level] >= this.#min
  }

  debug(fields: LogFields, msg = ''): void {
    this.#line(20, fields, msg)
  }
  info(fields: LogFields, msg = ''): void {
    this.#line(30, fields, msg)
  }
  warn(fields: LogFields, msg = ''): void {
    this.#line(40, fields, msg)
  }
  error(fields: LogFields, msg = ''): void {
    this.#line(50, fields, msg)
  }

  /** Writes what is gathered now (on close). */
  flush(): void {
    if (this.#pending === '') return
    const text = this.#pending
    this.#pending = ''
    this.#to.write(text)
  }

  #line(level: number, fields: LogFields, msg: string): void {
    if (level < this.#min) return
    const time = Date.now()
    this.#pending += this.#pretty
      ? pretty(level, time, fields, msg)
      : `{"level":${level},"time":${time}${this.#base},${JSON.stringify(fields).slice(1, -1)}${Object.keys(fields).length ? ',' : ''}"msg":${JSON.stringify(msg)}}\n`
    if (this.#pending.length > 65_536) this.flush()
    else if (!this.#scheduled) {
      this.#scheduled = true
      setImmediate(() => {
        this.#scheduled = false
        this.flush()
      })
    }
  }
}

const NAMES: Record<number, string> = { 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR' }

/** `12:00:01.123 INFO  GET /shop 200 12ms admit upstream 200 11ms` and any other fields as key=value. */
function pretty(level: number, time: number, fields: LogFields, msg: string): string {
  const clock = new Date(time).toISOString().slice(11, 23)
  const rest = Object.entries(fields as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"]/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ')
  return `${clock} ${NAMES[level]!.padEnd(5)} ${msg}${rest ? ` ${rest}` : ''}\n`
}

/** A line written whatever the level (the command's "listening" line): JSON in pino's shape, or the text alone. */
export function noticeLine(format: LogFormat, msg: string): string {
  return format === 'pretty'
    ? `${msg}\n`
    : `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, hostname: hostname(), msg })}\n`
}
