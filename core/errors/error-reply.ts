/** @module error-reply – error → wire body for the route's protocol, localized text. */
import { GatewayError, gwError, isGatewayError, type ErrorSpec } from './errors.ts'
import { localizeError, pickLocale } from './i18n.ts'

/** messages-protocol `error.type` by status (the Anthropic API's own types), for codes that do not name one. */
const MESSAGES_TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error',
  404: 'not_found_error', 408: 'timeout_error', 409: 'invalid_request_error', 413: 'request_too_large',
  422: 'invalid_request_error', 429: 'rate_limit_error', 500: 'api_error', 501: 'api_error',
  502: 'api_error', 503: 'overloaded_error', 504: 'timeout_error', 529: 'overloaded_error',
}

/** Statuses a client must not retry blindly: the SDKs retry 409 by default, and 402/403 never heal. */
const NO_RETRY = new Set([402, 403, 409])

export function messagesTypeOf (spec: ErrorSpec): string {
  return spec.messagesType ?? MESSAGES_TYPE_BY_STATUS[spec.status] ?? 'api_error'
}

/** Maps anything thrown (fastify's own errors included) to a GatewayError. */
export function toGatewayError (err: unknown, requestId: string): GatewayError {
  if (isGatewayError(err)) return err
  const e = err as { code?: string, statusCode?: number, message?: string, validation?: unknown }
  switch (e?.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return gwError('GW_ERR_CONTENT_TYPE', [], { cause: err })
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return gwError('GW_ERR_INVALID_JSON', [], { cause: err })
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return gwError('GW_ERR_BODY_TOO_LARGE', ['the configured'], { cause: err })
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH': return gwError('GW_ERR_BAD_REQUEST', ['Content-Length does not match the body'], { cause: err })
    case 'FST_ERR_NOT_FOUND': return gwError('GW_ERR_ROUTE_NOT_FOUND', ['this', 'path'], { cause: err })
  }
  if (err instanceof SyntaxError && e.statusCode === 400) return gwError('GW_ERR_INVALID_JSON', [], { cause: err })
  if (e?.validation) return gwError('GW_ERR_BAD_REQUEST', [e.message ?? 'invalid'], { cause: err })
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 413) return gwError('GW_ERR_BODY_TOO_LARGE', ['the configured'], { cause: err })
    return gwError('GW_ERR_BAD_REQUEST', [e.message ?? 'bad request'], { cause: err })
  }
  return gwError('GW_ERR_INTERNAL', [requestId], { cause: err })
}

export interface ErrorReply {
  status: number
  headers: Record<string, string>
  body: string
}

export interface ReplyOptions {
  /** 'messages' renders the messages-protocol body; anything else the numeric-code body. */
  protocol: 'chat' | 'messages' | 'responses' | 'none'
  requestId: string
  xLocale?: string
  acceptLanguage?: string
}

/** Renders an error as the route's body, with localized text and the headers clients read. */
export function renderError (err: GatewayError, opts: ReplyOptions): ErrorReply {
  const spec = err.spec
  const locale = pickLocale(opts.xLocale, opts.acceptLanguage)
  const message = localizeError(err, locale)
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', ...err.headers }
  if (NO_RETRY.has(spec.status)) headers['x-should-retry'] = 'false'
  let body: unknown
  if (opts.protocol === 'messages' && !spec.numericBodyEverywhere) {
    headers['request-id'] = opts.requestId
    body = { type: 'error', error: { type: messagesTypeOf(spec), message } }
  } else {
    headers['x-request-id'] = opts.requestId
    const error: Record<string, unknown> = { code: spec.publicCode ?? spec.status, message }
    if (err.metadata) error.metadata = err.metadata
    body = { error }
  }
  return { status: spec.status, headers, body: JSON.stringify(body) }
}

export { GatewayError }
