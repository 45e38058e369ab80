/**
 * @module providers/azure-openai/entra – Microsoft Entra ID access tokens for Azure OpenAI, by the
 * OAuth 2.0 client-credentials grant (tenant, client id, client secret). One token is shared by
 * every call of the provider instance: it is kept until `refreshBeforeMs` before it expires, then
 * replaced by one request that concurrent callers share; a failed request is not kept (the next
 * call tries again), and a token Azure refused is dropped.
 * @see https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow
 */
import { request } from 'undici'
import type { AzureEntraConfigT } from './schema.ts'

/** A bearer token and when it stops being valid. */
export interface AccessToken {
  token: string
  expiration: Date
}

/** Resolves the token to send next; `invalidate` drops the cached one (Azure answered 401 to it). */
export interface TokenProvider {
  (): Promise<AccessToken>
  invalidate (): void
}

/** The token endpoint's answer is awaited this long (headers, then body). */
const TOKEN_TIMEOUT_MS = 10_000
/** An error answer's text kept in the thrown message (it is logged, never sent to a client). */
const MAX_ERROR_CHARS = 300

/** The default token endpoint of a tenant in Azure's public cloud. */
export function defaultTokenUrl (tenantId: string): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`
}

/** Asks the token endpoint for a token once (no cache). */
export async function fetchEntraToken (c: AzureEntraConfigT, now: () => number = Date.now): Promise<AccessToken> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: c.scope })
  const asked = now()
  const res = await request(c.tokenUrl ?? defaultTokenUrl(c.tenantId), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: form.toString(),
    headersTimeout: TOKEN_TIMEOUT_MS,
    bodyTimeout: TOKEN_TIMEOUT_MS,
  })
  const text = await res.body.text()
  let body: { access_token?: unknown, expires_in?: unknown, error?: unknown, error_description?: unknown } | undefined
  try { body = JSON.parse(text) } catch { body = undefined }
  if (res.statusCode !== 200) {
    const why = typeof body?.error === 'string' ? `${body.error}: ${String(body.error_description ?? '')}` : text
    throw new Error(`Entra token endpoint answered ${res.statusCode}: ${why.slice(0, MAX_ERROR_CHARS)}`)
  }
  // expires_in is a number of seconds (a string on the older v1 endpoint), counted from the ask.
  const seconds = Number(body?.expires_in)
  if (typeof body?.access_token !== 'string' || body.access_token === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new Error('Entra token endpoint answered 200 without access_token and expires_in')
  }
  return { token: body.access_token, expiration: new Date(asked + seconds * 1000) }
}

/**
 * The shared, refreshing token of one provider instance. A token is replaced `refreshBeforeMs`
 * before it expires, or halfway through its life when that is shorter (a short-lived token is
 * still reused). `source` is the fetch (tests swap it).
 */
export function entraTokens (c: AzureEntraConfigT, now: () => number = Date.now, source: () => Promise<AccessToken> = () => fetchEntraToken(c, now)): TokenProvider {
  let current: AccessToken | undefined
  let refreshAt = 0
  let pending: Promise<AccessToken> | undefined
  const get = (): Promise<AccessToken> => {
    if (current !== undefined && now() < refreshAt) return Promise.resolve(current)
    pending ??= (async () => {
      const fetchedAt = now()
      const t = await source()
      const life = t.expiration.getTime() - fetchedAt
      current = t
      refreshAt = t.expiration.getTime() - Math.min(c.refreshBeforeMs, life / 2)
      return t
    })().finally(() => { pending = undefined })
    return pending
  }
  return Object.assign(get, {
    invalidate (): void { current = undefined },
  })
}
