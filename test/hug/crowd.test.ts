/**
 * `airlock hug`'s parts that need no site: the arrival schedules, the source addresses, reading
 * the shield's header, the visitor's cookie jar, the door's puzzle, and the tally's seconds (the
 * runs against real sites: test/cli/hug.test.ts, test/browser/hug-report.test.ts).
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CookieJar, readShieldHeader } from '../../src/hug/client.js'
import { arrivalAt, isLoopback, solve, sourceAddress, visitorCount } from '../../src/hug/crowd.js'
import { HugTally } from '../../src/hug/figures.js'
import { hugOptions } from '../../src/cli/hug.js'

describe('airlock hug: schedule, addresses, header, cookies, puzzle', () => {
  it('arrivals: evenly over --over, a ramp whose rate grows evenly, or --rate a second', () => {
    const even = { visitors: 100, over: 10_000, ramp: false, rate: undefined }
    expect([0, 50, 99].map((i) => arrivalAt(i, even))).toEqual([0, 5_000, 9_900])
    const ramp = { ...even, ramp: true }
    // Half the visitors arrive in the last 29 % of the time (1 - 1/√2).
    expect(arrivalAt(50, ramp)).toBeCloseTo(10_000 * Math.SQRT1_2, 6)
    expect(arrivalAt(25, ramp)).toBe(5_000)
    expect(arrivalAt(30, { ...even, rate: 10 })).toBe(3_000)
    expect(visitorCount({ visitors: 7, rate: 50, duration: 2_500 })).toBe(125)
    expect(visitorCount({ visitors: 7, rate: undefined, duration: 2_500 })).toBe(7)
  })

  it('source addresses: distinct loopback addresses, clear of 127.0.0.x; a local target is told apart', () => {
    const all = new Set(Array.from({ length: 65_000 }, (_, i) => sourceAddress(i)))
    expect(all.size).toBe(65_000)
    for (const a of all)
      expect(a).toMatch(
        /^127\.(1[6-9])\.([2-9]|[1-9]\d|1\d\d|2[0-4]\d|250|251)\.([2-9]|[1-9]\d|1\d\d|2[0-4]\d|250|251)$/,
      )
    expect(['127.0.0.1', 'localhost', '127.3.4.5'].map(isLoopback)).toEqual([true, true, true])
    expect(['example.com', '10.0.0.1', '[::1]'].map(isLoopback)).toEqual([false, false, false])
  })

  it('reads the Airlock header: kind, reason, gate (quoted or not); absent: the origin', () => {
    expect(readShieldHeader('busy; reason=client-share; gate=shop')).toEqual({
      kind: 'busy',
      reason: 'client-share',
      gate: 'shop',
    })
    expect(readShieldHeader('queued; gate="9shop"')).toEqual({ kind: 'queued', reason: undefined, gate: '9shop' })
    expect(readShieldHeader(undefined)).toBeUndefined()
    expect(readShieldHeader('')).toBeUndefined()
  })

  it('the cookie jar keeps what a browser keeps, and forgets cleared cookies', () => {
    const jar = new CookieJar()
    expect(jar.header()).toBeUndefined()
    jar.take(['airlock_pass=p1~a; Path=/; HttpOnly; SameSite=Lax', 'airlock_ticket=t1; Path=/'])
    expect(jar.header()).toBe('airlock_pass=p1~a; airlock_ticket=t1')
    jar.take(['airlock_ticket=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'airlock_pass=p1~b; Path=/'])
    expect(jar.header()).toBe('airlock_pass=p1~b')
    jar.take(['old=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT'])
    expect(jar.size).toBe(1)
  })

  it('solves the door the documented way: SHA-256(challenge:nonce) with the leading zero bits', async () => {
    const nonce = (await solve('c1~shop~v~10~x~y~z', 10, new AbortController().signal))!
    const d = createHash('sha256').update(`c1~shop~v~10~x~y~z:${nonce}`).digest()
    expect(d[0]).toBe(0)
    expect(d[1]! >> 6).toBe(0)
    const stopped = new AbortController()
    stopped.abort()
    expect(await solve('c', 40, stopped.signal)).toBeUndefined()
  })

  it('the tally: each second its answers, and the most in line and on the site during it', () => {
    const t = new HugTally()
    t.line(1)
    t.line(1)
    t.line(-1)
    t.answer(false, 503, 'busy', 'full')
    t.answer(true, 503, 'busy', 'client-share')
    t.answer(false, 500, undefined, undefined)
    t.answer(false, 502, 'origin-error', 'refused')
    t.answer(false, 200, undefined, undefined)
    t.answer(false, 202, 'queued', undefined)
    const first = t.tick(0)
    expect(first).toMatchObject({ t: 0, inLine: 2, busy: 2, queued: 1, originErrors: 2 })
    expect(t.crowd).toMatchObject({
      requests: 5,
      busy: 1,
      busyBy: { full: 1 },
      originErrors: 2,
      originErrorsBy: { '500': 1, '502': 1 },
      pages: 1,
    })
    expect(t.flood).toMatchObject({ requests: 1, busy: 1, busyBy: { 'client-share': 1 } })
    expect(t.tick(1)).toMatchObject({ t: 1, inLine: 1, busy: 0 })
  })
})

describe('airlock hug: flags', () => {
  it('defaults, the URL first or last, and a remote target gets no source addresses', () => {
    const a = hugOptions(['http://127.0.0.1:3000/', '--visitors', '50'])
    expect(a).toMatchObject({
      report: 'airlock-hug.html',
      json: false,
      options: { visitors: 50, over: 10_000, pages: 3, think: 2_000, patience: 60_000, flood: 0, sources: 50 },
    })
    const b = hugOptions(['--rate', '20', '--duration', '5s', '--report', 'none', 'http://example.com/'])
    expect(b).toMatchObject({ report: undefined, options: { rate: 20, duration: 5_000, sources: 0 } })
    expect(() => hugOptions(['http://127.0.0.1/', '--rate', '5', '--visitors', '3'])).toThrow(
      '--rate runs for --duration: give it without --visitors, --over and --ramp',
    )
    expect(() => hugOptions(['ftp://x/'])).toThrow("the URL must be http:// or https://, got 'ftp://x/'")
    expect(() => hugOptions(['http://127.0.0.1/', '--think', '2'])).toThrow('--think is in milliseconds without a unit')
  })
})
