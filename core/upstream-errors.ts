/** @module upstream-errors – an upstream's non-2xx answer → gateway error, and whether to fail over. */
import type { Readable } from 'node:stream'
import { gwError, type GatewayError } from './errors.ts'
import type { UpstreamResponse } from './provider.ts'

/** Upstream error text kept for a client's 400 is cut to this many characters. */
const MAX_MESSAGE_CHARS = 500

/** Reads a body to a string, keeping at most `max` bytes (the rest is drained and dropped). */
export async function readText (body: Readable, max = Infinity): Promise<string> {
  // undici's bodies have text(), which skips the async iterator (it showed in profiles).
  const text = (body as Readable & { text?: () => Promise<string> }).text
  if (max === Infinity && typeof text === 'function') return text.call(body)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    if (size < max) chunks.push(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  const buf = Buffer.concat(chunks)
  return (size > max ? buf.subarray(0, max) : buf).toString('utf8')
}

/** Removes what could name the provider's address or credentials from an upstream message. */
export function sanitizeUpstreamMessage (message: string): string {
  return message
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, '[url]')
    .replace(/\b(sk|pk|rk|key|token)[-_][A-Za-z0-9_-]{6,}/gi, '[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .slice(0, MAX_MESSAGE_CHARS)
}

/** The message inside either protocol's error body, or undefined. */
export function upstreamMessage (text: string): string | undefined {
  try {
    const j = JSON.parse(text)
    const m = j?.error?.message ?? j?.message ?? (typeof j?.error === 'string' ? j.error : undefined)
    return typeof m === 'string' ? m : undefined
  } catch {
    return undefined
  }
}

function retryAfter (headers: UpstreamResponse['headers']): Record<string, string> | undefined {
  const v = headers['retry-after']
  return typeof v === 'string' && /^\d+$/.test(v.trim()) ? { 'retry-after': v.trim() } : undefined
}

/**
 * Default mapping (design.md §11): 400/413/422 → 400 with the upstream's sanitized message (no
 * failover: another deployment would refuse it too); 401/403 (the operator's provider key) → 502,
 * logged loudly; 429 → 503 with Retry-After when known; other statuses → 502. Everything but the
 * 400s fails over to the next deployment.
 */
export function defaultMapError (status: number, headers: UpstreamResponse['headers'], text: string): GatewayError {
  if (status === 400 || status === 413 || status === 422) {
    const msg = upstreamMessage(text)
    return gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [msg ? sanitizeUpstreamMessage(msg) : `status ${status}`])
  }
  if (status === 429 || status === 529) return gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: retryAfter(headers) })
  return gwError('GW_ERR_UPSTREAM_FAILED')
}

/** Should a failure of this kind count against the deployment's circuit? (connect, timeout, 5xx) */
export function countsForCircuit (status: number): boolean {
  return status >= 500
}

/** Is this mapped error final for the call (no failover)? */
export function isFinal (err: GatewayError): boolean {
  return err.statusCode === 400
}
