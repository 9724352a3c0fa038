/**
 * `airlock hug <url>`: rehearses a hug against your own site (src/hug/): a crowd that behaves like
 * people and an optional raw flood, a line a second while it runs (rewritten in place on a
 * terminal, plain lines when piped), then the summary, an HTML report, and an exit status a CI
 * step can use.
 */
import { writeFileSync } from 'node:fs'
import { isLoopback, runHug, visitorCount, type HugOptions, type HugSummary } from '../hug/crowd.js'
import type { HugSecond, HugTally } from '../hug/figures.js'
import { renderHugReport, summaryText } from '../hug/report.js'
import { commandFlags, durationFlag, flagHelp, integerFlag, parseFlags } from './args.js'
import type { CliIo } from './exec.js'
import { EXIT, UsageError } from './exit.js'

const FLAGS = commandFlags(
  `
    --visitors N      visitors arriving over --over (default 1000)
    --over DURATION   how long they take to arrive, evenly (default 10s)
    --ramp            arrivals grow from none to their peak over --over instead of evenly
    --rate N          N visitors a second for --duration instead of --visitors/--over
    --duration TIME   how long --rate runs (default 30s)
    --pages N         pages each admitted visitor loads, the first included (default 3)
    --think DURATION  pause between a visitor's pages, jittered 0.5x..1.5x (default 2s)
    --patience TIME   how long a visitor keeps trying to get in before it gives up (default 60s)
    --flood N         N cookie-less keep-alive connections hammering the URL meanwhile (default 0)
    --limit N         your limit: fail when more visitors are on the site at once
    --sources N       loopback source addresses for a local target (default one a visitor, up to 65000; 0: one)
    --timeout TIME    one request's budget (default 10s)
    --report FILE     the HTML report (default airlock-hug.html; none: no file)
    --json            print the summary as JSON (the timeline included) instead of text
  `,
  { prefix: false },
)

export const HUG_HELP = `Usage: airlock hug <url> [--visitors 1000 --over 10s | --rate N --duration 30s] [--flood N] [--limit N]

Rehearses a hug against your own site: a crowd that behaves like people. Each visitor keeps its
cookies, is refused and tries again after Retry-After as the busy page does, polls in line as the
waiting page does, solves the door's puzzle (the JSON way), confirms its pass, loads --pages pages
--think apart, and leaves; it gives up after --patience. With --flood, raw cookie-less
connections hammer the URL meanwhile (what autocannon does). A local target (127.x, localhost) is
visited from many loopback addresses, one a visitor, so each client's share works as for people;
a remote one sees every visitor from this machine (the output says so).

Answers are told apart by the shield's Airlock header: busy (with its reason), in line, the
door's challenge; a 5xx without it is your origin's error. Each second prints a line (in line, on
the site, admitted, busy, origin errors, page p50/p99); the end prints a summary and writes the
report (charts over time). Works against any URL: the gate in your app, airlock proxy, nginx.

Options:
${flagHelp(FLAGS)}

Exit status: 0 passed; 1 the origin answered a 5xx the shield did not send, or more visitors were
on the site at once than --limit; 64 bad flag or value.

Examples:
  npx airlock-shield hug http://127.0.0.1:3000/ --visitors 2000 --over 10s --flood 100
  npx airlock-shield hug http://127.0.0.1:8080/ --rate 50 --duration 2m --limit 20 --json > hug.json
`

/** The options of a command line (usage errors name the flag). */
export function hugOptions(
  argv: readonly string[],
): { options: HugOptions; report: string | undefined; json: boolean } | 'help' {
  // The URL first (`hug URL --flags`) or last (`hug --flags URL`).
  const first = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : undefined
  const parsed = first === undefined ? parseFlags(argv, FLAGS, true) : parseFlags(argv.slice(1), FLAGS, false)
  const flags = parsed.flags
  const rest = first === undefined ? parsed.rest : [first]
  if (flags.has('help')) return 'help'
  if (rest.length !== 1)
    throw new UsageError(
      rest.length === 0
        ? 'the URL to rehearse on is required: airlock hug http://127.0.0.1:3000/'
        : `one URL only, got '${rest.join(' ')}'`,
    )
  let url: URL
  try {
    url = new URL(rest[0]!)
  } catch {
    throw new UsageError(`the URL must be absolute (http://127.0.0.1:3000/), got '${rest[0]}'`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`the URL must be http:// or https://, got '${rest[0]}'`)
  if (flags.has('rate') && (flags.has('visitors') || flags.has('over') || flags.has('ramp')))
    throw new UsageError('--rate runs for --duration: give it without --visitors, --over and --ramp')
  if (flags.has('duration') && !flags.has('rate'))
    throw new UsageError('--duration is for --rate (with --visitors, --over says how long they take to arrive)')
  const int = (name: string, fallback: number, min = 1, max = 1_000_000): number =>
    flags.has(name) ? integerFlag(name, flags.get(name)!, min, max) : fallback
  const ms = (name: string, fallback: string, min = 1): number =>
    durationFlag(name, flags.get(name) ?? fallback, { min, unitless: 1000 })
  const rate = flags.has('rate') ? int('rate', 1, 1, 100_000) : undefined
  const local = isLoopback(url.hostname) && url.hostname !== 'localhost'
  const options: HugOptions = {
    url,
    visitors: int('visitors', 1000),
    over: ms('over', '10s', 0),
    ramp: flags.has('ramp'),
    rate,
    duration: ms('duration', '30s'),
    pages: int('pages', 3),
    think: ms('think', '2s', 0),
    patience: ms('patience', '60s', 0),
    flood: int('flood', 0, 0, 10_000),
    limit: flags.has('limit') ? int('limit', 1) : undefined,
    timeout: ms('timeout', '10s'),
    sources: 0,
  }
  const wanted = flags.has('sources') ? int('sources', 0, 0, 65_000) : Math.min(65_000, visitorCount(options))
  options.sources = local ? wanted : 0
  const report = flags.get('report') ?? 'airlock-hug.html'
  return { options, report: report === 'none' ? undefined : report, json: flags.has('json') }
}

/** The line a second: `  12s  in line 412  on site 20  admitted 60  busy 1,203  origin errors 0  pages p50 3 ms p99 12 ms`. */
export function progressLine(s: HugSecond, tally: HugTally): string {
  const n = (v: number): string => v.toLocaleString('en-US')
  const page = s.pageP50 === null ? 'pages –' : `pages p50 ${Math.round(s.pageP50)} ms p99 ${Math.round(s.pageP99!)} ms`
  const all = tally.crowd.admitted + tally.flood.admitted
  const busy = tally.crowd.busy + tally.flood.busy
  const errors = tally.crowd.originErrors + tally.flood.originErrors
  return `${String(s.t + 1).padStart(4)}s  in line ${n(s.inLine)}  on site ${n(s.onSite)}  admitted ${n(all)}  busy ${n(busy)}  origin errors ${n(errors)}  ${page}`
}

/** Runs `airlock hug`; resolves the exit status (SIGINT stops the crowd and still reports). */
export async function hugCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const parsed = hugOptions(argv)
  if (parsed === 'help') {
    io.out(HUG_HELP)
    return EXIT.OK
  }
  const { options, report, json } = parsed
  const say = (line: string): void => (json ? io.err(line) : io.out(`${line}\n`))
  const count = visitorCount(options)
  say(
    `airlock hug: ${count.toLocaleString('en-US')} visitors to ${options.url.href}${options.flood ? ` and a flood of ${options.flood} connections` : ''}`,
  )
  if (options.sources === 0) {
    say(
      isLoopback(options.url.hostname)
        ? 'airlock hug: localhost may be ::1: every visitor comes from one address (use http://127.0.0.1:PORT/ for an address a visitor)'
        : "airlock hug: the target is not on this machine: every visitor comes from this machine's one address, so the site's client share (clientShare) refuses them together; rehearse from many machines, or with clientShare: false",
    )
  }
  const stop = new AbortController()
  const interrupt = (): void => stop.abort()
  process.once('SIGINT', interrupt)
  const live = io.tty === true && !json
  let summary: HugSummary
  try {
    summary = await runHug(
      options,
      (s, tally) => {
        const line = progressLine(s, tally)
        if (live) io.out(`\r\x1b[2K${line}`)
        else say(line)
      },
      stop.signal,
    )
  } finally {
    process.removeListener('SIGINT', interrupt)
  }
  if (live) io.out('\n')
  if (report !== undefined) writeFileSync(report, renderHugReport(summary))
  if (json) io.out(`${JSON.stringify(summary)}\n`)
  else io.out(`${summaryText(summary)}\n${report === undefined ? '' : `  report     ${report}\n`}`)
  return summary.failures.length === 0 ? EXIT.OK : EXIT.FAILURE
}
