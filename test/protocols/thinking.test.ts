// Signed reasoning across protocols, straight through the translators: a messages upstream's
// thinking and redacted_thinking blocks as a Responses client's reasoning items (encrypted_content,
// when `include` asks for it) and as a chat client's `thinking_blocks`, given back as the same
// blocks at the head of the assistant turn; a Responses upstream's reasoning items as a messages
// client's thinking blocks (the item in the signature) and given back as reasoning items.
import t from 'tap'
import { translators } from '../../providers/protocols/index.ts'
import { decodeReasoning, decodeThinking, encodeReasoning, encodeThinking } from '../../providers/protocols/thinking.ts'
import { parseSse, translateFixture, emitted } from '../../testing.ts'

const PARAMS = ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'reasoning_effort', 'temperature']
const { opts: base } = translateFixture(PARAMS)
const fresh = () => ({ ...base })

const SIGNED = { type: 'thinking', thinking: 'User wants Oslo.', signature: 'EqQBsig==' } as const
const REDACTED = { type: 'redacted_thinking', data: 'EmwKAhgBredacted' } as const
const TOOLS = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }]

function sse (name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify({ type: name, ...(data as object) })}\n\n`
}

/** A messages upstream's stream: a signed thinking block, a redacted one, then a tool call. */
const MESSAGES_STREAM = [
  sse('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
  sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'User wants ' } }),
  sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Oslo.' } }),
  sse('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBsig==' } }),
  sse('content_block_stop', { index: 0 }),
  sse('content_block_start', { index: 1, content_block: REDACTED }),
  sse('content_block_stop', { index: 1 }),
  sse('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } }),
  sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' } }),
  sse('content_block_stop', { index: 2 }),
  sse('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } }),
  sse('message_stop', {}),
].join('')

t.test('the encodings round-trip and reject what they did not make', async t => {
  t.same(decodeThinking(encodeThinking(SIGNED)), SIGNED)
  t.same(decodeThinking(encodeThinking(REDACTED)), REDACTED)
  t.equal(decodeThinking('gAAAAABopenai-blob'), undefined, "another vendor's encrypted content is not a thinking block")
  t.equal(decodeThinking('gw-thinking:not base64 json'), undefined)
  t.equal(decodeThinking(encodeReasoning({ encrypted_content: 'x', summary: [] })), undefined, 'a carried reasoning item is no thinking block')
  t.same(decodeReasoning(encodeReasoning({ encrypted_content: 'gAAAA', summary: ['s1', 's2'] })), { encrypted_content: 'gAAAA', summary: ['s1', 's2'] })
  t.equal(decodeReasoning('EqQBsig=='), undefined, "Anthropic's own signature is no reasoning item")
})

t.test('responses → messages: answer blocks become reasoning items with encrypted_content (include asked)', async t => {
  const tr = translators['responses-to-messages']
  const answer = { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [SIGNED, REDACTED, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 20 } }
  for (const include of [true, false]) {
    const opts = fresh()
    tr.request({ model: 'm/x', input: 'weather?', tools: TOOLS, reasoning: { effort: 'medium' }, ...(include ? { include: ['reasoning.encrypted_content'] } : {}) }, opts)
    const { body } = tr.response(answer, opts) as { body: any }
    t.same(body.output.map((o: { type: string }) => o.type), ['reasoning', 'reasoning', 'function_call'])
    t.same(body.output[0].content, [{ type: 'reasoning_text', text: 'User wants Oslo.' }])
    if (include) {
      t.same(decodeThinking(body.output[0].encrypted_content), SIGNED, 'the signed block, whole')
      t.same(decodeThinking(body.output[1].encrypted_content), REDACTED, 'the redacted block, whole')
    } else {
      t.notOk('encrypted_content' in body.output[0], 'no encrypted_content without include')
    }
  }
})

t.test('responses → messages: the stream closes each reasoning item with its block', async t => {
  const tr = translators['responses-to-messages']
  for (const chunked of [false, true]) {
    const opts = fresh()
    const body = { model: 'm/x', input: 'weather?', tools: TOOLS, stream: true, include: ['reasoning.encrypted_content'] }
    tr.request(body, opts)
    const st = tr.stream(body, opts)
    let out = ''
    for (const ev of parseSse(MESSAGES_STREAM, chunked)) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    const events = parseSse(out).map(e => JSON.parse(e.data))
    const done = events.filter(e => e.type === 'response.output_item.done').map(e => e.item)
    t.same(done.map((i: { type: string }) => i.type), ['reasoning', 'reasoning', 'function_call'])
    t.same(decodeThinking(done[0].encrypted_content), SIGNED, 'signature_delta ends in the first item')
    t.same(done[0].content, [{ type: 'reasoning_text', text: 'User wants Oslo.' }])
    t.same(decodeThinking(done[1].encrypted_content), REDACTED)
    const deltas = events.filter(e => e.type === 'response.reasoning_text.delta').map(e => e.delta).join('')
    t.equal(deltas, 'User wants Oslo.')
    const final = events.find(e => e.type === 'response.completed').response
    t.same(final.output.map((i: { encrypted_content: string }) => i.encrypted_content !== undefined), [true, true, false])
  }
})

t.test('responses → messages: reasoning items given back become the turn\'s first blocks; thinking stays on', async t => {
  const tr = translators['responses-to-messages']
  const input = [
    { role: 'user', content: 'weather?' },
    { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: encodeThinking(SIGNED) },
    { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: encodeThinking(REDACTED) },
    { type: 'reasoning', id: 'rs_3', summary: [], encrypted_content: 'gAAAAAother-vendor' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
    { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'toolu_1', output: 'sunny' },
  ]
  const out: any = tr.request({ model: 'm/x', input, tools: TOOLS, reasoning: { effort: 'medium' } }, fresh())
  t.same(out.messages[1], { role: 'assistant', content: [SIGNED, REDACTED, { type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] })
  t.same(out.thinking, { type: 'enabled', budget_tokens: 2048 }, 'the tool loop keeps thinking on: its thinking came back')
  // Without the blocks (the client did not keep them) the loop goes on without thinking, as before.
  const bare: any = tr.request({ model: 'm/x', input: input.filter(i => i.type !== 'reasoning'), tools: TOOLS, reasoning: { effort: 'medium' } }, fresh())
  t.equal(bare.thinking, undefined)
  // Toward a chat upstream no reasoning item is sent.
  const chat: any = translators['responses-to-chat'].request({ model: 'm/x', input, tools: TOOLS }, fresh())
  t.notOk(JSON.stringify(chat).includes('thinking_blocks'))
})

t.test('chat → messages: thinking_blocks in the answer, the stream and back in the request', async t => {
  const tr = translators['chat-to-messages']
  const answer = { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [SIGNED, REDACTED, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 20 } }
  const { body } = tr.response(answer, fresh()) as { body: any }
  t.same(body.choices[0].message.thinking_blocks, [SIGNED, REDACTED])
  t.equal(body.choices[0].message.reasoning_content, 'User wants Oslo.')
  const st = tr.stream({ stream: true }, fresh())
  let out = ''
  for (const ev of parseSse(MESSAGES_STREAM)) out += emitted(w => st.push(ev, w))
  const blocks = parseSse(out).filter(e => e.data !== '[DONE]').flatMap(e => JSON.parse(e.data).choices?.[0]?.delta?.thinking_blocks ?? [])
  t.same(blocks, [SIGNED, REDACTED], 'each block whole, once')
  const req: any = tr.request({
    model: 'm/x',
    reasoning_effort: 'medium',
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, thinking_blocks: [SIGNED, REDACTED, { type: 'thinking', thinking: 'unsigned', signature: '' }], tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
    ],
  }, fresh())
  t.same(req.messages[1].content, [SIGNED, REDACTED, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }], 'unsigned thinking dropped')
  t.same(req.thinking, { type: 'enabled', budget_tokens: 2048 })
})

const RS_ITEM = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: 'gAAAAencrypted' }
const FC_ITEM = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' }
const RESPONSES_USAGE = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 30 }
const RESPONSES_STREAM = [
  sse('response.created', { response: { id: 'resp_1', status: 'in_progress', output: [] } }),
  sse('response.output_item.added', { output_index: 0, item: { ...RS_ITEM, summary: [], encrypted_content: null } }),
  sse('response.reasoning_summary_text.delta', { output_index: 0, summary_index: 0, delta: 'Pl' }),
  sse('response.reasoning_summary_text.delta', { output_index: 0, summary_index: 0, delta: 'an.' }),
  sse('response.output_item.done', { output_index: 0, item: RS_ITEM }),
  sse('response.output_item.added', { output_index: 1, item: { ...FC_ITEM, arguments: '', status: 'in_progress' } }),
  sse('response.function_call_arguments.delta', { output_index: 1, delta: '{"city":"Oslo"}' }),
  sse('response.output_item.done', { output_index: 1, item: FC_ITEM }),
  sse('response.completed', { response: { id: 'resp_1', status: 'completed', output: [RS_ITEM, FC_ITEM], usage: RESPONSES_USAGE } }),
].join('')
const MSG_TOOLS = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]

t.test('messages → responses: reasoning items are thinking blocks carrying the item, and go back as it', async t => {
  const tr = translators['messages-to-responses']
  const req: any = tr.request({ model: 'm/x', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2048 }, tools: MSG_TOOLS, messages: [{ role: 'user', content: 'weather?' }] }, fresh())
  t.same(req.include, ['reasoning.encrypted_content'], 'the upstream is asked for the reasoning to give back')
  const { body } = tr.response({ id: 'resp_1', object: 'response', status: 'completed', output: [RS_ITEM, FC_ITEM], usage: RESPONSES_USAGE }, fresh()) as { body: any }
  t.same(body.content.map((b: { type: string }) => b.type), ['thinking', 'tool_use'])
  t.equal(body.content[0].thinking, 'Plan.')
  t.same(decodeReasoning(body.content[0].signature), { encrypted_content: 'gAAAAencrypted', summary: ['Plan.'] })
  // The client gives its turn back: the reasoning item goes first, as the upstream made it.
  const next: any = tr.request({
    model: 'm/x', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2048 }, tools: MSG_TOOLS,
    messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: [body.content[0], { type: 'thinking', thinking: 'x', signature: 'EqQBanthropic' }, REDACTED, body.content[1]] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: body.content[1].id, content: 'sunny' }] },
    ],
  }, fresh())
  t.same(next.input.slice(1, 3), [
    { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: 'gAAAAencrypted' },
    { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
  ], "Anthropic's own thinking and redacted thinking are not sent to a Responses upstream")
  t.equal(next.input.length, 4)
  // Toward a chat upstream no thinking goes on.
  const chat: any = translators['messages-to-chat'].request({ model: 'm/x', max_tokens: 100, messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: [body.content[0], { type: 'text', text: 'a' }] }] }, fresh())
  t.notOk(JSON.stringify(chat).includes('thinking_blocks'))
})

t.test('messages → responses: the stream ends the thinking block with a signature_delta carrying the item', async t => {
  const tr = translators['messages-to-responses']
  for (const chunked of [false, true]) {
    const st = tr.stream({ model: 'm/x', stream: true }, fresh())
    let out = ''
    for (const ev of parseSse(RESPONSES_STREAM, chunked)) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    const evs = parseSse(out).map(e => ({ name: e.event, data: JSON.parse(e.data) }))
    const shape = evs.filter(e => e.name?.startsWith('content_block')).map(e => `${e.name} ${e.data.index} ${e.data.content_block?.type ?? e.data.delta?.type ?? ''}`.trim())
    t.same(shape, [
      'content_block_start 0 thinking', 'content_block_delta 0 thinking_delta', 'content_block_delta 0 thinking_delta', 'content_block_delta 0 signature_delta', 'content_block_stop 0',
      'content_block_start 1 tool_use', 'content_block_delta 1 input_json_delta', 'content_block_stop 1',
    ])
    const sig = evs.find(e => e.data.delta?.type === 'signature_delta')!.data.delta.signature
    t.same(decodeReasoning(sig), { encrypted_content: 'gAAAAencrypted', summary: ['Plan.'] })
  }
})

t.test('chat → responses: thinking_blocks out and back', async t => {
  const tr = translators['chat-to-responses']
  const { body } = tr.response({ id: 'resp_1', object: 'response', status: 'completed', output: [RS_ITEM, FC_ITEM], usage: RESPONSES_USAGE }, fresh()) as { body: any }
  const blocks = body.choices[0].message.thinking_blocks
  t.equal(blocks.length, 1)
  const req: any = tr.request({ model: 'm/x', reasoning_effort: 'low', messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a', thinking_blocks: blocks }, { role: 'user', content: 'q2' }] }, fresh())
  t.same(req.input.map((i: { type: string }) => i.type), ['message', 'reasoning', 'message', 'message'])
  t.equal(req.input[1].encrypted_content, 'gAAAAencrypted')
})

t.test('chat → messages: thinking blocks placed as a messages upstream takes them', async t => {
  const tr = translators['chat-to-messages']
  const call = { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }]
  // Text then thinking (two chat messages merged into one turn): the thinking goes first.
  const merged: any = tr.request({ model: 'm/x', reasoning_effort: 'low', tools, messages: [
    { role: 'user', content: 'q' },
    { role: 'assistant', content: 'Checking.' },
    { role: 'assistant', content: null, thinking_blocks: [SIGNED], tool_calls: [call] },
    { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
  ] }, fresh())
  t.same(merged.messages[1].content.map((b: { type: string }) => b.type), ['thinking', 'text', 'tool_use'])
  t.ok(merged.thinking)
  // A turn of thinking alone (cut while thinking) is dropped; the user turns around it join.
  const alone: any = tr.request({ model: 'm/x', messages: [
    { role: 'user', content: 'q' }, { role: 'assistant', content: null, thinking_blocks: [SIGNED] }, { role: 'user', content: 'again' },
  ] }, fresh())
  t.same(alone.messages, [{ role: 'user', content: [{ type: 'text', text: 'q' }, { type: 'text', text: 'again' }] }])
  // A final assistant turn (prefill) keeps no thinking when thinking is off.
  const prefill: any = tr.request({ model: 'm/x', messages: [
    { role: 'user', content: 'q' }, { role: 'assistant', content: 'The answer is', thinking_blocks: [SIGNED] },
  ] }, fresh())
  t.same(prefill.messages[1], { role: 'assistant', content: 'The answer is' })
  t.equal(prefill.thinking, undefined)
})

t.test('messages ← chat: a LiteLLM-style stream (thinking_blocks fragments, then the signature) is one signed thinking block', async t => {
  const tr = translators['messages-to-chat']
  const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ id: 'chatcmpl-1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
  const stream = [
    chunk({ role: 'assistant', reasoning_content: 'User wants ', thinking_blocks: [{ type: 'thinking', thinking: 'User wants ', signature: null }] }),
    chunk({ reasoning_content: 'Oslo.', thinking_blocks: [{ type: 'thinking', thinking: 'Oslo.', signature: '' }] }),
    chunk({ thinking_blocks: [{ type: 'thinking', thinking: '', signature: 'EqQBsig==' }] }),
    chunk({ content: 'Sunny.' }),
    chunk({}, 'stop'),
    'data: [DONE]\n\n',
  ].join('')
  const st = tr.stream({ model: 'm/x', stream: true }, fresh())
  let out = ''
  for (const ev of parseSse(stream)) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  const evs = parseSse(out).map(e => JSON.parse(e.data))
  const blocks = evs.filter(e => e.type?.startsWith('content_block')).map(e => `${e.type} ${e.index} ${e.content_block?.type ?? e.delta?.type ?? ''}`.trim())
  t.same(blocks, [
    'content_block_start 0 thinking', 'content_block_delta 0 thinking_delta', 'content_block_delta 0 thinking_delta', 'content_block_delta 0 signature_delta', 'content_block_stop 0',
    'content_block_start 1 text', 'content_block_delta 1 text_delta', 'content_block_stop 1',
  ])
  t.equal(evs.find(e => e.delta?.type === 'signature_delta').delta.signature, 'EqQBsig==')
})

t.test('responses → messages: a redacted block after unsigned thinking is an item of its own', async t => {
  const tr = translators['responses-to-messages']
  const opts = fresh()
  const body = { model: 'm/x', input: 'q', stream: true, include: ['reasoning.encrypted_content'] }
  tr.request(body, opts)
  const st = tr.stream(body, opts)
  const stream = [
    sse('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
    sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: 'unsigned', signature: '' } }),
    sse('content_block_stop', { index: 0 }),
    sse('content_block_start', { index: 1, content_block: REDACTED }),
    sse('content_block_stop', { index: 1 }),
    sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }),
    sse('message_stop', {}),
  ].join('')
  let out = ''
  for (const ev of parseSse(stream)) out += emitted(w => st.push(ev, w))
  const done = parseSse(out).map(e => JSON.parse(e.data)).filter(e => e.type === 'response.output_item.done').map(e => e.item)
  t.equal(done.length, 2)
  t.equal(done[0].encrypted_content, undefined, 'the unsigned item carries nothing')
  t.same(done[0].content, [{ type: 'reasoning_text', text: 'unsigned' }])
  t.same(decodeThinking(done[1].encrypted_content), REDACTED)
})

t.test('messages ← responses: summary parts streamed are joined by a blank line, as in the answer', async t => {
  const item = { ...RS_ITEM, summary: [{ type: 'summary_text', text: 'One.' }, { type: 'summary_text', text: 'Two.' }] }
  const stream = [
    sse('response.created', { response: { id: 'resp_1', status: 'in_progress', output: [] } }),
    sse('response.output_item.added', { output_index: 0, item: { ...item, summary: [], encrypted_content: null } }),
    sse('response.reasoning_summary_part.added', { output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' } }),
    sse('response.reasoning_summary_text.delta', { output_index: 0, summary_index: 0, delta: 'One.' }),
    sse('response.reasoning_summary_part.added', { output_index: 0, summary_index: 1, part: { type: 'summary_text', text: '' } }),
    sse('response.reasoning_summary_text.delta', { output_index: 0, summary_index: 1, delta: 'Two.' }),
    sse('response.output_item.done', { output_index: 0, item }),
    sse('response.completed', { response: { id: 'resp_1', status: 'completed', output: [item], usage: RESPONSES_USAGE } }),
  ].join('')
  const st = translators['messages-to-responses'].stream({ model: 'm/x', stream: true }, fresh())
  let out = ''
  for (const ev of parseSse(stream)) out += emitted(w => st.push(ev, w))
  const text = parseSse(out).map(e => JSON.parse(e.data)).filter(e => e.delta?.type === 'thinking_delta').map(e => e.delta.thinking).join('')
  const { body } = translators['messages-to-responses'].response({ id: 'resp_1', object: 'response', status: 'completed', output: [item], usage: RESPONSES_USAGE }, fresh()) as { body: any }
  t.equal(text, 'One.\n\nTwo.')
  t.equal(body.content[0].thinking, text)
})
