// Golden tests: request and non-streamed response translation, both directions (messages, system,
// tools, tool results, stop reasons, usage). Each case is an input and the exact expected output.
import t from 'tap'
import { messagesToChat } from '../../providers/protocols/messages-to-chat.ts'
import { chatToMessages } from '../../providers/protocols/chat-to-messages.ts'
import { translateFixture, STOP_REASON_TO_FINISH, FINISH_TO_STOP_REASON, MESSAGES_TOOL_CHOICE_TO_CHAT, CHAT_TOOL_CHOICE_TO_MESSAGES } from '../../testing.ts'

const PARAMS = ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'user',
  'stop_sequences', 'metadata', 'thinking', 'parallel_tool_calls', 'reasoning_effort']
const { opts } = translateFixture(PARAMS)
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

t.test('M→C request', async t => {
  t.test('7. user turn [text, tool_result, tool_result, image] → tool, tool, user (text then image)', async t => {
    const img = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }
    const out = messagesToChat.request({
      model: 'm/x',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }, { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } }] },
        { role: 'user', content: [{ type: 'text', text: 'here you go' }, { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }, { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'boom' }], is_error: true }, img] },
      ],
    }, opts)
    t.same(out.messages, [
      { role: 'user', content: 'weather in Paris and Rome?' },
      { role: 'assistant', content: 'Checking.', tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ] },
      { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: boom' },
      // The spec's rule: image blocks are forwarded unconverted (the chat upstream decides).
      { role: 'user', content: [{ type: 'text', text: 'here you go' }, img] },
    ])
    t.equal(out.model, 'up-x')
    t.equal(out.max_tokens, 100)
  })

  t.test('images inside a tool_result move to the following user message', async t => {
    const img = { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }
    const out = messagesToChat.request({ model: 'm/x', max_tokens: 5, messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'shot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'text', text: 'see image' }, img] }] },
    ] }, opts)
    t.same((out.messages as { role: string, content: unknown }[]).slice(1), [
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'shot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'a', content: 'see image' },
      { role: 'user', content: [img] },
    ])
  })

  t.test('8. system string and blocks become one leading system message; empty assistant dropped; final prefill kept', async t => {
    const out = messagesToChat.request({ model: 'm/x', max_tokens: 5, system: [{ type: 'text', text: 'be brief' }, { type: 'text', text: 'be kind', cache_control: { type: 'ephemeral' } }], messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'Sure' },
    ] }, opts)
    t.same(out.messages, [
      { role: 'system', content: 'be brief\nbe kind' },
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'Sure' },
    ])
  })

  t.test('systemRole developer and max_completion_tokens per upstream; cap clamped to the model maximum', async t => {
    const out = messagesToChat.request({ model: 'm/x', max_tokens: 999999, system: 'sys', messages: [{ role: 'user', content: 'hi' }] },
      { ...opts, upstream: { systemRole: 'developer', maxTokensField: 'max_completion_tokens' } })
    t.same((out.messages as { role: string, content: unknown }[])[0], { role: 'developer', content: 'sys' })
    t.equal(out.max_completion_tokens, 4096)
    t.notOk('max_tokens' in out)
  })

  t.test('9. PDF document → file part; text document → text; url document → 400', async t => {
    const out = messagesToChat.request({ model: 'm/x', max_tokens: 5, messages: [{ role: 'user', content: [
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain doc' } },
      { type: 'text', text: 'summarize' },
    ] }] }, opts)
    t.same(out.messages, [{ role: 'user', content: [
      { type: 'file', file: { filename: 'doc.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
      { type: 'text', text: 'plain doc' },
      { type: 'text', text: 'summarize' },
    ] }])
    t.throws(() => messagesToChat.request({ model: 'm/x', max_tokens: 5, messages: [{ role: 'user', content: [
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
    ] }] }, opts), { name: 'GatewayError', statusCode: 400 })
  })

  t.test('tools, tool_choice, parallel, stop, metadata.user_id, top_k dropped', async t => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const base = { model: 'm/x', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'get_weather', description: 'w', input_schema: schema }, { type: 'web_search_20250305', name: 'web_search' }] }
    // The mapping table is the test kit's golden data (the conformance suite runs it against adapters).
    for (const [choice, expected] of MESSAGES_TOOL_CHOICE_TO_CHAT) {
      const out = messagesToChat.request({ ...base, tool_choice: choice }, opts)
      t.same(out.tool_choice, expected, JSON.stringify(choice))
      t.same(out.tools, [{ type: 'function', function: { name: 'get_weather', description: 'w', parameters: schema } }], 'server tools are dropped; parameters untouched')
    }
    const out = messagesToChat.request({ ...base, tool_choice: { type: 'auto', disable_parallel_tool_use: true }, stop_sequences: ['a', 'b', 'c', 'd', 'e'], metadata: { user_id: 'u1' }, top_k: 5, temperature: 0.3 }, opts)
    t.equal(out.parallel_tool_calls, false)
    t.same(out.stop, ['a', 'b', 'c', 'd'])
    t.equal(out.user, 'u1')
    t.equal(out.temperature, 0.3)
    t.notOk('top_k' in out)
  })

  t.test('stream asks for usage always', async t => {
    const out = messagesToChat.request({ model: 'm/x', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] }, opts)
    t.equal(out.stream, true)
    t.same(out.stream_options, { include_usage: true })
  })
})

t.test('C→M request', async t => {
  t.test('7. [assistant(tool_calls×2), tool, tool, user] → one user turn starting with both results', async t => {
    const out = chatToMessages.request({ model: 'm/x', max_tokens: 10, messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [
        { id: 'call.1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '' } },
      ] },
      { role: 'tool', tool_call_id: 'call.1', content: '18C' },
      { role: 'tool', tool_call_id: 'call_2', content: '' },
      { role: 'user', content: 'thanks' },
    ] }, opts)
    t.same(out.messages, [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
        { type: 'tool_result', tool_use_id: 'call_2' },
        { type: 'text', text: 'thanks' },
      ] },
    ])
  })

  t.test('invalid tool-call arguments → 400, not a string input', async t => {
    t.throws(() => chatToMessages.request({ model: 'm/x', messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{not json' } }] },
    ] }, opts), { name: 'GatewayError', statusCode: 400 })
  })

  t.test('8. system/developer anywhere join into system; only-system gets a user turn; assistant first gets one; empty assistant adds nothing', async t => {
    const a = chatToMessages.request({ model: 'm/x', messages: [
      { role: 'system', content: 'one' },
      { role: 'user', content: 'hi' },
      { role: 'developer', content: [{ type: 'text', text: 'two' }] },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'again' },
    ] }, opts)
    t.same(a.system, 'one\n\ntwo')
    t.same(a.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'text', text: 'again' }] }], 'consecutive user turns merge')
    t.equal(a.max_tokens, 4096, 'missing max_tokens → model maximum')

    const b = chatToMessages.request({ model: 'm/x', messages: [{ role: 'system', content: 'only' }] }, opts)
    t.same(b.system, 'only')
    t.same(b.messages, [{ role: 'user', content: '(continue)' }], 'a lone text block is sent as a string')

    const c = chatToMessages.request({ model: 'm/x', messages: [{ role: 'assistant', content: 'I start' }, { role: 'user', content: 'ok' }] }, opts)
    t.same((c.messages as { role: string, content: unknown }[]).map(m => m.role), ['user', 'assistant', 'user'])
  })

  t.test('9. the spec rule: content flattens to text; images (jpg data URI, URL), PDF and audio parts are dropped silently', async t => {
    const out = chatToMessages.request({ model: 'm/x', max_tokens: 10, messages: [{ role: 'user', content: [
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: `data:image/jpg;base64,${PNG}` } },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
      { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
      { type: 'text', text: 'closely' },
    ] }] }, opts)
    t.same(out.messages, [{ role: 'user', content: 'look\nclosely' }])
  })

  t.test('tool_choice, parallel_tool_calls, stop, user, temperature clamp, reasoning_effort, n>1', async t => {
    const base = { model: 'm/x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'get_weather', description: 'd', parameters: { type: 'object', properties: {} } } }] }
    // The mapping table is the test kit's golden data (the conformance suite runs it against adapters).
    for (const [choice, expected] of CHAT_TOOL_CHOICE_TO_MESSAGES) t.same(chatToMessages.request({ ...base, tool_choice: choice }, opts).tool_choice, expected, JSON.stringify(choice))
    const out = chatToMessages.request({ ...base, parallel_tool_calls: false, stop: 'END', user: 'u9', temperature: 1.7 }, opts)
    t.same(out.tools, [{ name: 'get_weather', description: 'd', input_schema: { type: 'object', properties: {} } }])
    t.same(out.tool_choice, { type: 'auto', disable_parallel_tool_use: true })
    t.same(out.stop_sequences, ['END'])
    t.same(out.metadata, { user_id: 'u9' })
    t.equal(out.temperature, 1)
    const none = chatToMessages.request({ ...base, tool_choice: 'none', parallel_tool_calls: false }, opts)
    t.same(none.tool_choice, { type: 'none' }, 'no disable_parallel_tool_use with none')
    const r = chatToMessages.request({ ...base, max_tokens: 4000, reasoning_effort: 'medium' }, opts)
    t.same(r.thinking, { type: 'enabled', budget_tokens: 2048 })
    t.ok((r.max_tokens as number) > 2048)
    for (const effort of ['constructor', 'toString', '__proto__', 'extreme']) {
      const odd = chatToMessages.request({ ...base, max_tokens: 4000, reasoning_effort: effort }, opts)
      t.equal(odd.thinking, undefined, `reasoning_effort "${effort}" is no effort level: no thinking block without a budget`)
    }
    t.throws(() => chatToMessages.request({ ...base, n: 2 }, opts), { name: 'GatewayError', statusCode: 400 })
    t.equal(chatToMessages.request({ ...base, max_completion_tokens: 7, max_tokens: 9 }, opts).max_tokens, 7, 'max_completion_tokens wins')
  })
})

t.test('non-streamed responses', async t => {
  t.test('1/6. chat answer → messages answer with usage split into input, cache read and output', async t => {
    const { body, usage } = messagesToChat.response({
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'up-x',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello', tool_calls: [{ id: 'call.9', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }, { id: 'c2', type: 'function', function: { name: 'g', arguments: '' } }] }, finish_reason: 'tool_calls' }],
      usage: { prompt_tokens: 100, completion_tokens: 7, total_tokens: 107, prompt_tokens_details: { cached_tokens: 30 } },
    }, opts) as any
    t.match(body.id, /^msg_/)
    t.same({ ...body, id: 'X' }, {
      id: 'X', type: 'message', role: 'assistant', model: 'm/x',
      content: [{ type: 'text', text: 'Hello' }, { type: 'tool_use', id: 'call_9', name: 'f', input: { a: 1 } }, { type: 'tool_use', id: 'c2', name: 'g', input: {} }],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 70, cache_read_input_tokens: 30, cache_creation_input_tokens: 0, output_tokens: 7 },
    })
    t.match(usage, { inputTokens: 100, cachedInputTokens: 30, outputTokens: 7 })
  })

  t.test('1/6. messages answer → chat answer; prompt_tokens = input + cache read + cache write', async t => {
    const { body, usage } = chatToMessages.response({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'up-x',
      content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }, { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 50, cache_read_input_tokens: 30, cache_creation_input_tokens: 20, output_tokens: 9 },
    }, opts) as any
    t.match(body.id, /^chatcmpl-/)
    t.equal(body.object, 'chat.completion')
    t.equal(body.model, 'm/x')
    t.same(body.choices, [{ index: 0, message: { role: 'assistant', content: 'Hello', refusal: null, reasoning_content: 'hmm', thinking_blocks: [{ type: 'thinking', thinking: 'hmm', signature: 's' }], tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, logprobs: null, finish_reason: 'tool_calls' }])
    t.match(body.usage, { prompt_tokens: 100, completion_tokens: 9, total_tokens: 109, prompt_tokens_details: { cached_tokens: 30 } })
    t.match(usage, { inputTokens: 100, cachedInputTokens: 30, outputTokens: 9 })
  })

  t.test('10. every stop_reason / finish_reason value, non-streamed', async t => {
    // The mapping tables are the test kit's golden data (the conformance suite runs them against adapters).
    for (const [stop, finish] of STOP_REASON_TO_FINISH) {
      const { body } = chatToMessages.response({ id: 'm', type: 'message', role: 'assistant', model: 'u', content: [{ type: 'text', text: 'x' }], stop_reason: stop, usage: { input_tokens: 1, output_tokens: 1 } }, opts) as any
      t.equal(body.choices[0].finish_reason, finish, `${stop} → ${finish}`)
    }
    for (const [finish, stop] of FINISH_TO_STOP_REASON) {
      const { body } = messagesToChat.response({ id: 'c', object: 'chat.completion', created: 1, model: 'u', choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, finish_reason: finish }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }, opts) as any
      t.equal(body.stop_reason, stop, `${finish} → ${stop}`)
    }
  })

  t.test('a refusal message becomes a text block; null details read as 0', async t => {
    const { body } = messagesToChat.response({ id: 'c', object: 'chat.completion', created: 1, model: 'u', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: null } }, opts) as any
    t.same(body.content, [{ type: 'text', text: 'I cannot' }])
    t.same(body.usage, { input_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 2 })
  })
})
