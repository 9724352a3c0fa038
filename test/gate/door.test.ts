/**
 * The waiting room's proof-of-work door (`queue.challenge`, issue 24) over real HTTP on Fastify:
 * no place without a solution, forged and replayed solutions refused (or shadowed), the slower
 * door for visitors without JavaScript, and the events the metrics count.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { Registry } from 'prom-client'
import { airlockMetrics } from '../../src/prometheus.js'
import type { ChallengeEvent } from '../../src/base/events.js'
import { createGate, type GateOptions } from '../../src/gate/gate.js'
import { memoryStore } from '../../src/stores/memory.js'
import type { Store } from '../../src/stores/types.js'
import { solvingNonce, wrongNonce } from '../helpers/pow.js'
import { recordingLogger } from '../helpers/stores.js'
import { sleep } from '../helpers/wait.js'
import { Browser, SECRET, useApps } from '../http/harness.js'

const JSON_ACCEPT = { accept: 'application/json' }

/** The solution an honest client sends, and one that is surely wrong. */
const solve = (challenge: string, difficulty: number): string => `${challenge} ${solvingNonce(challenge, difficulty)}`
const forge = (challenge: string, difficulty: number): string => `${challenge} ${wrongNonce(challenge, difficulty)}`

describe('the proof-of-work door', () => {
  const start = useApps('fastify')
  let store: Store
  const open = async (challenge: object = {}, gate: GateOptions = {}) => {
    store = memoryStore()
    return start({
      gate: {
        store,
        secret: SECRET,
        limit: 1,
        logger: recordingLogger(),
        queue: { challenge: { difficulty: 8, ...challenge } },
        ...gate,
      },
    })
  }
  const events: ChallengeEvent[] = []
  const record = (e: unknown): void => void events.push(e as ChallengeEvent)
  subscribe('airlock:challenge', record)
  afterAll(() => void unsubscribe('airlock:challenge', record))
  afterEach(() => {
    events.length = 0
  })

  /** A JSON client's challenge: the body and the door cookie now in its jar. */
  async function challenged(v: Browser): Promise<{ challenge: string; difficulty: number }> {
    const r = await v.get('/kind', { headers: JSON_ACCEPT })
    expect(r.status).toBe(202)
    expect(r.headers.get('cache-control')).toBe('no-store')
    const body = JSON.parse(r.body) as { status: string; challenge: string; difficulty: number }
    expect(body).toMatchObject({ status: 'challenge', difficulty: 8 })
    expect(v.jar.has('airlock_ticket_door')).toBe(true)
    return body
  }

  it('no place without a solution; a solution gets the slot; a replayed or forged one is refused', async () => {
    const app = await open()
    const v = new Browser(app.url)
    const { challenge, difficulty } = await challenged(v)
    // Coming back without solving: another challenge, still no slot and no place.
    await challenged(v)
    expect(await store.state('default')).toEqual({ held: 0, waiting: 0 })
    const solution = solve(challenge, difficulty)
    const door = v.jar.get('airlock_ticket_door')!
    const r = await v.get('/kind', { headers: { 'x-airlock-solution': solution } })
    expect([r.status, r.body]).toEqual([200, 'admit'])
    expect(await store.state('default')).toEqual({ held: 1, waiting: 0 })
    // The same solution again (another client holding the same door cookie): refused, no place.
    const replay = new Browser(app.url)
    replay.jar.set('airlock_ticket_door', door)
    const again = await replay.get('/kind', { headers: { ...JSON_ACCEPT, 'x-airlock-solution': solution } })
    expect(again.status).toBe(503)
    // A forged nonce, a challenge of another visitor, garbage: refused.
    const w = new Browser(app.url)
    const mine = await challenged(w)
    for (const forged of [
      forge(mine.challenge, mine.difficulty),
      solution,
      'x'.repeat(5000),
      `${mine.challenge.slice(0, -2)}xx 7`,
    ]) {
      expect((await w.get('/kind', { headers: { ...JSON_ACCEPT, 'x-airlock-solution': forged } })).status).toBe(503)
    }
    expect(await store.state('default')).toEqual({ held: 1, waiting: 0 })
    // Solved honestly, it takes a place in line (the slot is held): 202 with its ticket.
    const queued = await w.get('/kind', {
      headers: { ...JSON_ACCEPT, 'x-airlock-solution': solve(mine.challenge, mine.difficulty) },
    })
    expect(queued.status).toBe(202)
    expect(JSON.parse(queued.body)).toMatchObject({ status: 'queued', position: 1 })
    expect(w.jar.has('airlock_ticket')).toBe(true)
    const outcomes = events.map((e) => e.outcome)
    expect(outcomes.filter((o) => o === 'solved')).toHaveLength(2)
    expect(outcomes.filter((o) => o === 'refused')).toHaveLength(5)
  })

  it('without JavaScript: the same client gets in once its door cookie is noscriptDelay old', async () => {
    const app = await open({ noscriptDelay: 600 })
    const v = new Browser(app.url)
    const page = await v.get('/kind')
    expect(page.status).toBe(202)
    expect(page.body).toMatch(/<noscript><meta http-equiv="refresh" content="1"><\/noscript>/)
    expect((await v.get('/kind')).status).toBe(202) // too early: the challenge again
    await sleep(700)
    const r = await v.get('/kind')
    expect([r.status, r.body]).toEqual([200, 'admit'])
    expect(events.find((e) => e.outcome === 'noscript')?.ms).toBeGreaterThanOrEqual(600)
  })

  it('clients that compute nothing get at most noscriptRate places a second through the no-JavaScript path (issue 38)', async () => {
    // A limit of 1 and a line: each client let through takes a place.
    const app = await open({ noscriptDelay: 300, noscriptRate: 0.5 }, { clientShare: false })
    const bots = Array.from({ length: 30 }, () => new Browser(app.url))
    for (const b of bots) expect((await b.get('/kind', { headers: JSON_ACCEPT })).status).toBe(202) // a door cookie each, no work
    await sleep(400)
    // Through the door: admitted (the route's "admit") or queued; the others get the challenge again.
    const through = (await Promise.all(bots.map((b) => b.get('/kind', { headers: JSON_ACCEPT })))).filter(
      (r) => !r.body.includes('"challenge"'),
    )
    // Ten seconds' worth at once (5), and what half a second a second adds while they ask.
    expect(through.length).toBeGreaterThanOrEqual(5)
    expect(through.length).toBeLessThanOrEqual(6)
    const { held, waiting } = await store.state('default')
    expect(held + waiting).toBe(through.length)
    expect(events.filter((e) => e.outcome === 'noscript')).toHaveLength(through.length)
  })

  it("failed: 'shadow': a forged solution is shown a place that never moves, and takes none", async () => {
    const app = await open({ failed: 'shadow' })
    const holder = new Browser(app.url)
    const c = await challenged(holder)
    expect(
      (await holder.get('/kind', { headers: { 'x-airlock-solution': solve(c.challenge, c.difficulty) } })).body,
    ).toBe('admit')
    const bot = new Browser(app.url)
    const mine = await challenged(bot)
    const first = await bot.get('/kind', {
      headers: { ...JSON_ACCEPT, 'x-airlock-solution': forge(mine.challenge, mine.difficulty) },
    })
    expect(first.status).toBe(202)
    const place = JSON.parse(first.body) as { status: string; position: number }
    expect(place.status).toBe('queued')
    for (let i = 0; i < 3; i++) {
      const poll = await bot.get('/kind', { headers: { ...JSON_ACCEPT, 'x-airlock-poll': '1' } })
      expect([poll.status, (JSON.parse(poll.body) as { position: number }).position]).toEqual([202, place.position])
    }
    expect(await store.state('default')).toEqual({ held: 1, waiting: 0 })
    expect(events.map((e) => e.outcome)).toContain('shadowed')
  })

  it('the metrics count challenges by outcome, solve times and the difficulty in force', async () => {
    const registry = new Registry()
    const metrics = airlockMetrics({ registry })
    try {
      const app = await open()
      const v = new Browser(app.url)
      const c = await challenged(v)
      expect((await v.get('/kind', { headers: { 'x-airlock-solution': solve(c.challenge, c.difficulty) } })).body).toBe(
        'admit',
      )
      const w = new Browser(app.url)
      const d = await challenged(w)
      expect(
        (await w.get('/kind', { headers: { ...JSON_ACCEPT, 'x-airlock-solution': forge(d.challenge, d.difficulty) } }))
          .status,
      ).toBe(503)
      const text = await registry.metrics()
      expect(text).toContain('airlock_challenges_total{gate="default",outcome="issued"} 2')
      expect(text).toContain('airlock_challenges_total{gate="default",outcome="solved"} 1')
      expect(text).toContain('airlock_challenges_total{gate="default",outcome="refused"} 1')
      expect(text).toContain('airlock_challenge_solve_seconds_count{gate="default"} 1')
      expect(text).toContain('airlock_challenge_difficulty{gate="default"} 8')
      expect(text).toContain('airlock_decisions_total{gate="default",kind="busy",reason="challenge"} 2')
      expect(text).toContain('airlock_decisions_total{gate="default",kind="busy",reason="challenge-failed"} 1')
    } finally {
      metrics.stop()
    }
  })

  it('examples/pow-client.mjs, an API client in 20 lines, solves the default difficulty and gets in', async () => {
    const app = await open({ difficulty: 17 })
    const run = promisify(execFile)
    const { stdout } = await run(process.execPath, ['examples/pow-client.mjs', `${app.url}/kind`], { timeout: 30_000 })
    expect(stdout.trim()).toBe('200 null') // admitted: the route's plain-text answer ('admit'), not JSON
    expect(events.map((e) => e.outcome)).toEqual(['issued', 'solved'])
  })

  it('options are checked at startup, naming the option', async () => {
    await expect(open({ difficulty: 40 })).rejects.toThrow(
      /queue\.challenge\.difficulty must be an integer from 1 to 32/,
    )
    await expect(open({ failed: 'drop' })).rejects.toThrow(/queue\.challenge\.failed/)
  })
})

describe('the door under pressure', () => {
  it("the line's length raises the difficulty: a line of 2,000 asks one bit more", async () => {
    const store = memoryStore()
    const gate = createGate({
      store,
      secret: SECRET,
      limit: 1,
      logger: recordingLogger(),
      queue: { challenge: { difficulty: 8 } },
    })
    const line = { order: 'fifo' as const, maxLength: 0, idleTimeout: 30_000, claimWindow: 10_000 }
    await store.acquire('default', { token: 'holder', limit: 1, ttl: 60_000, weight: 1 })
    for (let i = 0; i < 2_000; i++)
      await store.acquire('default', { token: `w${i}`, limit: 1, ttl: 60_000, weight: 1, queue: line })
    const view = (headers: Record<string, string>) => ({
      method: 'GET',
      url: '/',
      headers: { accept: 'application/json', ...headers },
      secure: false,
      ip: '203.0.113.9',
      request: {},
    })
    const difficultyOf = async (d: unknown) =>
      JSON.parse((d as { response: { body: string } }).response.body) as { difficulty: number; challenge: string }
    const first = await gate.decide(view({}))
    const c = await difficultyOf(first)
    expect(c.difficulty).toBe(8) // nothing seen of the line yet
    const door = (first as { setCookie: string }).setCookie.split(';')[0]!
    const queued = await gate.decide(view({ cookie: door, 'x-airlock-solution': solve(c.challenge, c.difficulty) }))
    expect(queued).toMatchObject({ kind: 'queued', position: 2_001 })
    expect((await difficultyOf(await gate.decide(view({})))).difficulty).toBe(9)
    await gate.close()
  })
})
