/** @module providers/azure-openai/schema – config of an Azure OpenAI upstream (key or Entra ID). */
import { Type, type Static } from '../../index.ts'

export const AzureEntraConfig = Type.Object({
  tenantId: Type.String({ minLength: 1, description: 'The Microsoft Entra tenant (directory) id the app registration lives in.' }),
  clientId: Type.String({ minLength: 1, description: 'The app registration\'s client (application) id.' }),
  clientSecret: Type.String({ minLength: 1, description: 'The app registration\'s client secret; use ${ENV_VAR}.' }),
  tokenUrl: Type.Optional(Type.String({ description: 'The token endpoint; default `https://login.microsoftonline.com/<tenantId>/oauth2/v2.0/token` (set it for a sovereign cloud, a proxy or ' +
    'tests).' })),
  scope: Type.String({ default: 'https://cognitiveservices.azure.com/.default', description: 'The scope asked for in the client-credentials grant.' }),
  refreshBeforeMs: Type.Integer({ minimum: 0, default: 300_000, description: 'A cached token is replaced this long before it expires (5 minutes).' }),
}, { additionalProperties: false, description: 'Authenticate with a Microsoft Entra ID token (client-credentials flow) instead of an API key.' })

export const AzureOpenAIConfig = Type.Object({
  resource: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9-]*$',
    description: 'The Azure OpenAI resource name: the endpoint is `https://<resource>.openai.azure.com`. Either this or `endpoint`.' })),
  endpoint: Type.Optional(Type.String({ description: 'The resource endpoint without a path (`https://my-resource.openai.azure.com`, a Foundry `https://<name>.services.ai.azure.com`, a proxy or a ' +
    'test server). Either this or `resource`.' })),
  apiVersion: Type.String({ minLength: 1, default: 'v1',
    description: '`v1`: the version-less v1 API (`/openai/v1/chat/completions`, `/openai/v1/responses`); a dated version (`2024-10-21`, `2025-04-01-preview`): the deployment paths ' +
      '(`/openai/deployments/<deployment>/chat/completions?api-version=…`, `/openai/responses?api-version=…`).' }),
  api: Type.Union([Type.Literal('chat'), Type.Literal('responses')], { default: 'chat',
    description: 'Which API of the resource serves the calls: `chat` (chat completions) or `responses` (the Responses API).' }),
  apiKey: Type.Optional(Type.String({ minLength: 1, description: 'The resource key, sent in the `api-key` header; use ${ENV_VAR}. Either this or `entra`.' })),
  entra: Type.Optional(AzureEntraConfig),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
  maxTokensField: Type.Union([Type.Literal('max_tokens'), Type.Literal('max_completion_tokens')], { default: 'max_completion_tokens',
    description: 'Chat API: the field that carries the output cap the gateway sets (Azure\'s reasoning models refuse `max_tokens`).' }),
  systemRole: Type.Union([Type.Literal('system'), Type.Literal('developer')], { default: 'system', description: 'Chat API: role of translated system prompts.' }),
}, { additionalProperties: false })

export type AzureOpenAIConfigT = Static<typeof AzureOpenAIConfig>
export type AzureEntraConfigT = Static<typeof AzureEntraConfig>
