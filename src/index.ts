/**
 * airlock-shield: a distributed semaphore with leases (memory or Redis), and what is built on it:
 * the web gate (`airlockShield` for Fastify 5, `airlock` for Express 4 and 5), the waiting room,
 * `throttle` for functions, and the HTTP lock service (`createLockServer`).
 * @packageDocumentation
 */
export { AirlockError, isAirlockError, type AirlockErrorCode } from './core/errors.js'
export {
  createSemaphore,
  Semaphore,
  type AcquireOptions,
  type BlockingOptions,
  type Lease,
  type LeaseHandle,
  type RunContext,
  type RunOptions,
  type SemaphoreOptions,
  type SemaphoreState,
} from './core/semaphore.js'
export { throttle, type Throttled, type ThrottleOptions } from './core/throttle.js'
export {
  assertVisitorId,
  createWaitingRoom,
  estimateWait,
  MAX_VISITOR_ID_LENGTH,
  newVisitorId,
  WaitingRoom,
  type Admitted,
  type EnterResult,
  type Full,
  type PollResult,
  type Queued,
  type WaitingRoomOptions,
  type WaitingRoomState,
  type WithAdmittedOptions,
} from './core/waiting-room.js'
export { memoryStore, MemoryStore, type MemoryStoreOptions } from './stores/memory.js'
export { redisStore, RedisStore, type RedisClient, type RedisStoreOptions } from './stores/redis.js'
export type {
  AcquireRequest,
  AcquireResult,
  LeaseState,
  QueueRequest,
  RefreshResult,
  Store,
} from './stores/types.js'
export {
  createGate,
  Gate,
  type AdmitDecision,
  type AirlockControl,
  type BusyDecision,
  type BypassDecision,
  type GateCookieOptions,
  type GateDecision,
  type GateLogger,
  type GateOptions,
  type GateResponse,
  type PassDecision,
  type QueuedDecision,
  type RequestSlot,
  type RequestView,
} from './core/gate.js'
export type { GateQueueOptions } from './core/line.js'
export { createSigner, type Signer, type SignerOptions } from './core/signing.js'
export { busyPageHashes, BUSY_PAGE_CSP, renderBusyPage, type BusyPage, type BusyPageContext } from './pages/busy.js'
export {
  describeEta,
  renderWaitingPage,
  waitingPageHashes,
  WAITING_PAGE_CSP,
  type WaitingPage,
  type WaitingPageContext,
} from './pages/waiting.js'
export {
  airlockShield,
  type AirlockRouteConfig,
  type AirlockRouteGateOptions,
  type AirlockShieldOptions,
} from './fastify.js'
export { createLockServer, type LockServerOptions } from './lock-server/server.js'
export { KEY_ENV, type ApiKeys, type KeyList } from './lock-server/keys.js'
export type { LockQueueOptions } from './lock-server/locks.js'
export {
  memoryResources,
  MemoryResources,
  redisResources,
  RedisResources,
  type RedisResourcesOptions,
  type ResourceDefinition,
  type ResourceStorage,
} from './lock-server/resources.js'
export { airlock, type AirlockMiddleware, type ExpressLikeRequest, type ExpressLikeResponse } from './express.js'
