/**
 * @module providers/bedrock – Amazon Bedrock's native Converse API (`adapter: bedrock`).
 *
 * The adapter speaks the messages protocol to core: the translator table keeps its three wire
 * protocols, and every client protocol reaches Bedrock through its `<client>-to-messages`
 * translator (Responses and chat compose as they do for any messages upstream). The adapter then
 * turns the messages body into a Converse body (`prepare`), signs it (SigV4, service `bedrock`,
 * or a Bedrock API key as Bearer), decodes the binary event stream into messages events
 * (`decodeStream`) and Converse answers into messages answers (`decodeResponse`).
 */
import { awsSigner, defineProvider, splitBaseUrl, type UpstreamCall, type UpstreamRequest } from '../../index.ts'
import { BedrockConfig } from './schema.ts'
import { converseRequest } from './converse-request.ts'
import { countAnswer, messagesAnswer } from './converse-answer.ts'
import { ConverseStreamDecoder } from './converse-stream.ts'
import { mapBedrockError, OPERATOR_ERRORS } from './errors.ts'

/**
 * A model id as a path segment: bare ids, inference profiles (`us.…`) and ARNs, percent-encoded
 * whole (an ARN's `/` sent literally makes Bedrock answer 200 with an UnknownOperationException).
 * The request is signed over exactly this path.
 */
export function modelPath (modelId: string): string {
  return `/model/${encodeURIComponent(modelId)}`
}

/**
 * @example
 * providers:
 *   - name: aws
 *     adapter: bedrock
 *     config: { region: us-east-1, credentials: { accessKeyId: "${AWS_ACCESS_KEY_ID}", secretAccessKey: "${AWS_SECRET_ACCESS_KEY}" } }
 */
export default defineProvider({
  name: 'bedrock',
  configSchema: BedrockConfig,
  create (config, deps) {
    if (config.apiKey !== undefined && config.credentials !== undefined) throw new Error(`provider ${deps.name}: set either credentials or apiKey, not both`)
    const { origin, prefix } = splitBaseUrl(config.baseUrl ?? `https://bedrock-runtime.${config.region}.amazonaws.com`, `provider ${deps.name}`)
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json' }
    if (config.apiKey !== undefined) base.authorization = `Bearer ${config.apiKey}`
    const signer = config.apiKey !== undefined
      ? undefined
      : awsSigner({ region: config.region, service: 'bedrock', credentials: config.credentials })

    function request (call: UpstreamCall, op: string, body: Record<string, unknown>): UpstreamRequest {
      const accept = op === 'converse-stream' ? 'application/vnd.amazon.eventstream' : 'application/json'
      return { origin, path: `${prefix}${modelPath(call.deployment.upstreamModel)}/${op}`, headers: { ...base, accept }, body: JSON.stringify(body) }
    }

    return {
      protocol: 'messages',
      baseUrl: origin + prefix,
      // Converse takes images from every client route.
      translate: { chatImages: true },
      prepare (call) {
        return request(call, call.stream ? 'converse-stream' : 'converse', converseRequest(call.body))
      },
      prepareCountTokens (call) {
        return request(call, 'count-tokens', { input: { converse: converseRequest(call.body, true) } })
      },
      sign: signer,
      decodeStream (opts) {
        return new ConverseStreamDecoder(opts.upstreamModel, opts.estimatedInputTokens)
      },
      decodeResponse (body, kind, upstreamModel) {
        return kind === 'count_tokens' ? countAnswer(body) : messagesAnswer(body, upstreamModel)
      },
      mapError (status, headers, text) {
        const { error, type } = mapBedrockError(status, headers, text)
        if (OPERATOR_ERRORS.has(type)) deps.log.error({ provider: deps.name, status, errorType: type }, 'Bedrock refused the configured credentials or model id: check the provider config')
        return error
      },
    }
  },
})
