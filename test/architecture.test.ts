/**
 * The shape of src/ (ARCHITECTURE.md): layers point one way (no two directories import each other,
 * no cycle through several), and so do files (no cycle of imports, type-only ones included), the
 * leaf (base/) imports nothing of the package, the root entry's types import no optional peer, and
 * no file is longer than a newcomer reads in one sitting.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnSync } from 'node:child_process'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { ADAPTER_NAMES, ADAPTERS, EXTERNAL_PEERS } from '../src/entries.js'

const src = fileURLToPath(new URL('../src', import.meta.url))
const root = fileURLToPath(new URL('..', import.meta.url))

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
    const long = all
      .map((f) => [relative(src, f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([, n]) => n > 450)
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

  it('files import each other one way only: the file graph has no cycle (type-only imports included)', () => {
    const edges = new Map(all.map((f) => [f, [...new Set(imports(f))]] as const))
    // Tarjan's strongly connected components; each component of more than one file (or a file that
    // imports itself) is a cycle, reported as a path through it.
    const index = new Map<string, number>()
    const low = new Map<string, number>()
    const stack: string[] = []
    const onStack = new Set<string>()
    const components: string[][] = []
    const connect = (v: string): void => {
      index.set(v, index.size)
      low.set(v, index.get(v)!)
      stack.push(v)
      onStack.add(v)
      for (const w of edges.get(v) ?? []) {
        if (!edges.has(w)) continue // not a file of src/ (tsc reports those)
        if (!index.has(w)) {
          connect(w)
          low.set(v, Math.min(low.get(v)!, low.get(w)!))
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
      if (low.get(v) !== index.get(v)) return
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || edges.get(v)!.includes(v)) components.push(component)
    }
    for (const f of all) if (!index.has(f)) connect(f)
    // A path around each component: from its first file, breadth-first back to it within the component.
    const cycles = components.map((component) => {
      const inside = new Set(component)
      const start = component[0]!
      const previous = new Map<string, string>()
      const queue = [start]
      while (queue.length > 0) {
        const v = queue.shift()!
        const next = edges.get(v)!.filter((w) => inside.has(w))
        if (next.includes(start)) {
          const path = [v]
          while (path[0] !== start) path.unshift(previous.get(path[0]!)!)
          return `${[...path, start].map((f) => relative(src, f)).join(' -> ')}  (component: ${component
            .map((f) => relative(src, f))
            .sort()
            .join(' ')})`
        }
        for (const w of next) {
          if (previous.has(w) || w === start) continue
          previous.set(w, v)
          queue.push(w)
        }
      }
      return component.map((f) => relative(src, f)).join(' ')
    })
    expect(cycles).toEqual([])
  })

  it('the lock service imports nothing of the gate, and of the stores only their public modules', () => {
    // The stores' public modules: the contract (types.ts), the store a caller gets (resolve.ts), and
    // the lock service's storage beside each store (resources.ts, public through
    // airlock-shield/lock-server). Not a store's internals (redis.ts's key layout, its calls, its Lua).
    const publicStores = ['stores/types.ts', 'stores/resolve.ts', 'stores/resources.ts']
    const wrong = all
      .filter((f) => layer(f) === 'lock-server')
      .flatMap((f) => imports(f).map((target) => [relative(src, f), relative(src, target)] as const))
      .filter(
        ([, target]) => target.startsWith('gate/') || (target.startsWith('stores/') && !publicStores.includes(target)),
      )
      .map(([from, target]) => `${from} -> ${target}`)
    expect(wrong).toEqual([])
  })

  /** The packages (peers, `node:` modules) that `entry` and every file it reaches import, type-only imports included. */
  const reached = (entry: string): string[] => {
    const seen = new Set<string>()
    const found = new Set<string>()
    const walk = (file: string): void => {
      if (seen.has(file)) return
      seen.add(file)
      for (const m of readFileSync(file, 'utf8').matchAll(/from\s+'([^'.][^']*)'/g)) found.add(m[1]!)
      for (const target of imports(file)) walk(target)
    }
    walk(join(src, entry))
    return [...found].sort()
  }

  it('each adapter (src/entries.ts) reaches its own framework only, as its entry in the list says', () => {
    const frameworks = [...EXTERNAL_PEERS, '@hono/node-server', 'undici']
    const peers = (entry: string) => reached(entry).filter((p) => frameworks.includes(p))
    for (const name of ADAPTER_NAMES) {
      const { file, peers: listed } = ADAPTERS[name]
      expect(peers(relative(src, join(root, file))), name).toEqual([...listed].sort())
    }
    expect(ADAPTERS.fetch.peers).toEqual([])
  })

  it('the root entry exports no two names that differ by case only (airlockControl() and AirlockControl were two ideas)', () => {
    const program = ts.createProgram([join(src, 'index.ts')], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      noEmit: true,
    })
    const checker = program.getTypeChecker()
    const names = checker
      .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(src, 'index.ts'))!)!)
      .map((s) => s.name)
    expect(names.length).toBeGreaterThan(50)
    const byCase = new Map<string, string[]>()
    for (const n of names) byCase.set(n.toLowerCase(), [...(byCase.get(n.toLowerCase()) ?? []), n])
    expect([...byCase.values()].filter((group) => group.length > 1)).toEqual([])
  })

  it('package.json ("exports", "typesVersions") and tsconfig.json ("paths") match the list of entries (npm run entries)', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'tools/entries.ts', '--check'], {
      cwd: root,
      encoding: 'utf8',
    })
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
  })

  it('every adapter has its HTTP suite (test/http/<name>*.test.ts) and its page in docs/stacks.md or the README', () => {
    const suites = readdirSync(join(root, 'test/http')).filter((f) => f.endsWith('.test.ts'))
    const docs = readFileSync(join(root, 'docs/stacks.md'), 'utf8') + readFileSync(join(root, 'README.md'), 'utf8')
    for (const name of ADAPTER_NAMES) {
      expect(
        suites.some((f) => f.startsWith(name)),
        `test/http/${name}.test.ts`,
      ).toBe(true)
      expect(docs, `airlock-shield/${name} in the docs`).toContain(`airlock-shield/${name}`)
    }
  })

  it("the Web-standard adapter's own files use Web APIs only; the Node modules the gate still needs are these (docs/stacks.md)", () => {
    const own = all.filter((f) => layer(f) === 'fetch' || ['fetch.ts', 'hono.ts'].includes(relative(src, f)))
    expect(own.map((f) => relative(src, f)).sort()).toEqual(['fetch.ts', 'fetch/options.ts', 'fetch/web.ts', 'hono.ts'])
    for (const f of own)
      expect(readFileSync(f, 'utf8'), relative(src, f)).not.toMatch(/from\s+'node:|\b(Buffer|process)\./)
    // Reached through the gate: crypto (tokens, HMAC signing, hashes), diagnostics_channel (events),
    // net (isIP for the client share), os (the instance's host name in its report).
    expect(reached('fetch.ts').filter((p) => p.startsWith('node:'))).toEqual([
      'node:crypto',
      'node:diagnostics_channel',
      'node:net',
      'node:os',
    ])
  })

  it('the root entry and everything it reaches import no optional peer (fastify, express, ioredis), not even as types', () => {
    const seen = new Set<string>()
    const peers: string[] = []
    const walk = (file: string): void => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/from\s+'(fastify|fastify-plugin|express|ioredis)'/g))
        peers.push(`${relative(src, file)}: ${m[1]}`)
      for (const target of imports(file)) walk(target)
    }
    walk(join(src, 'index.ts'))
    expect(peers).toEqual([])
  })
})
