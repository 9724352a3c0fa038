/**
 * In a clone of the repository, before any build: `npm run airlock -- ARGS` runs the command from
 * source (dist/cli.js, which `npx airlock` runs, exists only after `npm run build`). Also checks
 * that every `npm run SCRIPT` the README and docs/cli.md mention exists.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ROOT } from './harness.js'

const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as {
  version: string
  scripts: Record<string, string>
}

describe('the airlock command from source', () => {
  it('npm run airlock -- --help / --version / exec --help work without a build', () => {
    expect(Object.keys(pkg.scripts)).toContain('airlock')
    expect(pkg.scripts.airlock).not.toMatch(/dist\//)
    const npm = (args: string[]) =>
      spawnSync('npm', ['run', '--silent', 'airlock', '--', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })
    const help = npm(['--help'])
    expect([help.status, help.stdout]).toEqual([0, expect.stringMatching(/^Usage: airlock <command>/)])
    expect(npm(['--version']).stdout.trim()).toBe(pkg.version)
    expect(npm(['exec', '--help']).stdout).toContain('--redis URL')
  }, 120_000)

  it('every `npm run SCRIPT` in the README and docs/cli.md is a script of package.json', () => {
    for (const file of ['README.md', 'docs/cli.md']) {
      const named = [...readFileSync(`${ROOT}/${file}`, 'utf8').matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!)
      expect(named.length).toBeGreaterThan(0)
      for (const script of named) expect(Object.keys(pkg.scripts), `${file}: npm run ${script}`).toContain(script)
    }
  })
})
