/**
 * The `airlock` executable (package.json `bin`). Built by tsup as `dist/cli.js` with a
 * `#!/usr/bin/env node` line; during development: `node --import tsx src/cli.ts`.
 */
import { readFileSync } from 'node:fs'
import { main } from './cli/main.js'

// ../package.json from both src/cli.ts and dist/cli.js.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }

const status = await main(
  process.argv.slice(2),
  {
    out: (text) => process.stdout.write(text),
    err: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    tty: process.stdout.isTTY === true,
  },
  version,
)
process.exitCode = status
// Everything airlock opened is closed by now; should anything linger, do not hang a cron job.
setTimeout(() => process.exit(status), 500).unref()
