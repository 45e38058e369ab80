/** @module test/e2e/openai-sdk – the official openai SDK's chat calls against a listening gateway, on a chat-upstream model and a messages-upstream one (translated). */
import t from 'tap'
import OpenAI from 'openai'
import { buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'

t.test('official openai SDK (v6) against a listening gateway', async t => {
  const app = await buildTestApp()
  const base = await listen(app)
  t.teardown(() => app.close())
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })

  t.test('models.list and models.retrieve (id with a slash)', async t => {
    const ids: string[] = []
    for await (const m of client.models.list()) ids.push(m.id)
    t.same(ids, ['echo/echo-1', 'echo/echo-text', 'msgvendor/echo-1'])
    const m = await client.models.retrieve('echo/echo-1')
    t.equal(m.id, 'echo/echo-1')
  })

  // A chat-upstream model and a messages-upstream one (the chat ⇄ messages translators).
  for (const model of ['echo/echo-1', 'msgvendor/echo-1']) {
    t.test(`chat.completions.create, not streamed (${model})`, async t => {
      const { data, response } = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello SDK' }] }).withResponse()
      t.equal(data.choices[0].message.content, 'Echo: Hello SDK')
      t.equal(response.headers.get('x-gw-model'), model)
      t.ok(data.usage!.prompt_tokens > 0)
      t.equal((data as typeof data & { _request_id?: string | null })._request_id, response.headers.get('x-gw-trace-id'), 'the SDK reads our trace id as its request id')
    })

    t.test(`chat.completions.stream accumulates a final completion with usage (${model})`, async t => {
      const stream = client.chat.completions.stream({ model, messages: [{ role: 'user', content: 'stream me please' }], stream_options: { include_usage: true } })
      const deltas: string[] = []
      stream.on('content.delta', ({ delta }) => deltas.push(delta))
      const final = await stream.finalChatCompletion()
      t.equal(final.choices[0].message.content, 'Echo: stream me please')
      t.equal(deltas.join(''), 'Echo: stream me please')
      t.equal(final.choices[0].finish_reason, 'stop')
      t.ok(final.usage!.total_tokens > 0)
    })

    t.test(`tool calls through the SDK helper (${model})`, async t => {
      const stream = client.chat.completions.stream({
        model,
        messages: [{ role: 'user', content: '/tool weather in Oslo' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { text: { type: 'string' } } } } }],
      })
      const final = await stream.finalChatCompletion()
      const call = final.choices[0].message.tool_calls![0]
      t.equal(final.choices[0].finish_reason, 'tool_calls')
      t.equal(call.type, 'function')
      if (call.type === 'function') {
        t.equal(call.function.name, 'get_weather')
        t.same(JSON.parse(call.function.arguments), { text: 'weather in Oslo' })
      }
    })
  }

  t.test('SDK error classes: 401 AuthenticationError, 404 NotFoundError, 400 BadRequestError', async t => {
    const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-gw-wrong', maxRetries: 0 })
    const e401 = await bad.models.list().catch(e => e)
    t.ok(e401 instanceof OpenAI.AuthenticationError)
    t.equal(e401.status, 401)
    t.equal(e401.code, 401)
    const e404 = await client.models.retrieve('nope/none').catch(e => e)
    t.ok(e404 instanceof OpenAI.NotFoundError)
    t.equal(e404.code, 'model_not_found')
    const chat404 = await client.chat.completions.create({ model: 'nope/none', messages: [{ role: 'user', content: 'x' }] }).catch(e => e)
    t.ok(chat404 instanceof OpenAI.NotFoundError)
    const e400 = await client.chat.completions.create({ model: 'echo/echo-1', messages: 'x' as never }).catch(e => e)
    t.ok(e400 instanceof OpenAI.BadRequestError)
    t.ok(e400.requestID, 'request id from x-request-id')
  })
})
