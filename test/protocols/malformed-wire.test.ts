// An upstream (or a direct caller) may send JSON of any shape: every translator reads it as
// unknown and checks each field before use, so a field of the wrong type is skipped, never a
// TypeError; a tool call id or name that is not a string is left out, as when it is missing.
import t from 'tap'
import { translators } from '../../providers/protocols/index.ts'
import { translateFixture, emitted } from '../../testing.ts'
import { usageFromChat, usageFromMessages, usageFromResponses } from '../../index.ts'
import type { SseEvent, TranslatorKey } from '../../core/dispatch/provider.ts'

const { opts } = translateFixture()
const KEYS = Object.keys(translators) as TranslatorKey[]
const upstreamOf = (key: TranslatorKey): string => key.split('-to-')[1]

/** Event names each upstream protocol sends (chat sends unnamed events). */
const NAMES: Record<string, Array<string | undefined>> = {
  chat: [undefined, 'error'],
  messages: ['message_start', 'content_block_start', 'content_block_delta', 'message_delta', 'message_stop', 'error'],
  responses: ['response.created', 'response.output_item.added', 'response.output_text.delta', 'response.function_call_arguments.delta', 'response.completed', 'response.failed', 'error'],
}
/** Data of the wrong shape, whole or in the fields the translators read. */
const DATA = ['null', '5', '"x"', '[]', 'true', '{"delta":3}', '{"delta":"x"}', '{"message":null}', '{"message":7}', '{"content_block":"x"}', '{"choices":"abc"}',
  '{"choices":[null]}', '{"choices":[{"delta":5}]}', '{"choices":[{"delta":{"tool_calls":[null,3]}}]}', '{"error":"boom"}', '{"error":[1]}', '{"response":"x"}', '{"item":4}',
  '{"usage":"x"}', '{"index":{"a":1},"delta":{"type":"text_delta","text":1}}']

const ev = (event: string | undefined, data: string): SseEvent => ({ event, data, raw: (event ? `event: ${event}\n` : '') + `data: ${data}\n\n` })

t.test('streams – an event of any shape is skipped or ends the stream, never a TypeError', async t => {
  for (const key of KEYS) {
    for (const name of NAMES[upstreamOf(key)]) {
      for (const data of DATA) {
        const st = translators[key].stream({ stream: true }, { ...opts })
        t.doesNotThrow(() => { emitted(w => st.push(ev(name, data), w)); emitted(w => st.end(w)) }, `${key} ${name ?? '(unnamed)'} ${data}`)
      }
    }
  }
})

t.test('answers – an answer of any shape gives a body, never a TypeError', async t => {
  const answers: unknown[] = [null, 5, 'x', [], { choices: 'abc' }, { choices: [null] }, { choices: [{ message: 5 }] }, { content: 'x' }, { content: [null, 5] }, { output: [null, { type: 'message', content: 'x' }] }, { usage: 'x' }]
  for (const key of KEYS) {
    for (const a of answers) t.doesNotThrow(() => translators[key].response(a, { ...opts }), `${key} ${JSON.stringify(a)}`)
  }
})

t.test('usage – a count no call can have (past a billion tokens, past 2^53, not finite) counts 0, like one that is not a number', async t => {
  for (const bad of [1e9 + 1, 2 ** 53 + 2, 1e308, Number.POSITIVE_INFINITY]) {
    t.same(usageFromChat({ prompt_tokens: bad, completion_tokens: bad, prompt_tokens_details: { cached_tokens: bad, cache_write_tokens: bad }, completion_tokens_details: { reasoning_tokens: bad } }),
      { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }, `chat ${bad}`)
    t.same(usageFromMessages({ input_tokens: bad, cache_read_input_tokens: bad, cache_creation_input_tokens: bad, output_tokens: bad, server_tool_use: { web_search_requests: bad } }),
      { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }, `messages ${bad}`)
    t.same(usageFromResponses({ input_tokens: bad, input_tokens_details: { cached_tokens: bad }, output_tokens: bad, output_tokens_details: { reasoning_tokens: bad } }),
      { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 }, `responses ${bad}`)
  }
  t.same(usageFromMessages({ input_tokens: 1e9, output_tokens: 7.9 }), { inputTokens: 1e9, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 7 }, 'a billion is still a count (floored)')
})

t.test('requests – a malformed message list is a 400 or skipped, never a TypeError', async t => {
  const bodies = [{ messages: null }, { messages: 'x' }, { messages: [null] }, { messages: [{ role: 'user', content: 'hi' }, null] }]
  for (const key of KEYS.filter(k => !k.startsWith('responses-') && k !== 'chat-to-chat' && k !== 'messages-to-messages')) {
    for (const b of bodies) {
      try {
        translators[key].request({ model: 'm/x', max_tokens: 5, ...b }, { ...opts })
        t.pass(`${key} ${JSON.stringify(b)}: translated`)
      } catch (err) {
        t.match(err, { code: 'GW_ERR_BAD_REQUEST' }, `${key} ${JSON.stringify(b)}: a 400`)
      }
    }
  }
})

t.test('tool calls – an upstream id or name that is not a string is left out', async t => {
  const answer = translators['chat-to-messages'].response({ content: [{ type: 'tool_use', id: 7, name: ['f'], input: {} }], stop_reason: 'tool_use' }, { ...opts }) as { body: { choices: Array<{ message: { tool_calls: unknown[] } }> } }
  t.same(answer.body.choices[0].message.tool_calls, [{ type: 'function', function: { arguments: '{}' } }])
  const st = translators['chat-to-messages'].stream({ stream: true }, { ...opts })
  const out = emitted(w => st.push(ev('content_block_start', JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 7, name: 'f', input: {} } })), w))
  t.match(out, /"tool_calls":\[\{"index":0,"type":"function","function":\{"name":"f","arguments":""\}\}\]/)
  const fromResponses = translators['chat-to-responses'].response({ status: 'completed', output: [{ type: 'function_call', call_id: 'c1', name: 3, arguments: '{}' }] }, { ...opts }) as { body: { choices: Array<{ message: { tool_calls: unknown[] } }> } }
  t.same(fromResponses.body.choices[0].message.tool_calls, [{ id: 'c1', type: 'function', function: { arguments: '{}' } }])
})
