/**
 * A private PHP-FPM for tests and benches (Debian's php-fpm): its own config, pool and unix socket
 * in a temp folder, `pm = static` with `children` workers (a modest server has 4), in the
 * foreground, stopped with the process. Never the machine's PHP-FPM.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServerProcess } from './server-process.js'

/** Debian's php-fpm binary (php-fpm8.2 on bookworm), if installed. */
export const PHP_FPM = readdirSync('/usr/sbin').find((f) => /^php-fpm\d/.test(f))
export const hasPhpFpm = PHP_FPM !== undefined
/** Whether PHP has SQLite through PDO (php-sqlite3). */
export const hasPdoSqlite = spawnSync('php', ['-r', 'exit(extension_loaded("pdo_sqlite") ? 0 : 1);']).status === 0

export interface PhpFpm {
  /** For nginx's `fastcgi_pass` (`unix:/tmp/.../php.sock`). */
  address: string
  /** The document root, with the files given. */
  root: string
  stop(): Promise<void>
}

/** Starts PHP-FPM serving `files` (name to PHP source) from a fresh document root. */
export async function startPhpFpm(
  files: Record<string, string>,
  options: { children?: number; requestTimeout?: number } = {},
): Promise<PhpFpm> {
  if (PHP_FPM === undefined) throw new Error('php-fpm is not installed (apt-get install php-fpm)')
  const dir = mkdtempSync(join(tmpdir(), 'airlock-php-fpm-'))
  const root = join(dir, 'www')
  spawnSync('mkdir', ['-p', root])
  for (const [name, source] of Object.entries(files)) writeFileSync(join(root, name), source)
  const socket = join(dir, 'php.sock')
  const asRoot = process.getuid?.() === 0
  writeFileSync(
    join(dir, 'php-fpm.conf'),
    `[global]
pid = ${dir}/php-fpm.pid
error_log = ${dir}/error.log
daemonize = no
[site]
${asRoot ? 'user = root\ngroup = root\n' : ''}listen = ${socket}
pm = static
pm.max_children = ${options.children ?? 4}
request_terminate_timeout = ${options.requestTimeout ?? 30}
catch_workers_output = yes
clear_env = no
`,
  )
  const server = await startServerProcess(
    `/usr/sbin/${PHP_FPM}`,
    ['-F', '-y', join(dir, 'php-fpm.conf'), ...(asRoot ? ['-R'] : [])],
    () => existsSync(socket),
  )
  return {
    address: `unix:${socket}`,
    root,
    stop: server.stop,
  }
}
