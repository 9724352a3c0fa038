/**
 * `airlock-shield/fastify`: the Fastify 5 plugin (`airlockShield`, also the default export) and the
 * dashboard's plugin (`airlockDashboard`). It only translates the gate's decisions into replies.
 * @packageDocumentation
 */
export * from './fastify/plugin.js'
export { default } from './fastify/plugin.js'
