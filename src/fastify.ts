/**
 * `airlock-shield/fastify`: the Fastify 5 plugin (`airlockShield`, also the default export) and the
 * dashboard's plugin (`airlockDashboard`). It only translates the gate's decisions into replies.
 * @packageDocumentation
 */
export * from './fastify/plugin.js'
export { airlockDashboard } from './fastify/dashboard.js'
export { default } from './fastify/plugin.js'

/** `AirlockControl` (deprecated, goes in 0.3): the old name of {@link AirlockHandle}, kept here, by the request it names; the root entry no longer has it (beside `airlockControl()`, the live control). */
export type { AirlockControl, AirlockHandle } from './gate/types.js'
