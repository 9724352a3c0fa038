/**
 * The benches must not rot: each one runs every scenario for about a second (tiny settings through
 * their env knobs) and must exit 0, print every scenario's row and write its JSON results. This
 * asserts behaviour, never performance: no figure is compared with a target here.
 */
import { ADAPTER_NAMES } from '../../src/entries.js'
import { describe, expect, it } from 'vitest'
import { redisAvailable, requireRedis } from '../helpers/redis.js'
import { json, row, runBench } from './run.js'

requireRedis()

describe.runIf(redisAvailable).concurrent('benches (smoke: each scenario for about a second)', () => {
  it("overhead: every scenario, every adapter of the list (src/entries.ts), with the peers and each framework's empty middleware", {
    timeout: 240_000,
  }, async () => {
    // 27 servers one after the other, each started, warmed and measured: about a minute alone, more beside the other files.
    const { code, out } = await runBench(
      'overhead.ts',
      { ROUNDS: '1', SECONDS: '0.3', WARMUP: '0', CONNECTIONS: '4' },
      230_000,
    )
    expect(code, out).toBe(0)
    const names = [
      'fastify bare',
      'fastify + empty hooks (onRequest, onSend)',
      'fastify + gate, pass holders, memory',
      'fastify + gate, pass holders, memory, prometheus metrics',
      'fastify + gate, pass holders, memory, channel subscriber',
      'fastify + gate, pass holders, redis',
      'fastify + gate, request mode, redis',
      'fastify + gate, request mode, redis, auto-pipelining',
      'fastify + redis-semaphore per request',
      'fastify + @fastify/under-pressure',
      'fastify + @fastify/rate-limit, redis',
      'express bare',
      'express + empty middleware',
      'express + gate, pass holders, memory',
      'express + gate, pass holders, redis',
      'fetch bare',
      'fetch + empty wrapper',
      'fetch + gate, pass holders, memory',
      'hono bare',
      'hono + empty middleware',
      'hono + gate, pass holders, memory',
      'node bare',
      'node + empty middleware',
      'node + gate, pass holders, memory',
      'koa bare',
      'koa + empty middleware',
      'koa + gate, pass holders, memory',
    ]
    for (const name of names) expect(row(out, name), `row of ${name}`).toBeDefined()
    for (const adapter of ADAPTER_NAMES)
      expect(names.filter((n) => n.startsWith(`${adapter} `)).length, adapter).toBeGreaterThanOrEqual(3)
    const r = json('overhead')
    expect(r.rows.map((x: { name: string }) => x.name)).toEqual(names)
    for (const x of r.rows) {
      expect(x.rps, x.name).toBeGreaterThan(0)
      expect(x.non2xx + x.errors, `${x.name}: every answer a 2xx (no peer tripped)`).toBe(0)
    }
    expect(r.machine.redis).toMatch(/^\d+\.\d+/)
  })

  it('semaphore: ours and redis-semaphore, 1 and 50 callers; ours with a replica, replicas 0 and 1', {
    timeout: 90_000,
  }, async () => {
    const { code, out } = await runBench('semaphore.ts', { ROUNDS: '1', SECONDS: '0.25', WARMUP: '0' })
    expect(code, out).toBe(0)
    for (const lib of ['airlock-shield', 'redis-semaphore']) {
      for (const callers of ['1 caller', '50 callers', '1 caller (auto-pipelining)', '50 callers (auto-pipelining)']) {
        expect(row(out, `${lib} ${callers}`), `${lib} ${callers}`).toBeDefined()
      }
    }
    for (const callers of ['1 caller', '50 callers']) {
      for (const replicas of [0, 1])
        expect(row(out, `airlock-shield ${callers}, with a replica, replicas: ${replicas}`)).toBeDefined()
    }
    expect(json('semaphore').rows).toHaveLength(12)
  })

  it("share: a new visitor's decision without a share, with one, and over it, on memory and Redis", {
    timeout: 90_000,
  }, async () => {
    const { code, out } = await runBench('share.ts', { ROUNDS: '1', SECONDS: '0.25', CALLERS: '4' })
    expect(code, out).toBe(0)
    for (const store of ['memory', 'redis']) {
      for (const kind of ['no share', 'a share per visitor', 'over its share'])
        expect(out).toMatch(new RegExp(`\\| ${store} +\\| ${kind} +\\| \\d+`))
    }
  })

  it('waiting room: poll latency and ETA', { timeout: 90_000 }, async () => {
    const { code, out } = await runBench('waiting-room.ts', {
      BIG: '500',
      SMALL: '50',
      POLL_ROUNDS: '50',
      WARMUP_MS: '300',
      MEASURE_MS: '700',
    })
    expect(code, out).toBe(0)
    for (const name of [
      'PING (baseline)',
      'getPosition',
      'enter (already in line)',
      'visitors measured',
      'ETA error, mean absolute',
    ]) {
      expect(row(out, name), name).toBeDefined()
    }
    const r = json('waiting-room')
    expect(r.poll.rows).toHaveLength(5)
    expect(r.eta.measured).toBeGreaterThan(0)
  })

  it('hug: every scenario; the shield in request mode never lets the backend fail', { timeout: 90_000 }, async () => {
    const { code, out } = await runBench('hug.ts', { VISITORS: '150', SECONDS: '1', RAMP: '0.2', UNLOADED_PAGES: '3' })
    expect(code, out).toBe(0)
    const labels = [
      'A: no shield',
      'B: request mode, memory',
      'B: request mode, redis',
      'B: session mode, redis',
      'C: waiting room, redis',
    ]
    const header = out.split('\n').find((l) => l.startsWith('|  |'))
    for (const label of labels) expect(header, label).toContain(label)
    for (const name of [
      'page (200)',
      'busy page (503)',
      'backend: 500s answered',
      'page latency p50 ms',
      'admitted from the line',
    ]) {
      expect(row(out, name), name).toBeDefined()
    }
    const r = json('hug')
    expect(r.rows.map((x: { label: string }) => x.label)).toEqual(labels)
    for (const x of r.rows) {
      expect(x.visitors, x.label).toBeGreaterThan(0)
      expect(x.answers, x.label).toBeGreaterThan(0)
    }
    // Request mode counts requests in flight, so at limit = capacity the backend never sees too many,
    // unless the gate let requests in without a slot (onStoreError 'open' when the store answered
    // later than storeTimeout, which a starved CI machine can cause on Redis; never on memory).
    const requestRows = r.rows.filter((y: { app: string }) => y.app.startsWith('request-'))
    expect(requestRows).toHaveLength(2)
    for (const x of requestRows) {
      if (x.backend.failOpen > 0) continue
      expect(x.backend.maxInFlight, x.label).toBeLessThanOrEqual(r.settings.capacity)
      expect(x.backend.errors500, x.label).toBe(0)
    }
    expect(requestRows.find((x: { app: string }) => x.app === 'request-memory').backend.failOpen).toBe(0)
    // The server side of the line's order reads each visitor's ticket (a named gate's cookie is
    // `airlock_ticket_<name>`): every visitor who was given a place is seen taking it.
    const line = r.rows.find((y: { app: string }) => y.app === 'queue-redis').queue
    expect(line.queuedVisitors).toBeGreaterThan(0)
    expect(line.arrivals).toBeGreaterThan(0)
  })
})
