/**
 * Every flag of `airlock exec` and `airlock serve` with the standard bad values of its kind
 * (test/helpers/options.ts): exit 64 with one line naming the flag, before anything is opened.
 * Durations over what a timer can hold are bad values too. Then the extremes are accepted.
 */
import { describe, expect, it } from 'vitest'
import { main } from '../../src/cli/main.js'
import { parseExec } from '../../src/cli/exec.js'
import { parseServe } from '../../src/cli/serve.js'
import { EXIT } from '../../src/cli/exit.js'
import { createSemaphore } from '../../src/core/semaphore.js'
import { BAD_FLAG, LONGEST, type FlagKind } from '../helpers/options.js'
import { airlock, child } from './harness.js'

const EXEC: Record<string, FlagKind> = {
  name: 'name',
  limit: 'count',
  weight: 'count',
  ttl: 'duration',
  wait: 'wait',
  'kill-after': 'durationOrZero',
  redis: 'url',
  prefix: 'name',
}
const SERVE: Record<string, FlagKind> = {
  port: 'port',
  host: 'choice',
  redis: 'url',
  prefix: 'name',
  'body-limit': 'count',
  'log-level': 'choice',
}
// Valid values for the flags a command needs; a row replaces one of them.
const EXEC_NEEDS = { name: 'job', redis: 'redis://127.0.0.1:1' }

function argv(command: 'exec' | 'serve', flags: Record<string, string>): string[] {
  const args = Object.entries(flags).flatMap(([flag, value]) => [`--${flag}`, value])
  return command === 'exec' ? ['exec', ...args, '--', 'true'] : ['serve', ...args]
}

function table(command: 'exec' | 'serve', kinds: Record<string, FlagKind>) {
  const needs = command === 'exec' ? EXEC_NEEDS : {}
  const out: [string, string[], string][] = []
  for (const [flag, kind] of Object.entries(kinds)) {
    // 'localhost' is a host; only the empty host is refused.
    const values = flag === 'host' ? [''] : BAD_FLAG[kind]
    for (const value of values)
      out.push([`--${flag} ${JSON.stringify(value)}`, argv(command, { ...needs, [flag]: value }), `--${flag}`])
  }
  out.push(['--bogus 1', argv(command, { ...needs, bogus: '1' }), '--bogus'])
  return out
}

async function run(args: string[]) {
  let out = ''
  const err: string[] = []
  const code = await main(args, { out: (t) => void (out += t), err: (l) => void err.push(l), env: {} }, '0.0.0')
  return { code, out, err }
}

describe.each([
  ['exec', EXEC],
  ['serve', SERVE],
] as const)('airlock %s flags', (command, kinds) => {
  it.each(table(command, kinds))('%s → exit 64 naming the flag', async (_, args, flag) => {
    const { code, out, err } = await run(args)
    expect(code).toBe(EXIT.USAGE)
    expect(out).toBe('')
    expect(err).toHaveLength(1)
    expect(err[0]).toContain(flag)
  })
})

const execArgs = (flags: Record<string, string>): string[] => argv('exec', flags).slice(1)

describe('flag extremes', () => {
  it('exec accepts the longest durations, forever, 0 and the largest counts; the library accepts them too', () => {
    const parsed = parseExec(
      execArgs({
        ...EXEC_NEEDS,
        ttl: String(LONGEST),
        wait: 'forever',
        'kill-after': '596h',
        limit: '9007199254740991',
        weight: '9007199254740991',
      }),
      {},
    )
    expect(parsed).toMatchObject({
      ttl: LONGEST,
      wait: Infinity,
      killAfter: 596 * 3_600_000,
      limit: Number.MAX_SAFE_INTEGER,
    })
    expect(
      parseExec(execArgs({ ...EXEC_NEEDS, ttl: '596h', wait: String(LONGEST), 'kill-after': '0' }), {}),
    ).toMatchObject({
      ttl: 596 * 3_600_000,
      wait: LONGEST,
      killAfter: 0,
    })
    if (parsed === 'help') throw new Error('unexpected help')
    expect(createSemaphore({ name: parsed.name, limit: parsed.limit, ttl: parsed.ttl }).ttl).toBe(LONGEST)
  })

  it('serve accepts ports 0 and 65535 and the largest body limit', () => {
    expect(parseServe(['--port', '0'], {})).toMatchObject({ port: 0 })
    expect(parseServe(['--port', '65535', '--body-limit', '9007199254740991'], {})).toMatchObject({
      port: 65_535,
      bodyLimit: Number.MAX_SAFE_INTEGER,
    })
  })
})

describe('over-long durations, through the real command', () => {
  it.each([
    [['--ttl', '2147483648'], '--ttl must be at most 2147483647 ms'],
    [['--kill-after', '597h'], '--kill-after must be at most 2147483647 ms'],
  ])('airlock exec %j exits 64 with one line naming the flag and the limit', async (flag, message) => {
    const { code, stdout, stderr } = await airlock([
      'exec',
      '--name',
      'job',
      '--redis',
      'redis://127.0.0.1:1',
      ...flag,
      '--',
      ...child('exit', '0'),
    ]).exited
    expect(code).toBe(EXIT.USAGE)
    expect(stdout).toBe('')
    expect(stderr.trim().split('\n')).toEqual([expect.stringContaining(message)])
  })
})
