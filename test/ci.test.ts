/**
 * `.ci/run --dry-run` (the CI entry point without installing, building or testing anything): it
 * names the system packages CI makes sure of, and prints the Redis version as a bare number.
 * `tools/other-nodes.sh`, which .ci/run runs after `npm test`: the adapter and store tests under
 * Node 22 and 24 (its `--list` and `--versions`; running it is CI's job, not this file's).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ADAPTERS } from './http/harness.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const hasRedis = spawnSync('redis-server', ['--version']).status === 0
const run = () => execFileSync('bash', ['.ci/run', '--dry-run'], { cwd: root, encoding: 'utf8', timeout: 30_000 })

describe('.ci/run', () => {
  it('makes sure of redis-server, chromium, lua-check, the PHP client packages (php-cli, php-curl, php-symfony-http-client), nginx, curl, procps, prometheus (promtool), and for the connector php-fpm, php-sqlite3, njs, caddy and systemd', () => {
    const checked = /^ci: system packages: (.*?);/m.exec(run())?.[1]?.split(' ')
    expect(checked).toEqual([
      'redis-server',
      'chromium',
      'lua-check',
      'php-cli',
      'php-curl',
      'php-symfony-http-client',
      'nginx',
      'curl',
      'procps',
      'prometheus',
      'php-fpm',
      'php-sqlite3',
      'libnginx-mod-http-js',
      'caddy',
      'systemd',
    ])
  })

  it.skipIf(!hasRedis && !process.env.CI)('prints the Redis version as a bare number (7.0.15, not v=7.0.15)', () => {
    const reported = execFileSync('redis-server', ['--version'], { encoding: 'utf8' })
    const version = /\bv=(\S+)/.exec(reported)![1]!
    expect(run()).toMatch(new RegExp(`^ci: node v\\S+, npm \\S+, redis ${version.replace(/\./g, '\\.')}$`, 'm'))
  })
})

describe('tools/other-nodes.sh', () => {
  const lines = (flag: string) =>
    execFileSync('bash', ['tools/other-nodes.sh', flag], { cwd: root, encoding: 'utf8' }).trim().split('\n')
  const read = (file: string) => readFileSync(join(root, file), 'utf8')

  it('runs under Node 22 and 24, the majors that package.json "engines" names beside 20 (the one npm test runs under)', () => {
    expect(lines('--versions').map((v) => v.split('.')[0])).toEqual(['22', '24'])
    expect(JSON.parse(read('package.json')).engines).toEqual({ node: '20 || 22 || >=24' })
    expect(read('README.md')).toContain('Requirements: Node 20, 22 or 24')
  })

  it('covers every adapter of the HTTP behaviour suite, the proxy, NestJS on both platforms and the store contract on memory, Redis and Redis Cluster', () => {
    const files = lines('--list')
    for (const adapter of ADAPTERS)
      expect(
        files.filter((f) => read(f).includes(`behaviour('${adapter}')`)),
        adapter,
      ).not.toEqual([])
    expect(files).toEqual(expect.arrayContaining(['test/proxy/proxy.test.ts', 'test/examples-nestjs.test.ts']))
    const contracts = files
      .filter((f) => /^\s*storeContract\('/m.test(read(f)))
      .map((f) => /storeContract\('([^']+)'/.exec(read(f))![1])
    expect(contracts.sort()).toEqual(['memory', 'redis', 'redis-cluster'])
  })

  it('.ci/run runs it after npm test, and --dry-run names the versions and the files', () => {
    expect(read('.ci/run')).toMatch(/npm test -- [^\n]*\n(#[^\n]*\n)*tools\/other-nodes\.sh --parallel /)
    const named = /^ci: also node (\S+) (\S+): (.*)$/m.exec(run())
    expect(named?.slice(1, 3)).toEqual(lines('--versions'))
    expect(named?.[3]?.split(' ')).toEqual(lines('--list'))
  })
})
