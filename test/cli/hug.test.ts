/**
 * `airlock hug` as a user runs it (a real process, through tsx) against a real Fastify site with
 * the gate as the Fastify example sets it (limit 20, memory store), and against an origin with no
 * shield that fails above 20 requests in flight (issue 40's bars): what the report counts is what
 * the gate counted (admitted, busy, in line), a healthy origin shows no errors and passes, and a
 * failing one fails the run (exit 1) with the failures in the JSON and the HTML report.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { airlockShield } from '../../src/fastify.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { HugSummary } from '../../src/hug/crowd.js'
import type { GateCounters } from '../../src/gate/status-types.js'
import { airlock } from './harness.js'

const SECRET = 'hug-test-secret-of-at-least-32-bytes-long'
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-hug-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

/** The Fastify example's site (limit 20, memory store, /health and /static bypassed), quiet. */
async function site(
  gate: Record<string, unknown> = {},
): Promise<{ url: string; counters: () => Promise<GateCounters> }> {
  app = Fastify({ forceCloseConnections: true })
  await app.register(airlockShield, {
    limit: 20,
    store: memoryStore(),
    secret: SECRET,
    bypass: ['/health', '/static'],
    logger: { warn: () => {}, info: () => {} },
    ...gate,
  })
  app.get('/', async () => ({ hello: 'world' }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const gateOf = app
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`,
    counters: async () => (await gateOf.airlockGate.status()).instances.find((i) => i.self)!.counters,
  }
}

async function hug(
  url: string,
  flags: string[],
): Promise<{ code: number | null; summary: HugSummary; stdout: string; stderr: string; report: string }> {
  const report = join(dir, `report-${Math.random().toString(36).slice(2)}.html`)
  const run = airlock(['hug', url, '--json', '--report', report, ...flags])
  const { code, stdout, stderr } = await run.exited
  expect(stdout, stderr).toMatch(/^\{/)
  return { code, summary: JSON.parse(stdout) as HugSummary, stdout, stderr, report: readFileSync(report, 'utf8') }
}

/** Within 1 % of `expected` (and exactly 0 when it is 0). */
const within = (actual: number, expected: number): void => {
  expect(Math.abs(actual - expected), `${actual} against ${expected}`).toBeLessThanOrEqual(Math.floor(expected * 0.01))
}

describe('airlock hug against the Fastify example at limit 20 (issue 40)', () => {
  it('2,000 visitors over 10 s and a flood of 100: the report counts what the gate counted; no origin errors; passed', async () => {
    const s = await site()
    const { code, summary, stderr, report } = await hug(s.url, [
      '--visitors',
      '2000',
      '--over',
      '10s',
      '--flood',
      '100',
      '--patience',
      '3s',
      '--pages',
      '2',
      '--think',
      '300ms',
      '--limit',
      '20',
    ])
    const gate = await s.counters()
    expect(stderr).toContain('airlock hug: 2,000 visitors')
    expect(summary.visitors.arrived).toBe(2000)
    within(summary.answers.admitted, gate.admitted)
    within(summary.answers.busy, gate.busy - gate.challenged)
    within(summary.answers.queued, gate.queued)
    within(summary.answers.busyBy['client-share'] ?? 0, gate.clientShare)
    // Visitors came from addresses of their own: the crowd is refused only because the site is
    // full; the flood (one address) is refused too, for its client's share among others.
    expect(summary.sources).toBe(2000)
    expect(Object.keys(summary.crowd.busyBy)).toEqual(['full'])
    expect(summary.flood!.busy).toBeGreaterThan(summary.flood!.requests * 0.9)
    expect(summary.flood!.busyBy['client-share']).toBeGreaterThan(0)
    expect(summary.visitors.admitted).toBeGreaterThanOrEqual(15)
    expect(summary.visitors.onSiteMax).toBeLessThanOrEqual(20)
    expect([summary.answers.originErrors, summary.failures, code]).toEqual([0, [], 0])
    expect(summary.timeline.length).toBeGreaterThanOrEqual(11)
    expect(report).toContain('Passed: no origin errors, never more than 20 visitors on the site')
  }, 120_000)

  it('with the line: visitors wait in line, are admitted by its polls, and the counts still match', async () => {
    const s = await site({ limit: 5, passTtl: '4s', provisionalTtl: '2s', queue: { pollInterval: 500 } })
    const { code, summary } = await hug(s.url, [
      '--visitors',
      '60',
      '--over',
      '2s',
      '--patience',
      '40s',
      '--pages',
      '2',
      '--think',
      '300ms',
    ])
    const gate = await s.counters()
    expect(summary.visitors.admittedFromLine).toBeGreaterThan(10)
    expect(summary.visitors.inLineMax).toBeGreaterThan(10)
    within(summary.answers.admitted, gate.admitted)
    within(summary.visitors.admittedFromLine, gate.admittedFromLine)
    within(summary.answers.queued, gate.queued)
    within(summary.answers.busy, gate.busy - gate.challenged)
    expect(summary.visitors.admitted + summary.visitors.gaveUp).toBe(60)
    expect(summary.waits.p99).toBeGreaterThan(1000)
    expect(code).toBe(0)
  }, 120_000)
})

describe('airlock hug against an origin with no shield', () => {
  let origin: Server
  afterEach(async () => {
    await new Promise((ok) => origin?.close(ok))
  })

  it('an origin that fails above 20 in flight: exit 1, the failures in the JSON and the report', async () => {
    let inFlight = 0
    origin = createServer((_req, res) => {
      inFlight++
      const fail = inFlight > 20
      setTimeout(() => {
        inFlight--
        res.writeHead(fail ? 500 : 200, { 'content-type': 'text/plain' })
        res.end(fail ? 'overloaded\n' : 'page\n')
      }, 50)
    })
    await new Promise<void>((ok) => origin.listen(0, '127.0.0.1', ok))
    const url = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/`
    const { code, summary, report } = await hug(url, [
      '--visitors',
      '600',
      '--over',
      '1s',
      '--patience',
      '5s',
      '--pages',
      '3',
      '--think',
      '1s',
      '--limit',
      '20',
    ])
    expect(code).toBe(1)
    expect(summary.answers.originErrors).toBeGreaterThan(0)
    expect(summary.answers.originErrorsBy['500']).toBe(summary.answers.originErrors)
    expect(summary.answers.busy).toBe(0)
    expect(summary.failures[0]).toMatch(
      /^the origin answered \d+ request\(s\) with a 5xx the shield did not send \(\d+ × 500\)$/,
    )
    // Nothing held visitors back: far more than 20 were on the site at once.
    expect(summary.failures[1]).toMatch(/visitors were on the site at once, more than the limit of 20$/)
    expect(report).toContain('<p class="verdict fail">Failed:</p>')
    expect(report).toContain('with a 5xx the shield did not send')
  }, 120_000)

  it('bad usage: exit 64 and one line naming the flag', async () => {
    const run = airlock(['hug', 'http://127.0.0.1:1/', '--visitors', 'many'])
    const { code, stderr } = await run.exited
    expect(code).toBe(64)
    expect(stderr).toBe(
      "airlock hug: --visitors must be an integer from 1 to 1000000, got 'many' (see airlock hug --help)\n",
    )
    const none = await airlock(['hug']).exited
    expect([none.code, none.stderr]).toEqual([
      64,
      'airlock hug: the URL to rehearse on is required: airlock hug http://127.0.0.1:3000/ (see airlock hug --help)\n',
    ])
  })
})
