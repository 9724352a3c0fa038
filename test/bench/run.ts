/** Runs a bench to completion for the smoke tests, and reads what it wrote. */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

export const results = mkdtempSync(join(tmpdir(), 'airlock-bench-smoke-'))
afterAll(() => rmSync(results, { recursive: true, force: true }))

/** Runs `bench/<file>` to completion (killed after `limitMs`); resolves with its exit code and output. */
export function runBench(
  file: string,
  env: Record<string, string>,
  limitMs = 80_000,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('bench', file)], {
      env: { ...process.env, ...env, BENCH_RESULTS: results },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const killer = setTimeout(() => child.kill('SIGKILL'), limitMs)
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, out })
    })
  })
}

export const json = (name: string) => JSON.parse(readFileSync(join(results, `${name}.json`), 'utf8'))
/** The Markdown row of `name` in the output (`| name | ...`). */
export const row = (out: string, name: string): string | undefined =>
  out.split('\n').find((l) => l.startsWith(`| ${name} |`))
