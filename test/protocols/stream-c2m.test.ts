// Golden tests: chat client, messages-protocol upstream – the stream, chunk by chunk.
import t, { type Test } from 'tap'
import type { StreamTranslator } from '../../core/dispatch/provider.ts'
import { chatToMessages } from '../../providers/protocols/chat-to-messages.ts'
import { translateFixture, parseSse as parse, STOP_REASON_TO_FINISH, emitted } from '../../testing.ts'

const { opts } = translateFixture()

function run (upstream: string, clientBody: Record<string, unknown> = { stream: true }, chunked = false): { out: string, st: StreamTranslator } {
  const st = chatToMessages.stream(clientBody, opts)
  let out = ''
  for (const ev of parse(upstream, chunked)) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  return { out, st }
}

interface Out { chunks: any[], done: boolean, errors: any[] }
/** Parses chat output: `data:` frames only, no `event:` lines, [DONE] last if present. */
function chunks (t: Test, out: string): Out {
  const frames = out.split('\n\n').filter(f => f !== '')
  for (const f of frames) t.match(f, /^data: (\{.*\}|\[DONE\])$/s, 'each frame is one `data:` line')
  t.ok(out === '' || out.endsWith('\n\n'), 'ends with a blank line')
  const evs = parse(out)
  const res: Out = { chunks: [], done: false, errors: [] }
  for (const [i, ev] of evs.entries()) {
    t.equal(ev.event, undefined, 'no event: lines in chat framing')
    if (ev.data === '[DONE]') {
      t.equal(i, evs.length - 1, '[DONE] is last')
      res.done = true
      continue
    }
    const c = JSON.parse(ev.data)
    if (c.error) res.errors.push(c)
    else res.chunks.push(c)
  }
  return res
}

/** Compact view: role / text / tool start / tool args / finish / usage. */
function shape (cs: any[]): string[] {
  return cs.map(c => {
    if (c.choices.length === 0) return `usage ${c.usage.prompt_tokens}/${c.usage.completion_tokens}`
    if (c.choices.length !== 1) throw new Error('exactly one choice expected')
    const ch = c.choices[0]
    const d = ch.delta
    if (ch.finish_reason !== null) return `finish ${ch.finish_reason}`
    if (d.role) return `role ${d.role}`
    if (d.tool_calls) {
      const x = d.tool_calls[0]
      if (d.tool_calls.length !== 1) throw new Error('one tool call per chunk expected')
      return x.id ? `tool ${x.index} ${x.id} ${x.function.name}` : `args ${x.index} ${x.function.arguments}`
    }
    if (typeof d.content === 'string') return `text ${d.content}`
    if (typeof d.reasoning_content === 'string') return `reasoning ${d.reasoning_content}`
    if (Array.isArray(d.thinking_blocks)) return d.thinking_blocks.map((b: { type: string, signature?: string, data?: string }) => `thinking_block ${b.type} ${b.signature ?? b.data}`).join(' ')
    return 'other ' + JSON.stringify(d)
  })
}

const ev = (name: string, data: Record<string, unknown>): string => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
const start = (usage: Record<string, unknown> = { input_tokens: 10, output_tokens: 1 }): string =>
  ev('message_start', { message: { id: 'msg_01abc', type: 'message', role: 'assistant', model: 'up-x', content: [], stop_reason: null, stop_sequence: null, usage } })
const textStart = (i: number, text = ''): string => ev('content_block_start', { index: i, content_block: { type: 'text', text } })
const textDelta = (i: number, text: string): string => ev('content_block_delta', { index: i, delta: { type: 'text_delta', text } })
const toolStart = (i: number, id: string, name: string): string => ev('content_block_start', { index: i, content_block: { type: 'tool_use', id, name, input: {} } })
const jsonDelta = (i: number, partial: string): string => ev('content_block_delta', { index: i, delta: { type: 'input_json_delta', partial_json: partial } })
const stop = (i: number): string => ev('content_block_stop', { index: i })
const msgDelta = (reason: string | null, usage: Record<string, unknown> = { output_tokens: 7 }): string => ev('message_delta', { delta: { stop_reason: reason, stop_sequence: null }, usage })
const STOP = ev('message_stop', {})
const PING = ev('ping', {})

const TEXT_STREAM = start({ input_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 3, output_tokens: 1 }) + PING +
  textStart(0) + textDelta(0, 'Hel') + textDelta(0, 'lo') + stop(0) + msgDelta('end_turn', { output_tokens: 7 }) + STOP

t.test('1+6. plain text, include_usage off: no usage chunk, no usage key, ends with [DONE]', async t => {
  const { out, st } = run(TEXT_STREAM, { stream: true })
  const o = chunks(t, out)
  t.equal(o.done, true)
  t.same(shape(o.chunks), ['role assistant', 'text Hel', 'text lo', 'finish stop'])
  t.same(o.chunks[0].choices[0].delta, { role: 'assistant', content: '' })
  t.same(o.chunks[3].choices[0].delta, {})
  for (const c of o.chunks) {
    t.match(c, { id: 'chatcmpl-01abc', object: 'chat.completion.chunk', model: 'm/x' })
    t.equal(c.created, o.chunks[0].created, 'same created on every chunk')
    t.notOk('usage' in c, 'no usage key when not asked')
    t.ok(c.choices.length === 1, 'never a chunk without choices[0]')
  }
  t.same(st.usage, { inputTokens: 18, cachedInputTokens: 5, cacheWriteTokens: 3, outputTokens: 7 })
  t.equal(st.finished, true)
})

t.test('1+6. plain text, include_usage on: usage chunk with choices: [] and prompt_tokens = input + cache read + cache write', async t => {
  const { out, st } = run(TEXT_STREAM, { stream: true, stream_options: { include_usage: true } })
  const o = chunks(t, out)
  t.equal(o.done, true)
  t.same(shape(o.chunks), ['role assistant', 'text Hel', 'text lo', 'finish stop', 'usage 18/7'])
  const u = o.chunks[4]
  t.same(u.choices, [], 'the usage chunk keeps choices: []')
  t.same(u.usage, { prompt_tokens: 18, completion_tokens: 7, total_tokens: 25, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 3 } })
  t.equal(u.id, o.chunks[0].id)
  for (const c of o.chunks.slice(0, 4)) t.equal(c.usage, null, 'other chunks carry usage: null')
  t.equal(st.finished, true)
  t.same(st.usage, { inputTokens: 18, cachedInputTokens: 5, cacheWriteTokens: 3, outputTokens: 7 })
})

t.test('6b. message_delta overwrites cumulative input/cache counts, never adds them', async t => {
  const { out, st } = run(start({ input_tokens: 10, output_tokens: 1 }) + textStart(0, 'Hi') + stop(0) +
    msgDelta('end_turn', { input_tokens: 12, cache_read_input_tokens: 100, output_tokens: 4, output_tokens_details: { thinking_tokens: 2 } }) + STOP,
  { stream: true, stream_options: { include_usage: true } })
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'text Hi', 'finish stop', 'usage 112/4'])
  t.same(o.chunks[3].usage, { prompt_tokens: 112, completion_tokens: 4, total_tokens: 116, prompt_tokens_details: { cached_tokens: 100 } })
  t.same(st.usage, { inputTokens: 112, cachedInputTokens: 100, cacheWriteTokens: 0, outputTokens: 4 })
})

t.test('2. text then a tool call; tool indexes count tool calls from 0, not block indexes', async t => {
  const { out } = run(start() + textStart(0) + textDelta(0, 'Checking.') + stop(0) +
    toolStart(1, 'toolu_1', 'get_weather') + jsonDelta(1, '') + jsonDelta(1, '{"city":') + jsonDelta(1, '"Paris"}') + stop(1) +
    msgDelta('tool_use') + STOP)
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'text Checking.', 'tool 0 toolu_1 get_weather', 'args 0 {"city":', 'args 0 "Paris"}', 'finish tool_calls'])
  t.same(o.chunks[2].choices[0].delta.tool_calls, [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '' } }])
  t.same(o.chunks[3].choices[0].delta.tool_calls, [{ index: 0, function: { arguments: '{"city":' } }])
})

t.test('3. two tool calls (blocks 1 and 2) become tool indexes 0 and 1; args concatenate to valid JSON', async t => {
  const { out } = run(start() + textStart(0) + textDelta(0, 'x') + stop(0) +
    toolStart(1, 'toolu_a', 'f') + jsonDelta(1, '{"a":') + jsonDelta(1, '1}') + stop(1) +
    toolStart(2, 'toolu_b', 'g') + jsonDelta(2, '{"b":') + jsonDelta(2, '2}') + stop(2) +
    msgDelta('tool_use') + STOP)
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'text x', 'tool 0 toolu_a f', 'args 0 {"a":', 'args 0 1}', 'tool 1 toolu_b g', 'args 1 {"b":', 'args 1 2}', 'finish tool_calls'])
  const args = ['', '']
  for (const c of o.chunks) for (const tc of c.choices[0]?.delta?.tool_calls ?? []) args[tc.index] += tc.function.arguments
  t.same(args.map(a => JSON.parse(a)), [{ a: 1 }, { b: 2 }])
})

t.test('4. a tool call with no input deltas: only the start chunk with arguments ""', async t => {
  const { out } = run(start() + toolStart(0, 'toolu_n', 'now') + stop(0) + msgDelta('tool_use') + STOP)
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'tool 0 toolu_n now', 'finish tool_calls'])
})

t.test('thinking text goes out as reasoning_content, never into content; signed and redacted thinking whole in thinking_blocks; citations dropped', async t => {
  const { out } = run(start() +
    ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }) +
    ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'secret' } }) +
    ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig' } }) + stop(0) +
    ev('content_block_start', { index: 1, content_block: { type: 'redacted_thinking', data: 'xx' } }) + stop(1) +
    textStart(2, 'An') + textDelta(2, 'swer') + ev('content_block_delta', { index: 2, delta: { type: 'citations_delta', citation: {} } }) + stop(2) +
    msgDelta('end_turn') + STOP)
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'reasoning secret', 'thinking_block thinking sig', 'thinking_block redacted_thinking xx', 'text An', 'text swer', 'finish stop'])
  t.notMatch(out, /"content":"[^"]*(secret|sig|xx)/)
})

t.test('10. every stop_reason maps to a chat finish_reason (never a messages value)', async t => {
  // The mapping table is the test kit's golden data (the conformance suite runs it against adapters).
  for (const [reason, finish] of STOP_REASON_TO_FINISH) {
    const { out, st } = run(start() + textStart(0) + textDelta(0, 'a') + stop(0) + msgDelta(reason) + STOP)
    const o = chunks(t, out)
    t.equal(o.chunks[o.chunks.length - 1].choices[0].finish_reason, finish, `${reason} → ${finish}`)
    t.equal(st.finished, true)
  }
})

t.test('upstream error event → chat error object, no [DONE]', async t => {
  const { out, st } = run(start() + textStart(0) + textDelta(0, 'par') +
    ev('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }) + textDelta(0, 'more'))
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'text par'])
  t.same(o.errors, [{ error: { message: 'Overloaded', type: 'overloaded_error', param: null, code: null } }])
  t.equal(o.done, false)
  t.equal(st.finished, false)
})

t.test('end without message_stop gives an error, not a fake stop', async t => {
  for (const [name, upstream] of [
    ['EOF mid-text', start() + textStart(0) + textDelta(0, 'par')],
    ['EOF after message_delta', start() + textStart(0) + textDelta(0, 'a') + stop(0) + msgDelta('end_turn')],
    ['empty stream', ''],
  ]) {
    const { out, st } = run(upstream)
    const o = chunks(t, out)
    t.equal(o.done, false, name)
    t.notOk(o.chunks.some(c => c.choices[0]?.finish_reason), `${name}: no finish chunk`)
    t.equal(o.errors.length, 1, name)
    t.match(o.errors[0], { error: { message: String, type: 'server_error', param: null, code: 502 } }, name)
    t.equal(o.chunks[0]?.choices[0].delta.role, 'assistant', `${name}: the role chunk comes first`)
    t.equal(st.finished, false, name)
  }
})

t.test('fail(): `data: {"error":{...}}` shape', async t => {
  for (const [status, type] of [[502, 'server_error'], [500, 'server_error'], [408, 'timeout_error']] as Array<[number, string]>) {
    const st = chatToMessages.stream({}, opts)
    let out = ''
    for (const e of parse(start() + textStart(0) + textDelta(0, 'a'))) out += emitted(w => st.push(e, w))
    out += emitted(w => st.fail(w, 'boom', status))
    const o = chunks(t, out)
    t.same(o.errors, [{ error: { message: 'boom', type, param: null, code: status } }], `status ${status}`)
    t.equal(emitted(w => st.end(w)), '', 'nothing after fail')
    t.equal(emitted(w => st.fail(w, 'again')), '', 'nothing after fail')
  }
})

t.test('nothing is sent after [DONE]', async t => {
  const st = chatToMessages.stream({}, opts)
  let out = ''
  for (const e of parse(TEXT_STREAM + textDelta(0, 'late') + STOP)) out += emitted(w => st.push(e, w))
  out += emitted(w => st.end(w))
  out += emitted(w => st.fail(w, 'late'))
  const o = chunks(t, out)
  t.same(shape(o.chunks), ['role assistant', 'text Hel', 'text lo', 'finish stop'])
  t.equal(out.split('[DONE]').length, 2, 'one [DONE]')
})

t.test('12. comments, `data:` without a space, CRLF, unknown events and events named only by data.type', async t => {
  const crlf = (s: string): string => s.replace(/\n/g, '\r\n')
  const upstream =
    ': hello\n\n' +
    crlf(start()) +
    'event: brand_new_event\ndata: {"type":"brand_new_event","x":1}\n\n' +
    textStart(0).replace('data: ', 'data:') +
    ': keepalive\n' +
    crlf(textDelta(0, 'A')) +
    `data: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'B' } })}\n\n` +
    stop(0) + crlf(msgDelta('max_tokens')) + 'event: message_stop\r\ndata:{"type":"message_stop"}\r\n\r\n'
  for (const chunked of [false, true]) {
    const { out, st } = run(upstream, {}, chunked)
    const o = chunks(t, out)
    t.same(shape(o.chunks), ['role assistant', 'text A', 'text B', 'finish length'], chunked ? 'byte by byte' : 'at once')
    t.equal(o.done, true)
    t.equal(st.finished, true)
  }
})

t.test('text and thinking a block starts with are relayed output: a stream cut before its usage is billed for them', async t => {
  const thinkingStart = ev('content_block_start', { index: 1, content_block: { type: 'thinking', thinking: 'Hmm.' } })
  const { out, st } = run(start() + textStart(0, 'Hi!') + textDelta(0, 'ok') + stop(0) + thinkingStart)
  t.same(shape(chunks(t, out).chunks), ['role assistant', 'text Hi!', 'text ok', 'reasoning Hmm.'])
  t.equal(st.usage, undefined, 'no final usage: billed the estimate')
  t.equal(st.outputChars, 'Hi!'.length + 'ok'.length + 'Hmm.'.length, 'every character relayed counts')
})
