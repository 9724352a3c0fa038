/**
 * `.ci/run --dry-run` (the CI entry point without installing, building or testing anything): it
 * names the system packages CI makes sure of, and prints the Redis version as a bare number.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const hasRedis = spawnSync('redis-server', ['--version']).status === 0

describe('.ci/run', () => {
  const run = () => execFileSync('bash', ['.ci/run', '--dry-run'], { cwd: root, encoding: 'utf8', timeout: 30_000 })

  it('makes sure of redis-server, chromium, lua-check, the PHP client packages (php-cli, php-curl, php-symfony-http-client), nginx, curl and procps', () => {
    const checked = /^ci: system packages: (.*?);/m.exec(run())?.[1]?.split(' ')
    expect(checked).toEqual(['redis-server', 'chromium', 'lua-check', 'php-cli', 'php-curl', 'php-symfony-http-client', 'nginx', 'curl', 'procps'])
  })

  it.skipIf(!hasRedis && !process.env.CI)('prints the Redis version as a bare number (7.0.15, not v=7.0.15)', () => {
    const reported = execFileSync('redis-server', ['--version'], { encoding: 'utf8' })
    const version = /\bv=(\S+)/.exec(reported)![1]!
    expect(run()).toMatch(new RegExp(`^ci: node v\\S+, npm \\S+, redis ${version.replace(/\./g, '\\.')}$`, 'm'))
  })
})
