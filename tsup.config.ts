import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: false,
  // Optional peers stay external so memory-only users never load them.
  external: ['ioredis', 'fastify', 'fastify-plugin', 'express'],
})
