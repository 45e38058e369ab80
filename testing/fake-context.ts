/** @module testing/fake-context – a GatewayContext for calling plugin hooks directly. */
import pino from 'pino'
import type { Outcome, RouteName } from '../core/types/context.ts'
import type { GatewayContext } from '../core/pipeline/plugin.ts'
import type { ClientProtocol, ModelEntry } from '../core/types/model.ts'
import type { Principal } from '../core/types/principal.ts'
import { deepFreeze } from '../core/config/config.ts'
import { checkCharge, type GatewayPlugin, type PluginDeps } from '../core/pipeline/plugin.ts'
import type { TSchema } from '@sinclair/typebox'
import { checkPluginErrors, errorHelper } from '../core/pipeline/plugin-errors.ts'
import type { Ledger } from '../core/ledger/ledger.ts'
import { ledgerRoles, type LedgerRole } from '../core/ledger/roles.ts'

export interface FakeContextInit {
  route?: RouteName
  /** Default: the route's protocol (`messages`, `responses`), else `chat`. */
  protocol?: ClientProtocol | 'none'
  ip?: string
  method?: string
  url?: string
  headers?: Record<string, string>
  body?: unknown
  model?: ModelEntry
  principal?: Principal
  /** Outputs other plugins published, readable through `ctx.output()`. */
  outputs?: Record<string, unknown>
  now?: () => number
  requestId?: string
  bodyBytes?: number
}

export type FakeContext = GatewayContext & {
  /** What the plugin did through the context. */
  readonly seen: { headers: Record<string, string>, deadlineMs?: number, bodyLimit?: number, published: Record<string, unknown>, charged?: number }
  readonly controller: AbortController
}

/** A context whose writes are recorded in `seen`. Hooks take the plugin's state as their last argument: pass one made by the definition's `state()`. */
export function fakeContext (init: FakeContextInit = {}): FakeContext {
  const seen: FakeContext['seen'] = { headers: {}, published: {} }
  const controller = new AbortController()
  let principal = init.principal
  const ctx = {
    requestId: init.requestId ?? 'trace-test',
    route: init.route ?? 'chat',
    protocol: init.protocol ?? (init.route === 'messages' || init.route === 'responses' ? init.route : 'chat'),
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
    now: init.now ?? (() => Date.now()),
    setHeader (name: string, value: string) { seen.headers[name.toLowerCase()] = value },
    setPrincipal (p: Principal) { principal = p },
    publish (name: string, value: unknown) { seen.published[name] = value },
    output (name: string) { return name === 'principal' ? principal : init.outputs?.[name] },
    setDeadline (ms: number) { seen.deadlineMs = ms },
    setBodyLimit (bytes: number) { seen.bodyLimit = bytes },
    reportCharge (micros: number) {
      checkCharge(micros, 'under test')
      seen.charged = micros
    },
    seen,
    controller,
  }
  return ctx as unknown as FakeContext
}

/** An Outcome with sensible defaults for settle tests. */
export function fakeOutcome (o: Partial<Outcome> = {}): Outcome {
  return { status: 200, usageEstimated: false, upstreamSucceeded: true, clientAborted: false, ...o }
}

/**
 * The `deps` a plugin's `create()` gets, for unit tests: its own error codes checked and thrown
 * through `error()` exactly as in a running gateway, a silent logger, the real clock. Stores, the
 * ledger, the catalog and DNS are not there unless given in `overrides` (a whole `ledger`: the
 * plugin gets views of the roles it declares).
 */
export function pluginDeps<E extends string, R extends LedgerRole = never> (plugin: GatewayPlugin<TSchema, unknown, E, R>, overrides: Partial<Omit<PluginDeps<E, R>,
  'ledger'>> & { ledger?: Ledger } = {}): PluginDeps<E, R> {
  const table = checkPluginErrors([plugin as GatewayPlugin])
  return {
    log: pino({ level: 'silent' }),
    now: () => Date.now(),
    routes: ['chat', 'messages'],
    error: errorHelper(plugin.name, table),
    ...overrides,
    // The roles the plugin declares, as views of the given ledger (as core hands them).
    ledger: ledgerRoles(overrides.ledger, plugin.ledger ?? []),
  } as unknown as PluginDeps<E, R>
}
