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
  Translator, TranslatorKey, StreamTranslator, StreamFailDetail, TranslateOptions, UpstreamTranslateOptions, SseEvent,
  StreamDecoder,
} from './core/dispatch/provider.ts'
// Signing a prepared request (`ProviderInstance.sign`) with credentials a provider refreshes itself.
export { staticCredentials, envCredentials, refreshingCredentials } from './core/dispatch/credentials.ts'
export type { Credentials, CredentialProvider, RefreshingOptions } from './core/dispatch/credentials.ts'
export { sigV4Signer } from './core/dispatch/sigv4.ts'
export type { SigV4Options } from './core/dispatch/sigv4.ts'

// ── what a protocol translator builds with ────────────────────────────────────────────────────
// Reading an upstream's event stream and framing the client's (the chat framing `data:`, the
// messages and Responses framing `event:` + `data:`).
export { SseParser, SseEventTooLarge, sseData, sseEvent, SSE_DONE } from './core/dispatch/sse.ts'
// The one estimate of a call's usage when the upstream reported none (an answer without usage, a
// stream cut short), the output-token guess it uses, and what a stream is billed (its final usage,
// else that estimate of what it relayed).
export { estimateUsage, estimateOutputTokens, streamUsage } from './core/dispatch/estimate.ts'
// The output cap a call reserves for and its upstream request carries (translators write it).
export { requestedOutputCap } from './core/dispatch/estimate.ts'
export type { StreamUsageSoFar } from './core/dispatch/estimate.ts'
// The one sanitizer for upstream text shown to a client (an error message, an error event).
export { sanitizeUpstreamMessage } from './core/dispatch/upstream-errors.ts'
// Same-protocol fast path: where the client's body text holds its model, to send that text with
// only the model name replaced (`Translator.requestText`).
export { modelSpanOf, spliceModel } from './core/http/body.ts'
export type { ModelSpan } from './core/http/body.ts'

// ── errors ────────────────────────────────────────────────────────────────────────────────────
export { GatewayError, gwError, isGatewayError, ERRORS } from './core/errors/errors.ts'
export type { ErrorCode, ErrorSpec, GatewayErrorOptions } from './core/errors/errors.ts'

// ── shared data shapes ────────────────────────────────────────────────────────────────────────
// The protocols' usage objects to and from the normalized Usage.
export { usageFromChat, usageFromMessages, usageFromResponses, usageToChat, usageToMessages, usageToResponses } from './providers/protocols/usage.ts'
export type { Usage } from './core/types/usage.ts'
export type { ModelEntry, ModelPrice, Deployment, Protocol, ClientProtocol, PublicModel } from './core/types/model.ts'
export type { Principal } from './core/types/principal.ts'
export { keyScope } from './core/types/principal.ts'
export type { Catalog } from './core/dispatch/catalog.ts'

// ── services handed to create() ───────────────────────────────────────────────────────────────
export { isStoreFull, STORE_PURPOSES } from './core/stores/kv.ts'
export type { KvStore, CounterResult, StorePurpose } from './core/stores/kv.ts'
export type { Ledger, Reservation, Hold, ReserveOptions, KeyRecord, UsageRecord, Micros, QueuedCharge } from './core/ledger/ledger.ts'

// ── config schemas: TypeBox, re-exported so a plugin package needs no dependency of its own ─────
export { Type } from '@sinclair/typebox'
export type { Static, TSchema } from '@sinclair/typebox'
