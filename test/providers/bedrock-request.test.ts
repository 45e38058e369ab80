/**
 * @module test/providers/bedrock-request – the messages → Converse request rules on their own:
 * system turns inside `messages`, consecutive turns of one role joined, documents, tool choice by
 * name, cache points on tools, `top_k` and `thinking` as the model's own fields, and what is
 * refused with 400 (images by URL, server tools, unknown blocks). The defensive usage reading.
 */
import t from 'tap'
import { converseRequest } from '../../providers/bedrock/converse-request.ts'
import { messagesUsage, stopReason } from '../../providers/bedrock/converse-answer.ts'
import { isGatewayError } from '../../index.ts'

t.test('system turns, consecutive roles, documents, tool choice, cache points and model fields', async t => {
  const out = converseRequest({
    model: 'x', max_tokens: 10, top_k: 5, top_p: 0.9, thinking: { type: 'enabled', budget_tokens: 2000 },
    system: 'Top',
    tools: [{ name: 'a', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }],
    tool_choice: { type: 'tool', name: 'a' },
    messages: [
      { role: 'user', content: 'one' },
      { role: 'user', content: [{ type: 'document', title: 'Spec v1.pdf', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] },
      { role: 'system', content: 'Later' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: '', signature: 'only-sig' }, { type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
    ],
  })
  t.same(out.system, [{ text: 'Top' }, { text: 'Later' }], 'a system turn moves to the end of system')
  t.same(out.messages, [
    { role: 'user', content: [{ text: 'one' }, { document: { format: 'pdf', name: 'Spec v1 pdf', source: { bytes: 'JVBERi0=' } } }] },
    { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: '', signature: 'only-sig' } } }, { text: 'hi' }, { cachePoint: { type: 'default' } }] },
  ], 'consecutive user turns joined; a signature-only thinking block kept')
  t.same(out.toolConfig, { tools: [{ toolSpec: { name: 'a', inputSchema: { json: { type: 'object' } } } }, { cachePoint: { type: 'default' } }], toolChoice: { tool: { name: 'a' } } })
  t.same(out.inferenceConfig, { maxTokens: 10, topP: 0.9 })
  t.same(out.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2000 }, top_k: 5 })
})

t.test('refused with 400: an image by URL, a server tool, an unknown block', async t => {
  const refused = (body: Record<string, unknown>) => {
    try { converseRequest(body); return undefined } catch (err) { return isGatewayError(err) ? err.statusCode : -1 }
  }
  t.equal(refused({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] }), 400)
  t.equal(refused({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), 400)
  t.equal(refused({ messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] }] }), 400)
  t.equal(refused({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'Qk0=' } }] }] }), 400)
})

t.test('usage: Converse input excludes the cache counts; a family that includes them is not counted twice', async t => {
  t.same(messagesUsage({ inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 100, cacheWriteInputTokens: 20, totalTokens: 135 }),
    { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 5 })
  t.same(messagesUsage({ inputTokens: 130, outputTokens: 5, cacheReadInputTokens: 100, cacheWriteInputTokens: 20, totalTokens: 135 }),
    { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 5 }, 'input reported including the cache')
  t.same(messagesUsage({ inputTokens: -3, outputTokens: 'x' }), { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 }, 'nonsense reads as 0')
  t.same(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'model_context_window_exceeded', 'guardrail_intervened', 'content_filtered', 'malformed_model_output'].map(stopReason),
    ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'model_context_window_exceeded', 'refusal', 'refusal', 'end_turn'])
})

t.test('tool_choice none: the tools are left out, unless the conversation holds tool calls', async t => {
  const tools = [{ name: 'a', input_schema: { type: 'object' } }]
  t.equal(converseRequest({ tools, tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'x' }] }).toolConfig, undefined)
  const withCall = converseRequest({
    tools, tool_choice: { type: 'none' },
    messages: [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'a', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'r' }] },
    ],
  })
  t.same(withCall.toolConfig, { tools: [{ toolSpec: { name: 'a', inputSchema: { json: { type: 'object' } } } }] })
})

t.test('cache ttl, output_config, and tool calls in a conversation that names no tools', async t => {
  const out = converseRequest({
    max_tokens: 10,
    output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } }, effort: 'low' },
    system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '5m' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'look', input: {} }, { type: 'tool_use', id: 't2', name: 'edit', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a' }, { type: 'tool_result', tool_use_id: 't2', content: 'b' }] },
    ],
  })
  t.same(out.system, [{ text: 'S' }, { cachePoint: { type: 'default', ttl: '1h' } }], 'a 1h ttl passes')
  t.same((out.messages as Array<{ content: unknown[] }>)[0].content, [{ text: 'x' }, { cachePoint: { type: 'default', ttl: '5m' } }])
  t.same(out.outputConfig, { effort: 'low', textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: '{"type":"object","properties":{"a":{"type":"string"}}}' } } } })
  t.same(out.toolConfig, { tools: [{ toolSpec: { name: 'look', inputSchema: { json: { type: 'object' } } } }, { toolSpec: { name: 'edit', inputSchema: { json: { type: 'object' } } } }] }, 'one spec per tool called, as Converse needs a tool config')
  t.equal(converseRequest({ messages: [{ role: 'user', content: 'x' }] }).toolConfig, undefined, 'no tool calls, no tools: no tool config')
  t.throws(() => converseRequest({ output_config: { format: { type: 'text' } }, messages: [{ role: 'user', content: 'x' }] }), 'another output format: 400')
})
