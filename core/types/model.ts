/** @module types/model – catalog entries: the public model object the models routes return, plus private routing and prices. */

/** Which wire protocol an upstream (or a client route) speaks. */
export type Protocol = 'chat' | 'messages'
/** What a client route speaks: an upstream protocol, or the OpenAI Responses API (`/v1/responses`, client side only). */
export type ClientProtocol = Protocol | 'responses'

/**
 * Per-million-token prices in the ledger's currency unit. `cachedInput` (cache reads) and
 * `cacheWrite` (input tokens written to the provider's prompt cache) optional: absent, the input rate.
 * `cacheWrite1h`: the rate of writes to a one-hour cache (Anthropic, Bedrock, Vertex charge about 2×
 * input for them against 1.25× for five minutes); absent, the `cacheWrite` rate.
 * `perUse`: price per 1000 uses of an upstream server tool (`web_search`, `web_fetch`,
 * `code_interpreter`...; see core/dispatch/per-use.ts), a feature without one is refused.
 * `serviceTiers`: the multiplier of the token cost for a `service_tier` other than the standard one.
 */
export interface ModelPrice {
  input: number
  cachedInput?: number
  cacheWrite?: number
  cacheWrite1h?: number
  output: number
  perUse?: Readonly<Record<string, number>>
  serviceTiers?: Readonly<Record<string, number>>
}

/** One way to serve a model: a configured provider instance plus the upstream's own model name. */
export interface Deployment {
  provider: string
  upstreamModel: string
  /** Lower runs first. */
  priority: number
  /** Relative weight among deployments of equal priority. */
  weight: number
  /** This deployment's circuit thresholds (the model's over the provider's); absent ones use the defaults. */
  circuit?: Readonly<CircuitOverrides>
}

/** Circuit thresholds a model or a provider may set for its deployments. */
export interface CircuitOverrides {
  failureThreshold?: number
  coolDownMs?: number
  trialTimeoutMs?: number
  ttfbMs?: number
}

/** The public model object: the only fields `GET /v1/models` and `GET /v1/models/{id}` return. */
export interface PublicModel {
  id: string
  object: 'model'
  created: number
  owned_by: string
  name: string
  context_length: number
  architecture: { input_modalities: string[], output_modalities: string[] }
  supported_parameters: string[]
  default_parameters: Record<string, unknown>
}

/** A catalog entry: public fields, and private ones never rendered by a route. */
export interface ModelEntry {
  readonly id: string
  readonly public: Readonly<PublicModel>
  readonly deployments: readonly Deployment[]
  readonly price?: Readonly<ModelPrice>
  /** Output cap used when a request names none (and the ceiling a request's cap is clamped to). */
  readonly maxOutputTokens: number
  readonly inputModalities: ReadonlySet<string>
  readonly supportedParameters: ReadonlySet<string>
  /** This model's session affinity settings, over the routing-wide ones; absent ones fall through. */
  readonly affinity?: Readonly<{ enabled?: boolean, ttlMs?: number }>
}
