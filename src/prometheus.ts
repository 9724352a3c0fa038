/**
 * `airlock-shield/prometheus`: the gate's metrics for Prometheus, on `prom-client` (an optional
 * peer: `npm install prom-client`). See src/prometheus/metrics.ts and docs/observability.md.
 * @packageDocumentation
 */
export * from './prometheus/metrics.js'
