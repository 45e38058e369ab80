/**
 * @module providers/anthropic-compatible – any messages-protocol server (Anthropic, and the
 * vendors that expose an Anthropic-compatible endpoint). The spec's `msgvendor/` models.
 */
import { defineProvider } from '../../core/provider.ts'
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
    return {
      protocol: 'messages',
      prepare (call) {
        const headers: Record<string, string> = { ...base, accept: call.stream ? 'text/event-stream' : 'application/json' }
        const beta = call.clientHeaders['anthropic-beta']
        if (config.forwardBeta && beta !== undefined) headers['anthropic-beta'] = Array.isArray(beta) ? beta.join(',') : beta
        return { origin, path, headers, body: JSON.stringify(call.body) }
      },
    }
  },
})
