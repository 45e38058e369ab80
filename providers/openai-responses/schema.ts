/** @module providers/openai-responses/schema – config of a Responses API upstream. */
import { Type, type Static, AwsSigningConfig } from '../../index.ts'

export const OpenAIResponsesConfig = Type.Object({
  baseUrl: Type.String({ description: 'Base URL including the version path, as the OpenAI SDK takes it (https://api.openai.com/v1...); requests go to {baseUrl}/responses.' }),
  apiKey: Type.Optional(Type.String({ description: 'Sent as `Authorization: Bearer`; use ${ENV_VAR}.' })),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request.' }),
  aws: Type.Optional(AwsSigningConfig),
}, { additionalProperties: false })

export type OpenAIResponsesConfigT = Static<typeof OpenAIResponsesConfig>
