/**
 * The command line as parsed by `main()`, in this process: help, version, and every usage error
 * (exit 64, one line naming the flag) before anything is started.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { main } from '../../src/cli/main.js'
import { durationFlag } from '../../src/cli/args.js'
import { EXIT } from '../../src/cli/exit.js'
import { ROOT } from './harness.js'

const version = (JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string }).version

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = ''
  const err: string[] = []
  const code = await main(argv, { out: (t) => void (out += t), err: (l) => void err.push(l), env }, version)
  return { code, out, err }
}

describe('airlock (in process)', () => {
  it('--help lists the commands; --version prints the package version', async () => {
    const help = await run(['--help'])
    expect(help.code).toBe(0)
    expect(help.out).toMatch(/^ {2}exec /m)
    expect(help.out).toMatch(/^ {2}serve /m)
    expect((await run(['-V'])).out).toBe(`${version}\n`)
    expect((await run(['--version'])).code).toBe(0)
  })

  it('exec --help documents every flag and every exit status', async () => {
    const { code, out } = await run(['exec', '--help'])
    expect(code).toBe(0)
    for (const flag of [
      '--name NAME',
      '--limit N',
      '--weight N',
      '--ttl DURATION',
      '--wait DURATION',
      '--kill-after DURATION',
      '--redis URL',
      '--prefix PREFIX',
      '-h, --help',
    ]) {
      expect(out).toContain(flag)
    }
    for (const status of ['128+N', '64 ', '69 ', '70 ', '75 ', '126 ', '127 ']) expect(out).toContain(`  ${status}`)
    expect(out).toContain('AIRLOCK_REDIS_URL')
    expect(out).toMatch(/SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR2/)
    expect((await run(['help', 'exec'])).out).toBe(out)
  })

  it("exec --help's crontab line runs the project's own airlock, never npx (from cron's directory npx fetches another package)", async () => {
    const { out } = await run(['exec', '--help'])
    const cron = out.split('\n').filter((line) => /^\s*(\S+\s+){5}\S/.test(line) && line.includes('*'))
    expect(cron).toHaveLength(1)
    expect(cron[0]).toMatch(
      /^\s*\*\/5 \* \* \* \* cd \/srv\/app && AIRLOCK_REDIS_URL=\S+ node_modules\/\.bin\/airlock exec --name report /,
    )
    expect(out).not.toContain('npx airlock')
  })

  it('serve --help documents every flag and the key variables', async () => {
    const { code, out } = await run(['serve', '--help'])
    expect(code).toBe(0)
    for (const flag of [
      '-p, --port PORT',
      '--host HOST',
      '--redis URL',
      '--prefix PREFIX',
      '--body-limit BYTES',
      '--log-level LEVEL',
      '-h, --help',
    ]) {
      expect(out).toContain(flag)
    }
    for (const env of ['AIRLOCK_READ_KEY', 'AIRLOCK_READ_LOCK_KEY', 'AIRLOCK_WRITE_KEY', 'AIRLOCK_REDIS_URL'])
      expect(out).toContain(env)
  })

  const cmd = ['--', 'true']
  const redis = ['--redis', 'redis://127.0.0.1:6399']
  it.each([
    [
      [],
      /a command is required: exec, serve, control, dashboard, hug, report, proxy, auth, nginx-config or caddy-config/,
    ],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['--frob'], /unknown flag --frob/],
    [['exec', '--nmae', 'x', ...redis, ...cmd], /unknown flag --nmae; did you mean --name\?/],
    [['exec', '-x', ...cmd], /unknown flag -x/],
    [['exec', '--name'], /--name needs a value \(--name NAME\)/],
    [['exec', '--name', '--limit', '2', ...cmd], /--name needs a value/],
    [['exec', '--name', 'x', '--name', 'y', ...redis, ...cmd], /--name is given twice/],
    [['exec', '--help=yes'], /--help takes no value/],
    [['exec', ...redis, ...cmd], /--name is required/],
    [['exec', '--name', 'a b', ...redis, ...cmd], /--name must be 1 to 64 characters of letters, digits/],
    [['exec', '--name', 'x', '--limit', '0', ...redis, ...cmd], /--limit must be a positive integer, got '0'/],
    [['exec', '--name', 'x', '--limit', '2.5', ...redis, ...cmd], /--limit must be a positive integer, got '2.5'/],
    [
      ['exec', '--name', 'x', '--limit', '2', '--weight', '3', ...redis, ...cmd],
      /--weight must be at most --limit \(2\), got '3'/,
    ],
    [
      ['exec', '--name', 'x', '--ttl', 'soon', ...redis, ...cmd],
      /--ttl must be a positive duration in ms or with a unit \(500ms, 30s, 5m, 1h\), got 'soon'/,
    ],
    [['exec', '--name', 'x', '--ttl', '0', ...redis, ...cmd], /--ttl must be a positive duration/],
    // Seconds written without a unit (issue 25): refused with the likely intent, not run with 60 ms.
    [
      ['exec', '--name', 'x', '--ttl', '60', ...redis, ...cmd],
      /--ttl is in milliseconds without a unit: 60 is 60 ms; did you mean 60s\? \(write 60ms if you do mean milliseconds\)/,
    ],
    [['exec', '--name', 'x', '--wait', '-5', ...redis, ...cmd], /--wait must be a duration .* or 'forever', got '-5'/],
    [['exec', '--name', 'x', '--kill-after', '5d', ...redis, ...cmd], /--kill-after must be a duration/],
    [['exec', '--name', 'x', '--prefix', '{x}', ...redis, ...cmd], /--prefix must be 1 to 64 characters/],
    [
      ['exec', '--name', 'x', ...cmd],
      /--redis URL \(or AIRLOCK_REDIS_URL\) is required: without Redis each airlock process has its own memory/,
    ],
    [
      ['exec', '--name', 'x', '--redis', 'http://user:secret@host', ...cmd],
      /--redis must be a redis:\/\/ or rediss:\/\/ URL .* got 'http:\/\/user:\*\*\*@host\/'/,
    ],
    [['exec', '--name', 'x', ...redis], /no command given: airlock exec --name NAME --redis URL -- COMMAND/],
    [['exec', '--name', 'x', ...redis, '--'], /no command given/],
    [['serve', '--port', '70000'], /--port must be an integer from 0 to 65535, got '70000'/],
    [['serve', 'extra'], /unexpected argument 'extra'/],
    [
      ['serve', '--log-level', 'loud'],
      /--log-level must be one of fatal, error, warn, info, debug, trace, silent, got 'loud'/,
    ],
    [['serve', '--body-limit', '0'], /--body-limit must be a positive integer/],
    [['serve', '--redis', 'localhost:6379'], /--redis must be a redis:\/\/ or rediss:\/\/ URL/],
  ])('%j → exit 64 with one line naming the problem', async (argv, message) => {
    const { code, out, err } = await run(argv)
    expect(code).toBe(EXIT.USAGE)
    expect(out).toBe('')
    expect(err).toHaveLength(1)
    expect(err[0]).toMatch(message)
    expect(err[0]).not.toContain('\n')
    expect(err[0]).not.toContain('secret')
  })

  it('AIRLOCK_REDIS_URL stands in for --redis, and is checked the same way', async () => {
    const { code, err } = await run(['exec', '--name', 'x', '--', 'true'], { AIRLOCK_REDIS_URL: 'nope' })
    expect(code).toBe(EXIT.USAGE)
    expect(err[0]).toMatch(/--redis \(AIRLOCK_REDIS_URL\) must be a redis:\/\/ or rediss:\/\/ URL/)
  })

  it('serve without any key variable exits 78 with one line naming the variable', async () => {
    const { code, err } = await run(['serve', '--port', '0'])
    expect(code).toBe(EXIT.CONFIG)
    expect(err).toEqual([expect.stringMatching(/^airlock: no API key: set AIRLOCK_WRITE_KEY/)])
  })

  it('serve with a key too short exits 78 naming the variable, never the key', async () => {
    const { code, err } = await run(['serve', '--port', '0'], { AIRLOCK_WRITE_KEY: 'tiny-key' })
    expect(code).toBe(EXIT.CONFIG)
    expect(err[0]).toMatch(/AIRLOCK_WRITE_KEY keys must be 16 to 256 visible ASCII characters/)
    expect(err[0]).not.toContain('tiny-key')
  })

  it.each([
    ['60000', 60_000],
    ['500ms', 500],
    ['30s', 30_000],
    ['1.5s', 1_500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['forever', Infinity],
  ])('durations: %s = %d ms', (text, ms) => {
    expect(durationFlag('wait', text, { min: 0, forever: true })).toBe(ms)
  })
})
