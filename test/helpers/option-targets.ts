/**
 * Every public factory and method that takes options, described for the option tests
 * (test/options.test.ts walks each option with its kind's standard bad values; test/options-fuzz.test.ts
 * throws generated odd values and near-miss spellings at them). Call `openTargets()` before and
 * `closeTargets()` after.
 */
import { Redis } from 'ioredis'
import Fastify from 'fastify'
import { airlock } from '../../src/express.js'
import { airlock as fetchAirlock } from '../../src/fetch.js'
import { airlock as honoAirlock } from '../../src/hono.js'
import { airlock as koaAirlock } from '../../src/koa.js'
import { airlockShield } from '../../src/fastify.js'
import { ADAPTER_NAMES, type AdapterName } from '../../src/entries.js'
import { airlock as nodeAirlock } from '../../src/node.js'
import { createLockServer, memoryResources, redisResources } from '../../src/lock-server.js'
import {
  airlockControl,
  airlockReport,
  createSemaphore,
  createSigner,
  createWaitingRoom,
  memoryStore,
  newVisitorId,
  throttle,
  type Lease,
} from '../../src/index.js'
import { redisStore } from '../../src/redis.js'
import { countingStore, recordingLogger } from './stores.js'
import { freePort } from './redis.js'
import { LONGEST, PAST_TIMER, type OptionSpec } from './options.js'

export const SECRET = 'o'.repeat(32)
const API_KEY = 'options-test-key-0123456789'
export const store = countingStore(memoryStore())
const sem = createSemaphore({ name: 'options', limit: 2, ttl: 5_000, store })
const room = createWaitingRoom({ name: 'options-room', limit: 2, ttl: 5_000, store })
// The counting wrapper has no live control: the control's own store.
const controlStore = memoryStore()
const control = airlockControl({ name: 'options', store: controlStore })
let lease: Lease
let client: Redis

/** Dates that are not: seconds for milliseconds, 0, fractions, text that is not ISO 8601. */
const DATES = [
  0,
  0.5,
  1_700_000_000,
  -1,
  Number.NaN,
  Infinity,
  '10',
  'tomorrow',
  '2030-13-45',
  true,
  {},
  [],
  8.64e15 + 1,
]

export async function openTargets(): Promise<void> {
  lease = (await sem.acquire())!
  // A real ioredis client that never connects (lazyConnect, nothing is sent), on a port nothing serves.
  client = new Redis({ port: await freePort(), lazyConnect: true, maxRetriesPerRequest: 0 })
}
export async function closeTargets(): Promise<void> {
  await lease.release()
  client.disconnect()
}

export interface Target {
  name: string
  /** What a message about the options argument itself names. */
  label: string
  base: Record<string, unknown>
  specs: readonly OptionSpec[]
  nested?: readonly string[]
  /** Whether rows replacing the whole options argument apply. */
  whole?: boolean
  /** A positional argument, not an options object: no unknown-key row. */
  positional?: boolean
  make(options: unknown): unknown
  /** Valid extremes: each must be accepted. */
  valid: readonly Record<string, unknown>[]
}

/** Closes, stops or releases whatever an accepted row made. */
async function dispose(made: unknown): Promise<void> {
  const m = made as { release?: () => unknown; close?: () => unknown } | null
  if (m && typeof m.close === 'function') await m.close()
  else if (m && typeof m.release === 'function') await m.release()
}

const fn = (): string => 'done'
export const GATE_SPECS: readonly OptionSpec[] = [
  ['name', 'name'],
  // 2^31 and over refused, the adaptive bounds' too (issue 42).
  ['limit', 'boundedCount', [{ min: 1, max: PAST_TIMER }, { min: PAST_TIMER, max: 2 ** 32 }, { min: 1 }]],
  ['mode', 'choice'],
  ['passTtl', 'duration'],
  ['provisionalTtl', 'duration'],
  ['recheckInterval', 'duration'],
  ['ttl', 'duration'],
  ['reuseWindow', 'durationOrZero'],
  ['retryAfter', 'seconds'],
  ['storeTimeout', 'duration'],
  ['cacheSize', 'boundedCount'],
  ['confirm', 'boolean'],
  ['onStoreError', 'choice'],
  ['secret', 'custom', ['short', 1, {}, [], [SECRET, 'short']]],
  ['bypass', 'custom', ['health', 1, {}, [1]]],
  ['skip', 'function'],
  ['nonce', 'function'],
  ['busyPage', 'custom', [1, true, {}]],
  ['busy', 'custom', ['x', 1, true, null, [], () => 1]],
  ['busy.page', 'custom', [1, true, {}, null]],
  ['busy.retryAfter', 'seconds', [5000]],
  [
    'messages',
    'custom',
    [
      'de',
      1,
      [],
      { de_DE: {} },
      { de: 'x' },
      { de: { busyTitel: 'x' } },
      { de: { place: 'no placeholders' } },
      { sv: { busyTitle: 'x' } },
    ],
  ],
  ['logger', 'custom', [1, 'x', true, {}]],
  ['store', 'store'],
  ['cookie', 'object'],
  ['cookie.name', 'custom', ['', 'has space', 1, {}]],
  ['cookie.path', 'custom', ['', 'x', '/a;b', 1]],
  ['cookie.domain', 'custom', ['', 'a b', 'x;y', 1]],
  ['cookie.secure', 'custom', ['yes', 1, {}]],
  ['cookie.sameSite', 'choice'],
  ['cookie.httpOnly', 'boolean'],
  ['queue', 'custom', ['x', 1, () => 1]],
  ['queue.order', 'choice'],
  ['queue.maxLength', 'countOrZero'],
  ['queue.idleTimeout', 'duration'],
  ['queue.claimWindow', 'duration'],
  ['queue.confirmTimeout', 'duration'],
  ['queue.pollInterval', 'duration'],
  ['queue.page', 'function'],
  ['history', 'custom', ['x', 1, null, [], () => 1]],
  ['history.days', 'count', [3651]],
  ['clientShare', 'custom', ['x', 1, null, [], () => 1]],
  ['clientShare.places', 'boundedCount'],
  ['clientShare.slots', 'boundedCount'],
  ['clientShare.perMinute', 'custom', [-1, 1.5, Number.NaN, PAST_TIMER, '60']],
]
const GATE_VALID = [
  { passTtl: LONGEST, provisionalTtl: LONGEST, recheckInterval: LONGEST, storeTimeout: LONGEST, retryAfter: 3600 },
  {
    mode: 'request',
    ttl: LONGEST,
    reuseWindow: LONGEST,
    limit: LONGEST,
    cacheSize: LONGEST,
  },
  { limit: { min: 1, max: LONGEST, initial: LONGEST } },
  { clientShare: { places: LONGEST, slots: LONGEST, perMinute: LONGEST } },
  { busy: { page: '<h1>Busy</h1>', retryAfter: 3600 } },
  { busy: { page: () => 'busy' } },
  { busy: {} },
  { mode: 'request', reuseWindow: 0 },
  { queue: { idleTimeout: LONGEST, claimWindow: LONGEST, confirmTimeout: LONGEST, maxLength: 0 } },
  { queue: { idleTimeout: LONGEST, claimWindow: LONGEST, pollInterval: Math.floor(LONGEST / 2.5) - 1 } },
  { history: { days: 3650 } },
  { history: false },
  { history: true },
]

/**
 * The option targets of every adapter of the list (src/entries.ts): a `Record`, so a new adapter
 * fails to compile here until its options are fuzzed too.
 */
const ADAPTER_TARGETS: Record<AdapterName, Target> = {
  express: {
    name: 'airlock (Express)',
    label: 'gate options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: GATE_SPECS,
    nested: ['cookie', 'queue', 'history', 'busy', 'clientShare'],
    whole: true,
    make: (o) => airlock(o as never),
    valid: GATE_VALID,
  },
  fetch: {
    name: 'airlock (fetch)',
    label: 'airlock (fetch)',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: [...GATE_SPECS, ['clientAddress', 'function'], ['trustProxy', 'boolean']],
    nested: ['cookie', 'queue', 'busy'],
    whole: true,
    make: (o) => fetchAirlock(o as never),
    valid: [...GATE_VALID, { trustProxy: true, clientAddress: () => '10.0.0.1' }],
  },
  hono: {
    name: 'airlock (Hono)',
    label: 'airlock (Hono)',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: [...GATE_SPECS, ['clientAddress', 'function'], ['trustProxy', 'boolean']],
    nested: ['cookie', 'queue', 'busy'],
    whole: true,
    make: (o) => honoAirlock(o as never),
    valid: [...GATE_VALID, { trustProxy: false, clientAddress: () => undefined }],
  },
  koa: {
    name: 'airlock (Koa)',
    label: 'gate options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: GATE_SPECS,
    nested: ['cookie', 'queue', 'busy'],
    whole: true,
    make: (o) => koaAirlock(o as never),
    valid: GATE_VALID,
  },
  fastify: {
    name: 'airlockShield (Fastify)',
    label: 'airlockShield options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: [...GATE_SPECS, ['global', 'boolean']],
    nested: ['cookie', 'queue', 'history', 'busy', 'clientShare'],
    make: async (o) => {
      const app = Fastify()
      app.register(airlockShield, o as never)
      try {
        await app.ready()
      } catch (err) {
        await app.close().catch(() => {})
        throw err
      }
      return app
    },
    valid: GATE_VALID,
  },
  node: {
    name: 'airlock (node:http)',
    label: 'airlock options',
    base: { logger: recordingLogger(), secret: SECRET, store },
    specs: [
      ...GATE_SPECS,
      ['trustProxy', 'custom', [-1, 0.5, Number.NaN, Infinity, {}, ['300.0.0.1'], ['10.0.0.0/x'], [1]]],
    ],
    nested: ['cookie', 'queue', 'history', 'busy', 'clientShare'],
    whole: true,
    make: (o) => nodeAirlock(o as never),
    valid: [...GATE_VALID, { trustProxy: 1 }, { trustProxy: ['10.0.0.0/8', 'loopback'] }, { trustProxy: true }],
  },
}

export const targets: Target[] = [
  {
    name: 'createSemaphore',
    label: 'createSemaphore()',
    base: { name: 'options', limit: 2, ttl: 1_000, store },
    specs: [
      ['name', 'name'],
      ['limit', 'count'],
      ['ttl', 'duration'],
      ['store', 'store'],
      ['retryInterval', 'duration', [Math.floor(LONGEST / 10) + 1]],
    ],
    whole: true,
    make: (o) => createSemaphore(o as never),
    valid: [{ ttl: LONGEST, retryInterval: Math.floor(LONGEST / 10) }, { limit: Number.MAX_SAFE_INTEGER }],
  },
  {
    name: 'sem.acquire',
    label: 'acquire()',
    base: {},
    specs: [['weight', 'count', [3]]],
    whole: true,
    make: (o) => sem.acquire(o as never),
    valid: [{ weight: 1 }],
  },
  {
    name: 'sem.acquireBlocking',
    label: 'acquireBlocking()',
    base: {},
    specs: [
      ['timeout', 'wait'],
      ['weight', 'count', [3]],
      ['signal', 'signal'],
    ],
    whole: true,
    make: (o) => sem.acquireBlocking(o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST }, { timeout: 0, signal: new AbortController().signal }],
  },
  {
    name: 'sem.run',
    label: 'run()',
    base: {},
    specs: [
      ['timeout', 'wait'],
      ['weight', 'count', [3]],
      ['signal', 'signal'],
      ['autoRefresh', 'boolean'],
    ],
    whole: true,
    make: (o) => sem.run(fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST, autoRefresh: false }, { signal: new AbortController().signal }],
  },
  {
    name: 'lease.refresh',
    label: 'ttl',
    base: {},
    specs: [['ttl', 'duration']],
    positional: true,
    make: (o) => lease.refresh((o as { ttl?: number }).ttl),
    valid: [{ ttl: LONGEST }],
  },
  {
    name: 'createWaitingRoom',
    label: 'createWaitingRoom()',
    base: { name: 'options-room', limit: 2, ttl: 1_000, store },
    specs: [
      ['name', 'name'],
      ['limit', 'count'],
      ['ttl', 'duration'],
      ['store', 'store'],
      ['order', 'choice'],
      ['maxLength', 'countOrZero'],
      ['idleTimeout', 'duration'],
      ['claimWindow', 'duration'],
      ['confirmTimeout', 'durationOrZero'],
      ['retryInterval', 'duration'],
    ],
    whole: true,
    make: (o) => createWaitingRoom(o as never),
    valid: [
      {
        ttl: LONGEST,
        idleTimeout: LONGEST,
        claimWindow: LONGEST,
        confirmTimeout: LONGEST,
        retryInterval: LONGEST - 1,
        maxLength: 0,
      },
    ],
  },
  {
    name: 'room.enter',
    label: 'enter()',
    base: {},
    specs: [['fresh', 'boolean']],
    whole: true,
    make: (o) => room.enter(newVisitorId(), o as never),
    valid: [{ fresh: true }, { fresh: false }],
  },
  {
    name: 'room.withAdmitted',
    label: 'withAdmitted()',
    base: {},
    specs: [
      ['timeout', 'wait'],
      ['signal', 'signal'],
      ['autoRefresh', 'boolean'],
    ],
    whole: true,
    make: (o) => room.withAdmitted(newVisitorId(), fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST, autoRefresh: false }],
  },
  ...ADAPTER_NAMES.map((name) => ADAPTER_TARGETS[name]),
  {
    name: 'createDashboard',
    label: 'createDashboard()',
    base: { token: 't'.repeat(24), store, names: ['options'] },
    specs: [
      ['token', 'custom', [1, 'short', {}, null]],
      ['names', 'custom', [[], 'options', [1], ['has space'], {}]],
      ['controls', 'boolean'],
      ['interval', 'duration', [50, 99]],
      ['store', 'store'],
    ],
    whole: true,
    make: async (o) => (await import('../../src/dashboard.js')).createDashboard(o as never),
    valid: [{ interval: '1s' }, { interval: 100 }],
  },
  {
    name: 'createProxy',
    label: 'createProxy()',
    base: { target: 'http://127.0.0.1:9', secret: SECRET, store, logger: recordingLogger() },
    specs: [
      ['target', 'custom', ['', 'ftp://x', 'not a url', 1, {}]],
      ['gated', 'boolean'],
      ['trustProxy', 'custom', [-1, 0.5, Number.NaN, Infinity, {}, ['300.0.0.1'], ['10.0.0.0/x'], [1]]],
      ['metricsPath', 'custom', ['/', 'metrics', '/m x', '/metrics?x=1', '/a#b', '//x', 1]],
      // 0 said nothing it meant (chunked bodies still streamed): refused (issue 42).
      ['bodyLimit', 'custom', [0, -1, 0.5, Number.NaN, Infinity, '1mb']],
      ['upstreamTimeout', 'duration'],
      ['keepPassCookie', 'boolean'],
      ['passTtl', 'duration', [60]],
      ['retryAfter', 'seconds', [5000]],
      ['limit', 'boundedCount', [{ min: 1, max: PAST_TIMER }]],
      ['busy.retryAfter', 'seconds'],
    ],
    nested: ['busy'],
    whole: true,
    make: async (o) => (await import('../../src/proxy.js')).createProxy(o as never),
    valid: [
      { upstreamTimeout: '90s', trustProxy: ['10.0.0.0/8', '::1'] },
      { metricsPath: '/metrics' },
      // A hop count, as Express and Fastify take it (issue 42).
      { trustProxy: 1 },
      { trustProxy: 0 },
      { trustProxy: 3, bodyLimit: 1 },
    ],
  },
  {
    name: 'airlockReport',
    label: 'airlockReport()',
    base: { store },
    specs: [
      ['name', 'name'],
      ['store', 'store'],
      ['from', 'custom', ['tomorrow', '2030-13-45', Number.NaN, -1, Infinity, true, {}, [], 8.64e15 + 1]],
      ['to', 'custom', ['tomorrow', '2030-13-45', Number.NaN, -1, Infinity, true, {}, [], 8.64e15 + 1]],
    ],
    whole: true,
    make: (o) => airlockReport(o as never),
    valid: [{ from: 8.64e15 - 86_400_000, to: 8.64e15 }, { from: new Date(0), to: '1970-01-02T00:00:00Z' }, {}],
  },
  {
    name: 'memoryStore',
    label: 'memoryStore()',
    base: {},
    specs: [['now', 'function', [1_700_000_000_000]]],
    whole: true,
    make: (o) => memoryStore(o as never),
    valid: [{ now: () => 0 }],
  },
  {
    name: 'redisStore',
    label: 'redisStore()',
    base: {
      get client() {
        return client
      },
    },
    specs: [
      ['client', 'custom', ['redis://127.0.0.1:1', 1, true, {}]],
      ['commandTimeout', 'duration'],
      ['prefix', 'name'],
    ],
    whole: true,
    make: (o) => redisStore(o as never),
    valid: [{ commandTimeout: LONGEST }],
  },
  {
    name: 'redisResources',
    label: 'redisResources()',
    base: {
      get client() {
        return client
      },
    },
    specs: [
      ['client', 'custom', ['redis://127.0.0.1:1', 1, true, {}]],
      ['commandTimeout', 'duration'],
      ['prefix', 'name'],
    ],
    whole: true,
    make: (o) => redisResources(o as never),
    valid: [{ commandTimeout: LONGEST }],
  },
  {
    name: 'throttle',
    label: 'throttle()',
    base: { semaphore: sem },
    specs: [
      ['semaphore', 'custom', ['x', 1, true, {}, { run: () => 1 }]],
      ['timeout', 'wait'],
      ['weight', 'count', [3]],
      ['signal', 'signal'],
    ],
    whole: true,
    make: (o) => throttle(fn, o as never),
    valid: [{ timeout: Infinity }, { timeout: LONGEST }, { timeout: 0, weight: 2 }],
  },
  {
    name: 'createLockServer',
    label: 'createLockServer()',
    base: { store, apiKeys: { write: API_KEY }, resources: memoryResources(memoryStore()) },
    specs: [
      ['store', 'store'],
      ['apiKeys', 'custom', ['x', 1, [], {}, { write: 'short' }]],
      ['resources', 'custom', ['x', 1, true, {}]],
      ['bodyLimit', 'count'],
      ['dataFormat', 'choice'],
      ['storeTimeout', 'duration'],
      ['logger', 'custom', ['x', 1, () => 1, []]],
      ['queue', 'object'],
      ['queue.idleTimeout', 'duration', [2]],
      ['queue.claimWindow', 'duration'],
      ['queue.maxLength', 'countOrZero'],
      ['queue.confirmTimeout', 'durationOrZero'],
    ],
    nested: ['queue'],
    whole: true,
    make: (o) => createLockServer(o as never),
    valid: [
      {
        queue: { idleTimeout: LONGEST, claimWindow: LONGEST, maxLength: 0, confirmTimeout: 0 },
        bodyLimit: Number.MAX_SAFE_INTEGER,
        logger: false,
        dataFormat: 'raw',
        storeTimeout: LONGEST,
      },
    ],
  },
  {
    name: 'airlockControl',
    label: 'airlockControl()',
    base: { name: 'options', store: controlStore },
    specs: [
      ['name', 'name'],
      ['store', 'store'],
      ['by', 'custom', ['', 1, {}, true]],
    ],
    whole: true,
    make: (o) => airlockControl(o as never),
    valid: [{ by: 'ops' }],
  },
  {
    name: 'control.set',
    label: 'control.set()',
    base: { limit: 3 },
    specs: [
      ['limit', 'count', [1_000_000_001]],
      ['admissionRate', 'count', [1_000_000_001]],
      ['mode', 'choice'],
      ['opensAt', 'custom', DATES],
      ['closesAt', 'custom', DATES],
    ],
    whole: true,
    make: (o) => control.set(o as never),
    valid: [
      { limit: null, mode: 'closed' },
      { opensAt: '2030-01-01T09:00:00Z', closesAt: new Date('2030-01-02') },
      { mode: null, opensAt: null, closesAt: null },
    ],
  },
  {
    name: 'createSigner',
    label: 'createSigner()',
    base: { secrets: SECRET, context: 'options' },
    specs: [
      ['secrets', 'custom', ['short', 1, [], [SECRET, 2]]],
      ['context', 'custom', [1, {}, 'a b', 'a~b']],
      ['maxLength', 'count'],
    ],
    whole: true,
    make: (o) => createSigner(o as never),
    valid: [{ maxLength: Number.MAX_SAFE_INTEGER }],
  },
]

/** Runs `make`; the error it threw or rejected with, or `undefined` (then disposes what it made). */
export async function failure(make: () => unknown): Promise<unknown> {
  let made: unknown
  try {
    made = make()
    made = await made
  } catch (err) {
    return err
  }
  await dispose(made)
  return undefined
}
