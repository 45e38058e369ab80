/**
 * @module providers/gemini/upstream – the Gemini wire as a provider instance, for any host that
 * serves it: the Gemini API (`adapter: gemini`, an API key) and Vertex AI's Gemini models (a
 * bearer token, another path). The caller gives where requests go and how they authenticate;
 * everything else (the translation to and from the messages protocol, stream decoding, usage,
 * finish reasons, errors) is here.
 */
import type { ProviderInstance, UpstreamCall, UpstreamRequest } from '../../index.ts'
import { countAnswer, messagesAnswer } from './answer.ts'
import { mapGeminiError } from './errors.ts'
import { geminiPrompt, geminiRequest } from './request.ts'
import { GeminiStreamDecoder } from './stream.ts'

/** The three Gemini methods the gateway calls. */
export type GeminiMethod = 'generateContent' | 'streamGenerateContent' | 'countTokens'

export interface GeminiUpstreamOptions {
  /** `http(s)://host:port` – one keep-alive pool. */
  origin: string
  /** What operators are shown as the instance's endpoint (ProviderInstance.baseUrl). */
  baseUrl?: string
  /**
   * The path (no query) of `method` for an upstream model name, e.g. Gemini API
   * `/v1beta/models/<m>:generateContent`, Vertex AI
   * `/v1/projects/<p>/locations/<l>/publishers/google/models/<m>:generateContent`. Streams get
   * `?alt=sse` appended.
   */
  pathFor (model: string, method: GeminiMethod): string
  /** Headers on every request (`x-goog-api-key`, extra headers); `content-type` is added. */
  headers: Readonly<Record<string, string>>
  /** Completes each request before it is sent (a bearer token from refreshing credentials). */
  sign?: (req: UpstreamRequest) => Promise<UpstreamRequest>
  /**
   * The body of `:countTokens` for a prompt: Gemini API `{ generateContentRequest: { model:
   * "models/<m>", contents, systemInstruction, tools } }` (`wrapped`, the default), Vertex AI
   * `{ contents, systemInstruction, tools }` (`flat`).
   */
  countBody?: 'wrapped' | 'flat'
  /** Whether `temperature`, `top_p` and `top_k` go to this upstream model (see noSamplingMatcher). */
  sampling (model: string): boolean
  /**
   * A function call that comes back without its thought signature (a client that dropped it) gets
   * Gemini's placeholder instead of a 400 from Gemini 3 (default false).
   */
  signatureFallback?: boolean
  /** Told when the upstream refused the operator's credentials, permissions or model id (log it loudly). */
  onOperatorError? (status: number, errorStatus: string): void
}

/** A matcher for config's `noSampling` patterns: true when the model takes sampling parameters. */
export function noSamplingMatcher (patterns: readonly string[]): (model: string) => boolean {
  const res = patterns.map(p => new RegExp(`^${p.split('*').map(s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 'i'))
  return model => !res.some(r => r.test(model))
}

/**
 * The Gemini wire as a provider instance speaking the messages protocol to core: every client
 * protocol reaches it through its `<client>-to-messages` translator; images pass on from the chat
 * route too (`chatImages`), and so does JSON mode without a schema (`jsonObject`).
 *
 * @example
 * const gemini = geminiUpstream({
 *   origin: 'https://generativelanguage.googleapis.com',
 *   pathFor: (m, method) => `/v1beta/models/${encodeURIComponent(m)}:${method}`,
 *   headers: { 'x-goog-api-key': key },
 *   sampling: () => true,
 * })
 */
export function geminiUpstream (o: GeminiUpstreamOptions): ProviderInstance {
  const headers: Record<string, string> = { ...o.headers, 'content-type': 'application/json' }
  function request (call: UpstreamCall, method: GeminiMethod, body: Record<string, unknown>): UpstreamRequest {
    const path = o.pathFor(call.deployment.upstreamModel, method) + (method === 'streamGenerateContent' ? '?alt=sse' : '')
    return { origin: o.origin, path, headers: { ...headers }, body: JSON.stringify(body) }
  }
  return {
    protocol: 'messages',
    baseUrl: o.baseUrl,
    translate: { chatImages: true, jsonObject: true },
    prepare (call) {
      const body = geminiRequest(call.body, { sampling: o.sampling(call.deployment.upstreamModel), signatureFallback: o.signatureFallback })
      return request(call, call.stream ? 'streamGenerateContent' : 'generateContent', body)
    },
    prepareCountTokens (call) {
      const prompt = geminiPrompt(call.body)
      const m = call.deployment.upstreamModel
      const body = o.countBody === 'flat' ? prompt : { generateContentRequest: { model: m.includes('/') ? m : `models/${m}`, ...prompt } }
      return request(call, 'countTokens', body)
    },
    sign: o.sign,
    decodeStream (opts) {
      return new GeminiStreamDecoder(opts.upstreamModel, opts.estimatedInputTokens)
    },
    decodeResponse (body, kind, upstreamModel) {
      return kind === 'count_tokens' ? countAnswer(body) : messagesAnswer(body, upstreamModel)
    },
    mapError (status, h, text) {
      const { error, operator, status: s } = mapGeminiError(status, h, text)
      if (operator) o.onOperatorError?.(status, s)
      return error
    },
  }
}
