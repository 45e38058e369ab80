// Translators toward a Responses API upstream (chat-to-responses, messages-to-responses,
// responses-to-responses), straight through without a gateway: requests, answers, and the ends of
// a stream (finish, incomplete, failure, cut).
import t from 'tap'
import { translators } from '../../providers/protocols/index.ts'
import { translateFixture, parseSse, emitted } from '../../testing.ts'
import { SseParser } from '../../core/dispatch/sse.ts'

const { opts: base } = translateFixture(['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'response_format', 'user', 'stop_sequences', 'metadata'])
const fresh = () => ({ ...base })
let seq = 0
const ev = (type: string, data: Record<string, unknown> = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`
const events = (text: string) => { const p = new SseParser(); return [...p.push(text), ...p.end()] }
const chunks = (text: string) => events(text).map(e => e.data === '[DONE]' ? '[DONE]' : JSON.parse(e.data))
const USAGE = { input_tokens: 12, input_tokens_details: { cached_tokens: 2 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 17 }

t.test('chat → responses request', async t => {
  const out = translators['chat-to-responses'].request({
    model: 'm/x', max_tokens: 99999, temperature: 0.2, stop: ['x'], user: 'u1',
    messages: [
      { role: 'system', content: 'A.' }, { role: 'developer', content: 'B.' },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://e.x/a.png', detail: 'low' } }] },
      { role: 'assistant', content: 'ok', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ],
    tools: [{ type: 'function', function: { name: 'f', description: 'F', parameters: { type: 'object' } } }],
    tool_choice: { type: 'function', function: { name: 'f' } },
    response_format: { type: 'json_schema', json_schema: { name: 'o', schema: { type: 'object' }, strict: true } },
  }, fresh())
  t.match(out, {
    model: 'up-x', store: false, instructions: 'A.\n\nB.', max_output_tokens: 4096, temperature: 0.2, user: 'u1',
    input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://e.x/a.png', detail: 'low' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' },
      { type: 'function_call_output', call_id: 'c1', output: 'done' },
    ],
    tools: [{ type: 'function', name: 'f', description: 'F', parameters: { type: 'object' } }],
    tool_choice: { type: 'function', name: 'f' },
    text: { format: { type: 'json_schema', name: 'o', schema: { type: 'object' }, strict: true } },
  })
  t.notOk('stop' in out, 'stop has no Responses form')
  t.throws(() => translators['chat-to-responses'].request({ model: 'm/x', n: 2, messages: [] }, fresh()), { code: 'GW_ERR_BAD_REQUEST' })
})

t.test('responses → chat answers: calls, incomplete, usage', async t => {
  const { body, usage } = translators['chat-to-responses'].response({
    id: 'resp_1', object: 'response', status: 'completed', usage: USAGE,
    output: [{ type: 'reasoning', content: [{ type: 'reasoning_text', text: 'hmm' }] }, { type: 'message', content: [{ type: 'output_text', text: 'Hi' }] }, { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' }],
  }, fresh()) as any
  t.match(body, { object: 'chat.completion', model: 'm/x', choices: [{ message: { content: 'Hi', reasoning_content: 'hmm', tool_calls: [{ id: 'c1', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 12, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 1 } } })
  t.match(usage, { inputTokens: 12, cachedInputTokens: 2, outputTokens: 5, reasoningTokens: 1 })
  const inc = translators['chat-to-responses'].response({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] }, fresh()) as any
  t.equal(inc.body.choices[0].finish_reason, 'length')
  const msg = translators['messages-to-responses'].response({ status: 'completed', usage: USAGE, output: [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' }] }, fresh()) as any
  t.match(msg.body, { type: 'message', content: [{ type: 'tool_use', id: 'c1', name: 'f', input: { a: 1 } }], stop_reason: 'tool_use', usage: { input_tokens: 10, cache_read_input_tokens: 2, output_tokens: 5 } })
})

t.test('responses → chat stream: text, a call, the end with usage; failure and cut', async t => {
  seq = 0
  const good = ev('response.created', { response: { id: 'resp_9' } }) +
    ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: 'm1', content: [] } }) +
    ev('response.output_text.delta', { output_index: 0, delta: 'Hi' }) +
    ev('response.output_item.added', { output_index: 1, item: { type: 'function_call', id: 'fc', call_id: 'c1', name: 'f', arguments: '' } }) +
    ev('response.function_call_arguments.delta', { output_index: 1, delta: '{}' }) +
    ev('response.completed', { response: { id: 'resp_9', status: 'completed', usage: USAGE, output: [] } })
  const st = translators['chat-to-responses'].stream({ stream_options: { include_usage: true } }, fresh())
  let out = ''
  for (const e of parseSse(good, true)) out += emitted(w => st.push(e, w))
  out += emitted(w => st.end(w))
  const c = chunks(out)
  t.match(c, [
    { id: 'chatcmpl-9', choices: [{ delta: { role: 'assistant' } }] },
    { choices: [{ delta: { content: 'Hi' } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'f' } }] } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] } }] },
    { choices: [{ finish_reason: 'tool_calls' }] },
    { choices: [], usage: { prompt_tokens: 12, completion_tokens: 5 } },
    '[DONE]',
  ])
  t.equal(st.finished, true)
  t.equal(st.outputChars, 4)

  const failed = translators['chat-to-responses'].stream({}, fresh())
  const f = emitted(w => failed.push(events(ev('response.failed', { response: { status: 'failed', error: { code: 'server_error', message: 'bad at sk-abcdefghijklmnop' } } }))[0], w))
  t.match(chunks(f).at(-1), { error: { type: 'server_error', code: 502 } })
  t.notMatch(f, /sk-abcdefghijklmnop/, 'sanitized')
  t.equal(failed.finished, false)

  const cut = translators['messages-to-responses'].stream({}, fresh())
  let m = ''
  for (const e of events(ev('response.created', { response: { id: 'r' } }) + ev('response.output_text.delta', { output_index: 0, delta: 'abcd' }))) m += emitted(w => cut.push(e, w))
  m += emitted(w => cut.end(w))
  t.match(m, /event: message_start[\s\S]*text_delta[\s\S]*event: error/, 'a messages client sees its own error event')
  t.equal(cut.outputChars, 4)
  t.equal(cut.finished, false)
})

t.test('responses → responses stream: forwarded; usage from response.completed; a cut continues the numbering', async t => {
  seq = 0
  const upstream = ev('response.created', { response: { id: 'resp_p', status: 'in_progress' } }) + ev('response.output_text.delta', { output_index: 0, delta: 'Hello' })
  const st = translators['responses-to-responses'].stream({}, fresh())
  let out = ''
  for (const e of events(upstream)) out += emitted(w => st.push(e, w))
  t.equal(out, upstream, 'bytes as received')
  out += emitted(w => st.end(w))
  const tail = events(out).slice(2).map(e => JSON.parse(e.data))
  t.match(tail, [{ type: 'response.failed', sequence_number: 2, response: { id: 'resp_p', status: 'failed', error: { code: 'server_error' } } }, { type: 'error', sequence_number: 3 }])
  t.equal(st.outputChars, 5)
  // It shows what the call is billed: no final usage came, so the estimate (5 characters → 2 tokens).
  t.match(tail[0].response.usage, { output_tokens: 2 }, 'the failed response shows the usage billed')
  t.ok(tail[0].response.usage.input_tokens > 0)

  seq = 0
  const done = translators['responses-to-responses'].stream({}, fresh())
  for (const e of events(ev('response.created', { response: {} }) + ev('response.completed', { response: { status: 'completed', usage: USAGE } }))) emitted(w => done.push(e, w))
  t.equal(done.finished, true)
  t.match(done.usage, { inputTokens: 12, cachedInputTokens: 2, outputTokens: 5 })
  t.equal(emitted(w => done.end(w)), '')
  const req = translators['responses-to-responses'].request({ model: 'm/x', input: 'hi', store: true }, fresh())
  t.same(req, { model: 'up-x', input: 'hi', store: false, max_output_tokens: fresh().model.maxOutputTokens }, 'the output cap the call reserved for (the model\'s) is added')
})

t.test('a cut Responses stream is billed every piece of output once, however the upstream carried it', async t => {
  const long = 'x'.repeat(400)
  // [events after response.created, output characters the stream carried]
  const cases: [string, string, number][] = [
    ['deltas only', ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: 'Hello' }) + ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: ' you' }), 9],
    ['text whole in output_item.added, no delta', ev('response.output_item.added', { output_index: 0, item: { type: 'message', content: [{ type: 'output_text', text: long }] } }), 400],
    ['text whole in content_part.added, no delta', ev('response.content_part.added', { output_index: 0, content_index: 0, part: { type: 'output_text', text: long } }), 400],
    ['deltas, then the same text in the done events (counted once)',
      ev('response.output_item.added', { output_index: 0, item: { type: 'message', content: [] } }) +
      ev('response.content_part.added', { output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } }) +
      ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: 'abc' }) + ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: 'def' }) +
      ev('response.output_text.done', { output_index: 0, content_index: 0, text: 'abcdef' }) +
      ev('response.content_part.done', { output_index: 0, content_index: 0, part: { type: 'output_text', text: 'abcdef' } }) +
      ev('response.output_item.done', { output_index: 0, item: { type: 'message', content: [{ type: 'output_text', text: 'abcdef' }] } }), 6],
    ['a call\'s arguments whole in output_item.added, then deltas of its end',
      ev('response.output_item.added', { output_index: 1, item: { type: 'function_call', call_id: 'c', name: 'f', arguments: '{"a":' } }) +
      ev('response.function_call_arguments.delta', { output_index: 1, delta: '{"a":' }) + ev('response.function_call_arguments.delta', { output_index: 1, delta: '1}' }), 7],
    ['a custom tool\'s input and a reasoning summary, whole',
      ev('response.output_item.added', { output_index: 0, item: { type: 'reasoning', summary: [{ type: 'summary_text', text: 'think' }] } }) +
      ev('response.reasoning_summary_text.delta', { output_index: 0, summary_index: 0, delta: 'thi' }) +
      ev('response.output_item.done', { output_index: 1, item: { type: 'custom_tool_call', call_id: 'c', name: 'apply_patch', input: '*** Begin Patch' } }), 20],
    ['two parts of one message are two pieces',
      ev('response.content_part.added', { output_index: 0, content_index: 0, part: { type: 'output_text', text: 'one' } }) +
      ev('response.content_part.added', { output_index: 0, content_index: 1, part: { type: 'refusal', refusal: 'no way' } }), 9],
    ['no output index: not counted (not a piece of output)', ev('response.output_text.delta', { delta: 'stray' }), 0],
  ]
  for (const [what, body, chars] of cases) {
    for (const kind of ['responses-to-responses', 'chat-to-responses', 'messages-to-responses'] as const) {
      seq = 0
      const st = translators[kind].stream({}, fresh())
      let out = ''
      for (const e of events(ev('response.created', { response: { id: 'r' } }) + body)) out += emitted(w => st.push(e, w))
      t.equal(st.outputChars, chars, `${kind}: ${what}`)
      out += emitted(w => st.end(w))
      t.equal(st.finished, false, `${kind}: cut`)
      if (kind === 'responses-to-responses') {
        // The failed response shows the usage the cut call is billed: output at 4 characters per token.
        const failed = events(out).map(e => JSON.parse(e.data)).find(d => d.type === 'response.failed')
        t.equal(failed.response.usage.output_tokens, Math.ceil(chars / 4), `${what}: billed output`)
      }
    }
  }
})
