/** @module plugin – the policy-plugin contract: one phase, a config schema, a factory. */
import type { TSchema, Static } from '@sinclair/typebox'
import type { Logger } from 'pino'
import type { Phase } from '../types/phases.ts'
import type { Headers, Outcome, RouteName } from '../types/context.ts'
import type { ClientProtocol, ModelEntry } from '../types/model.ts'
import type { KvStore, StorePurpose } from '../stores/kv.ts'
import type { PreparedWork } from './prepared.ts'

export type { PreparedWork, StepsOutcome } from './prepared.ts'
import type { LedgerRole, LedgerRolesOf } from '../ledger/roles.ts'
import type { ChargeSpool } from '../ledger/spool.ts'
import type { Catalog } from '../dispatch/catalog.ts'
import { GatewayError, type GatewayErrorOptions } from '../errors/errors.ts'
import type { Principal } from '../types/principal.ts'

/**
 * Outputs core itself knows: `principal` is read through `ctx.principal` and written through
 * `ctx.setPrincipal()`. Any other declared output goes through `ctx.publish()` / `ctx.output()`.
 */
export const PLUGIN_OUTPUTS = ['principal'] as const
/** What an output name looks like: lower camelCase or kebab-case. */
export const OUTPUT_NAME = /^[a-z][a-zA-Z0-9]*(?:-[a-z0-9]+)*$/
export type PluginOutput = string

/**
 * Types of the outputs plugins publish, by name. Core declares `principal`; a plugin that
 * publishes another output adds it by declaration merging, so that readers get its type:
 * `declare module '<gateway>/core/pipeline/plugin.ts' { interface PluginOutputs { team: string } }`.
 */
export interface PluginOutputs {
  principal: Principal
}

/** The type of output `K`: declared in PluginOutputs, or unknown. */
export type OutputOf<K extends string> = K extends keyof PluginOutputs ? PluginOutputs[K] : unknown

/** The request as plugins see it. Fields appear as phases advance (see core/types/phases.ts). */
export interface GatewayContext {
  readonly requestId: string
  readonly route: RouteName
  /** The wire protocol of the route: its error body shape and request shape. */
  readonly protocol: ClientProtocol | 'none'
  readonly method: string
  readonly url: string
  /** Client address: the socket's, or behind `server.trustedProxies` the X-Forwarded-For hop they vouch for. */
  readonly ip: string
  readonly headers: Headers
  /** Parsed JSON body, read-only (top level frozen); undefined before `inspect` and on routes without a body. */
  readonly body: unknown
  /** Bytes of the request body as received (0 before `inspect` and on routes without a body). */
  readonly bodyBytes: number
  /** The call's time limit in ms as set by `setDeadline`, if any (undefined: none). */
  readonly deadlineMs: number | undefined
  /** The catalog entry named by the body's `model`; undefined before `inspect`. */
  readonly model: ModelEntry | undefined
  /** The caller; undefined before `authenticate` (and always on probes). */
  readonly principal: Principal | undefined
  /** The phase running now, or 'settle'. */
  readonly phase: Phase | 'settle' | 'dispatch'
  /** Aborted when the client disconnects or the deadline passes. */
  readonly signal: AbortSignal
  readonly log: Logger
  /** Current time in ms (injectable clock). */
  now (): number
  /** Adds a response header (for example Retry-After). */
  setHeader (name: string, value: string): void
  /** Sets the principal; allowed only for a plugin that declares `provides: ['principal']`. */
  setPrincipal (principal: Principal): void
  /** Publishes an output for later plugins; allowed only for a plugin that declares it in `provides`. */
  publish<K extends string> (name: K, value: OutputOf<K>): void
  /** Reads an output; allowed only for a plugin that declares it in `requires` (or `provides`). */
  output<K extends string> (name: K): OutputOf<K> | undefined
  /** Bounds the time to the first response byte, and the gap between stream chunks (timeout plugin). */
  setDeadline (ms: number): void
  /** Bounds the request body in bytes; enforced while the body streams in (size-limit plugin). */
  setBodyLimit (bytes: number): void
  /**
   * Reports what the call was charged, in whole micro-units (1 currency unit = 1 000 000): the
   * amount a billing plugin bills for it (the balance plugin: its usage record's `cost`). The
   * access log's `cost` and `gw_cost_total` then carry this amount (`costBasis: charged`) instead
   * of the cost at the catalog price. Report from `onSettle` (or `onAnswered`); a later report
   * replaces an earlier one. Throws a TypeError on anything but a safe integer ≥ 0.
   */
  reportCharge (micros: number): void
}

/** Refuses a charge that is not whole micro-units ≥ 0 (see GatewayContext.reportCharge). */
export function checkCharge (micros: unknown, plugin: string | undefined): asserts micros is number {
  if (!Number.isSafeInteger(micros) || (micros as number) < 0) {
    throw new TypeError(`plugin "${plugin ?? 'unknown'}": reportCharge(${String(micros)}) takes whole micro-units, a safe integer ≥ 0`)
  }
}

/** A JSON object as parsed from the wire. */
export type JsonObject = { [key: string]: unknown }

/** A non-streamed answer in the client's protocol, before it is serialized. */
export interface ClientAnswer {
  /** The client's protocol: a `chat.completion` object, a messages `message` object, or a `response` object. */
  readonly protocol: ClientProtocol
  /** The answer; change it in place or replace it (the hook may also return a replacement). */
  body: JsonObject
}

/** One streamed event in the client's protocol, before it is serialized. */
export interface ClientStreamEvent {
  readonly protocol: ClientProtocol
  /**
   * messages and responses: the event name (`message_start`, `response.output_text.delta`, `error`...);
   * chat: `chunk`, `error` for an error chunk, or `done` for the `[DONE]` terminator.
   */
  type: string
  /** The event's JSON; undefined for chat's `done`. */
  data: JsonObject | undefined
}

/** A stream hook refused the stream: it ends with this error as its last event. */
export class StreamBlocked extends Error {
  readonly error: GatewayError
  constructor (error: GatewayError) {
    super(error.message)
    this.error = error
    this.name = 'StreamBlocked'
  }
}

/** An error code a plugin adds to the gateway's table (checked for clashes at start-up). */
export interface PluginErrorSpec {
  /** HTTP status, 400–599. */
  status: number
  /** String `error.code` of the numeric-code body (e.g. `team_missing`); the status number when absent. */
  code?: string
  /** `error.type` of the messages-protocol body (e.g. `invalid_request_error`). */
  type: string
  /**
   * Text with `%s` placeholders filled from the arguments in order; both locales are required.
   * `zh` is the older name of `zh-CN`, still accepted.
   */
  message: { en: string, 'zh-CN': string } | { en: string, zh: string }
}

/**
 * Every address (A and AAAA) a host name stands for; rejects when the name does not resolve.
 * Injected so that plugins never reach the network themselves and tests need no DNS.
 */
export type HostResolver = (host: string) => Promise<readonly string[]>

/** What core hands to `create()`: shared services, never the request or the network. */
export interface PluginDeps<E extends string = string, R extends LedgerRole = LedgerRole> {
  /** The shared key-value store (memory or Redis), namespaced for this plugin, for its `storePurpose`. */
  store: KvStore
  /**
   * The ledger roles the plugin declares in `ledger` (SQLite or PostgreSQL behind them), each a
   * view with that role's operations only: `wallet` (balances, holds, charges), `keys` (key
   * lookup), `prices` (ledger prices), `usage` (usage records, read). Never administration.
   */
  ledger: LedgerRolesOf<R>
  /**
   * Where a charge the ledger would not take goes (replayed until it commits); `blocked` while
   * charges are failing or it holds too many. Absent outside an app (a plugin built by hand).
   */
  spool?: ChargeSpool
  /** The model catalog (read-only). */
  catalog: Catalog
  log: Logger
  /** Injectable clock, in ms. */
  now (): number
  /** Routes this pipeline entry applies to. */
  routes: readonly RouteName[]
  /** DNS: the system resolver (`getaddrinfo`, so /etc/hosts counts) unless the app was given one. */
  resolveHost: HostResolver
  /**
   * An error of one of the codes this plugin declares in `errors`, to throw: core renders it in
   * the route's body shape, localized, like its own codes.
   */
  error (code: E, args?: readonly unknown[], opts?: GatewayErrorOptions): GatewayError
}

/**
 * What `create()` returns. Name the functions so stack traces show them. Every hook gets, last,
 * this plugin's own state for the request (`L`, made by the definition's `state()` on first use;
 * undefined when it declares none): no plugin can reach another's.
 */
export interface PluginHooks<L = undefined> {
  /** Runs in the plugin's phase; throw a GatewayError to reject. */
  onRequest? (ctx: GatewayContext, state: L): void | Promise<void>
  /**
   * Optional, synchronous: this call's store work declared instead of done, so that the plugins
   * of a phase that follow each other and declare it share one batch (one round trip to Redis).
   * Return the steps and a `done` that reads their outcome (and throws to refuse), or undefined to
   * have `onRequest` run instead for this call. When `prepare` returns work, `onRequest` does not
   * run. May start other I/O at once (balance starts its ledger hold here, so it overlaps the
   * batch) and await it in `done`. Throw a GatewayError to refuse at once. `onSettle` runs for
   * every plugin whose `prepare` ran, also when another plugin's step refused the batch before
   * its `done` ran (nothing of its steps is applied then).
   */
  prepare? (ctx: GatewayContext, state: L): PreparedWork | undefined | void
  /**
   * Optional, synchronous: `onSettle`'s store work declared instead of done, batched with the
   * other settling plugins' (their steps apply; `done` may log what failed). Undefined: `onSettle`
   * runs instead for this call. When it returns work, `onSettle` does not run.
   */
  prepareSettle? (ctx: GatewayContext, outcome: Outcome, state: L): PreparedWork | undefined | void
  /**
   * Non-streamed answers: sees the answer in the client's protocol before it is serialized, in
   * reverse pipeline order, before `onAnswered`. Change `answer.body` in place, or return a
   * replacement body; throw a GatewayError to answer with that error instead (the upstream call
   * is still billed). Declaring it costs the same-protocol fast path its byte-for-byte copy.
   */
  onResponse? (ctx: GatewayContext, answer: ClientAnswer, state: L): unknown
  /**
   * Streamed answers: sees each event the client would get, parsed, in the client's protocol, in
   * reverse pipeline order (the events that end the stream before `onAnswered`). Change
   * `event.data` in place, return a replacement event, return null to drop it, or throw a
   * GatewayError to end the stream with that error as its last event. `event.data` is the
   * translator's own object (a Responses item may show again in a later event). Declaring it
   * makes every stream on its routes go through the hooks: events relayed as the upstream sent
   * them are parsed, and every event is serialized after the hooks.
   */
  onStreamEvent? (ctx: GatewayContext, event: ClientStreamEvent, state: L): ClientStreamEvent | null | undefined | void | Promise<ClientStreamEvent | null | undefined | void>
  /**
   * Runs once an upstream answered and the call's usage is known, just before the answer's last
   * bytes go to the client (non-streamed: before the body is sent; streamed: before the final
   * event), in reverse pipeline order. For what the client's next call must already see (the
   * balance plugin shrinks its hold to the real cost here). The client waits for it: keep it
   * short. Errors are logged, never thrown; onSettle still runs afterwards.
   */
  onAnswered? (ctx: GatewayContext, outcome: Outcome, state: L): void | Promise<void>
  /** Runs in reverse pipeline order for every plugin whose onRequest ran, also after errors. */
  onSettle? (ctx: GatewayContext, outcome: Outcome, state: L): void | Promise<void>
  /** Readiness of the plugin's own dependencies, for /readyz. */
  ready? (): Promise<boolean>
  close? (): void | Promise<void>
}

export interface GatewayPlugin<S extends TSchema = TSchema, L = unknown, E extends string = string, R extends LedgerRole = LedgerRole> {
  /** kebab-case; equals the folder name and the config `plugin` key. */
  name: string
  phase: Phase
  /** Plugins that must run in an earlier (or the same, earlier-listed) position. */
  dependencies?: readonly string[]
  /** Outputs this plugin publishes for later plugins; one provider per output in a pipeline. */
  provides?: readonly PluginOutput[]
  /**
   * Outputs this plugin reads; start-up fails unless a plugin earlier in the pipeline (by phase,
   * then position) provides each of them on every route this one runs on.
   */
  requires?: readonly PluginOutput[]
  /**
   * Makes this plugin's per-request state, on the first hook that needs it in a request; every
   * hook gets the same object for that request as its last argument.
   */
  state? (): L
  /** Error codes this plugin throws (through `deps.error`), added to the gateway's table at start-up. */
  errors?: { readonly [K in E]: PluginErrorSpec }
  /**
   * What `deps.store` holds (default `counters`): `counters` may be evicted under memory pressure
   * (LRU); `windows` and `claims` are kept until they expire, and a full store refuses new keys.
   */
  storePurpose?: StorePurpose
  /** Ledger roles `create()` gets in `deps.ledger` (default none): `wallet`, `keys`, `prices`, `usage`. */
  ledger?: readonly R[]
  /** Default `routes` when a pipeline entry names none. */
  defaultRoutes?: readonly RouteName[]
  /** JSON Schema (TypeBox) of the plugin's config; enforced by ajv at start-up. */
  configSchema: S
  /**
   * Optional: rewrites the validated config before it is frozen, e.g. to replace a secret by its
   * hash. The result is what `create()` gets and what stays in the gateway's config. May throw.
   */
  prepareConfig? (config: Static<S>): Static<S>
  create (config: Static<S>, deps: PluginDeps<E, R>): PluginHooks<L> | Promise<PluginHooks<L>>
}

/**
 * Identity helper that ties the config type to the schema, the state type to `state()`,
 * `deps.error` to `errors`, and `deps.ledger` to the roles in `ledger`.
 */
export function definePlugin<S extends TSchema, L = undefined, E extends string = never, R extends LedgerRole = never> (plugin: GatewayPlugin<S, L, E, R>): GatewayPlugin<S, L, E, R> {
  return plugin
}

export function isGatewayPlugin (value: unknown): value is GatewayPlugin {
  const p = value as GatewayPlugin
  return typeof p === 'object' && p !== null && typeof p.name === 'string' &&
    typeof p.phase === 'string' && typeof p.create === 'function' && typeof p.configSchema === 'object'
}

export { GatewayError }
