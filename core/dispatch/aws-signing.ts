/**
 * @module aws-signing – the `aws` config block an HTTP adapter may take to sign its
 * requests with AWS SigV4 (Bedrock's OpenAI-compatible endpoint, Bedrock Mantle, any AWS-hosted
 * upstream), and the signer it builds: static keys from config, else the AWS_* environment.
 */
import { Type, type Static } from '@sinclair/typebox'
import { envCredentials, staticCredentials } from './credentials.ts'
import { sigV4Signer } from './sigv4.ts'
import type { UpstreamRequest } from './provider.ts'

export const AwsCredentialsConfig = Type.Object({
  accessKeyId: Type.String({ minLength: 1, description: 'The AWS access key id (AKIA… or, with a session token, ASIA…).' }),
  secretAccessKey: Type.String({ minLength: 1, description: 'The secret access key that goes with it.' }),
  sessionToken: Type.Optional(Type.String({ description: 'For temporary credentials; an empty value counts as none.' })),
}, { additionalProperties: false, description: 'AWS keys requests are signed with; use ${ENV_VAR}. Absent: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN from the environment.' })

export const AwsSigningConfig = Type.Object({
  region: Type.String({ minLength: 1, description: 'The SigV4 signing region (us-east-1).' }),
  service: Type.String({ minLength: 1, default: 'bedrock', description: 'The SigV4 signing service name (`bedrock` for Bedrock Runtime and its OpenAI-compatible endpoint).' }),
  credentials: Type.Optional(AwsCredentialsConfig),
}, { additionalProperties: false, description: 'Sign every request with AWS SigV4 instead of sending an API key.' })

export type AwsSigningConfigT = Static<typeof AwsSigningConfig>

/** The `sign` step for an `aws` block. */
export function awsSigner (c: { region: string, service: string, credentials?: Static<typeof AwsCredentialsConfig> }): (req: UpstreamRequest) => Promise<UpstreamRequest> {
  return sigV4Signer({ region: c.region, service: c.service, credentials: c.credentials !== undefined ? staticCredentials(c.credentials) : envCredentials() })
}
