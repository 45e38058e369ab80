/**
 * @module providers/gemini/errors – a Gemini error answer (`{ error: { code, message, status,
 * details } }`, or a list of them as Vertex AI's stream endpoint sends it) → a gateway error.
 *
 * 429 / RESOURCE_EXHAUSTED and 503 / UNAVAILABLE (the model overloaded) → 503 with Retry-After
 * (the upstream's header, else its RetryInfo `retryDelay` rounded up, else 1 second), the next
 * deployment tried first; 400 (INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE) → 400 with the
 * message sanitized (final: another deployment would refuse it too), except an invalid API key
 * (Gemini answers it with 400 and reason API_KEY_INVALID); 401 / 403 / 404 (the operator's key,
 * permissions or model id) and an invalid key → 502, logged loudly; anything else → 502, the next
 * deployment tried.
 */
import { gwError, sanitizeUpstreamMessage, type GatewayError, type UpstreamResponse } from '../../index.ts'
import { isObj } from './request.ts'

type Obj = Record<string, unknown>

/** The error object of an error body (`{error}` or `[{error}]`). */
export function errorOf (body: unknown): Obj | undefined {
  const b = Array.isArray(body) ? body[0] : body
  return isObj(b) && isObj(b.error) ? b.error : undefined
}

/** Seconds to wait: the Retry-After header, else the RetryInfo detail's `retryDelay` ("13s", "1.5s"), else 1. */
export function retryAfter (headers: UpstreamResponse['headers'] | undefined, err: Obj | undefined): string {
  const h = headers?.['retry-after']
  if (typeof h === 'string' && /^\d+$/.test(h.trim())) return h.trim()
  for (const d of Array.isArray(err?.details) ? err.details : []) {
    if (isObj(d) && typeof d.retryDelay === 'string') {
      const m = /^(\d+(?:\.\d+)?)s$/.exec(d.retryDelay.trim())
      if (m) return String(Math.max(1, Math.ceil(Number(m[1]))))
    }
  }
  return '1'
}

function reasonOf (err: Obj | undefined): string | undefined {
  for (const d of Array.isArray(err?.details) ? err.details : []) if (isObj(d) && typeof d.reason === 'string') return d.reason
  return undefined
}

/** What went wrong, and whether it is the operator's setup (credentials, permissions, model id): logged loudly. */
export function mapGeminiError (status: number, headers: UpstreamResponse['headers'], text: string): { error: GatewayError, operator: boolean, status: string } {
  let body: unknown
  try { body = JSON.parse(text) } catch { body = undefined }
  const err = errorOf(body)
  const s = typeof err?.status === 'string' ? err.status : ''
  const message = typeof err?.message === 'string' ? err.message : undefined
  if (status === 429 || s === 'RESOURCE_EXHAUSTED' || status === 503 || s === 'UNAVAILABLE') {
    return { error: gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: { 'retry-after': retryAfter(headers, err) } }), operator: false, status: s }
  }
  const keyRefused = reasonOf(err) === 'API_KEY_INVALID'
  if (status === 401 || status === 403 || status === 404 || keyRefused || s === 'UNAUTHENTICATED' || s === 'PERMISSION_DENIED') {
    return { error: gwError('GW_ERR_UPSTREAM_FAILED'), operator: true, status: s }
  }
  if (status === 400 || status === 413 || status === 422) {
    return { error: gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [message ? sanitizeUpstreamMessage(message) : `status ${status}`]), operator: false, status: s }
  }
  return { error: gwError('GW_ERR_UPSTREAM_FAILED'), operator: false, status: s }
}

/** An error object inside a stream (`data: {"error": …}`) → what to throw. */
export function streamError (err: Obj): Error {
  const code = typeof err.code === 'number' ? err.code : 500
  const { error } = mapGeminiError(code, {}, JSON.stringify({ error: err }))
  // Throttling (503) and a refusal of the request (400, with Gemini's message) are the call's
  // errors as for an answer with that status; anything else is a stream that failed.
  if (error.statusCode === 503 || error.statusCode === 400) return error
  return new Error(`Gemini stream error ${code} ${String(err.status ?? '')}: ${String(err.message ?? '')}`)
}
