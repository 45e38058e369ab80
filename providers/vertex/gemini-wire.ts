/**
 * @module providers/vertex/gemini-wire – what the Vertex adapter needs of the Gemini translation to
 * serve Gemini models (`publishers/google`): a provider instance for the Gemini wire at paths and
 * with auth of the caller's choosing. The built-in list hands in the `gemini` adapter's
 * `geminiUpstream` and `noSamplingMatcher` (adapters never import each other's files); the shapes
 * here are the ones that adapter exports.
 */
import type { ProviderInstance, UpstreamRequest } from '../../index.ts'

export type GeminiWireMethod = 'generateContent' | 'streamGenerateContent' | 'countTokens'

export interface GeminiWireOptions {
  origin: string
  /** The path (no query) of a method for an upstream model; streams get `?alt=sse` appended. */
  pathFor (model: string, method: GeminiWireMethod): string
  headers: Readonly<Record<string, string>>
  sign?: (req: UpstreamRequest) => Promise<UpstreamRequest>
  /** Vertex AI takes the count body's fields flat. */
  countBody?: 'wrapped' | 'flat'
  sampling (model: string): boolean
  /** A function call without its thought signature gets Gemini's placeholder. */
  signatureFallback?: boolean
  onOperatorError? (status: number, errorStatus: string): void
}

export interface GeminiWire {
  upstream (o: GeminiWireOptions): ProviderInstance
  samplingMatcher (patterns: readonly string[]): (model: string) => boolean
}
