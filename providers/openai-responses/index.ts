/**
 * @module providers/openai-responses – an upstream that speaks the OpenAI Responses API
 * (`POST {baseUrl}/responses`): OpenAI itself, or a compatible server. Any client route reaches
 * its models: /v1/responses passes through, chat and messages clients are translated.
 */
import { defineProvider, awsSigner } from '../../index.ts'
import { addBaseUrlAuthorization, splitBaseUrl } from '../../index.ts'
import { OpenAIResponsesConfig } from './schema.ts'

/**
 * @example
 * providers:
 *   - name: openai-responses
 *     adapter: openai-responses
 *     config: { baseUrl: https://api.openai.com/v1, apiKey: "${OPENAI_API_KEY}" }
 */
export default defineProvider({
  name: 'openai-responses',
  configSchema: OpenAIResponsesConfig,
  create (config, deps) {
    // A user and password in baseUrl (a proxy with Basic auth in front of the server) are sent; not with SigV4.
    const { origin, prefix, authorization } = splitBaseUrl(config.baseUrl, `provider ${deps.name}`, { basicAuth: config.aws === undefined })
    if (config.aws !== undefined && config.apiKey) throw new Error(`provider ${deps.name}: set either apiKey or aws (SigV4 signing), not both`)
    const path = `${prefix}/responses`
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json' }
    if (config.apiKey) base.authorization = `Bearer ${config.apiKey}`
    addBaseUrlAuthorization(base, authorization, `provider ${deps.name}`)
    const jsonHeaders = { ...base, accept: 'application/json' }
    const sseHeaders = { ...base, accept: 'text/event-stream' }
    return {
      protocol: 'responses',
      baseUrl: origin + prefix,
      // Opt-in SigV4 (the Responses API of Bedrock Mantle or Bedrock Runtime): only a configured `aws` block signs.
      sign: config.aws === undefined ? undefined : awsSigner(config.aws),
      prepare (call) {
        return { origin, path, headers: call.stream ? sseHeaders : jsonHeaders, body: call.bodyText ?? JSON.stringify(call.body) }
      },
    }
  },
})
