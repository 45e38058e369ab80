/** @module errors – every GW_ERR_* code in one table: HTTP status, public code, messages-protocol type. */

/** How one error code shows on the wire. */
export interface ErrorSpec {
  /** HTTP status (start-up errors carry 500; they never reach a client). */
  status: number
  /** English template; `%s` placeholders are filled in order from the constructor arguments. */
  message: string
  /** The string `error.code` of the numeric-code body for this error (e.g. `model_not_found`); when absent, the status number is the code. */
  publicCode?: string
  /** `error.type` in the messages-protocol body (the Anthropic API's type for this status). */
  messagesType?: string
  /**
   * Always rendered in the numeric-code body, even on /v1/messages: the IP limit answers every
   * route (probes and unknown paths too) with one and the same 429 body, whatever the protocol.
   */
  numericBodyEverywhere?: boolean
  /** Texts by locale of a code a plugin added (core's own codes take theirs from i18n.ts). */
  texts?: { readonly en: string, readonly 'zh-CN'?: string }
}

export const ERRORS = {
  // ── start-up: config, registries, pipeline ───────────────────────────────────────────────
  GW_ERR_CONFIG_READ: { status: 500, message: 'Cannot read config file %s: %s' },
  GW_ERR_CONFIG_INVALID: { status: 500, message: 'Invalid config in %s at %s: %s' },
  GW_ERR_CONFIG_ENV_MISSING: { status: 500, message: 'Config file %s at %s refers to environment variable ${%s}, which is not set' },
  GW_ERR_PLUGIN_UNKNOWN: { status: 500, message: 'Unknown plugin "%s" in %s at %s; known plugins: %s' },
  GW_ERR_PLUGIN_LOAD: { status: 500, message: 'Cannot load plugin module %s: %s' },
  GW_ERR_PLUGIN_DUPLICATE: { status: 500, message: 'Plugin "%s" is listed twice in the pipeline (%s)' },
  GW_ERR_PLUGIN_DEPENDENCY: { status: 500, message: 'Plugin "%s" depends on "%s", which is not in the pipeline before it' },
  GW_ERR_PLUGIN_CONFIG_INVALID: { status: 500, message: 'Invalid config for plugin "%s" in %s at %s: %s' },
  GW_ERR_PLUGIN_PROVIDES: { status: 500, message: 'Plugin "%s" declares output "%s": %s' },
  GW_ERR_PLUGIN_REQUIRES: { status: 500, message: 'Plugin "%s" requires output "%s" on route %s, but %s' },
  GW_ERR_PLUGIN_ERROR_CODE: { status: 500, message: 'Plugin "%s" declares error code "%s": %s' },
  GW_ERR_PLUGIN_INVALID: { status: 500, message: 'Plugin definition is invalid: %s' },
  GW_ERR_PLUGIN_TIMEOUT: { status: 500, message: 'Plugin "%s" did not finish create() within %s ms' },
  GW_ERR_PROVIDER_UNKNOWN: { status: 500, message: 'Unknown provider adapter "%s" in %s at %s; known adapters: %s' },
  GW_ERR_PROVIDER_CONFIG_INVALID: { status: 500, message: 'Invalid config for provider "%s" in %s at %s: %s' },
  GW_ERR_PROVIDER_LOAD: { status: 500, message: 'Cannot load provider adapter module %s: %s' },
  GW_ERR_MODEL_CONFIG_INVALID: { status: 500, message: 'Invalid model "%s" in %s at %s: %s' },
  GW_ERR_REGISTRY_DUPLICATE: { status: 500, message: 'Duplicate %s name "%s"' },

  // ── request: bad input ────────────────────────────────────────────────────────────────────
  GW_ERR_BAD_REQUEST: { status: 400, message: 'Invalid request: %s', messagesType: 'invalid_request_error' },
  GW_ERR_INVALID_JSON: { status: 400, message: 'The request body is not valid JSON.', messagesType: 'invalid_request_error' },
  GW_ERR_CONTENT_TYPE: { status: 400, message: 'Content-Type must be application/json.', messagesType: 'invalid_request_error' },
  GW_ERR_JSON_TOO_DEEP: { status: 400, message: 'The request body is nested deeper than %s levels.', messagesType: 'invalid_request_error' },
  GW_ERR_BAD_URL: { status: 400, message: 'The request URL is malformed.', messagesType: 'invalid_request_error' },
  GW_ERR_BAD_HTTP: { status: 400, message: 'The request is not valid HTTP.', messagesType: 'invalid_request_error' },
  GW_ERR_HEADERS_TOO_LARGE: { status: 400, message: 'The request headers are too large.', messagesType: 'invalid_request_error' },
  GW_ERR_MODEL_MISSING: { status: 400, message: 'The request body must include "model".', messagesType: 'invalid_request_error' },
  GW_ERR_MODEL_ID_MISSING: { status: 400, message: 'A model id is required.', messagesType: 'invalid_request_error' },
  GW_ERR_LIMIT_INVALID: { status: 400, message: 'Query parameter "limit" must be an integer from 1 to 1000.', messagesType: 'invalid_request_error' },
  GW_ERR_MEDIA_INVALID: { status: 400, message: 'Invalid media in %s: %s', messagesType: 'invalid_request_error' },
  GW_ERR_UPSTREAM_BAD_REQUEST: { status: 400, message: 'The model rejected the request: %s', messagesType: 'invalid_request_error' },

  // ── request: identity, money, limits ──────────────────────────────────────────────────────
  GW_ERR_AUTH_MISSING_KEY: { status: 401, message: 'Missing API key. Send "Authorization: Bearer <API_KEY>".', messagesType: 'authentication_error' },
  GW_ERR_AUTH_INVALID_KEY: { status: 401, message: 'Invalid API key.', messagesType: 'authentication_error' },
  GW_ERR_BALANCE_INSUFFICIENT: { status: 402, message: 'Insufficient balance for this request.', messagesType: 'billing_error' },
  GW_ERR_KEY_BUDGET_EXHAUSTED: { status: 402, message: 'This API key\'s lifetime budget does not cover this request.', messagesType: 'billing_error' },
  GW_ERR_BALANCE_NO_ORGANIZATION: { status: 403, message: 'This API key has no organization context; balance checks need one.', messagesType: 'permission_error' },
  GW_ERR_MODEL_UNKNOWN: { status: 404, message: 'The model "%s" does not exist or is not available to this key.', messagesType: 'not_found_error' },
  GW_ERR_MODEL_NOT_FOUND: { status: 404, message: 'The model "%s" does not exist or is not available to this key.', publicCode: 'model_not_found', messagesType: 'not_found_error' },
  GW_ERR_ROUTE_NOT_FOUND: { status: 404, message: 'No route for %s %s.', messagesType: 'not_found_error' },
  GW_ERR_RESPONSE_NOT_STORED: { status: 404, message: 'Response "%s" not found: this gateway is stateless and stores no responses.', messagesType: 'not_found_error' },
  GW_ERR_TIMEOUT: { status: 408, message: 'The request timed out.', messagesType: 'timeout_error' },
  GW_ERR_IDEMPOTENCY_DUPLICATE: { status: 409, message: 'A request with this Idempotency-Key was already processed or is in progress.', publicCode: 'duplicate_request',
    messagesType: 'invalid_request_error' },
  GW_ERR_BODY_TOO_LARGE: { status: 413, message: 'The request body exceeds the limit of %s bytes.', publicCode: 'request_too_large', messagesType: 'request_too_large' },
  GW_ERR_RATE_LIMITED: { status: 429, message: 'You are being rate limited.', messagesType: 'rate_limit_error', numericBodyEverywhere: true },
  GW_ERR_QUOTA_EXCEEDED: { status: 429, message: 'Usage quota exceeded: %s.', messagesType: 'rate_limit_error' },
  GW_ERR_KEY_BUDGET_WINDOW: { status: 429, message: 'This API key\'s budget for the current %s does not cover this request; it renews in %s seconds.', messagesType: 'rate_limit_error' },
  GW_ERR_IDEMPOTENCY_KEY_LIMIT: { status: 429, message: 'Too many Idempotency-Key claims for this API key: at most %s per %s seconds.', messagesType: 'rate_limit_error' },

  // ── admin API and admin CLI (admin/service.ts) ──────────────────────────────────────────────
  GW_ERR_ADMIN_KEY_MISSING: { status: 401, message: 'Missing admin key. Send "Authorization: Bearer <ADMIN_KEY>".' },
  GW_ERR_ADMIN_KEY_INVALID: { status: 401, message: 'Invalid admin key.' },
  GW_ERR_ADMIN_KEY_REVOKED: { status: 403, message: 'This admin key is revoked.' },
  GW_ERR_ADMIN_AUTH_THROTTLED: { status: 429, message: 'Too many failed admin sign-ins from this address; try again in %s seconds.' },
  GW_ERR_ORGANIZATION_UNKNOWN: { status: 404, message: 'Unknown organization "%s".' },
  GW_ERR_ORGANIZATION_EXISTS: { status: 409, message: 'Organization "%s" already exists.' },
  GW_ERR_PROJECT_UNKNOWN: { status: 404, message: 'Unknown project "%s" in organization "%s".' },
  GW_ERR_PROJECT_EXISTS: { status: 409, message: 'Project "%s" already exists.' },
  GW_ERR_KEY_UNKNOWN: { status: 404, message: 'Unknown key "%s".' },
  GW_ERR_KEY_EXISTS: { status: 409, message: 'Key "%s" already exists.' },
  GW_ERR_KEY_ALREADY_REVOKED: { status: 409, message: 'Key "%s" is already revoked.' },
  GW_ERR_PRICE_UNKNOWN: { status: 404, message: 'No ledger price for "%s" (the config\'s price, if any, applies).' },
  GW_ERR_HOLD_UNKNOWN: { status: 404, message: 'No hold "%s" (released, charged or swept already).' },
  GW_ERR_HOLDS_NOT_STORED: { status: 409,
    message: 'holds are stored one by one in a PostgreSQL ledger only; a SQLite gateway holds them in its process (reservations: memory, gone with it) or in a per-organization ' +
      'counter (reservations: file)' },
  /** A refund names a call (trace id) that is no usage record of the organization. */
  GW_ERR_USAGE_UNKNOWN: { status: 404, message: 'No usage record with trace id "%s" for organization "%s".' },
  /** Refunds of one call together may not pass what it was charged. */
  GW_ERR_REFUND_EXCEEDS_CHARGE: { status: 409, message: 'Refunds of the call "%s" would pass what it was charged (%s; %s refunded before).' },
  /** The admin CLI's `verify`: organizations whose balance is not Σ journal − Σ charges (exit 1). */
  GW_ERR_LEDGER_UNBALANCED: { status: 500, message: '%s organization(s) have a balance other than journal − charges.' },
  GW_ERR_DEPLOYMENT_UNKNOWN: { status: 404, message: 'No deployment "%s" (provider/upstreamModel).' },
  GW_ERR_CALLS_NOT_COUNTED: { status: 404, message: 'This admin API counts no calls (it was built without a gateway app to watch).' },
  /** A database uniqueness constraint refused a write (both ledgers' duplicate-id errors). */
  GW_ERR_RECORD_EXISTS: { status: 409, message: 'already exists' },
  /** A database foreign-key constraint refused a write. */
  GW_ERR_RECORD_REFERENCE: { status: 404, message: 'refers to an unknown record' },
  GW_ERR_SPOOL_OWNED: { status: 409, message: 'The spool %s belongs to the running gateway process %s, which replays it itself.' },
  GW_ERR_SPOOL_LEFT: { status: 500, message: '%s charge(s) could not be written; they stay in the spool.' },
  /** The admin CLI over --url: the admin API could not be reached. */
  GW_ERR_ADMIN_UNREACHABLE: { status: 502, message: 'Cannot reach the admin API at %s: %s' },
  /** The admin CLI over --url: the admin API's error answer (status, its message), quoted as it came. */
  GW_ERR_ADMIN_ANSWER: { status: 502, message: '%s: %s' },
  /** A mistake on the admin CLI's command line (exit code 2); the text is the CLI's own. */
  GW_ERR_CLI_USAGE: { status: 400, message: '%s' },

  // ── server side ───────────────────────────────────────────────────────────────────────────
  GW_ERR_INTERNAL: { status: 500, message: 'Internal error. Quote the trace id %s when contacting support.', messagesType: 'api_error' },
  GW_ERR_NOT_IMPLEMENTED: { status: 501, message: 'This endpoint is not available yet.', messagesType: 'api_error' },
  GW_ERR_UPSTREAM_FAILED: { status: 502, message: 'The model service failed to answer.', messagesType: 'api_error' },
  GW_ERR_MODEL_LIST_UNAVAILABLE: { status: 502, message: 'The model list is temporarily unavailable.', messagesType: 'api_error' },
  GW_ERR_UPSTREAM_UNAVAILABLE: { status: 503, message: 'No provider is available for this model right now.', messagesType: 'overloaded_error' },
  GW_ERR_NOT_READY: { status: 503, message: 'The service is temporarily unavailable.', messagesType: 'overloaded_error' },
  GW_ERR_STORE_FULL: { status: 503, message: 'The service is temporarily unavailable.', messagesType: 'overloaded_error' },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERRORS

function format (template: string, args: readonly unknown[]): string {
  let i = 0
  return template.replace(/%s/g, () => (i < args.length ? String(args[i++]) : '%s'))
}

/** Options that travel with an error beyond its code and arguments. */
export interface GatewayErrorOptions {
  cause?: unknown
  /** Response headers to send with the error (for example `Retry-After`). */
  headers?: Record<string, string>
  /** `error.metadata` in the numeric-code body. */
  metadata?: Record<string, unknown>
}

/**
 * Marks a GatewayError from any copy of this module: a plugin package may resolve its own copy of
 * the gateway package, and its errors must still render with their code, not as a 500.
 */
const BRAND = Symbol.for('model-gateway.GatewayError')

/** The one error class: plugins and core throw it, `error-reply.ts` renders it. */
export class GatewayError extends Error {
  /** A code of this table, or one a plugin declared (see `pluginError`). */
  readonly code: string
  /** How the code shows on the wire. */
  readonly spec: ErrorSpec
  readonly statusCode: number
  readonly args: readonly unknown[]
  readonly headers?: Record<string, string>
  readonly metadata?: Record<string, unknown>

  constructor (code: ErrorCode, args: readonly unknown[] = [], opts: GatewayErrorOptions = {}, spec: ErrorSpec = ERRORS[code]) {
    super(format(spec.message, args), opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'GatewayError'
    Object.defineProperty(this, BRAND, { value: true })
    this.code = code
    this.spec = spec
    this.statusCode = spec.status
    this.args = args
    if (opts.headers) this.headers = opts.headers
    if (opts.metadata) this.metadata = opts.metadata
  }
}

/** Shorthand: `throw gwError('GW_ERR_QUOTA_EXCEEDED', ['requests per minute'], { headers })`. */
export function gwError (code: ErrorCode, args: readonly unknown[] = [], opts?: GatewayErrorOptions): GatewayError {
  return new GatewayError(code, args, opts)
}

/** An error of a code a plugin declared; `spec` comes from the pipeline's checked table. */
export function pluginError (code: string, spec: ErrorSpec, args: readonly unknown[] = [], opts?: GatewayErrorOptions): GatewayError {
  return new GatewayError(code as ErrorCode, args, opts, spec)
}

export function isGatewayError (err: unknown): err is GatewayError {
  return typeof err === 'object' && err !== null && (err as { [BRAND]?: unknown })[BRAND] === true
}

/** Formats an English template (used by i18n for catalogues of other locales too). */
export { format as formatTemplate }
