import t from 'tap'
import { buildTestApp, auth } from '../helpers/build-test-app.ts'

const CHAT = '/v1/chat/completions'
const MSGS = '/v1/messages'

t.test('bad input gets the spec status in the route\'s body shape, never a 500', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())
  const json = { ...auth(), 'content-type': 'application/json' }

  const cases: { name: string, url: string, payload: string, headers?: Record<string, string>, status: number, type?: string }[] = [
    { name: 'invalid JSON', url: CHAT, payload: '{"model": "echo/echo-1", ', status: 400 },
    { name: 'invalid JSON', url: MSGS, payload: '{nope', status: 400, type: 'invalid_request_error' },
    { name: 'empty body', url: CHAT, payload: '', status: 400 },
    { name: 'JSON that is not an object', url: CHAT, payload: '[1,2]', status: 400 },
    { name: 'JSON null', url: MSGS, payload: 'null', status: 400, type: 'invalid_request_error' },
    { name: 'missing model', url: CHAT, payload: '{"messages":[]}', status: 400 },
    { name: 'missing model', url: MSGS, payload: '{"messages":[],"max_tokens":5}', status: 400, type: 'invalid_request_error' },
    { name: 'model of the wrong type', url: CHAT, payload: '{"model":42,"messages":[]}', status: 400 },
    { name: 'messages of the wrong type', url: CHAT, payload: '{"model":"echo/echo-1","messages":"hi"}', status: 400 },
    { name: 'stream of the wrong type', url: CHAT, payload: '{"model":"echo/echo-1","messages":[],"stream":"yes"}', status: 400 },
    { name: 'temperature of the wrong type', url: CHAT, payload: '{"model":"echo/echo-1","messages":[],"temperature":"hot"}', status: 400 },
    { name: 'max_tokens missing', url: MSGS, payload: '{"model":"msgvendor/echo-1","messages":[{"role":"user","content":"x"}]}', status: 400, type: 'invalid_request_error' },
    { name: 'max_tokens negative', url: MSGS, payload: '{"model":"msgvendor/echo-1","max_tokens":-1,"messages":[]}', status: 400, type: 'invalid_request_error' },
    { name: 'unknown model', url: CHAT, payload: '{"model":"nope/x","messages":[{"role":"user","content":"x"}]}', status: 404 },
    { name: 'unknown model', url: MSGS, payload: '{"model":"nope/x","max_tokens":5,"messages":[{"role":"user","content":"x"}]}', status: 404, type: 'not_found_error' },
    { name: 'non-JSON content type', url: CHAT, payload: 'model=echo', headers: { ...auth(), 'content-type': 'application/x-www-form-urlencoded' }, status: 400 },
    { name: 'non-JSON content type', url: MSGS, payload: 'hello', headers: { ...auth(), 'content-type': 'text/plain' }, status: 400, type: 'invalid_request_error' },
    { name: 'no key', url: CHAT, payload: '{}', headers: { 'content-type': 'application/json' }, status: 401 },
    { name: 'no key', url: MSGS, payload: '{}', headers: { 'content-type': 'application/json' }, status: 401, type: 'authentication_error' },
    { name: 'malformed Authorization', url: CHAT, payload: '{}', headers: { 'content-type': 'application/json', authorization: 'Basic abc' }, status: 401 },
  ]
  for (const c of cases) {
    t.test(`${c.url} – ${c.name} → ${c.status}`, async t => {
      const res = await app.inject({ method: 'POST', url: c.url, headers: c.headers ?? json, payload: c.payload })
      t.equal(res.statusCode, c.status)
      t.match(res.headers['content-type'], /^application\/json/)
      t.ok(res.headers['x-gw-trace-id'])
      const body = res.json()
      if (c.type) {
        t.equal(body.type, 'error')
        t.equal(body.error.type, c.type)
        t.type(body.error.message, 'string')
      } else {
        t.equal(body.error.code, c.status)
        t.type(body.error.message, 'string')
      }
    })
  }

  t.test('wrong method on a known path is 404, not 500', async t => {
    const res = await app.inject({ method: 'GET', url: CHAT, headers: auth() })
    t.equal(res.statusCode, 404)
  })

  t.test('errors are localized; codes do not change', async t => {
    const res = await app.inject({ method: 'POST', url: CHAT, headers: { 'content-type': 'application/json', 'accept-language': 'zh-CN,zh;q=0.9' }, payload: '{}' })
    t.same(res.json(), { error: { code: 401, message: '缺少 API 密钥。请发送 "Authorization: Bearer <API_KEY>"。' } })
    const msg = await app.inject({ method: 'POST', url: MSGS, headers: { 'content-type': 'application/json', 'x-locale': 'zh-CN', 'accept-language': 'en' }, payload: '{}' })
    t.equal(msg.json().error.type, 'authentication_error')
    t.match(msg.json().error.message, /API 密钥/)
  })
})
