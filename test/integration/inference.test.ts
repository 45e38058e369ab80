import t from 'tap'
import { buildTestApp, auth, LIMITED_KEY } from '../helpers/build-test-app.ts'

const chat = (content: unknown, extra: Record<string, unknown> = {}) => ({ model: 'echo/echo-1', messages: [{ role: 'user', content }], ...extra })
const msgs = (content: unknown, extra: Record<string, unknown> = {}) => ({ model: 'msgvendor/echo-1', max_tokens: 100, messages: [{ role: 'user', content }], ...extra })

function sseEvents (text: string): { event?: string, data: string }[] {
  return text.split('\n\n').filter(Boolean).map(block => {
    const ev: { event?: string, data: string } = { data: '' }
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) ev.event = line.slice(7)
      else if (line.startsWith('data: ')) ev.data = line.slice(6)
    }
    return ev
  })
}

t.test('POST /v1/chat/completions on the echo model', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())

  t.test('answers in the chat wire format with usage and the gateway headers', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat('Hello there') })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['x-gw-model'], 'echo/echo-1')
    t.equal(res.headers['x-gw-provider'], 'echo')
    t.ok(res.headers['x-gw-trace-id'])
    const body = res.json()
    t.equal(body.object, 'chat.completion')
    t.match(body.id, /^chatcmpl-/)
    t.equal(body.choices[0].message.role, 'assistant')
    t.equal(body.choices[0].message.content, 'Echo: Hello there')
    t.equal(body.choices[0].finish_reason, 'stop')
    t.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens)
    t.type(body.usage.prompt_tokens_details.cached_tokens, 'number')
  })

  t.test('image input is accepted by an image model', async t => {
    const res = await app.inject({
      method: 'POST', url: '/v1/chat/completions', headers: auth(),
      payload: chat([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]),
    })
    t.equal(res.statusCode, 200)
    t.equal(res.json().choices[0].message.content, 'Echo: What is this? [1 image]')
  })

  t.test('streams chunks ending in [DONE]; usage chunk only when asked for', async t => {
    const plain = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat('one two three', { stream: true }) })
    t.equal(plain.statusCode, 200)
    t.match(plain.headers['content-type'], /^text\/event-stream/)
    t.equal(plain.headers['x-gw-provider'], 'echo')
    const evs = sseEvents(plain.body)
    t.equal(evs.at(-1)!.data, '[DONE]')
    const chunks = evs.slice(0, -1).map(e => JSON.parse(e.data))
    t.notOk(chunks.some(c => c.choices.length === 0), 'no usage-only chunk when the client did not ask')
    t.equal(chunks.map(c => c.choices[0].delta.content ?? '').join(''), 'Echo: one two three')
    t.equal(chunks.at(-1).choices[0].finish_reason, 'stop')

    const withUsage = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat('hi', { stream: true, stream_options: { include_usage: true } }) })
    const last = sseEvents(withUsage.body).slice(0, -1).map(e => JSON.parse(e.data)).at(-1)
    t.same(last.choices, [])
    t.ok(last.usage.prompt_tokens > 0)
  })

  t.test('max_tokens cuts the answer with finish_reason length', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: chat('a b c d e f', { max_tokens: 2 }) })
    t.equal(res.json().choices[0].finish_reason, 'length')
    t.equal(res.json().usage.completion_tokens, 2)
  })
})

t.test('POST /v1/messages on the messages-protocol echo model', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())

  t.test('answers in the messages wire format', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgs('Hello') })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['x-gw-model'], 'msgvendor/echo-1')
    t.equal(res.headers['x-gw-provider'], 'echo-messages')
    const body = res.json()
    t.equal(body.type, 'message')
    t.equal(body.role, 'assistant')
    t.same(body.content, [{ type: 'text', text: 'Echo: Hello' }])
    t.equal(body.stop_reason, 'end_turn')
    t.type(body.usage.cache_read_input_tokens, 'number')
  })

  t.test('accepts x-api-key and ?beta=true (Claude Code)', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/messages?beta=true', headers: { 'x-api-key': auth().authorization.slice(7) }, payload: msgs('Hi') })
    t.equal(res.statusCode, 200)
  })

  t.test('streams events, each with its event: line', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: msgs('one two', { stream: true }) })
    t.equal(res.statusCode, 200)
    const evs = sseEvents(res.body)
    t.ok(evs.every(e => e.event && JSON.parse(e.data).type === e.event), 'every event names itself')
    t.equal(evs[0].event, 'message_start')
    t.equal(evs.at(-1)!.event, 'message_stop')
    t.equal(evs.filter(e => e.event === 'message_start').length, 1)
    t.ok(evs.some(e => e.event === 'message_delta' && JSON.parse(e.data).usage))
  })

  t.test('a model outside the key\'s list is not found', async t => {
    const res = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(LIMITED_KEY), payload: msgs('Hi') })
    t.equal(res.statusCode, 404)
    t.same(res.json(), { type: 'error', error: { type: 'not_found_error', message: 'The model "msgvendor/echo-1" does not exist or is not available to this key.' } })
  })
})
