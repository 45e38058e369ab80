/**
 * @module providers/openai-compatible – any chat-completions server: OpenAI, vLLM, Ollama,
 * OpenRouter, DeepSeek, LM Studio... A new vendor of this kind is config only.
 */
import { defineProvider, awsSigner } from '../../index.ts'
import { addBaseUrlAuthorization, splitBaseUrl } from '../../index.ts'
import { OpenAICompatibleConfig } from './schema.ts'

/**
 * @example
 * providers:
 *   - name: openai
 *     adapter: openai-compatible
 *     config: { baseUrl: https://api.openai.com/v1, apiKey: "${OPENAI_API_KEY}", maxTokensField: max_completion_tokens }
 */
export default defineProvider({
  name: 'openai-compatible',
  configSchema: OpenAICompatibleConfig,
  create (config, deps) {
    // A user and password in baseUrl (a proxy with Basic auth in front of the server) are sent; not with SigV4.
    const { origin, prefix, authorization } = splitBaseUrl(config.baseUrl, `provider ${deps.name}`, { basicAuth: config.aws === undefined })
    if (config.aws !== undefined && config.apiKey) throw new Error(`provider ${deps.name}: set either apiKey or aws (SigV4 signing), not both`)
    const path = `${prefix}/chat/completions`
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json' }
    if (config.apiKey) base.authorization = `Bearer ${config.apiKey}`
    addBaseUrlAuthorization(base, authorization, `provider ${deps.name}`)
    const jsonHeaders = { ...base, accept: 'application/json' }
    const sseHeaders = { ...base, accept: 'text/event-stream' }
    return {
      protocol: 'chat',
      baseUrl: origin + prefix,
      translate: { maxTokensField: config.maxTokensField, systemRole: config.systemRole },
      // Opt-in SigV4 (Bedrock's OpenAI-compatible endpoint): only a configured `aws` block signs.
      sign: config.aws === undefined ? undefined : awsSigner(config.aws),
      prepare (call) {
        return { origin, path, headers: call.stream ? sseHeaders : jsonHeaders, body: call.bodyText ?? JSON.stringify(call.body) }
      },
    }
  },
})
