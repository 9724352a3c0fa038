/**
 * Runs the `airlock` command from src (through tsx, so no build is needed) as a real process and
 * watches its output.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'

export const ROOT = resolve(import.meta.dirname, '../..')
export const CHILD = resolve(import.meta.dirname, 'fixtures/child.mjs')

export interface Run {
  proc: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves once stdout contains `text` (rejects after `timeout`). */
  waitFor(text: string | RegExp, timeout?: number): Promise<string>
  /** Exit status (`128 + n` is only what airlock reports; a signal death of airlock itself shows as `signal`). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
}

export function airlock(args: string[], env: Record<string, string | undefined> = {}): Run {
  const merged: Record<string, string | undefined> = { ...process.env, AIRLOCK_REDIS_URL: undefined, ...env }
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key]
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  const watchers = new Set<() => void>()
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
    for (const w of watchers) w()
  })
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString()
    for (const w of watchers) w()
  })
  // On 'exit', not 'close': a command that outlives a killed airlock keeps the inherited pipes open.
  // Output already written is read within a short grace period.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (done) =>
      proc.on('exit', (code, signal) => {
        let finished = false
        const finish = (): void => {
          if (finished) return
          finished = true
          done({ code, signal, stdout: out, stderr: err })
        }
        proc.once('close', finish)
        setTimeout(finish, 300)
      }),
  )
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(text, timeout = 15_000) {
      return new Promise((resolveWait, reject) => {
        const match = (): boolean => (typeof text === 'string' ? out.includes(text) : text.test(out))
        if (match()) return resolveWait(out)
        const timer = setTimeout(() => {
          watchers.delete(check)
          reject(new Error(`timed out waiting for ${String(text)}; stdout: ${out}; stderr: ${err}`))
        }, timeout)
        const check = (): void => {
          if (match()) {
            clearTimeout(timer)
            watchers.delete(check)
            resolveWait(out)
          }
        }
        watchers.add(check)
        void exited.then(() => {
          if (watchers.has(check)) {
            watchers.delete(check)
            clearTimeout(timer)
            if (match()) resolveWait(out)
            else reject(new Error(`exited before ${String(text)}; stdout: ${out}; stderr: ${err}`))
          }
        })
      })
    },
  }
}

/** `node child.mjs <mode...>`: the command airlock runs in tests. */
export const child = (...mode: string[]): string[] => [process.execPath, CHILD, ...mode]
