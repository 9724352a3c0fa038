/**
 * `airlock report`: a gate's per-minute history on Redis, from `--from` to `--to`, as JSON, CSV or
 * one self-contained HTML page (src/core/report.ts reads it, src/pages/report.ts draws the page).
 */
import { airlockReport, reportCsv } from '../core/report.js'
import { renderReportHtml } from '../pages/report.js'
import { commandFlags, durationFlag, flagHelp, nameFlag, parseFlags } from './args.js'
import type { CliIo } from './exec.js'
import { EXIT, UsageError } from './exit.js'
import { connectRedis, prefixFlag, redisFlag } from './redis.js'

const FLAGS = commandFlags(
  `
    --name NAME      the gate's name option (default 'default')
    --from TIME      start: ISO 8601 (2026-12-01T09:00:00Z) or a time back from now (90m, 24h) (default 24h)
    --to TIME        end: ISO 8601 or a time back from now (default now)
    --format FORMAT  json | csv | html (default json)
    --redis URL      Redis the gates use: redis://[:password@]host[:port][/db] (default $AIRLOCK_REDIS_URL; required)
  `,
  { prefix: true },
)

export const REPORT_HELP = `Usage: airlock report --name NAME --redis URL [--from TIME] [--to TIME] [--format json|csv|html]

Prints what a gate's visitors saw, minute by minute, from the history its instances keep in Redis
(30 days by default; the gate's history option): admitted (and from the line), turned away by
reason, places abandoned, visits ended by cause, in line at each minute's end, wait in line
p50/p90/longest and visit length p50/p90 (seconds), then the totals of the range.

json: { name, from, to, rows, totals }. csv: one line a minute, the same figures. html: one page
with charts (in line, admitted a minute, waits) and the totals, that prints well.

Options:
${flagHelp(FLAGS)}

Exit status: 0 printed; 64 bad flag or value; 69 Redis unreachable or ioredis not installed.

Examples:
  airlock report --name shop --redis redis://127.0.0.1:6379 --from 2026-12-01T08:00:00Z --to 2026-12-01T12:00:00Z --format html > hug.html
  airlock report --name shop --redis redis://127.0.0.1:6379 --from 2h --format csv > last-2h.csv
`

const FORMATS = ['json', 'csv', 'html'] as const

/** Runs `airlock report`; resolves the exit status. */
export async function reportCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { flags } = parseFlags(argv, FLAGS, false)
  if (flags.has('help')) {
    io.out(REPORT_HELP)
    return EXIT.OK
  }
  const name = nameFlag('name', flags.get('name') ?? 'default')
  const format = flags.get('format') ?? 'json'
  if (!(FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be one of ${FORMATS.join(', ')}, got '${format}'`)
  const now = Date.now()
  const to = flags.has('to') ? timeFlag('to', flags.get('to')!, now) : now
  const from = flags.has('from') ? timeFlag('from', flags.get('from')!, now) : to - 24 * 3_600_000
  if (from > to)
    throw new UsageError(
      `--from must be before --to (${new Date(to).toISOString()}), got ${new Date(from).toISOString()}`,
    )
  const redis = await connectRedis(redisFlag(flags, io.env, true), prefixFlag(flags))
  try {
    const report = await airlockReport({ store: redis.store, name, from, to })
    io.out(
      format === 'csv'
        ? reportCsv(report)
        : format === 'html'
          ? renderReportHtml(report)
          : `${JSON.stringify(report, null, 2)}\n`,
    )
    return EXIT.OK
  } finally {
    await redis.close()
  }
}

/** An ISO 8601 time, or a duration back from `now` (`90m`, `24h`; up to 400 days). */
function timeFlag(flag: string, value: string, now: number): number {
  if (/^\d{4}-\d\d-\d\d/.test(value)) {
    const t = Date.parse(value)
    if (Number.isNaN(t))
      throw new UsageError(
        `--${flag} must be an ISO 8601 time (2026-12-01T09:00:00Z) or a time back from now (90m, 24h), got '${value}'`,
      )
    return t
  }
  const days = /^(\d{1,3})d$/.exec(value)
  if (days) return now - Number(days[1]) * 86_400_000
  try {
    return now - durationFlag(flag, value, { min: 1 })
  } catch {
    throw new UsageError(
      `--${flag} must be an ISO 8601 time (2026-12-01T09:00:00Z) or a time back from now (90m, 24h, 7d), got '${value}'`,
    )
  }
}
