/**
 * @module gateway-provider-acme – an external provider adapter for "Acme", a chat-completions
 * vendor that differs from OpenAI in two ways: the key goes in an `api-key` header (as Azure
 * OpenAI does), and cache hits are reported as `usage.prompt_cache_hit_tokens` (as DeepSeek does)
 * instead of `prompt_tokens_details.cached_tokens`. Imports only the public API.
 *
 * @example
 * providers:
 *   - name: acme
 *     adapter: acme-chat
 *     module: ./node_modules/gateway-provider-acme/index.js
 *     config: { baseUrl: https://api.acme.example/v1, apiKey: "${ACME_API_KEY}" }
 */
import { defineProvider, Type, usageFromChat } from 'model-gateway'

/**
 * Acme's usage: the standard chat fields, plus cache hits in a field of its own; billing reads
 * cached input from here, so it must be normalized before the gateway charges the call.
 * @param {Record<string, unknown>} usage
 * @returns {import('model-gateway').Usage}
 */
export function readAcmeUsage (usage) {
  const out = usageFromChat(usage)
  const hits = usage.prompt_cache_hit_tokens
  if (typeof hits === 'number' && Number.isFinite(hits) && hits > 0) out.cachedInputTokens = Math.min(Math.floor(hits), out.inputTokens)
  return out
}

export default defineProvider({
  name: 'acme-chat',
  configSchema: Type.Object({
    baseUrl: Type.String({ description: 'Base URL including the version path, e.g. https://api.acme.example/v1.' }),
    apiKey: Type.String({ minLength: 1, description: 'Sent as the `api-key` header; use ${ENV_VAR}.' }),
  }, { additionalProperties: false }),
  create (config, deps) {
    const url = new URL(config.baseUrl)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`provider ${deps.name}: baseUrl must be http(s)`)
    const path = `${url.pathname.replace(/\/+$/, '')}/chat/completions`
    const headers = { 'content-type': 'application/json', 'api-key': config.apiKey }
    return {
      protocol: 'chat',
      translate: { readUsage: readAcmeUsage },
      prepare (call) {
        return { origin: url.origin, path, headers: { ...headers, accept: call.stream ? 'text/event-stream' : 'application/json' }, body: JSON.stringify(call.body) }
      },
    }
  },
})
