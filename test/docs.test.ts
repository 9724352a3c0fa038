/**
 * One list per concept (issue 26): the lists the code keeps are the ones the docs show. Every gate
 * option has a row in the README's options table and in docs/gate.md; every control mode and every
 * CLI command is named where the operator reads about them.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { GATE_OPTION_KEYS } from '../src/gate/types.js'
import { CONTROL_MODES } from '../src/core/control.js'
import { COMMANDS } from '../src/cli/main.js'

const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')
/** The option names of a Markdown table's first column (`| \`name\` | ...`). */
const rows = (text: string): Set<string> => new Set([...text.matchAll(/^\| `([A-Za-z]+)[`.]/gm)].map((m) => m[1]!))

describe('the docs list what the code has', () => {
  it('every gate option has a row in the README and in docs/gate.md', () => {
    for (const doc of ['README.md', 'docs/gate.md']) {
      const documented = rows(read(doc))
      expect(
        GATE_OPTION_KEYS.filter((k) => !documented.has(k)),
        doc,
      ).toEqual([])
    }
  })

  it('every control mode is in docs/control.md; every CLI command in docs/cli.md', () => {
    const control = read('docs/control.md')
    expect(CONTROL_MODES.filter((m) => !control.includes(`\`${m}\``))).toEqual([])
    const cli = read('docs/cli.md')
    expect(Object.keys(COMMANDS).filter((c) => !cli.includes(`airlock ${c}`))).toEqual([])
  })
})
