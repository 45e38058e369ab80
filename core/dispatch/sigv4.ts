/**
 * @module sigv4 – signs a prepared upstream request with AWS Signature Version 4 (the AWS SDK's own
 * signer, @smithy/signature-v4), over exactly the method, path, query, headers and body bytes sent.
 */
import { SignatureV4 } from '@smithy/signature-v4'
import { Hash } from '@smithy/hash-node'
import type { UpstreamRequest } from './provider.ts'
import type { CredentialProvider } from './credentials.ts'

export interface SigV4Options {
  /** The signing region, e.g. `us-east-1`. */
  region: string
  /** The signing service name, e.g. `bedrock`. */
  service: string
  credentials: CredentialProvider
}

/** Header names never signed (added or changed by proxies and by the gateway's own tracing). */
const UNSIGNED = new Set(['traceparent', 'tracestate', 'x-request-id', 'user-agent', 'content-length', 'connection'])

/**
 * A `ProviderInstance.sign` for SigV4: adds `host`, `x-amz-date`, `x-amz-security-token` (session
 * credentials), the body's hash and `authorization`. The path is signed as sent (percent-encoded segments are encoded once more in
 * the canonical request, as AWS services other than S3 expect).
 */
export function sigV4Signer (opts: SigV4Options): (req: UpstreamRequest) => Promise<UpstreamRequest> {
  const signer = new SignatureV4({
    region: opts.region,
    service: opts.service,
    credentials: opts.credentials,
    sha256: Hash.bind(null, 'sha256'),
  })
  return async (req) => {
    const url = new URL(req.origin)
    const q = req.path.indexOf('?')
    const path = q === -1 ? req.path : req.path.slice(0, q)
    const query: Record<string, string | string[]> = {}
    if (q !== -1) {
      for (const [k, v] of new URLSearchParams(req.path.slice(q + 1))) {
        const had = query[k]
        query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v]
      }
    }
    const headers: Record<string, string> = { ...req.headers, host: url.host }
    const unsigned = new Set<string>()
    for (const k of Object.keys(headers)) if (UNSIGNED.has(k.toLowerCase())) unsigned.add(k)
    const signed = await signer.sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path,
      query,
      headers,
      body: req.body,
    }, { unsignableHeaders: unsigned })
    return { ...req, headers: signed.headers as Record<string, string> }
  }
}
