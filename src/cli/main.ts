/**
 * The `airlock` command: dispatches to its commands (`exec`, `serve`, `control`, `dashboard`,
 * `proxy`, each in its own file with its help text), answers `--help` and `--version`, and turns
 * errors into one line on stderr and a documented exit status (exit.ts).
 */
import { controlCommand, CONTROL_HELP } from './control.js'
import { dashboardCommand, DASHBOARD_HELP } from './dashboard.js'
import { proxyCommand, PROXY_HELP } from './proxy.js'
import { execCommand, EXEC_HELP, type CliIo } from './exec.js'
import { CliError, EXIT, UsageError } from './exit.js'
import { serveCommand, SERVE_HELP } from './serve.js'

export const MAIN_HELP = `Usage: airlock <command> [options]

Commands:
  exec    run a command only when a semaphore on Redis admits it (cron jobs that must not overlap)
  serve   serve the HTTP lock service (locks and JSON data for services in any language)
  control read or change a gate's live control on Redis (limit, mode, admission rate, opening time)
  dashboard  serve the operator's dashboard for gates on Redis (live figures, charts, controls)
  proxy   shield any website: a reverse proxy with the gate in front (PHP, Rails, Django, static)

Options:
  -h, --help      show this help (airlock <command> --help for a command's)
  -V, --version   show the version

Examples:
  npx airlock exec --name report --ttl 60s --redis redis://127.0.0.1:6379 -- node report.js
  AIRLOCK_WRITE_KEY=$(openssl rand -hex 24) npx airlock serve --port 8080 --redis redis://127.0.0.1:6379
  npx airlock control set --name shop --redis redis://127.0.0.1:6379 --limit 20
  npx airlock proxy --target http://127.0.0.1:8080 --limit 20
`

/** Runs the command line `argv` (without node and the script); resolves the exit status. */
export async function main(argv: readonly string[], io: CliIo, version: string): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case '-h':
      case '--help':
        io.out(MAIN_HELP)
        return EXIT.OK
      case 'help':
        io.out(rest[0] === 'exec' ? EXEC_HELP : rest[0] === 'serve' ? SERVE_HELP : rest[0] === 'control' ? CONTROL_HELP : rest[0] === 'dashboard' ? DASHBOARD_HELP : rest[0] === 'proxy' ? PROXY_HELP : MAIN_HELP)
        return EXIT.OK
      case '-V':
      case '--version':
        io.out(`${version}\n`)
        return EXIT.OK
      case 'exec':
        return await execCommand(rest, io)
      case 'serve':
        return await serveCommand(rest, io)
      case 'control':
        return await controlCommand(rest, io)
      case 'dashboard':
        return await dashboardCommand(rest, io)
      case 'proxy':
        return await proxyCommand(rest, io)
      case undefined:
        io.err('airlock: a command is required: exec, serve, control, dashboard or proxy (see airlock --help)')
        return EXIT.USAGE
      default:
        throw new UsageError(
          command.startsWith('-') ? `unknown flag ${command}` : `unknown command '${command}'; the commands are exec, serve, control, dashboard and proxy`,
        )
    }
  } catch (err) {
    const where = ['exec', 'serve', 'control', 'dashboard', 'proxy'].includes(command ?? '') ? `airlock ${command}` : 'airlock'
    if (err instanceof UsageError) {
      io.err(`${where}: ${err.message} (see ${where} --help)`)
      return err.code
    }
    if (err instanceof CliError) {
      io.err(`airlock: ${err.message}`)
      return err.code
    }
    io.err(`${where}: unexpected error: ${(err as Error)?.stack ?? String(err)}`)
    return EXIT.FAILURE
  }
}
