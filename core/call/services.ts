/**
 * @module services – what a call's way to the upstream and back reads of the app's services: the
 * config version it runs under, its pipeline, the providers and translators, the upstream pool,
 * circuits and session pins. The app's `Gateway` (core/http/gateway.ts) is one of these and more.
 */
import type { GatewayConfig } from '../config/config-schema.ts'
import type { Pipeline } from '../pipeline/pipeline.ts'
import type { ProviderInstance, Translator, TranslatorKey } from '../dispatch/provider.ts'
import type { UpstreamClient } from '../dispatch/upstream.ts'
import type { Circuits } from '../dispatch/circuits.ts'
import type { Affinity } from '../dispatch/affinity.ts'

export interface CallServices {
  readonly config: GatewayConfig
  readonly pipeline: Pipeline
  readonly providers: ReadonlyMap<string, ProviderInstance>
  readonly translators: Readonly<Record<TranslatorKey, Translator>>
  readonly upstream: UpstreamClient
  readonly circuits: Circuits
  /** Session pins (cache-friendly routing), in the app's key-value store. */
  readonly affinity: Affinity
  /** Draws the weighted order among equal deployments (Math.random unless a test seeds it). */
  readonly random: () => number
  now (): number
}
