/** @module providers/anthropic-compatible/schema – config of a messages-protocol upstream. */
import { Type, type Static } from '@sinclair/typebox'

export const AnthropicCompatibleConfig = Type.Object({
  baseUrl: Type.String({ default: 'https://api.anthropic.com', description: 'Base URL as the Anthropic SDK takes it (no /v1).' }),
  apiKey: Type.Optional(Type.String({ description: 'The upstream key; use ${ENV_VAR}.' })),
  authHeader: Type.Union([Type.Literal('x-api-key'), Type.Literal('bearer')], { default: 'x-api-key', description: 'How the key is sent: `x-api-key` or `Authorization: Bearer`.' }),
  version: Type.String({ default: '2023-06-01', description: 'anthropic-version sent upstream (whatever the client sent).' }),
  forwardBeta: Type.Boolean({ default: true, description: 'Forward the client\'s anthropic-beta header.' }),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
}, { additionalProperties: false })

export type AnthropicCompatibleConfigT = Static<typeof AnthropicCompatibleConfig>
