/**
 * @module providers/gemini – Google's Gemini API, natively (`adapter: gemini`).
 *
 * The adapter speaks the messages protocol to core (every client protocol reaches it through its
 * `<client>-to-messages` translator) and turns messages bodies into `GenerateContentRequest`s,
 * Gemini answers and their SSE streams back into messages answers and events (upstream.ts), with
 * thought signatures carried through every client protocol (signatures.ts). Quirk: function
 * calls arrive whole, and Gemini 3 refuses a follow-up whose function call lost its
 * `thoughtSignature`.
 * @see https://ai.google.dev/api/generate-content
 */
import { defineProvider, splitBaseUrl } from '../../index.ts'
import { GeminiConfig } from './schema.ts'
import { geminiUpstream, noSamplingMatcher, type GeminiMethod } from './upstream.ts'

export { geminiUpstream, noSamplingMatcher } from './upstream.ts'
export type { GeminiMethod, GeminiUpstreamOptions } from './upstream.ts'

/** A model name as path segments: `models/<m>` for a bare name, a tuned model's `tunedModels/<m>` as given. */
export function geminiModelPath (model: string): string {
  const full = model.includes('/') ? model : `models/${model}`
  return full.split('/').map(encodeURIComponent).join('/')
}

/**
 * @example
 * providers:
 *   - { name: gemini, adapter: gemini, config: { apiKey: "${GEMINI_API_KEY}" } }
 */
export default defineProvider({
  name: 'gemini',
  configSchema: GeminiConfig,
  create (config, deps) {
    const { origin, prefix } = splitBaseUrl(config.baseUrl, `provider ${deps.name}`)
    return geminiUpstream({
      origin,
      baseUrl: origin + prefix,
      pathFor: (model: string, method: GeminiMethod) => `${prefix}/${config.apiVersion}/${geminiModelPath(model)}:${method}`,
      headers: { ...config.headers, 'x-goog-api-key': config.apiKey },
      sampling: noSamplingMatcher(config.noSampling),
      signatureFallback: config.signatureFallback,
      onOperatorError (status, errorStatus) {
        deps.log.error({ provider: deps.name, status, errorStatus }, 'Gemini refused the configured API key or model name: check the provider config')
      },
    })
  },
})
