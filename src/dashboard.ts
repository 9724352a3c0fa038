/**
 * `airlock-shield/dashboard`: the operator's dashboard, framework-free (no optional peer). Mount it
 * with `airlockDashboard` from `airlock-shield/fastify` or `airlock-shield/express`, or serve it
 * alone with `airlock dashboard`. See docs/dashboard.md.
 * @packageDocumentation
 */
export { createDashboard, type Dashboard, type DashboardOptions } from './dashboard/server.js'
export { Sampler, type GateView, type Sample, type SamplerOptions } from './dashboard/sampler.js'
export type { LiveMinute } from './dashboard/live-minutes.js'
export { DASHBOARD_CSP, dashboardHashes, renderDashboardPage } from './pages/dashboard.js'
