import { defineConfig } from 'tsup'

// Optional peers stay external so memory-only users never load them.
const external = ['ioredis', 'fastify', 'fastify-plugin', 'express']

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    splitting: false,
    // import.meta.url (optional peers are loaded with createRequire) also in the CJS build.
    shims: true,
    external,
  },
  {
    // The `airlock` executable: ESM only, one file, started by `npx airlock`.
    entry: { cli: 'src/cli.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: true,
    clean: false,
    target: 'node20',
    splitting: false,
    banner: { js: '#!/usr/bin/env node' },
    external,
  },
])
