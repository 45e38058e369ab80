/**
 * @module google-signing – the `credentials` config value an adapter may take to call Google Cloud
 * with OAuth access tokens (Vertex AI), and the `sign` / `renewAuth` pair it builds: every request
 * gets `Authorization: Bearer <token>`; a 401 renews the token once and the request is sent again.
 */
import { Type, type Static } from '@sinclair/typebox'
import { googleTokens, type GoogleTokenOptions, type TokenProvider } from './google-credentials.ts'
import type { UpstreamRequest } from './provider.ts'

export const GoogleCredentialsConfig = Type.Union([
  Type.String({ minLength: 1, description: 'A service account key as JSON text (`${GOOGLE_APPLICATION_CREDENTIALS_JSON}`), or the path of a key file.' }),
  Type.Object({}, { additionalProperties: true,
    description: 'The key file\'s JSON as an object: a service account (`client_email`, `private_key`, `token_uri`), an `authorized_user` (`client_id`, `client_secret`, `refresh_token`), or `{ ' +
      'access_token }` (a fixed token, never refreshed).' }),
], { description: 'Google credentials; absent: the key file named by GOOGLE_APPLICATION_CREDENTIALS.' })

export type GoogleCredentialsConfigT = Static<typeof GoogleCredentialsConfig>

/** A `ProviderInstance.sign` and `renewAuth` pair over one token provider. */
export interface BearerSigning {
  sign (req: UpstreamRequest): Promise<UpstreamRequest>
  renewAuth (refused: UpstreamRequest): Promise<boolean>
}

/** Bearer-token signing with any TokenProvider. */
export function bearerSigning (tokens: TokenProvider): BearerSigning {
  return {
    async sign (req) {
      const t = await tokens()
      return { ...req, headers: { ...req.headers, authorization: `Bearer ${t.token}` } }
    },
    async renewAuth (refused) {
      const sent = refused.headers.authorization ?? ''
      if (!sent.startsWith('Bearer ')) return false
      return (await tokens.renew(sent.slice(7))) !== undefined
    },
  }
}

/**
 * The token provider for a `credentials` config value (absent: the file GOOGLE_APPLICATION_CREDENTIALS
 * names). Throws at start-up when the credentials are unreadable or incomplete.
 */
export function googleTokensFromConfig (credentials: GoogleCredentialsConfigT | undefined, opts: GoogleTokenOptions = {}, env: NodeJS.ProcessEnv = process.env): TokenProvider {
  if (credentials !== undefined) return googleTokens(credentials as string | Record<string, unknown>, opts)
  const path = env.GOOGLE_APPLICATION_CREDENTIALS
  if (!path) throw new Error('Google credentials: set `credentials` (a service account key) or GOOGLE_APPLICATION_CREDENTIALS')
  return googleTokens(path, opts)
}
