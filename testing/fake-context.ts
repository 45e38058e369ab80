/** @module testing/fake-context – a GatewayContext for calling plugin hooks directly. */
import pino from 'pino'
import type { GatewayContext, Outcome, RouteName } from '../core/context.ts'
import type { ModelEntry, Protocol } from '../core/types/model.ts'
import type { Principal } from '../core/types/principal.ts'
import { deepFreeze } from '../core/config.ts'

export interface FakeContextInit {
  route?: RouteName
  protocol?: Protocol | 'none'
  ip?: string
  method?: string
  url?: string
  headers?: Record<string, string>
  body?: unknown
  model?: ModelEntry
  principal?: Principal
  plugins?: string[]
  now?: () => number
  requestId?: string
  bodyBytes?: number
}

export type FakeContext = GatewayContext & {
  /** What the plugin did through the context. */
  readonly seen: { headers: Record<string, string>, deadlineMs?: number, bodyLimit?: number }
  readonly controller: AbortController
}

/** A context whose writes are recorded in `seen`. */
export function fakeContext (init: FakeContextInit = {}): FakeContext {
  const seen: FakeContext['seen'] = { headers: {} }
  const controller = new AbortController()
  const state: Record<string, unknown> = {}
  for (const p of init.plugins ?? []) state[p] = undefined
  Object.seal(state)
  let principal = init.principal
  const ctx = {
    requestId: init.requestId ?? 'trace-test',
    route: init.route ?? 'chat',
    protocol: init.protocol ?? (init.route === 'messages' ? 'messages' : 'chat'),
    method: init.method ?? 'POST',
    url: init.url ?? '/v1/chat/completions',
    ip: init.ip ?? '127.0.0.1',
    headers: Object.freeze({ ...(init.headers ?? {}) }),
    body: init.body === undefined ? undefined : deepFreeze(structuredClone(init.body)),
    model: init.model,
    bodyBytes: init.bodyBytes ?? 0,
    get deadlineMs () { return seen.deadlineMs },
    get principal () { return principal },
    phase: 'connect' as const,
    signal: controller.signal,
    log: pino({ level: 'silent' }),
    state,
    now: init.now ?? (() => Date.now()),
    setHeader (name: string, value: string) { seen.headers[name.toLowerCase()] = value },
    setPrincipal (p: Principal) { principal = p },
    setDeadline (ms: number) { seen.deadlineMs = ms },
    setBodyLimit (bytes: number) { seen.bodyLimit = bytes },
    seen,
    controller,
  }
  return ctx as unknown as FakeContext
}

/** An Outcome with sensible defaults for settle tests. */
export function fakeOutcome (o: Partial<Outcome> = {}): Outcome {
  return { status: 200, usageEstimated: false, upstreamSucceeded: true, clientAborted: false, ...o }
}
