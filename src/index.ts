/**
 * airlock-shield: a distributed semaphore with leases, and what is built on it.
 *
 * The root holds what needs no optional peer: the semaphore, the memory store and the Store
 * contract's types, the waiting room, `throttle`, the framework-free gate and its types, the live
 * control (`airlockControl`), the diagnostics channels and their payloads, errors, signing, and the
 * busy and waiting pages. Each optional peer has its own entry point, so a project that does not
 * use it installs nothing extra and its types never import it: `airlock-shield/fastify` (fastify),
 * `airlock-shield/express` (express), `airlock-shield/redis` (ioredis),
 * `airlock-shield/lock-server` (fastify), `airlock-shield/prometheus` (prom-client) and
 * `airlock-shield/proxy` (undici). Two more need no peer: `airlock-shield/dashboard` (the
 * operator's dashboard) and `airlock-shield/testing` (the store contract suite for custom stores).
 * @packageDocumentation
 */
export { AirlockError, isAirlockError, type AirlockErrorCode } from './base/errors.js'
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
  type TryAcquireResult,
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
  type WaitingRoomStatus,
  type WithAdmittedOptions,
} from './core/waiting-room.js'
export { memoryStore, type MemoryStoreOptions } from './stores/memory.js'
export type {
  AcquireRequest,
  AcquireResult,
  ControlRecord,
  LeaseState,
  QueueRequest,
  QueueSettings,
  RefreshResult,
  Released,
  Store,
  StoreStatus,
  StoreEnded,
} from './stores/types.js'
export { createGate, Gate } from './gate/gate.js'
export {
  airlockControl,
  CONTROL_MODES,
  type ControlMode,
  type ControlPatch,
  type ControlState,
  type LiveControl,
  type LiveControlOptions,
} from './core/control.js'
export type {
  AdmitDecision,
  AirlockHandle,
  BusyDecision,
  BypassDecision,
  GateCookieOptions,
  GateDecision,
  GateLogger,
  GateOptions,
  GateResponse,
  GateStatus,
  PassDecision,
  QueuedDecision,
  RequestSlot,
  RequestView,
} from './gate/types.js'
export type { GateBusyOptions, GateHistoryOptions, GateQueueOptions } from './gate/option-types.js'
export {
  airlockReport,
  reportCsv,
  RELEASE_CAUSES,
  type HistoryReport,
  type HistoryRow,
  type HistoryTotals,
  type ReportOptions,
} from './core/report.js'
export { renderReportHtml, REPORT_CSP } from './pages/report.js'
export type { ReleasedBy, VisitSink } from './gate/tally-types.js'
export type { Duration } from './base/validate.js'
export type { GateCounters, InstanceReport, InstanceStatus } from './gate/status-types.js'
export {
  CHANNELS,
  type BreakerEvent,
  type ChallengeEvent,
  type ControlEvent,
  type DecisionEvent,
  type FailoverEvent,
  type LimitEvent,
  type QueueEvent,
  type ReleaseEvent,
  type StoreEvent,
} from './base/events.js'
export { createSigner, type Signer, type SignerOptions } from './base/signing.js'
export { busyPageHashes, BUSY_PAGE_CSP, renderBusyPage, type BusyPage, type BusyPageContext } from './pages/busy.js'
export { SHIELD_HEADER, shieldHeader, type BusyReason } from './pages/answers.js'
export type { MessagesOption, VisitorLanguage } from './pages/language.js'
export type { Messages } from './pages/messages/types.js'
export {
  describeEta,
  renderWaitingPage,
  waitingPageHashes,
  WAITING_PAGE_CSP,
  type WaitingPage,
  type WaitingPageContext,
} from './pages/waiting.js'
