/**
 * `airlock hug`'s crowd: visitors that behave like people, arriving by a schedule, and an optional
 * raw flood of cookie-less connections. A visitor keeps its cookies; is refused (`503`) and tries
 * again after the answer's `Retry-After` (jittered as the busy page does); in line (`202`) polls
 * as the waiting page does (`X-Airlock-Poll`, every `Retry-After`); solves the door's puzzle the
 * documented JSON way; once in, confirms its pass (`?__airlock=confirm`), browses its pages a
 * think time apart, and leaves. It gives up after its patience. Local targets are visited from
 * many loopback source addresses, one a visitor, so each client's share works as for people.
 */
import { createHash } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { isIP } from 'node:net'
import { CookieJar, HugClient, NoAnswer, type HugAnswer } from './client.js'
import { HugTally, spread, type AnswerCounts, type HugSecond, type Spread } from './figures.js'

/** What `airlock hug` runs (durations in ms). */
export interface HugOptions {
  url: URL
  /** Visitors arriving over `over` (steady, or a linear `ramp`); or `rate` a second for `duration`. */
  visitors: number
  over: number
  ramp: boolean
  rate: number | undefined
  duration: number
  /** Pages each admitted visitor loads (the first included), `think` apart. */
  pages: number
  think: number
  /** How long a visitor keeps trying to get in before it gives up. */
  patience: number
  /** Cookie-less keep-alive connections hammering the URL while the crowd runs (0: none). */
  flood: number
  /** The site's limit: more visitors on the site at once fails the run. */
  limit: number | undefined
  /** One request's budget. */
  timeout: number
  /** Loopback source addresses to visit from (0: the system's choice; a remote target gets 0). */
  sources: number
}

/** The run's outcome: the summary, the JSON `--json` prints, the report's data. */
export interface HugSummary {
  url: string
  startedAt: string
  /** How long the run took (s). */
  seconds: number
  schedule: {
    visitors: number
    over: number
    ramp: boolean
    rate: number | null
    pages: number
    think: number
    patience: number
  }
  /** Source addresses the visitors came from (1: all from this machine's one). */
  sources: number
  visitors: {
    arrived: number
    admitted: number
    admittedFromLine: number
    gaveUp: number
    turnedAwayInside: number
    onSiteMax: number
    inLineMax: number
  }
  /** Every answer the crowd and the flood got, together and apart. */
  answers: AnswerCounts
  crowd: AnswerCounts
  flood: (AnswerCounts & { connections: number }) | null
  /** The origin's pages to the visitors (ms), and the visitors' waits from arrival to admission (ms). */
  pages: Spread
  waits: Spread
  limit: number | null
  /** Why the run failed (origin errors, over the limit); empty: it passed. */
  failures: string[]
  timeline: HugSecond[]
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const t = setTimeout(done, ms)
    function done(): void {
      clearTimeout(t)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
const jittered = (seconds: number): number => Math.max(200, seconds * 1000 * (0.5 + Math.random()))
const retryAfter = (a: HugAnswer, fallback: number): number => {
  const v = Number(a.headers['retry-after'])
  return Number.isFinite(v) && v >= 0 ? v : fallback
}

/** Whether `hostname` is this machine (visitors then come from loopback addresses of their own). */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '')
  return h === 'localhost' || (isIP(h) === 4 && h.startsWith('127.'))
}

/** The `i`th loopback source address: 127.16.0.2 and up, clear of 127.0.0.x. */
export function sourceAddress(i: number): string {
  return `127.${16 + Math.floor(i / 62_500)}.${2 + (Math.floor(i / 250) % 250)}.${2 + (i % 250)}`
}

/** When visitor `i` of `n` arrives (ms from the start). */
export function arrivalAt(i: number, o: Pick<HugOptions, 'visitors' | 'over' | 'ramp' | 'rate'>): number {
  if (o.rate !== undefined) return (i / o.rate) * 1000
  const share = i / o.visitors
  // A linear ramp: the arrival rate grows evenly, so the share arrived by t is (t/over)².
  return (o.ramp ? Math.sqrt(share) : share) * o.over
}

/** How many visitors the schedule brings. */
export const visitorCount = (o: Pick<HugOptions, 'visitors' | 'rate' | 'duration'>): number =>
  o.rate === undefined ? o.visitors : Math.max(1, Math.floor((o.rate * o.duration) / 1000))

/** Solves the door's challenge: the nonce whose SHA-256(`challenge:nonce`) starts with `difficulty` zero bits (yields now and then). */
export async function solve(challenge: string, difficulty: number, signal: AbortSignal): Promise<number | undefined> {
  for (let nonce = 0; !signal.aborted; nonce++) {
    const d = createHash('sha256').update(`${challenge}:${nonce}`).digest()
    let bits = 0
    for (const b of d) {
      if (b === 0) bits += 8
      else {
        bits += Math.clz32(b) - 24
        break
      }
    }
    if (bits >= difficulty) return nonce
    if (nonce % 4096 === 4095) await new Promise((r) => setImmediate(r))
  }
  return undefined
}

const GET_IN = { accept: 'application/json' }
const PAGE = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }

/** Runs a hug; `onSecond` is told each second's figures. Resolves when every visitor is done (or `signal` stops it). */
export async function runHug(
  o: HugOptions,
  onSecond?: (s: HugSecond, tally: HugTally) => void,
  signal: AbortSignal = new AbortController().signal,
): Promise<HugSummary> {
  const client = new HugClient(o.timeout, o.url.protocol === 'https:')
  const tally = new HugTally()
  const started = Date.now()
  const t0 = performance.now()
  const elapsed = (): number => performance.now() - t0
  const n = visitorCount(o)
  const crowdDone = new AbortController()
  const stop = AbortSignal.any([signal, crowdDone.signal])
  // Every waiting visitor listens for the end (thousands at once).
  setMaxListeners(0, signal, stop)
  const send = async (
    flood: boolean,
    url: URL,
    headers: Record<string, string>,
    jar: CookieJar | undefined,
    from: string | undefined,
  ): Promise<HugAnswer | undefined> => {
    const cookie = jar?.header()
    try {
      const a = await client.request(url, cookie ? { ...headers, cookie } : headers, from)
      jar?.take(a.headers['set-cookie'])
      tally.answer(flood, a.status, a.shield?.kind, a.shield?.reason)
      return a
    } catch (err) {
      if (!(err instanceof NoAnswer)) throw err
      tally.noAnswer(flood)
      return undefined
    }
  }

  async function visit(i: number): Promise<void> {
    const from = o.sources > 0 ? sourceAddress(i % o.sources) : undefined
    const jar = new CookieJar()
    const arrived = elapsed()
    tally.arrive()
    let inLine = false
    let solution: string | undefined
    let admittedAt: number | undefined
    /** Pages loaded: the first comes with a direct admission; after the line's admitted poll it is still to load. */
    let loaded = 0
    const out = (): void => {
      if (inLine) tally.line(-1)
      inLine = false
    }
    // Getting in.
    while (admittedAt === undefined) {
      if (signal.aborted) return out()
      if (elapsed() - arrived > o.patience) {
        tally.giveUp()
        return out()
      }
      const headers: Record<string, string> = { ...GET_IN }
      if (inLine) headers['x-airlock-poll'] = '1'
      if (solution !== undefined) headers['x-airlock-solution'] = solution
      solution = undefined
      const a = await send(false, o.url, headers, jar, from)
      if (a === undefined) {
        await sleep(jittered(2), signal)
        continue
      }
      const kind = a.shield?.kind
      if (kind === undefined && a.status < 500) {
        admittedAt = elapsed()
        tally.admitted(false, admittedAt - arrived, inLine)
        tally.page(a.ms)
        loaded = 1
      } else if (kind === 'admitted') {
        // The line's poll: admitted (its pass set); the page is loaded next, as the waiting page does.
        admittedAt = elapsed()
        tally.admitted(false, admittedAt - arrived, true)
      } else if (kind === 'queued') {
        if (!inLine) tally.line(1)
        inLine = true
        await sleep(retryAfter(a, 2) * 1000 * (0.75 + Math.random() / 2), signal) // as the waiting page polls
      } else if (kind === 'challenge') {
        const c = JSON.parse(a.body) as { challenge?: string; difficulty?: number }
        const nonce =
          c.challenge && c.difficulty !== undefined ? await solve(c.challenge, c.difficulty, signal) : undefined
        if (nonce !== undefined) solution = `${c.challenge} ${nonce}`
      } else if (kind === 'left' || kind === 'refused') {
        tally.giveUp()
        return out()
      } else {
        // Busy (or an origin error): try again when the answer says, as the busy page does.
        out()
        await sleep(jittered(retryAfter(a, 5)), signal)
      }
    }
    out()
    tally.site(1)
    try {
      if (jar.size > 0) {
        // In, with a pass: confirm it, as the admitting page's prefetch (or the waiting page) does.
        const confirm = new URL(o.url)
        confirm.search = '?__airlock=confirm'
        await send(false, confirm, PAGE, jar, from)
      }
      for (let page = loaded; page < o.pages; page++) {
        if (page > 0) await sleep(o.think * (0.5 + Math.random()), signal)
        if (signal.aborted) return
        const a = await send(false, o.url, PAGE, jar, from)
        if (a === undefined) continue
        if (a.shield === undefined && a.status < 500) tally.page(a.ms)
        else if (a.shield?.kind === 'busy') {
          tally.turnedAwayInside++
          return
        }
      }
    } finally {
      tally.site(-1)
    }
  }
  async function flooder(): Promise<void> {
    while (!stop.aborted) {
      const a = await send(true, o.url, { accept: '*/*' }, undefined, undefined)
      if (a === undefined) await sleep(100, stop)
      else if (a.shield === undefined && a.status < 500) tally.admitted(true)
    }
  }

  // One line a second; the last second closes at the end.
  let second = 0
  const tick = (): void => {
    const s = tally.tick(second++) // every second closes, told or not
    onSecond?.(s, tally)
  }
  const ticker = setInterval(tick, 1000)
  const floods = Array.from({ length: o.flood }, flooder)
  const visits: Promise<void>[] = []
  for (let i = 0; i < n && !signal.aborted; i++) {
    const wait = arrivalAt(i, o) - elapsed()
    if (wait > 4) await sleep(wait, signal)
    visits.push(visit(i))
  }
  await Promise.all(visits)
  crowdDone.abort()
  await Promise.all(floods)
  clearInterval(ticker)
  tick()
  client.close()
  return summarize(o, tally, started, (performance.now() - t0) / 1000)
}

function summarize(o: HugOptions, tally: HugTally, started: number, seconds: number): HugSummary {
  const add = (a: AnswerCounts, b: AnswerCounts): AnswerCounts => {
    const by = (x: Record<string, number>, y: Record<string, number>): Record<string, number> => {
      const out = { ...x }
      for (const [k, v] of Object.entries(y)) out[k] = (out[k] ?? 0) + v
      return out
    }
    return {
      requests: a.requests + b.requests,
      admitted: a.admitted + b.admitted,
      busy: a.busy + b.busy,
      busyBy: by(a.busyBy, b.busyBy),
      queued: a.queued + b.queued,
      challenged: a.challenged + b.challenged,
      confirmed: a.confirmed + b.confirmed,
      pages: a.pages + b.pages,
      originErrors: a.originErrors + b.originErrors,
      originErrorsBy: by(a.originErrorsBy, b.originErrorsBy),
      noAnswer: a.noAnswer + b.noAnswer,
    }
  }
  const answers = add(tally.crowd, tally.flood)
  const failures: string[] = []
  if (answers.originErrors > 0) {
    const by = Object.entries(answers.originErrorsBy)
      .map(([s, c]) => `${c} × ${s}`)
      .join(', ')
    failures.push(`the origin answered ${answers.originErrors} request(s) with a 5xx the shield did not send (${by})`)
  }
  if (o.limit !== undefined && tally.onSiteMax > o.limit)
    failures.push(`${tally.onSiteMax} visitors were on the site at once, more than the limit of ${o.limit}`)
  return {
    url: o.url.href,
    startedAt: new Date(started).toISOString(),
    seconds: Math.round(seconds * 10) / 10,
    schedule: {
      visitors: tally.arrived,
      over: o.rate === undefined ? o.over : o.duration,
      ramp: o.ramp,
      rate: o.rate ?? null,
      pages: o.pages,
      think: o.think,
      patience: o.patience,
    },
    sources: Math.max(1, o.sources),
    visitors: {
      arrived: tally.arrived,
      admitted: tally.crowd.admitted,
      admittedFromLine: tally.admittedFromLine,
      gaveUp: tally.gaveUp,
      turnedAwayInside: tally.turnedAwayInside,
      onSiteMax: tally.onSiteMax,
      inLineMax: tally.inLineMax,
    },
    answers,
    crowd: tally.crowd,
    flood: o.flood > 0 ? { ...tally.flood, connections: o.flood } : null,
    pages: spread(tally.pages),
    waits: spread(tally.waits),
    limit: o.limit ?? null,
    failures,
    timeline: tally.timeline,
  }
}
