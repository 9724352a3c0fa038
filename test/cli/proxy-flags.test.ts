/**
 * Every flag of `airlock proxy`, and its `--config` file, with the bad values of its kind: exit 64
 * with one line naming the flag or the option, before anything listens (issue 25). A row the
 * command took would start the proxy: it is stopped after 3 s and reported as accepted.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { main } from '../../src/cli/main.js'
import { EXIT } from '../../src/cli/exit.js'
import { BAD_FLAG } from '../helpers/options.js'

const NEEDS = { target: 'http://127.0.0.1:9', port: '0', 'log-level': 'silent' }
const FLAGS: Record<string, readonly string[]> = {
  target: ['', 'ftp://x', 'not a url', '127.0.0.1:8080'],
  port: BAD_FLAG.port,
  host: [''],
  name: BAD_FLAG.name,
  // 2^31 and over: refused by the gate's option (issue 42).
  limit: [...BAD_FLAG.count, '2147483648'],
  adaptive: ['', '5', '5:', ':500', 'a:b', '0:10', '500:5', '5:500:1', '1:2147483648'],
  mode: ['', 'Session', 'requests'],
  'pass-ttl': [...BAD_FLAG.duration, '60', '500'],
  'upstream-timeout': BAD_FLAG.duration,
  'client-share': ['', 'x', '-1', '0', '1.5', 'none', 'OFF', '2147483648'],
  // A number is a hop count (issue 42); these are neither a count nor addresses.
  'trust-proxy': ['', '-1', '1.5', 'x', '300.0.0.1', '1,2', '10.0.0.0/x', '2147483648'],
  metrics: ['metrics', '/', '/m x', '/metrics?x=1'],
  'log-level': BAD_FLAG.choice,
  'log-format': ['', 'text', 'JSON'],
  workers: ['', 'x', '0', '-1', '1.5', 'all'],
  redis: BAD_FLAG.url,
  prefix: BAD_FLAG.name,
}

const dir = mkdtempSync(join(tmpdir(), 'airlock-proxy-flags-'))
const file = (name: string, text: string): string => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}
/** `--config` files: unreadable, not JSON, not an object, a store, and options the gate or proxy refuse. */
const CONFIGS: Array<[label: string, path: string, names: string]> = [
  ['a missing file', join(dir, 'missing.json'), 'missing.json'],
  ['not JSON', file('bad.json', '{ limit: 5 }'), 'not JSON'],
  ['an array', file('array.json', '[1]'), 'JSON object'],
  ['a store', file('store.json', '{ "store": "redis" }'), 'store'],
  ['limit 0', file('limit.json', '{ "limit": 0 }'), 'limit'],
  ['passTtl 60', file('ttl.json', '{ "passTtl": 60 }'), "did you mean '60s'"],
  ['a misspelt option', file('typo.json', '{ "passTTL": "60s" }'), "did you mean 'passTtl'"],
  ['trustProxy -1', file('trust.json', '{ "trustProxy": -1 }'), 'trustProxy'],
  ['bodyLimit "1mb"', file('body.json', '{ "bodyLimit": "1mb" }'), 'bodyLimit'],
  ['bodyLimit 0', file('body0.json', '{ "bodyLimit": 0 }'), 'bodyLimit must be a whole number of bytes, at least 1'],
  ['limit 2^31', file('limit31.json', '{ "limit": 2147483648 }'), 'limit must be at most 2147483647'],
  ['a misspelt busy key', file('busy.json', '{ "busy": { "retryafter": 5 } }'), "did you mean 'retryAfter'"],
  [
    'busyPage and busy.page',
    file('busy2.json', '{ "busyPage": "a", "busy": { "page": "b" } }'),
    'busyPage and busy.page',
  ],
  ['retryAfter 5000', file('retry.json', '{ "retryAfter": 5000 }'), 'retryAfter'],
  ['queue.maxLength -1', file('queue.json', '{ "queue": { "maxLength": -1 } }'), 'maxLength'],
]

async function run(args: string[]): Promise<{ code: number | 'accepted'; out: string; err: string[] }> {
  let out = ''
  const err: string[] = []
  const done = main(['proxy', ...args], { out: (t) => void (out += t), err: (l) => void err.push(l), env: {} }, '0.0.0')
  const timer = new Promise<'accepted'>((resolve) => setTimeout(() => resolve('accepted'), 3_000))
  const code = await Promise.race([done, timer])
  if (code === 'accepted') {
    process.emit('SIGINT')
    await done
  }
  return { code, out, err }
}

function argv(flags: Record<string, string>): string[] {
  return Object.entries(flags).flatMap(([flag, value]) => [`--${flag}`, value])
}

describe('airlock proxy: every flag with the bad values of its kind', () => {
  const rows = Object.entries(FLAGS).flatMap(([flag, values]) =>
    values.map((value) => [`--${flag} ${JSON.stringify(value)}`, flag, value] as const),
  )
  it.each(rows)('%s → exit 64 naming the flag', async (_, flag, value) => {
    const { code, err } = await run(argv({ ...NEEDS, [flag]: value }))
    expect(code).toBe(EXIT.USAGE)
    expect(err).toHaveLength(1)
    // A flag's message names it as a flag or as the option it sets.
    const option = flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())
    expect(err[0], err[0]).toMatch(
      new RegExp(
        `--${flag}|\\b${option}\\b|${flag === 'metrics' ? 'metricsPath' : flag === 'adaptive' ? 'limit' : flag}`,
      ),
    )
  })

  it('--trust-proxy 1 (a hop count) starts the proxy', async () => {
    const { code, err } = await run(argv({ ...NEEDS, 'trust-proxy': '1' }))
    expect([code, err]).toEqual(['accepted', []])
  })

  it('--pass-tl (misspelt) names --pass-ttl', async () => {
    const { code, err } = await run([...argv(NEEDS), '--pass-tl', '60s'])
    expect(code).toBe(EXIT.USAGE)
    expect(err[0]).toContain('unknown flag --pass-tl; did you mean --pass-ttl?')
  })
})

describe('airlock proxy --config: a file with a mistake exits 64 naming the file and the mistake', () => {
  it.each(CONFIGS)('%s', async (_, path, names) => {
    const { code, err } = await run([
      '--config',
      path,
      '--target',
      'http://127.0.0.1:9',
      '--port',
      '0',
      '--log-level',
      'silent',
    ])
    expect(code).toBe(EXIT.USAGE)
    expect(err).toHaveLength(1)
    expect(err[0]).toContain(names)
  })
})
