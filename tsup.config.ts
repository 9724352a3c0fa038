import { defineConfig } from 'tsup'

import { ENTRIES, EXTERNAL_PEERS } from './src/entries.js'

export { ENTRIES }

// Optional peers stay external so a user who does not use them never loads them (src/entries.ts).
const external = [...EXTERNAL_PEERS]

export default defineConfig([
  {
    entry: ENTRIES,
    format: ['esm', 'cjs'],
    dts: true,
    // No source maps: they were 2.5 of the package's 4.6 MB unpacked, for an unminified build whose
    // stack traces read as they are (test/package.test.ts checks that none ships).
    sourcemap: false,
    clean: true,
    target: 'node20',
    // Shared code (the default memory store, the classes) lives once in a chunk both entries use.
    splitting: true,
    // import.meta.url (optional peers are loaded with createRequire) also in the CJS build.
    shims: true,
    external,
  },
  {
    // The `airlock` executable: ESM only, one file, started by `npx airlock`.
    entry: { cli: 'src/cli.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: false,
    clean: false,
    target: 'node20',
    splitting: false,
    banner: { js: '#!/usr/bin/env node' },
    external,
  },
])
