/**
 * @module providers/azure-openai – Azure OpenAI (`adapter: azure-openai`): the chat completions
 * API or the Responses API of an Azure OpenAI (or Foundry) resource, with its key (`api-key`
 * header) or a Microsoft Entra ID token (`Authorization: Bearer`, client-credentials grant).
 *
 * A deployment's `model` is the Azure deployment name. `apiVersion: v1` (the default) uses the
 * version-less v1 API, where the deployment name travels as the body's `model`; a dated version
 * uses the deployment paths, where it travels in the path and the version as `?api-version=`.
 * The bodies are OpenAI's, so the chat and Responses translators apply unchanged.
 * @see https://learn.microsoft.com/azure/ai-foundry/openai/reference
 * @see https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
 */
import { defineProvider, splitBaseUrl, type UpstreamCall, type UpstreamRequest } from '../../index.ts'
import { AzureOpenAIConfig, type AzureOpenAIConfigT } from './schema.ts'
import { entraTokens, type TokenProvider } from './entra.ts'
import { mapAzureError } from './errors.ts'

/** The resource's origin and path prefix, from `endpoint` or `resource` (exactly one). */
function resourceBase (config: AzureOpenAIConfigT, name: string): { origin: string, prefix: string } {
  if ((config.endpoint === undefined) === (config.resource === undefined)) throw new Error(`provider ${name}: set either endpoint or resource`)
  const { origin, prefix } = splitBaseUrl(config.endpoint ?? `https://${config.resource}.openai.azure.com`, `provider ${name}`)
  // The adapter adds /openai/... itself: an endpoint copied with it would double it.
  if (/\/openai(\/v1)?$/.test(prefix)) throw new Error(`provider ${name}: endpoint is the resource endpoint without /openai (the adapter adds the API path)`)
  return { origin, prefix }
}

/** The request path of one call: the v1 API's fixed paths, or a dated version's deployment paths. */
export function azurePath (prefix: string, api: 'chat' | 'responses', apiVersion: string, deployment: string): string {
  if (apiVersion === 'v1') return `${prefix}/openai/v1/${api === 'chat' ? 'chat/completions' : 'responses'}`
  const query = `?api-version=${encodeURIComponent(apiVersion)}`
  return api === 'chat'
    ? `${prefix}/openai/deployments/${encodeURIComponent(deployment)}/chat/completions${query}`
    : `${prefix}/openai/responses${query}`
}

/**
 * @example
 * providers:
 *   - name: azure
 *     adapter: azure-openai
 *     config: { resource: my-resource, apiKey: "${AZURE_OPENAI_API_KEY}" }
 */
export default defineProvider({
  name: 'azure-openai',
  configSchema: AzureOpenAIConfig,
  create (config, deps) {
    const { origin, prefix } = resourceBase(config, deps.name)
    if ((config.apiKey === undefined) === (config.entra === undefined)) throw new Error(`provider ${deps.name}: set either apiKey or entra`)
    const base: Record<string, string> = { ...config.headers, 'content-type': 'application/json' }
    if (config.apiKey !== undefined) base['api-key'] = config.apiKey
    const jsonHeaders = { ...base, accept: 'application/json' }
    const sseHeaders = { ...base, accept: 'text/event-stream' }
    const tokens: TokenProvider | undefined = config.entra === undefined ? undefined : entraTokens(config.entra)
    const fixedPath = config.apiVersion === 'v1' || config.api === 'responses' ? azurePath(prefix, config.api, config.apiVersion, '') : undefined

    return {
      protocol: config.api,
      baseUrl: origin + prefix,
      translate: config.api === 'chat' ? { maxTokensField: config.maxTokensField, systemRole: config.systemRole } : undefined,
      prepare (call: UpstreamCall): UpstreamRequest {
        const path = fixedPath ?? azurePath(prefix, config.api, config.apiVersion, call.deployment.upstreamModel)
        return { origin, path, headers: call.stream ? sseHeaders : jsonHeaders, body: call.bodyText ?? JSON.stringify(call.body) }
      },
      sign: tokens === undefined
        ? undefined
        : async req => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${(await tokens()).token}` } }),
      mapError (status, headers, text) {
        // A token Azure refused (revoked, wrong audience) is not offered again: the next call asks anew.
        if (status === 401 && tokens !== undefined) tokens.invalidate()
        return mapAzureError(status, headers, text)
      },
    }
  },
})
