/**
 * @module providers/vertex – Google Cloud's Vertex AI (`adapter: vertex`): Claude models through
 * Anthropic's messages protocol (`publishers/anthropic`), authenticated with Google OAuth access
 * tokens from a service account (refreshed ahead of expiry, renewed once after a 401).
 *
 * The adapter speaks the messages protocol to core, so every client protocol reaches it through
 * its `<client>-to-messages` translator; `prepare` turns the messages body into Vertex's (no
 * `model`, an `anthropic_version`) at the model's own path.
 */
import {
  bearerSigning, defineProvider, gwError, googleTokensFromConfig, sanitizeUpstreamMessage, splitBaseUrl,
  type UpstreamCall, type UpstreamRequest, type UpstreamResponse,
} from '../../index.ts'
import { VertexConfig, type VertexConfigT } from './schema.ts'
import { allowedBetas, isClaudeModel, vertexClaudeBody } from './claude.ts'

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

/** The message of a Google error (`{error: {code, message, status}}`) or an Anthropic one (`{type: 'error', error: {type, message}}`). */
function errorMessage (text: string): { message?: string, status?: string } {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown, status?: unknown, type?: unknown } }
    const e = j.error
    return { message: typeof e?.message === 'string' ? e.message : undefined, status: typeof e?.status === 'string' ? e.status : typeof e?.type === 'string' ? e.type : undefined }
  } catch {
    return {}
  }
}

/**
 * @example
 * providers:
 *   - name: vertex
 *     adapter: vertex
 *     config: { project: my-project, location: us-east5, credentials: "${GOOGLE_APPLICATION_CREDENTIALS_JSON}" }
 */
export default defineProvider({
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

    /** Models no publisher here serves: the operator's deployment names a model this adapter cannot reach. */
    function unsupported (model: string): never {
      deps.log.error({ provider: deps.name, model }, 'vertex: only Claude models (claude-…@version) are served by this adapter; check the deployment\'s model id')
      throw gwError('GW_ERR_UPSTREAM_FAILED')
    }

    return {
      protocol: 'messages',
      // Claude on Vertex takes images from every client route.
      translate: { chatImages: true },
      prepare (call): UpstreamRequest {
        const model = call.deployment.upstreamModel
        if (!isClaudeModel(model)) unsupported(model)
        const path = publisherModelPath(prefix, config, 'anthropic', model, call.stream ? 'streamRawPredict' : 'rawPredict')
        return { origin, path, headers: claudeHeaders(call), body: JSON.stringify(vertexClaudeBody(call.body, config.anthropicVersion, false)) }
      },
      // One count path for every Claude model; the body names the model.
      prepareCountTokens (call): UpstreamRequest {
        const model = call.deployment.upstreamModel
        if (!isClaudeModel(model)) unsupported(model)
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
      mapError (status, headers, text) {
        const { message, status: kind } = errorMessage(text)
        if (status === 429 || status === 529 || kind === 'RESOURCE_EXHAUSTED' || kind === 'overloaded_error') {
          return gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: { 'retry-after': retryAfter(headers) } })
        }
        if (status === 400 || status === 413 || status === 422) return gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [message ? sanitizeUpstreamMessage(message) : `status ${status}`])
        // 404: the model is not enabled in the project or location, or its id is wrong (the operator's setup).
        if (status === 404) deps.log.error({ provider: deps.name, status, upstreamStatus: kind }, 'vertex: model not found: check the deployment\'s model id, the project and the location, and that the model is enabled')
        return gwError('GW_ERR_UPSTREAM_FAILED')
      },
    }
  },
})
