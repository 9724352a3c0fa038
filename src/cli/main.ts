/**
 * The `airlock` command: one table of its commands (name, what it does, help, runner) from which
 * the dispatch, the help and every message that lists the commands are made; errors become one line
 * on stderr and a documented exit status (exit.ts). Each command lives in its own file with its help.
 */
import { authCommand, AUTH_HELP, CADDY_CONFIG_HELP, configCommand, NGINX_CONFIG_HELP } from './auth.js'
import { controlCommand, CONTROL_HELP } from './control.js'
import { dashboardCommand, DASHBOARD_HELP } from './dashboard.js'
import { proxyCommand, PROXY_HELP } from './proxy.js'
import { execCommand, EXEC_HELP, type CliIo } from './exec.js'
import { CliError, EXIT, UsageError } from './exit.js'
import { hugCommand, HUG_HELP } from './hug.js'
import { reportCommand, REPORT_HELP } from './report.js'
import { serveCommand, SERVE_HELP } from './serve.js'
import { nearest } from '../base/validate.js'

interface Command {
  /** One line for `airlock --help`. */
  what: string
  help: string
  run(argv: readonly string[], io: CliIo): Promise<number>
}

/** Every command of `airlock`, in the order the help lists them. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  exec: {
    what: 'run a command only when a semaphore on Redis admits it (cron jobs that must not overlap)',
    help: EXEC_HELP,
    run: execCommand,
  },
  serve: {
    what: 'serve the HTTP lock service (locks and JSON data for services in any language)',
    help: SERVE_HELP,
    run: serveCommand,
  },
  control: {
    what: "read or change a gate's live control on Redis (limit, mode, admission rate, opening time)",
    help: CONTROL_HELP,
    run: controlCommand,
  },
  dashboard: {
    what: "serve the operator's dashboard for gates on Redis (live figures, charts, controls)",
    help: DASHBOARD_HELP,
    run: dashboardCommand,
  },
  hug: {
    what: 'rehearse a hug against your site: a crowd that behaves like people, live figures, a report',
    help: HUG_HELP,
    run: hugCommand,
  },
  report: {
    what: "print a gate's per-minute history on Redis as JSON, CSV or an HTML page with charts (after the hug)",
    help: REPORT_HELP,
    run: reportCommand,
  },
  proxy: {
    what: 'shield any website: a reverse proxy with the gate in front (PHP, Rails, Django, static)',
    help: PROXY_HELP,
    run: proxyCommand,
  },
  auth: {
    what: 'the gate for nginx, Caddy or Traefik: answers their forward-auth subrequests (session mode)',
    help: AUTH_HELP,
    run: authCommand,
  },
  'nginx-config': {
    what: 'print an nginx configuration that checks passes in nginx (njs) and asks airlock auth',
    help: NGINX_CONFIG_HELP,
    run: (a, io) => configCommand('nginx', a, io),
  },
  'caddy-config': {
    what: 'print a Caddyfile site block that asks airlock auth (forward_auth)',
    help: CADDY_CONFIG_HELP,
    run: (a, io) => configCommand('caddy', a, io),
  },
}
const NAMES = Object.keys(COMMANDS)
/** `exec, serve, control, dashboard, hug, report, proxy, auth, nginx-config and caddy-config`. */
const LISTED = `${NAMES.slice(0, -1).join(', ')} and ${NAMES.at(-1)}`
const width = Math.max(...NAMES.map((n) => n.length)) + 2

export const MAIN_HELP = `Usage: airlock <command> [options]

Commands:
${NAMES.map((n) => `  ${n.padEnd(width)}${COMMANDS[n]!.what}`).join('\n')}

Options:
  -h, --help      show this help (airlock <command> --help for a command's)
  -V, --version   show the version

Examples:
  npx airlock-shield exec --name report --ttl 60s --redis redis://127.0.0.1:6379 -- node report.js
  AIRLOCK_WRITE_KEY=$(openssl rand -hex 24) npx airlock-shield serve --port 8080 --redis redis://127.0.0.1:6379
  npx airlock-shield control set --name shop --redis redis://127.0.0.1:6379 --limit 20
  npx airlock-shield hug http://127.0.0.1:3000/ --visitors 2000 --over 10s --flood 100
  npx airlock-shield report --name shop --redis redis://127.0.0.1:6379 --from 24h --format html > report.html
  npx airlock-shield proxy --target http://127.0.0.1:8080 --limit 20
  npx airlock-shield auth --limit 20 --secret-file /etc/airlock/secret   # then: airlock nginx-config
`

/** Runs the command line `argv` (without node and the script); resolves the exit status. */
export async function main(argv: readonly string[], io: CliIo, version: string): Promise<number> {
  const [name, ...rest] = argv
  const command = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  const where = command !== undefined ? `airlock ${name}` : 'airlock'
  try {
    if (command !== undefined) return await command.run(rest, io)
    switch (name) {
      case '-h':
      case '--help':
        io.out(MAIN_HELP)
        return EXIT.OK
      case 'help': {
        const topic = rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0]) ? COMMANDS[rest[0]] : undefined
        io.out(topic?.help ?? MAIN_HELP)
        return EXIT.OK
      }
      case '-V':
      case '--version':
        io.out(`${version}\n`)
        return EXIT.OK
      case undefined:
        io.err(
          `airlock: a command is required: ${NAMES.join(', ').replace(/, ([^,]*)$/, ' or $1')} (see airlock --help)`,
        )
        return EXIT.USAGE
      default: {
        if (name.startsWith('-')) throw new UsageError(`unknown flag ${name}`)
        const near = nearest(name, NAMES)
        throw new UsageError(
          `unknown command '${name}'${near === undefined ? '' : ` (did you mean '${near}'?)`}; the commands are ${LISTED}`,
        )
      }
    }
  } catch (err) {
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
