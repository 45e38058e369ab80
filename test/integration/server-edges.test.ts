// Server edges through a listening gateway and raw sockets (issue 14): server timeouts, lingering
// close after an early 413, framework and HTTP-parser errors in the spec's bodies, the nesting limit.
import t from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { rawRequest, head } from '../helpers/raw-http.ts'
import { deepFreeze } from '../../core/config/config.ts'

const portOf = (url: string): number => Number(new URL(url).port)
const CHAT = '/v1/chat/completions'
const MSGS = '/v1/messages'
const bearer = `Bearer ${TEST_KEY}`

t.test('server timeouts', async t => {
  const app = await buildTestApp({ doc: { server: { headersTimeoutMs: 500, bodyTimeoutMs: 1000, keepAliveTimeoutMs: 500 } } })
  t.teardown(() => app.close())
  const port = portOf(await listen(app))
  const trickle = (n: number): string[] => Array.from({ length: n }, () => ' ')

  t.test('a body trickled one byte at a time gets 408 in the chat body shape and the socket closed', async t => {
    const res = await rawRequest(port, { head: head('POST', CHAT, { authorization: bearer, 'content-type': 'application/json', 'content-length': 100 }), pieces: trickle(60), gapMs: 200, maxMs: 10_000 })
    t.equal(res.status, 408, res.raw.slice(0, 300))
    t.same(JSON.parse(res.body), { error: { code: 408, message: 'The request timed out.' } })
    t.ok(res.headers['x-gw-trace-id'])
    t.ok(res.closed, 'the server closed the connection')
  })

  t.test('the same on /v1/messages: timeout_error, localized', async t => {
    const res = await rawRequest(port, { head: head('POST', MSGS, { 'x-api-key': TEST_KEY, 'x-locale': 'zh-CN', 'content-type': 'application/json', 'content-length': 100 }), pieces: trickle(60), gapMs: 200, maxMs: 10_000 })
    t.equal(res.status, 408)
    t.same(JSON.parse(res.body), { type: 'error', error: { type: 'timeout_error', message: '请求超时。' } })
    t.ok(res.closed)
  })

  t.test('a body that is never read (bad key) is cut at the body timeout', async t => {
    const res = await rawRequest(port, { head: head('POST', CHAT, { authorization: 'Bearer sk-gw-wrong', 'content-type': 'application/json', 'content-length': 100 }), pieces: trickle(60), gapMs: 200, maxMs: 10_000 })
    t.equal(res.status, 401, 'answered at once, before the body')
    t.ok(res.closed, 'and the trickling connection is closed')
  })

  t.test('headers trickled one line at a time get 408 (numeric body) and the socket closed', async t => {
    const res = await rawRequest(port, { head: 'GET /v1/models HTTP/1.1\r\nhost: x\r\n', pieces: Array.from({ length: 40 }, (_, i) => `x-h${i}: v\r\n`), gapMs: 200, maxMs: 10_000 })
    t.equal(res.status, 408, res.raw.slice(0, 300))
    t.same(JSON.parse(res.body), { error: { code: 408, message: 'The request timed out.' } })
    t.ok(res.closed)
  })

  t.test('an idle keep-alive connection is closed', async t => {
    const res = await rawRequest(port, { head: head('GET', '/healthz'), waitCloseMs: 8000, maxMs: 10_000 })
    t.equal(res.status, 200)
    t.ok(res.closed, 'closed after keepAliveTimeoutMs, not held open')
  })

  t.test('config: headers timeout above the body timeout is refused', async t => {
    await t.rejects(buildTestApp({ doc: { server: { headersTimeoutMs: 5000, bodyTimeoutMs: 1000 } } }), /headersTimeoutMs/)
    await t.rejects(buildTestApp({ doc: { server: { bodyTimeoutMs: 0 } } }), /bodyTimeoutMs/)
  })
})

t.test('413 is seen by a client still writing: lingering close', async t => {
  const app = await buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: 1024 } }, AUTH_ENTRY] })
  t.teardown(() => app.close())
  const port = portOf(await listen(app))
  const MB = 1024 * 1024

  t.test('declared Content-Length over the limit: 413 request_too_large, no reset while writing', async t => {
    const res = await rawRequest(port, { head: head('POST', CHAT, { authorization: bearer, 'content-type': 'application/json', 'content-length': 32 * MB }), flood: 32 * MB, waitCloseMs: 3000 })
    t.equal(res.status, 413)
    t.same(JSON.parse(res.body), { error: { code: 'request_too_large', message: 'The request body exceeds the limit of 1024 bytes.' } })
    t.same(res.errors, [], 'no EPIPE / ECONNRESET on the client side')
  })

  t.test('chunked body passing the limit while being read: 413 in the messages shape, no reset', async t => {
    const chunk = (s: string | Buffer): Buffer => Buffer.concat([Buffer.from(`${Buffer.byteLength(s).toString(16)}\r\n`), Buffer.from(s), Buffer.from('\r\n')])
    const pieces = Array.from({ length: 256 }, () => chunk(Buffer.alloc(128 * 1024, 0x20)))
    const res = await rawRequest(port, { head: head('POST', MSGS, { 'x-api-key': TEST_KEY, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }), pieces: [chunk('{"model":"echo/echo-1","pad":"'), ...pieces, '0\r\n\r\n'], gapMs: 0, waitCloseMs: 3000 })
    t.equal(res.status, 413)
    t.same(JSON.parse(res.body), { type: 'error', error: { type: 'request_too_large', message: 'The request body exceeds the limit of 1024 bytes.' } })
    t.same(res.errors, [])
  })

  t.test('a body beyond the linger bound is cut after the answer was sent', async t => {
    const small = await buildTestApp({ pipeline: [{ plugin: 'size-limit', config: { maxBytes: 1024 } }, AUTH_ENTRY], doc: { server: { lingerBytes: MB, lingerMs: 1000 } } })
    t.teardown(() => small.close())
    const p = portOf(await listen(small))
    const res = await rawRequest(p, { head: head('POST', CHAT, { authorization: bearer, 'content-type': 'application/json', 'content-length': 512 * MB }), flood: 512 * MB, maxMs: 20_000 })
    t.equal(res.status, 413, 'the answer came first')
    t.ok(res.closed, 'then the connection was closed, long before 512 MB')
  })
})

t.test('framework and HTTP-parser errors in the spec\'s bodies', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())
  const port = portOf(await listen(app))

  for (const bad of ['%ZZ', '%C0%AF', '%FF', '%', '%ED%A0%80']) {
    t.test(`GET /v1/models/${bad} → 400 numeric body`, async t => {
      const res = await rawRequest(port, { head: head('GET', `/v1/models/${bad}`, { authorization: bearer }), waitCloseMs: 50 })
      t.equal(res.status, 400, res.raw.slice(0, 300))
      t.same(JSON.parse(res.body), { error: { code: 400, message: 'The request URL is malformed.' } })
      t.ok(res.headers['x-gw-trace-id'])
    })
  }

  t.test('bad URL under /v1/messages: messages body, localized', async t => {
    const res = await rawRequest(port, { head: head('POST', '/v1/messages/%ZZ', { 'x-api-key': TEST_KEY, 'accept-language': 'zh-CN', 'content-type': 'application/json', 'content-length': 2 }) + '{}', waitCloseMs: 50 })
    t.equal(res.status, 400)
    t.same(JSON.parse(res.body), { type: 'error', error: { type: 'invalid_request_error', message: '请求 URL 格式错误。' } })
  })

  t.test('GET /v1/models/%25 is decoded once: 404 model_not_found for "%"', async t => {
    const res = await rawRequest(port, { head: head('GET', '/v1/models/%25', { authorization: bearer }), waitCloseMs: 50 })
    t.equal(res.status, 404)
    t.same(JSON.parse(res.body), { error: { code: 'model_not_found', message: 'The model "%" does not exist or is not available to this key.' } })
    const slash = await rawRequest(port, { head: head('GET', '/v1/models/echo%2Fecho-1', { authorization: bearer }), waitCloseMs: 50 })
    t.equal(slash.status, 200, 'an encoded slash still finds the model')
    const plain = await rawRequest(port, { head: head('GET', '/v1/models/echo/echo-1', { authorization: bearer }), waitCloseMs: 50 })
    t.equal(JSON.parse(plain.body).id, 'echo/echo-1')
  })

  const parserCases: { name: string, head: string, message: string }[] = [
    { name: 'a header line without a colon', head: 'GET /v1/models HTTP/1.1\r\nhost: x\r\nnot a header\r\n\r\n', message: 'The request is not valid HTTP.' },
    { name: 'an invalid method token', head: 'G@T /v1/models HTTP/1.1\r\nhost: x\r\n\r\n', message: 'The request is not valid HTTP.' },
    { name: 'a CR inside a header value (header injection)', head: 'GET /v1/models HTTP/1.1\r\nhost: x\r\nx-a: b\rset-cookie: y\r\n\r\n', message: 'The request is not valid HTTP.' },
    { name: 'both Content-Length and chunked', head: 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n', message: 'The request is not valid HTTP.' },
    { name: 'headers over the parser limit', head: `GET /v1/models HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, message: 'The request headers are too large.' },
  ]
  for (const c of parserCases) {
    t.test(`${c.name} → 400 numeric body, connection closed`, async t => {
      const res = await rawRequest(port, { head: c.head, maxMs: 5000 })
      t.equal(res.status, 400, res.raw.slice(0, 300))
      t.same(JSON.parse(res.body), { error: { code: 400, message: c.message } })
      t.ok(res.headers['x-gw-trace-id'])
      t.ok(res.closed)
    })
  }

  t.test('fastify body errors are rendered by core: no content type, wrong content type', async t => {
    const none = await rawRequest(port, { head: head('POST', CHAT, { authorization: bearer, 'content-length': 2 }) + '{}', waitCloseMs: 50 })
    t.equal(none.status, 400)
    t.equal(JSON.parse(none.body).error.code, 400)
    const form = await rawRequest(port, { head: head('POST', MSGS, { 'x-api-key': TEST_KEY, 'content-type': 'application/x-www-form-urlencoded', 'content-length': 3 }) + 'a=b', waitCloseMs: 50 })
    t.equal(form.status, 400)
    t.equal(JSON.parse(form.body).error.type, 'invalid_request_error')
  })
})

t.test('nesting limit', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())
  const url = await listen(app)
  const nested = (n: number, leaf: unknown = 1, kind: 'array' | 'object' = 'array'): string =>
    kind === 'array' ? '['.repeat(n) + JSON.stringify(leaf) + ']'.repeat(n) : '{"a":'.repeat(n) + JSON.stringify(leaf) + '}'.repeat(n)
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers }, body })
  const deep = 20_000

  const cases: { name: string, path: string, body: string }[] = [
    { name: 'messages nested (arrays)', path: CHAT, body: `{"model":"echo/echo-1","messages":[{"role":"user","content":${nested(deep)}}]}` },
    { name: 'messages nested (objects)', path: CHAT, body: `{"model":"echo/echo-1","messages":[{"role":"user","content":"x","extra":${nested(deep, 1, 'object')}}]}` },
    { name: 'tools nested', path: CHAT, body: `{"model":"echo/echo-1","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":${nested(deep, 1, 'object')}}}]}` },
    { name: 'system nested', path: MSGS, body: `{"model":"echo/echo-1","max_tokens":5,"system":[{"type":"text","text":${nested(deep)}}],"messages":[{"role":"user","content":"x"}]}` },
    { name: 'a tool_use id nested', path: MSGS, body: `{"model":"echo/echo-1","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":${nested(deep)},"name":"f","input":{}}]}]}` },
    { name: 'an unknown route with a deep body', path: '/v1/embeddings', body: nested(deep) },
  ]
  for (const c of cases) {
    t.test(`${c.path} – ${c.name} → 400, never 500`, async t => {
      const res = await post(c.path, c.body)
      t.equal(res.status, 400)
      const body = await res.json()
      if (c.path === MSGS) t.same(body, { type: 'error', error: { type: 'invalid_request_error', message: 'The request body is nested deeper than 128 levels.' } })
      else t.same(body, { error: { code: 400, message: 'The request body is nested deeper than 128 levels.' } })
    })
  }

  t.test('nesting within the limit passes; the limit is configurable', async t => {
    const ok = await post(CHAT, `{"model":"echo/echo-1","messages":[{"role":"user","content":"hi","extra":${nested(120)}}]}`)
    t.equal(ok.status, 200)
    const strict = await buildTestApp({ doc: { server: { maxJsonDepth: 8 } } })
    t.teardown(() => strict.close())
    const res = await strict.inject({ method: 'POST', url: CHAT, headers: { ...auth(), 'content-type': 'application/json', 'x-locale': 'zh-CN' }, payload: `{"model":"echo/echo-1","messages":[{"role":"user","content":"hi","extra":${nested(10)}}]}` })
    t.equal(res.statusCode, 400)
    t.same(res.json(), { error: { code: 400, message: '请求体的嵌套层级超过 8 层。' } })
  })

  t.test('deepFreeze walks any depth without recursion', async t => {
    let v: unknown = 1
    for (let i = 0; i < 200_000; i++) v = [v]
    t.doesNotThrow(() => deepFreeze(v))
    t.ok(Object.isFrozen(v))
  })
})
