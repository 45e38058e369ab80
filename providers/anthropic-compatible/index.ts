/**
 * @module providers/anthropic-compatible – any messages-protocol server (Anthropic, and the
 * vendors that expose an Anthropic-compatible endpoint).
 */
import { defineProvider, type UpstreamCall } from '../../index.ts'
import { splitBaseUrl } from '../base-url.ts'
import { AnthropicCompatibleConfig } from './schema.ts'

/**
 * @example
 * providers:
 *   - name: anthropic
 *     adapter: anthropic-compatible
 *     config: { apiKey: "${ANTHROPIC_API_KEY}" }
 */
export default defineProvider({
  name: 'anthropic-compatible',
  configSchema: AnthropicCompatibleConfig,
  create (config, deps) {
    const { origin, prefix } = splitBaseUrl(config.baseUrl, `provider ${deps.name}`)
    const path = `${prefix}/v1/messages`
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json', 'anthropic-version': config.version }
    if (config.apiKey) {
      if (config.authHeader === 'bearer') base.authorization = `Bearer ${config.apiKey}`
      else base['x-api-key'] = config.apiKey
    }
    const allowAll = config.allowedBetas.includes('*')
    const allowed = new Set(config.allowedBetas)
    // A beta can switch on upstream features priced above the configured price: only listed ones pass.
    function allowedBetas (raw: string | string[] | undefined): string | undefined {
      if (raw === undefined) return undefined
      const items = (Array.isArray(raw) ? raw.join(',') : raw).split(',').map(b => b.trim()).filter(Boolean)
      const kept = allowAll ? items : items.filter(b => allowed.has(b))
      if (kept.length < items.length) deps.log.debug({ dropped: items.filter(b => !allowed.has(b)) }, 'anthropic-beta values not on the allow-list dropped')
      return kept.length > 0 ? kept.join(',') : undefined
    }
    function headersFor (call: UpstreamCall): Record<string, string> {
      const headers: Record<string, string> = { ...base, accept: call.stream ? 'text/event-stream' : 'application/json' }
      const beta = config.forwardBeta ? allowedBetas(call.clientHeaders['anthropic-beta']) : undefined
      if (beta) headers['anthropic-beta'] = beta
      return headers
    }
    return {
      protocol: 'messages',
      prepare (call) {
        return { origin, path, headers: headersFor(call), body: call.bodyText ?? JSON.stringify(call.body) }
      },
      // Anthropic's count tokens API sits next to the messages path; same headers and betas.
      prepareCountTokens (call) {
        return { origin, path: `${path}/count_tokens`, headers: headersFor(call), body: JSON.stringify(call.body) }
      },
    }
  },
})
