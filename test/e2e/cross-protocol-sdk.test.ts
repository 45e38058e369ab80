/**
 * The official SDKs across protocols: the Anthropic SDK against chat-upstream models and the
 * OpenAI SDK against messages-upstream models, streaming with tool calls, multi-turn with results.
 */
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, sse, fixtureEvents, upstreamDoc } from '../helpers/fake-upstream.ts'

t.test('official SDKs across protocols', async t => {
  const chatUp = await startFakeUpstream((_req, res) => sse(res, fixtureEvents('chat-parallel-tools.sse')))
  const msgUp = await startFakeUpstream((_req, res) => sse(res, fixtureEvents('messages-tool-use.sse')))
  const base = upstreamDoc(chatUp.origin, msgUp.origin)
  const echo = (await import('../../core/config/default-config.ts')).embeddedDefault('sk-gw-x')
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: { providers: [...(echo.providers as unknown[]), ...(base.providers as unknown[])], models: [...(echo.models as unknown[]), ...(base.models as unknown[])] },
  })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  const anthropic = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const lookup = { name: 'lookup', input_schema: { type: 'object' as const, properties: { text: { type: 'string' } } } }

  t.test('Anthropic messages.stream() with tool use on a chat-upstream model, then the tool result', async t => {
    const stream = anthropic.messages.stream({ model: 'echo/echo-1', max_tokens: 64, messages: [{ role: 'user', content: '/tool find Oslo' }], tools: [lookup] })
    const events: string[] = []
    stream.on('streamEvent', e => events.push(e.type))
    const first = await stream.finalMessage()
    t.equal(events[0], 'message_start')
    t.equal(events.at(-1), 'message_stop')
    t.equal(first.stop_reason, 'tool_use')
    const use = first.content.find(b => b.type === 'tool_use')
    t.ok(use && use.type === 'tool_use' && /^[A-Za-z0-9_-]+$/.test(use.id), 'the tool id fits the messages pattern')
    if (use?.type !== 'tool_use') return
    t.same(use.input, { text: 'find Oslo' })
    t.ok(first.usage.input_tokens > 0, 'message_start carried a non-zero input count')
    const second = await anthropic.messages.create({
      model: 'echo/echo-1', max_tokens: 64, tools: [lookup],
      messages: [
        { role: 'user', content: '/tool find Oslo' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    })
    t.same(second.content, [{ type: 'text', text: 'Echo: tool said sunny' }], 'the result went upstream as a tool message')
  })

  t.test('Anthropic SDK: parallel interleaved tool calls from a chat upstream', async t => {
    const final = await anthropic.messages.stream({ model: 'vendor/chat-model', max_tokens: 64, messages: [{ role: 'user', content: 'weather and time' }], tools: [lookup] }).finalMessage()
    t.same(final.content.map(b => b.type), ['text', 'tool_use', 'tool_use'])
    t.match(final.content[1], { type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } })
    t.match(final.content[2], { type: 'tool_use', name: 'get_time', input: { tz: 'CET' } })
    t.equal(final.stop_reason, 'tool_use')
    t.equal(final.usage.cache_read_input_tokens, 100)
    t.equal(final.usage.input_tokens, 20, 'messages input_tokens excludes the cache')
  })

  t.test('OpenAI SDK streaming tool calls on a messages-upstream model, then the tool result', async t => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { text: { type: 'string' } } } } }]
    const first = await openai.chat.completions.stream({ model: 'msgvendor/echo-1', messages: [{ role: 'user', content: '/tool weather Oslo' }], tools, stream_options: { include_usage: true } }).finalChatCompletion()
    t.equal(first.choices[0].finish_reason, 'tool_calls')
    const call = first.choices[0].message.tool_calls![0]
    t.equal(call.type, 'function')
    if (call.type !== 'function') return
    t.same(JSON.parse(call.function.arguments), { text: 'weather Oslo' })
    t.ok(first.usage && first.usage.prompt_tokens >= first.usage.prompt_tokens_details!.cached_tokens!)
    const second = await openai.chat.completions.create({
      model: 'msgvendor/echo-1', tools,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: '/tool weather Oslo' },
        first.choices[0].message as never,
        { role: 'tool', tool_call_id: call.id, content: 'rain' },
      ],
    })
    t.equal(second.choices[0].message.content, 'Echo: tool said rain')
    t.equal(second.choices[0].finish_reason, 'stop')
  })

  t.test('OpenAI SDK: thinking, text and a tool call from a messages upstream', async t => {
    const final = await openai.chat.completions.stream({ model: 'msgvendor/msg-model', messages: [{ role: 'user', content: 'weather' }] }).finalChatCompletion()
    t.equal(final.choices[0].message.content, 'Looking it up.')
    t.equal(final.choices[0].message.tool_calls![0].type, 'function')
    t.match(final.choices[0].message.tool_calls![0], { id: 'toolu_01B', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } })
    t.equal(final.choices[0].finish_reason, 'tool_calls')
  })
})
