/**
 * @module providers/anthropic-compatible – any messages-protocol server (Anthropic, and the
 * vendors that expose an Anthropic-compatible endpoint).
 */
import { defineProvider, type UpstreamCall, awsSigner } from '../../index.ts'
import { addBaseUrlAuthorization, splitBaseUrl, withoutCarriedThinking } from '../../index.ts'
import { AnthropicCompatibleConfig } from './schema.ts'
import { foldSystemMessages, hasSystemMessage, MID_CONVERSATION_SYSTEM_BETA, NATIVE_SYSTEM_VERSION } from './system-messages.ts'

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
    // A user and password in baseUrl (a proxy with Basic auth in front of the server) are sent; not with SigV4.
    const { origin, prefix, authorization } = splitBaseUrl(config.baseUrl, `provider ${deps.name}`, { basicAuth: config.aws === undefined })
    if (config.aws !== undefined && config.apiKey) throw new Error(`provider ${deps.name}: set either apiKey or aws (SigV4 signing), not both`)
    const path = `${prefix}/v1/messages`
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json', 'anthropic-version': config.version }
    if (config.apiKey) {
      if (config.authHeader === 'bearer') base.authorization = `Bearer ${config.apiKey}`
      else base['x-api-key'] = config.apiKey
    }
    addBaseUrlAuthorization(base, authorization, `provider ${deps.name}`)
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
    // Dates compare as strings: a version of the 2026 line or later takes system turns as they are.
    const nativeSystem = config.version >= NATIVE_SYSTEM_VERSION
    const fold = config.systemMessages === 'fold'
    function headersFor (call: UpstreamCall, systemTurn: boolean): Record<string, string> {
      const headers: Record<string, string> = { ...base, accept: call.stream ? 'text/event-stream' : 'application/json' }
      const beta = config.forwardBeta ? allowedBetas(call.clientHeaders['anthropic-beta']) : undefined
      // A system turn sent as is to an older version needs its beta, whatever the client sent.
      const needed = systemTurn && !nativeSystem && !fold && !(beta ?? '').split(',').includes(MID_CONVERSATION_SYSTEM_BETA)
      const betas = needed ? (beta ? `${beta},${MID_CONVERSATION_SYSTEM_BETA}` : MID_CONVERSATION_SYSTEM_BETA) : beta
      if (betas) headers['anthropic-beta'] = betas
      return headers
    }
    /** Headers and body text for a call, its system turns in the form this upstream accepts. */
    function request (call: UpstreamCall, text: string | Buffer | undefined): { headers: Record<string, string>, body: string | Buffer } {
      const systemTurn = hasSystemMessage(call.body)
      // Thinking another vendor signed never reaches Claude; the client's text goes as it came otherwise.
      const own = withoutCarriedThinking(call.body)
      const sendText = own === call.body ? text : undefined
      const body = systemTurn && fold ? JSON.stringify(foldSystemMessages(own)) : sendText ?? JSON.stringify(own)
      return { headers: headersFor(call, systemTurn), body }
    }
    return {
      protocol: 'messages',
      baseUrl: origin + prefix,
      // Opt-in SigV4 (an Anthropic-compatible endpoint hosted on AWS): only a configured `aws` block signs.
      sign: config.aws === undefined ? undefined : awsSigner(config.aws),
      prepare (call) {
        return { origin, path, ...request(call, call.bodyText) }
      },
      // Anthropic's count tokens API sits next to the messages path; same headers and betas.
      prepareCountTokens (call) {
        return { origin, path: `${path}/count_tokens`, ...request(call, undefined) }
      },
    }
  },
})
