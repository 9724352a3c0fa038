/**
 * `airlock-shield/proxy`: the shield in front of any website (PHP, Rails, Django, a static shop),
 * not only Node apps. See src/proxy/proxy.ts and docs/proxy.md.
 * @packageDocumentation
 */
export { badGatewayPage, createProxy, COMMAND_HEADER, type AirlockProxy, type ProxyLogOptions, type ProxyOptions } from './proxy/proxy.js'
