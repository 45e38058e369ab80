/** @module test/e2e/anthropic-sdk – the official @anthropic-ai/sdk against a listening gateway, on a messages-upstream model and a chat-upstream one (translated). */
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, TEST_KEY } from '../helpers/build-test-app.ts'

t.test('official @anthropic-ai/sdk against a listening gateway', async t => {
  const app = await buildTestApp()
  const base = await listen(app)
  t.teardown(() => app.close())
  const client = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  const bearer = new Anthropic({ baseURL: base, authToken: TEST_KEY, apiKey: null, maxRetries: 0 })

  // A messages-upstream model and a chat-upstream one (the messages ⇄ chat translators).
  for (const model of ['msgvendor/echo-1', 'echo/echo-1']) {
    t.test(`messages.create with x-api-key and with Bearer (${model})`, async t => {
      for (const c of [client, bearer]) {
        const msg = await c.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello Claude' }] })
        t.same(msg.content, [{ type: 'text', text: 'Echo: Hello Claude' }])
        t.equal(msg.stop_reason, 'end_turn')
        t.ok(msg.usage.input_tokens > 0)
      }
    })

    t.test(`messages.stream accumulates the final message (${model})`, async t => {
      const stream = client.messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'stream this' }] })
      const texts: string[] = []
      stream.on('text', d => texts.push(d))
      const final = await stream.finalMessage()
      t.equal(texts.join(''), 'Echo: stream this')
      t.equal(final.content.length, 1)
      t.match(final.content[0], { type: 'text', text: 'Echo: stream this' })
      t.equal(final.stop_reason, 'end_turn')
      t.ok(final.usage.output_tokens > 0)
    })

    t.test(`tool use through messages.stream (${model})`, async t => {
      const final = await client.messages.stream({
        model, max_tokens: 64,
        messages: [{ role: 'user', content: '/tool find Oslo' }],
        tools: [{ name: 'lookup', input_schema: { type: 'object', properties: { text: { type: 'string' } } } }],
      }).finalMessage()
      t.equal(final.stop_reason, 'tool_use')
      const block = final.content.find(b => b.type === 'tool_use')
      t.ok(block)
      if (block?.type === 'tool_use') {
        t.equal(block.name, 'lookup')
        t.same(block.input, { text: 'find Oslo' })
      }
    })
  }

  t.test('SDK error classes: 401 AuthenticationError, 404 NotFoundError, 400 BadRequestError', async t => {
    const bad = new Anthropic({ baseURL: base, apiKey: 'sk-gw-wrong', maxRetries: 0 })
    const e401 = await bad.messages.create({ model: 'msgvendor/echo-1', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch(e => e)
    t.ok(e401 instanceof Anthropic.AuthenticationError)
    t.equal(e401.status, 401)
    t.equal(e401.error.error.type, 'authentication_error')
    const e404 = await client.messages.create({ model: 'nope/none', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch(e => e)
    t.ok(e404 instanceof Anthropic.NotFoundError)
    t.equal(e404.error.error.type, 'not_found_error')
    const e400 = await client.messages.create({ model: 'msgvendor/echo-1', messages: [{ role: 'user', content: 'x' }] } as never).catch(e => e)
    t.ok(e400 instanceof Anthropic.BadRequestError)
    t.equal(e400.error.error.type, 'invalid_request_error')
    t.ok(e400.requestID, 'request id from the request-id header')
  })
})
