/** @module providers/openai-compatible/schema – config of a chat-completions upstream. */
import { Type, type Static, AwsSigningConfig } from '../../index.ts'

export const OpenAICompatibleConfig = Type.Object({
  baseUrl: Type.String({ description: 'Base URL including the version path, as the OpenAI SDK takes it (https://api.openai.com/v1, http://127.0.0.1:8000/v1...).' }),
  apiKey: Type.Optional(Type.String({ description: 'Sent as `Authorization: Bearer`; use ${ENV_VAR}.' })),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request (e.g. OpenRouter\'s HTTP-Referer).' }),
  maxTokensField: Type.Union([Type.Literal('max_tokens'), Type.Literal('max_completion_tokens')],
    { default: 'max_tokens', description: 'Field that carries the output cap when translating from /v1/messages (OpenAI reasoning models need max_completion_tokens).' }),
  systemRole: Type.Union([Type.Literal('system'), Type.Literal('developer')], { default: 'system', description: 'Role for translated system prompts.' }),
  aws: Type.Optional(AwsSigningConfig),
}, { additionalProperties: false })

export type OpenAICompatibleConfigT = Static<typeof OpenAICompatibleConfig>
