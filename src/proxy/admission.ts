/**
 * The proxy's admission (src/gate/admission.ts): the gate's cookies and headers wait here, as raw
 * header pairs, until the origin's head is at hand; then they are added to it (after an
 * `Airlock-Command` from the origin was acted on: ending a pass replaces its cookie).
 */
import type { IncomingMessage } from 'node:http'
import { Admission } from '../gate/admission.js'
import type { Gate } from '../gate/gate.js'
import type { GateDecision } from '../gate/types.js'
import type { Outcome } from './forward.js'

export class ProxyAdmission extends Admission<IncomingMessage> {
  /** The gate's headers for the response (name, value, ...); `undefined` once they were added to the origin's head. */
  #pending: string[] | undefined = []

  constructor(
    gate: Gate<IncomingMessage>,
    decision: GateDecision,
    private readonly https: boolean,
  ) {
    super(gate, decision)
  }

  protected addHeader(name: string, value: string): void {
    this.#pending?.push(name, value)
  }
  protected cookies(): string[] | undefined {
    const pending = this.#pending
    if (pending === undefined) return undefined
    const cookies: string[] = []
    for (let i = 0; i < pending.length; i += 2) if (pending[i] === 'set-cookie') cookies.push(pending[i + 1]!)
    return cookies
  }
  protected setCookies(cookies: string[]): void {
    const pending = this.#pending
    if (pending === undefined) return
    const rest: string[] = []
    for (let i = 0; i < pending.length; i += 2) if (pending[i] !== 'set-cookie') rest.push(pending[i]!, pending[i + 1]!)
    for (const c of cookies) rest.push('set-cookie', c)
    this.#pending = rest
  }
  protected secure(): boolean {
    return this.https
  }

  /** The cookies for the gate's own answer. */
  answerCookies(): string[] {
    return this.cookies() ?? []
  }

  /** The origin's head is here: `command` (its `Airlock-Command`) acted on, then the gate's headers added to `headers`. */
  head(headers: string[], command: string | undefined): void {
    if (command !== undefined) this.command(command)
    const pending = this.#pending
    this.#pending = undefined
    if (pending !== undefined) for (let i = 0; i < pending.length; i++) headers.push(pending[i]!)
  }

  /** The exchange is over: the origin's status (failed: ≥ 500), a failure to reach it (502/504, failed), or the client gone (nothing measured). */
  over(outcome: Outcome): void {
    this.ended(outcome.error === 'aborted' ? undefined : (outcome.upstream ?? 502))
  }
}
