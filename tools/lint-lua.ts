/**
 * `npm run lint:lua`: lints every rendered Redis script with luacheck (Debian's lua-check): Lua
 * 5.1 as Redis runs it, with `redis`, `KEYS` and `ARGV` as the only globals. Unused prelude
 * functions are expected (each script uses some of them), so "unused variable" (211) is not
 * reported; everything else is (undefined globals, shadowing, unused values, unreachable code).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SCRIPTS } from '../src/stores/lua/scripts.js'
import { HISTORY_SCRIPTS } from '../src/stores/lua/history.js'

const dir = mkdtempSync(join(tmpdir(), 'airlock-lua-'))
try {
  const files = [...SCRIPTS, ...HISTORY_SCRIPTS].map((s) => {
    const file = join(dir, `${s.name}.lua`)
    writeFileSync(file, s.lua)
    return file
  })
  const run = spawnSync(
    'luacheck',
    ['--std', 'lua51', '--globals', 'redis', 'KEYS', 'ARGV', '--ignore', '211', '--codes', '--no-color', ...files],
    { encoding: 'utf8' },
  )
  if (run.error) {
    console.error(`lint:lua: luacheck not found (Debian: apt-get install lua-check): ${run.error.message}`)
    process.exit(2)
  }
  process.stdout.write(run.stdout)
  process.stderr.write(run.stderr)
  process.exit(run.status ?? 1)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
