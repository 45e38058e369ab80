/**
 * @module model-gateway – the public API (`exports["."]`): everything a policy plugin or a provider
 * adapter may import. Built-in plugins and adapters import from here too, so a built-in is exactly
 * what an outside author can write. Anything not exported here is internal and may change in any
 * release; README "Public API" states what is stable.
 */

// ── plugins ───────────────────────────────────────────────────────────────────────────────────
export { definePlugin, isGatewayPlugin, PLUGIN_OUTPUTS } from './core/pipeline/plugin.ts'
export type { GatewayPlugin, PluginHooks, PluginDeps, PluginOutput, PluginOutputs, OutputOf, PluginErrorSpec, HostResolver } from './core/pipeline/plugin.ts'
export type { ClientAnswer, ClientStreamEvent, JsonObject } from './core/dispatch/response-hooks.ts'
export { PHASES } from './core/types/phases.ts'
export type { Phase } from './core/types/phases.ts'
export { ROUTE_NAMES } from './core/types/context.ts'
export type { GatewayContext, Outcome, RouteName, Headers } from './core/types/context.ts'

// ── provider adapters and translators ─────────────────────────────────────────────────────────
export { defineProvider } from './core/dispatch/provider.ts'
export type {
  ProviderAdapter, ProviderInstance, ProviderDeps, UpstreamCall, UpstreamRequest, UpstreamResponse,
  Translator, TranslatorKey, StreamTranslator, TranslateOptions, UpstreamTranslateOptions, SseEvent,
} from './core/dispatch/provider.ts'

// ── errors ────────────────────────────────────────────────────────────────────────────────────
export { GatewayError, gwError, isGatewayError, ERRORS } from './core/errors/errors.ts'
export type { ErrorCode, ErrorSpec, GatewayErrorOptions } from './core/errors/errors.ts'

// ── shared data shapes ────────────────────────────────────────────────────────────────────────
export { usageFromChat, usageFromMessages } from './providers/protocols/usage.ts'
export type { Usage } from './core/types/usage.ts'
export type { ModelEntry, ModelPrice, Deployment, Protocol, ClientProtocol, PublicModel } from './core/types/model.ts'
export type { Principal } from './core/types/principal.ts'
export type { Catalog } from './core/dispatch/catalog.ts'

// ── services handed to create() ───────────────────────────────────────────────────────────────
export { isStoreFull, STORE_PURPOSES } from './core/stores/kv.ts'
export type { KvStore, CounterResult, StorePurpose } from './core/stores/kv.ts'
export type { Ledger, Reservation, Hold, ReserveOptions, KeyRecord, UsageRecord, Micros, QueuedCharge } from './core/ledger/ledger.ts'

// ── config schemas: TypeBox, re-exported so a plugin package needs no dependency of its own ─────
export { Type } from '@sinclair/typebox'
export type { Static, TSchema } from '@sinclair/typebox'
