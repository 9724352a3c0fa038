/**
 * `airlock-shield/proxy`: the shield in front of any website (PHP, Rails, Django, a static shop),
 * not only Node apps. See src/proxy/proxy.ts and docs/proxy.md.
 * @packageDocumentation
 */
export {
  badGatewayPage,
  createProxy,
  COMMAND_HEADER,
  type AirlockProxy,
  type ProxyLogOptions,
  type ProxyOptions,
} from './proxy/proxy.js'
export {
  createDecisionService,
  REQUEST_MODE_REFUSED,
  type DecisionService,
  type DecisionServiceOptions,
} from './proxy/decide.js'
export { caddyConfig, nginxConfig, type ConnectorConfigOptions } from './connector/configs.js'
export { NJS_MODULE, njsSettings, type NjsSettings } from './connector/njs.js'
