/**
 * @module model-gateway – the public API (`exports["."]`): everything a policy plugin or a provider
 * adapter may import. Built-in plugins and adapters import from here too, so a built-in is exactly
 * what an outside author can write. Anything not exported here is internal and may change in any
 * release; README "Public API" states what is stable.
 */

// ── plugins ───────────────────────────────────────────────────────────────────────────────────
export { definePlugin, isGatewayPlugin, PLUGIN_OUTPUTS } from './core/pipeline/plugin.ts'
export type { GatewayPlugin, PluginHooks, PluginDeps, PluginOutput, PluginOutputs, OutputOf, PluginErrorSpec, HostResolver, PreparedWork, StepsOutcome } from './core/pipeline/plugin.ts'
export type { ClientAnswer, ClientStreamEvent, JsonObject } from './core/pipeline/plugin.ts'
export { PHASES } from './core/types/phases.ts'
export type { Phase } from './core/types/phases.ts'
export { ROUTE_NAMES } from './core/types/context.ts'
export type { Outcome, RouteName, Headers } from './core/types/context.ts'
export type { GatewayContext } from './core/pipeline/plugin.ts'

// ── provider adapters and translators ─────────────────────────────────────────────────────────
export { defineProvider } from './core/dispatch/provider.ts'
export type {
  ProviderAdapter, ProviderInstance, ProviderDeps, UpstreamCall, UpstreamRequest, UpstreamResponse,
  Translator, TranslatorKey, StreamTranslator, StreamFailDetail, TranslateOptions, UpstreamTranslateOptions, SseEvent,
  StreamDecoder, EventSink,
} from './core/dispatch/provider.ts'
// Signing a prepared request (`ProviderInstance.sign`) with credentials a provider refreshes itself.
export { staticCredentials, envCredentials, refreshingCredentials, refreshing } from './core/dispatch/credentials.ts'
export type { Credentials, CredentialProvider, RefreshingOptions, Expiring, Refreshing } from './core/dispatch/credentials.ts'
// Google OAuth access tokens (a service account's RS256 JWT exchanged, an authorized_user's refresh
// token, a fixed token), the `credentials` config value that names them, and the Bearer
// `sign` / `renewAuth` pair an adapter calling Google Cloud returns.
export {
  readGoogleCredentials, serviceAccountTokens, serviceAccountAssertion, authorizedUserTokens, staticAccessToken, googleTokens,
  GOOGLE_CLOUD_SCOPE, GOOGLE_TOKEN_URI,
} from './core/dispatch/google-credentials.ts'
export type {
  GoogleCredentials, GoogleServiceAccount, GoogleAuthorizedUser, GoogleAccessTokenCredentials, AccessToken, TokenProvider, GoogleTokenOptions,
} from './core/dispatch/google-credentials.ts'
export { GoogleCredentialsConfig, bearerSigning, googleTokensFromConfig } from './core/dispatch/google-signing.ts'
export type { GoogleCredentialsConfigT, BearerSigning } from './core/dispatch/google-signing.ts'
export { sigV4Signer } from './core/dispatch/sigv4.ts'
export type { SigV4Options } from './core/dispatch/sigv4.ts'
// The `aws` config block any HTTP adapter may take to sign with SigV4, and the signer it builds.
export { AwsSigningConfig, AwsCredentialsConfig, awsSigner } from './core/dispatch/aws-signing.ts'
export type { AwsSigningConfigT } from './core/dispatch/aws-signing.ts'

// ── what a protocol translator builds with ────────────────────────────────────────────────────
// Reading an upstream's event stream and framing the client's (the chat framing `data:`, the
// messages and Responses framing `event:` + `data:`).
export { SseParser, SseEventTooLarge, sseData, sseEvent, SSE_DONE } from './core/dispatch/sse.ts'
// The one serializer of the events a stream translator emits (`EventSink`) into the client's text.
export { SseWriter, sseText } from './core/dispatch/sse-writer.ts'
// The one estimate of a call's usage when the upstream reported none (an answer without usage, a
// stream cut short), the output-token guess it uses, and what a stream is billed (its final usage,
// else that estimate of what it relayed).
export { estimateUsage, estimateOutputTokens, streamUsage } from './core/tokens/estimate.ts'
// The output cap a call reserves for and its upstream request carries (translators write it).
export { requestedOutputCap } from './core/tokens/estimate.ts'
export type { StreamUsageSoFar } from './core/tokens/estimate.ts'
// The one sanitizer for upstream text shown to a client (an error message, an error event).
export { sanitizeUpstreamMessage } from './core/dispatch/upstream-errors.ts'
// Core's mapping of an upstream's error answer, for an adapter's `mapError` that handles only its
// vendor's special cases and hands it the rest.
export { defaultMapError } from './core/dispatch/upstream-errors.ts'
// Same-protocol fast path: where the client's body text holds its model, to send that text with
// only the model name replaced (`Translator.requestText`).
export { modelSpanOf, spliceModel, spliceBody, membersInPlace } from './core/http/body.ts'
export type { ModelSpan, ValueSpan } from './core/http/body.ts'
// An adapter's configured base URL split into an origin (one connection pool) and a path prefix.
// A user name and password in it: refused, or (basicAuth) sent as Basic authorization.
export { splitBaseUrl, addBaseUrlAuthorization } from './core/dispatch/base-url.ts'
export type { BaseUrlParts } from './core/dispatch/base-url.ts'

// ── errors ────────────────────────────────────────────────────────────────────────────────────
export { GatewayError, gwError, isGatewayError, ERRORS } from './core/errors/errors.ts'
export type { ErrorCode, ErrorSpec, GatewayErrorOptions } from './core/errors/errors.ts'

// ── shared data shapes ────────────────────────────────────────────────────────────────────────
// The protocols' usage objects, to and from the normalized Usage, the server tools a messages
// or Responses answer reports it used, and what counts as a token count (an adapter's own usage).
export {
  usageFromChat, usageFromMessages, usageFromResponses, usageToChat, usageToMessages, usageToResponses,
  serverToolUsesFromMessages, serverToolUsesFromResponses, tokenCount, unreadableUsage, MAX_TOKEN_COUNT,
} from './core/types/wire-usage.ts'
export type { ChatUsage, MessagesUsage, ResponsesUsage } from './core/types/wire-usage.ts'
export type { Usage } from './core/types/usage.ts'
// A messages body as a Claude upstream takes it back: thinking that carries another vendor's
// reasoning (a conversation moved from a Gemini or OpenAI model) dropped, as Claude refuses it.
export { withoutCarriedThinking, carriedSignature, REASONING_PREFIX, GEMINI_SIGNATURE_PREFIX } from './core/types/carried-thinking.ts'
export type { ModelEntry, ModelPrice, Deployment, Protocol, ClientProtocol, PublicModel } from './core/types/model.ts'
export type { Principal } from './core/types/principal.ts'
export { keyScope, modelAllowed } from './core/types/principal.ts'
export type { Catalog } from './core/dispatch/catalog.ts'

// ── services handed to create() ───────────────────────────────────────────────────────────────
export { isStoreFull, STORE_PURPOSES } from './core/stores/kv.ts'
export type { KvStore, InProcessKv, CounterResult, StorePurpose, StoreStep, StepResult, BatchResult, StepRunner } from './core/stores/kv.ts'
export type { Ledger, Reservation, Hold, ReserveOptions, KeyRecord, UsageRecord, Micros, QueuedCharge, LeaseGrant, KeyBudgets, KeyHold, KeyRefusal, BudgetWindow } from './core/ledger/ledger.ts'
// The ledger's roles: a plugin declares the ones it uses (`ledger: [...]`) and gets a view of each
// in `deps.ledger`; administration (LedgerAdmin) is for the admin API and CLI only.
export type { Wallet, InProcessWallet, KeyLookup, PriceLookup, UsageReader, LedgerAdmin, LedgerReachable } from './core/ledger/ledger.ts'
export { LEDGER_ROLES } from './core/ledger/roles.ts'
export type { LedgerRole, LedgerRoles, LedgerRolesOf } from './core/ledger/roles.ts'
export type { ChargeSpool } from './core/ledger/spool.ts'

// ── what the metering plugins (balance, quota) build with ─────────────────────────────────────
// A model's prices read from the ledger, cached; a call's cost and its worst case in micros.
export { PriceBook } from './money/pricing.ts'
export { costMicros, reserveMicros } from './money/billing.ts'
export { billedCacheWrites } from './core/observe/cost.ts'
export type { PerUseTerms } from './money/billing.ts'
// The input tokens a reservation covers (the byte floor, else the tokenizer's count), the choices
// a call asks for, and the per-use terms (service tier, server tool uses) it reserves and settles at.
export { reservationBoundTokens, reservationInputTokens, reservationInputTokensNow } from './core/tokens/reservation.ts'
export { requestedChoices, reservedInputTokens } from './core/tokens/estimate.ts'
export { reserveTerms, settleTerms } from './core/dispatch/per-use.ts'

// ── client addresses (ip-limit): the client behind server.trustedProxies, resolved as core does ──
export { normalizeIp, blockListOf, inList, clientIp } from './core/config/trusted-proxies.ts'

// ── API keys: their format, hashing and constant-time comparison (auth, the admin API and CLI) ──
export { KEY_PREFIX, generateKey, hashKey, keyDisplayPrefix, sameHash } from './core/ledger/keys.ts'
// Ledger keys' budget windows (auth, balance, the admin API).
export { windowStart as budgetWindowStart, windowEnd as budgetWindowEnd } from './core/ledger/key-budget.ts'

// ── config schemas: TypeBox, re-exported so a plugin package needs no dependency of its own ─────
export { Type } from '@sinclair/typebox'
export type { Static, TSchema } from '@sinclair/typebox'
