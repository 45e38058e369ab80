/**
 * @module providers/vertex – Google Cloud's Vertex AI (`adapter: vertex`): Claude models through
 * Anthropic's messages protocol (`publishers/anthropic`), Gemini models through the Gemini wire
 * (`publishers/google`), both authenticated with Google OAuth access tokens (refreshed ahead of
 * expiry, renewed once after a 401).
 *
 * The adapter speaks the messages protocol to core, so every client protocol reaches it through
 * its `<client>-to-messages` translator. Per deployment model: a `claude-…` id goes to
 * rawPredict with the messages body as Vertex takes it (no `model`, an `anthropic_version`), its
 * answers and SSE read as Anthropic's; any other id goes to the Gemini translation
 * (generateContent, streamGenerateContent as SSE, countTokens).
 */
import {
  bearerSigning, defineProvider, gwError, googleTokensFromConfig, sanitizeUpstreamMessage, splitBaseUrl,
  type ProviderAdapter, type ProviderInstance, type UpstreamCall, type UpstreamRequest, type UpstreamResponse,
} from '../../index.ts'
import { VertexConfig, type VertexConfigT } from './schema.ts'
import { allowedBetas, isClaudeModel, vertexClaudeBody } from './claude.ts'
import type { GeminiWire } from './gemini-wire.ts'

export type { GeminiWire, GeminiWireOptions, GeminiWireMethod } from './gemini-wire.ts'

/** One path segment, percent-encoded, `@` kept (Vertex's model ids carry their version after it). */
const segment = (s: string): string => encodeURIComponent(s).replace(/%40/g, '@')

/** The Vertex AI endpoint for a location: regional, or the global host (no location prefix). */
export function vertexBaseUrl (location: string): string {
  return location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`
}

/** `…/v1/projects/{p}/locations/{l}/publishers/{publisher}/models/{model}:{method}` under the base URL's path. */
export function publisherModelPath (prefix: string, c: Pick<VertexConfigT, 'project' | 'location'>, publisher: string, model: string, method: string): string {
  return `${prefix}/v1/projects/${segment(c.project)}/locations/${segment(c.location)}/publishers/${publisher}/models/${segment(model)}:${method}`
}

/** Retry-After of a 429 (the upstream's, else 1 second). */
function retryAfter (headers: UpstreamResponse['headers']): string {
  const ra = headers['retry-after']
  return typeof ra === 'string' && /^\d+$/.test(ra.trim()) ? ra.trim() : '1'
}

/**
 * The message of a Google error (`{error: {code, message, status}}`) or an Anthropic one
 * (`{type: 'error', error: {type, message}}`, `anthropic` true).
 */
function errorMessage (text: string): { message?: string, status?: string, anthropic: boolean } {
  try {
    const j = JSON.parse(text) as { type?: unknown, error?: { message?: unknown, status?: unknown, type?: unknown } }
    const e = j.error
    return { message: typeof e?.message === 'string' ? e.message : undefined, status: typeof e?.status === 'string' ? e.status : typeof e?.type === 'string' ? e.type : undefined,
      anthropic: j.type === 'error' }
  } catch {
    return { anthropic: false }
  }
}

/**
 * The Vertex adapter; `gemini`: the Gemini translation its Gemini models go through (the built-in
 * list hands in the `gemini` adapter's); without it only Claude models are served.
 *
 * @example
 * providers:
 *   - name: vertex
 *     adapter: vertex
 *     config: { project: my-project, location: us-east5, credentials: "${GOOGLE_APPLICATION_CREDENTIALS_JSON}" }
 */
export function vertexAdapter (gemini?: GeminiWire): ProviderAdapter<typeof VertexConfig> {
  return defineProvider({
    name: 'vertex',
    configSchema: VertexConfig,
    create (config, deps) {
      const { origin, prefix } = splitBaseUrl(config.baseUrl ?? vertexBaseUrl(config.location), `provider ${deps.name}`)
      let auth: ReturnType<typeof bearerSigning>
      try {
        auth = bearerSigning(googleTokensFromConfig(config.credentials))
      } catch (err) {
        throw new Error(`provider ${deps.name}: ${(err as Error).message}`)
      }
      const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json' }

      function claudeHeaders (call: UpstreamCall): Record<string, string> {
        const headers: Record<string, string> = { ...base, accept: call.stream ? 'text/event-stream' : 'application/json' }
        if (config.forwardBeta) {
          const { kept, dropped } = allowedBetas(call.clientHeaders['anthropic-beta'], config.allowedBetas)
          if (dropped.length > 0) deps.log.debug({ dropped }, 'anthropic-beta values not on the allow-list dropped')
          if (kept !== undefined) headers['anthropic-beta'] = kept
        }
        return headers
      }

      /** No Gemini translation was handed in: the deployment names a model this adapter cannot reach. */
      function unsupported (model: string): never {
        deps.log.error({ provider: deps.name, model },
          'vertex: this adapter was built without the Gemini translation and serves Claude models (claude-…@version) only; check the deployment\'s model id')
        throw gwError('GW_ERR_UPSTREAM_FAILED')
      }

      const google: ProviderInstance | undefined = gemini?.upstream({
        origin,
        pathFor: (model, method) => publisherModelPath(prefix, config, 'google', model, method),
        headers: config.headers,
        countBody: 'flat',
        sampling: gemini.samplingMatcher(config.noSampling),
        signatureFallback: config.signatureFallback,
        onOperatorError (status, errorStatus) {
          deps.log.error({ provider: deps.name, status, errorStatus },
            'vertex: Google refused the credentials, their permissions or the model id: check the provider config and the deployment\'s model id')
        },
      })
      /** The Gemini instance for a non-Claude model. */
      function geminiFor (model: string): ProviderInstance {
        return google ?? unsupported(model)
      }

      function claudeError (status: number, headers: UpstreamResponse['headers'], text: string) {
        const { message, status: kind } = errorMessage(text)
        if (status === 429 || status === 529 || kind === 'RESOURCE_EXHAUSTED' || kind === 'overloaded_error') {
          return gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: { 'retry-after': retryAfter(headers) } })
        }
        if (status === 400 || status === 413 || status === 422) return gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [message ? sanitizeUpstreamMessage(message) : `status ${status}`])
        // 404: the model is not enabled in the project or location, or its id is wrong (the operator's setup).
        if (status === 404) deps.log.error({ provider: deps.name, status, upstreamStatus: kind },
          'vertex: model not found: check the deployment\'s model id, the project and the location, and that the model is enabled')
        return gwError('GW_ERR_UPSTREAM_FAILED')
      }

      return {
        protocol: 'messages',
        baseUrl: origin + prefix,
        // Claude and Gemini on Vertex take images from every client route; JSON mode without a schema
        // is the Gemini translation's (Claude has none: it is dropped for Claude models).
        translate: google?.translate ?? { chatImages: true },
        prepare (call): UpstreamRequest {
          const model = call.deployment.upstreamModel
          if (!isClaudeModel(model)) return geminiFor(model).prepare(call)
          const path = publisherModelPath(prefix, config, 'anthropic', model, call.stream ? 'streamRawPredict' : 'rawPredict')
          return { origin, path, headers: claudeHeaders(call), body: JSON.stringify(vertexClaudeBody(call.body, config.anthropicVersion, false)) }
        },
        // Claude: one count path for every model, the body names the model.
        prepareCountTokens (call): UpstreamRequest {
          const model = call.deployment.upstreamModel
          if (!isClaudeModel(model)) return geminiFor(model).prepareCountTokens?.(call) ?? unsupported(model)
          const path = publisherModelPath(prefix, config, 'anthropic', 'count-tokens', 'rawPredict')
          return { origin, path, headers: claudeHeaders({ ...call, stream: false }), body: JSON.stringify(vertexClaudeBody(call.body, config.anthropicVersion, true)) }
        },
        async sign (req) {
          try {
            return await auth.sign(req)
          } catch (err) {
            deps.log.error({ provider: deps.name, err }, 'vertex: no Google access token (the token exchange failed): check the provider\'s credentials')
            throw err
          }
        },
        async renewAuth (refused) {
          try {
            return await auth.renewAuth(refused)
          } catch (err) {
            deps.log.error({ provider: deps.name, err }, 'vertex: renewing the Google access token after a 401 failed: check the provider\'s credentials')
            throw err
          }
        },
        // Claude streams are Anthropic's own SSE (core's parser); Gemini's are decoded by its translation.
        decodeStream: google === undefined ? undefined : opts => isClaudeModel(opts.upstreamModel) ? undefined : google.decodeStream?.(opts),
        decodeResponse: google === undefined ? undefined : (body, kind, model) => isClaudeModel(model) || google.decodeResponse === undefined ? body : google.decodeResponse(body, kind, model),
        mapError (status, headers, text) {
          // Claude's own errors are Anthropic-shaped; Google's (auth, quota, a model not found) and Gemini's are Google-shaped.
          if (google?.mapError === undefined || errorMessage(text).anthropic) return claudeError(status, headers, text)
          return google.mapError(status, headers, text)
        },
      }
    },
  })
}
