import t from 'tap'
import { renderError, toGatewayError } from '../../core/errors/error-reply.ts'
import { gwError } from '../../core/errors/errors.ts'

const opts = { requestId: 'trace-1' }

t.test('renderError – numeric-code body on chat, models and reserved routes', async t => {
  const r = renderError(gwError('GW_ERR_AUTH_INVALID_KEY'), { ...opts, protocol: 'chat' })
  t.equal(r.status, 401)
  t.same(JSON.parse(r.body), { error: { code: 401, message: 'Invalid API key.' } })
  t.equal(r.headers['x-request-id'], 'trace-1')
  t.match(r.headers['content-type'], /^application\/json/)
})

t.test('renderError – string codes where the spec gives them', async t => {
  t.equal(JSON.parse(renderError(gwError('GW_ERR_MODEL_NOT_FOUND', ['m']), { ...opts, protocol: 'none' }).body).error.code, 'model_not_found')
  t.equal(JSON.parse(renderError(gwError('GW_ERR_IDEMPOTENCY_DUPLICATE'), { ...opts, protocol: 'chat' }).body).error.code, 'duplicate_request')
  t.equal(JSON.parse(renderError(gwError('GW_ERR_BODY_TOO_LARGE', [10]), { ...opts, protocol: 'chat' }).body).error.code, 'request_too_large')
  t.equal(JSON.parse(renderError(gwError('GW_ERR_MODEL_UNKNOWN', ['m']), { ...opts, protocol: 'chat' }).body).error.code, 404)
})

t.test('renderError – messages-protocol body with the right error.type', async t => {
  const cases: [Parameters<typeof gwError>[0], number, string][] = [
    ['GW_ERR_BAD_REQUEST', 400, 'invalid_request_error'],
    ['GW_ERR_AUTH_MISSING_KEY', 401, 'authentication_error'],
    ['GW_ERR_BALANCE_INSUFFICIENT', 402, 'billing_error'],
    ['GW_ERR_BALANCE_NO_ORGANIZATION', 403, 'permission_error'],
    ['GW_ERR_MODEL_UNKNOWN', 404, 'not_found_error'],
    ['GW_ERR_TIMEOUT', 408, 'timeout_error'],
    ['GW_ERR_IDEMPOTENCY_DUPLICATE', 409, 'invalid_request_error'],
    ['GW_ERR_BODY_TOO_LARGE', 413, 'request_too_large'],
    ['GW_ERR_QUOTA_EXCEEDED', 429, 'rate_limit_error'],
    ['GW_ERR_UPSTREAM_FAILED', 502, 'api_error'],
    ['GW_ERR_UPSTREAM_UNAVAILABLE', 503, 'overloaded_error'],
  ]
  for (const [code, status, type] of cases) {
    const r = renderError(gwError(code, ['x']), { ...opts, protocol: 'messages' })
    t.equal(r.status, status, code)
    const body = JSON.parse(r.body)
    t.equal(body.type, 'error')
    t.equal(body.error.type, type, code)
    t.type(body.error.message, 'string')
    t.equal(r.headers['request-id'], 'trace-1')
  }
})

t.test('renderError – the IP limit uses the numeric body even on /v1/messages', async t => {
  const r = renderError(gwError('GW_ERR_RATE_LIMITED', [], { headers: { 'retry-after': '7' } }), { ...opts, protocol: 'messages' })
  t.same(JSON.parse(r.body), { error: { code: 429, message: 'You are being rate limited.' } })
  t.equal(r.headers['retry-after'], '7')
})

t.test('renderError – localized by X-Locale, codes unchanged; no-retry header on 402/409', async t => {
  const r = renderError(gwError('GW_ERR_BALANCE_INSUFFICIENT'), { ...opts, protocol: 'chat', xLocale: 'zh-CN' })
  t.same(JSON.parse(r.body), { error: { code: 402, message: '余额不足，无法处理此请求。' } })
  t.equal(r.headers['x-should-retry'], 'false')
  t.notOk(renderError(gwError('GW_ERR_RATE_LIMITED'), { ...opts, protocol: 'chat' }).headers['x-should-retry'])
})

t.test('renderError – metadata is carried in the numeric body', async t => {
  const r = renderError(gwError('GW_ERR_QUOTA_EXCEEDED', ['requests per minute'], { metadata: { window: 'minute' } }), { ...opts, protocol: 'chat' })
  t.same(JSON.parse(r.body).error.metadata, { window: 'minute' })
})

t.test('toGatewayError – fastify errors and unknown errors', async t => {
  t.equal(toGatewayError({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' }, 'x').code, 'GW_ERR_CONTENT_TYPE')
  t.equal(toGatewayError({ code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }, 'x').code, 'GW_ERR_INVALID_JSON')
  t.equal(toGatewayError({ code: 'FST_ERR_CTP_BODY_TOO_LARGE' }, 'x').code, 'GW_ERR_BODY_TOO_LARGE')
  t.equal(toGatewayError({ statusCode: 405, message: 'nope' }, 'x').code, 'GW_ERR_BAD_REQUEST')
  const internal = toGatewayError(new TypeError('boom'), 'trace-9')
  t.equal(internal.code, 'GW_ERR_INTERNAL')
  t.notMatch(internal.message, /boom/)
  t.match(internal.message, /trace-9/)
})
