/**
 * `npm run entries`: writes package.json's "exports" and "typesVersions" and tsconfig.json's
 * "paths" from the one list of entry points (src/entries.ts). `--check` writes nothing and exits 1
 * when either file differs from what the list makes (test/architecture.test.ts runs it).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ENTRIES } from '../src/entries.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const check = process.argv.includes('--check')
const names = Object.keys(ENTRIES)

/** The three JSON sections the list makes. */
export function sections(): { exports: object; typesVersions: object; paths: object } {
  const exportsField: Record<string, unknown> = {}
  for (const name of names) {
    const out = name === 'index' ? '.' : `./${name}`
    exportsField[out] = {
      import: { types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` },
      require: { types: `./dist/${name}.d.cts`, default: `./dist/${name}.cjs` },
    }
  }
  exportsField['./package.json'] = './package.json'
  const typesVersions = {
    '*': Object.fromEntries(names.filter((n) => n !== 'index').map((n) => [n, [`./dist/${n}.d.ts`]])),
  }
  const paths = Object.fromEntries(
    names.map((n) => [n === 'index' ? 'airlock-shield' : `airlock-shield/${n}`, [`./${ENTRIES[n]}`]]),
  )
  return { exports: exportsField, typesVersions, paths }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const made = sections()
  const stale: string[] = []
  const pkgFile = `${root}package.json`
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'))
  if (JSON.stringify(pkg.exports) !== JSON.stringify(made.exports)) stale.push('package.json "exports"')
  if (JSON.stringify(pkg.typesVersions) !== JSON.stringify(made.typesVersions))
    stale.push('package.json "typesVersions"')
  const tsFile = `${root}tsconfig.json`
  const ts = JSON.parse(readFileSync(tsFile, 'utf8'))
  if (JSON.stringify(ts.compilerOptions.paths) !== JSON.stringify(made.paths)) stale.push('tsconfig.json "paths"')
  if (check) {
    if (stale.length > 0) {
      console.error(`${stale.join(', ')} differ from src/entries.ts: run npm run entries`)
      process.exit(1)
    }
  } else {
    pkg.exports = made.exports
    pkg.typesVersions = made.typesVersions
    writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`)
    ts.compilerOptions.paths = made.paths
    // tsconfig.json keeps its one-line arrays.
    const text = JSON.stringify(ts, null, 2).replace(
      /\[\s+([^\]{}]*?)\s+\]/g,
      (_m, inner: string) => `[${inner.split(/,\s+/).join(', ')}]`,
    )
    writeFileSync(tsFile, `${text}\n`)
    console.log(
      stale.length > 0 ? `wrote ${stale.join(', ')}` : 'package.json and tsconfig.json already match src/entries.ts',
    )
  }
}
