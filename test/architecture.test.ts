/**
 * The shape of src/ (ARCHITECTURE.md): layers point one way (no two directories import each other,
 * no cycle through several), the leaf (base/) imports nothing of the package, the root entry's
 * types import no optional peer, and no file is longer than a newcomer reads in one sitting.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const src = fileURLToPath(new URL('../src', import.meta.url))

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The directory of src/ a file belongs to ('.' for the entry files at the root). */
const layer = (file: string): string => relative(src, dirname(file)).split('/')[0] || '.'

/** Relative imports of a file, as files of src/ (type-only imports too: they are dependencies of the design). */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!)
  return found.map((spec) => normalize(join(dirname(file), spec.replace(/\.js$/, '.ts'))))
}

const all = files(src)

describe('src/ architecture', () => {
  it('no file is longer than 450 lines', () => {
    const long = all.map((f) => [relative(src, f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > 450)
    expect(long).toEqual([])
  })

  it('directories import each other one way only: the directory graph has no cycle', () => {
    const edges = new Map<string, Set<string>>()
    for (const f of all) {
      for (const target of imports(f)) {
        const [from, to] = [layer(f), layer(target)]
        if (from === to) continue
        if (!edges.has(from)) edges.set(from, new Set())
        edges.get(from)!.add(to)
      }
    }
    // Depth-first search for a cycle; report it as a path.
    const cycles: string[] = []
    const visit = (node: string, path: string[]): void => {
      if (path.includes(node)) {
        cycles.push([...path.slice(path.indexOf(node)), node].join(' -> '))
        return
      }
      for (const next of edges.get(node) ?? []) visit(next, [...path, node])
    }
    for (const node of edges.keys()) visit(node, [])
    expect(cycles).toEqual([])
    // The leaf imports nothing of the package; stores know nothing of the layers above them.
    expect([...(edges.get('base') ?? [])]).toEqual([])
    expect([...(edges.get('stores') ?? [])].sort()).toEqual(['base'])
  })

  it("the root entry and everything it reaches import no optional peer (fastify, express, ioredis), not even as types", () => {
    const seen = new Set<string>()
    const peers: string[] = []
    const walk = (file: string): void => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/from\s+'(fastify|fastify-plugin|express|ioredis)'/g)) peers.push(`${relative(src, file)}: ${m[1]}`)
      for (const target of imports(file)) walk(target)
    }
    walk(join(src, 'index.ts'))
    expect(peers).toEqual([])
  })
})
