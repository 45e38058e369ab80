/** @module providers/bedrock/schema – config of the native Amazon Bedrock adapter (Converse API). */
import { Type, type Static, AwsCredentialsConfig } from '../../index.ts'

export const BedrockConfig = Type.Object({
  region: Type.String({ minLength: 1, description: 'The AWS region (`us-east-1`): the default endpoint and the SigV4 signing region.' }),
  baseUrl: Type.Optional(Type.String({ description: 'The Bedrock runtime endpoint; default `https://bedrock-runtime.<region>.amazonaws.com` (set it for a VPC endpoint, a proxy or tests).' })),
  credentials: Type.Optional(Type.Object(AwsCredentialsConfig.properties,
    { additionalProperties: false,
      description: 'AWS keys requests are signed with (SigV4, service `bedrock`); use ${ENV_VAR}. Neither this nor `apiKey`: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / ' +
        'AWS_SESSION_TOKEN from the environment.' })),
  apiKey: Type.Optional(Type.String({ minLength: 1, description: 'A Bedrock API key, sent as `Authorization: Bearer` (no signing); instead of `credentials`.' })),
  headers: Type.Record(Type.String(), Type.String(), { default: {}, description: 'Extra headers on every upstream request (signed with it).' }),
}, { additionalProperties: false })

export type BedrockConfigT = Static<typeof BedrockConfig>
