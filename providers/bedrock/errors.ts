/**
 * @module providers/bedrock/errors – a Bedrock error answer (`x-amzn-errortype` header, or the
 * body's `__type`) → a gateway error.
 *
 * ThrottlingException / ServiceQuotaExceededException → 503 with Retry-After (the upstream's,
 * else 1 second), the next deployment tried first; ValidationException → 400 with the message
 * sanitized (final: another deployment would refuse it too); AccessDeniedException,
 * UnrecognizedClientException, InvalidSignatureException, ExpiredTokenException,
 * ResourceNotFoundException (the operator's credentials or model id) → 502, logged loudly;
 * ModelNotReadyException, ServiceUnavailableException, InternalServerException and the rest →
 * 502, the next deployment tried.
 */
import { gwError, sanitizeUpstreamMessage, type GatewayError, type UpstreamResponse } from '../../index.ts'

/** The error's type name: the header (`ThrottlingException:http://…`) or the body's `__type` (`…#ThrottlingException`). */
export function errorType (headers: UpstreamResponse['headers'], body: unknown): string {
  const h = headers['x-amzn-errortype']
  const raw = typeof h === 'string' && h !== '' ? h : typeof (body as { __type?: unknown } | null)?.__type === 'string' ? (body as { __type: string }).__type : ''
  return raw.split(':')[0].split('#').pop() ?? ''
}

/** The operator's setup is wrong (credentials, permissions, model id): logged loudly. */
export const OPERATOR_ERRORS: ReadonlySet<string> = new Set([
  'AccessDeniedException', 'UnrecognizedClientException', 'InvalidSignatureException', 'ExpiredTokenException',
  'IncompleteSignatureException', 'MissingAuthenticationTokenException', 'ResourceNotFoundException',
])

export function mapBedrockError (status: number, headers: UpstreamResponse['headers'], text: string): { error: GatewayError, type: string } {
  let body: unknown
  try { body = JSON.parse(text) } catch { body = undefined }
  const type = errorType(headers, body)
  const m = (body as { message?: unknown, Message?: unknown } | undefined)
  const message = typeof m?.message === 'string' ? m.message : typeof m?.Message === 'string' ? m.Message : undefined
  if (type === 'ThrottlingException' || type === 'ServiceQuotaExceededException' || (type === '' && status === 429)) {
    const ra = headers['retry-after']
    const after = typeof ra === 'string' && /^\d+$/.test(ra.trim()) ? ra.trim() : '1'
    return { error: gwError('GW_ERR_UPSTREAM_UNAVAILABLE', [], { headers: { 'retry-after': after } }), type }
  }
  if (type === 'ValidationException' || (type === '' && (status === 400 || status === 413 || status === 422))) {
    return { error: gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [message ? sanitizeUpstreamMessage(message) : `status ${status}`]), type }
  }
  return { error: gwError('GW_ERR_UPSTREAM_FAILED'), type }
}
