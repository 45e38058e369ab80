/**
 * Same-protocol streams relay content events without parsing them; what a cut stream is billed
 * for (the characters relayed) must still be exact, and finish, usage and error events must
 * still be seen whatever their spacing.
 */
import t from 'tap'
import { SseParser } from '../../core/dispatch/sse.ts'
import { SseWriter } from '../../core/dispatch/sse-writer.ts'
import { translators } from '../../providers/index.ts'
import { emitted } from '../../testing.ts'
import { DeferredCount, plainChatChunk, chatChunkChars } from '../../providers/protocols/common.ts'
import type { ModelEntry } from '../../core/types/model.ts'

const model = { id: 'm', supportedParameters: new Set<string>(), public: { default_parameters: {} } } as unknown as ModelEntry
const opts = { model, clientModel: 'm', upstreamModel: 'up', estimatedInputTokens: 5 }
function run (key: 'chat-to-chat' | 'messages-to-messages', text: string, body: Record<string, unknown> = {}) {
  const st = translators[key].stream(body, opts)
  const p = new SseParser()
  let out = ''
  for (const e of [...p.push(text), ...p.end()]) out += emitted(w => st.push(e, w))
  return { st, out }
}

t.test('plainChatChunk: only content chunks skip the parse', async t => {
  t.equal(plainChatChunk('{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}'), true)
  t.equal(plainChatChunk('{"choices":[{"delta":{"content":"say \\"usage\\" and \\"error\\", \\"finish_reason\\":\\"stop\\""},"finish_reason" :\n null}]}'), true, 'quoted words inside content are escaped')
  t.equal(plainChatChunk('{"choices":[{"delta":{},"finish_reason":"stop"}]}'), false)
  t.equal(plainChatChunk('{"choices":[{"delta":{},"finish_reason" : "length"}]}'), false, 'spacing')
  t.equal(plainChatChunk('{"choices":[{"finish_reason":null},{"finish_reason":"stop"}]}'), false, 'any choice finishing')
  t.equal(plainChatChunk('{"choices":[],"usage":{"prompt_tokens":1}}'), false)
  t.equal(plainChatChunk('{"usage" : null,"choices":[]}'), false)
  t.equal(plainChatChunk('{"error":{"message":"x"}}'), false)
  t.equal(plainChatChunk('{"choices":[{"delta":{"content":"check the usage"},"finish_reason":null}]}'), false, 'a value ending in a watched name: parsed, to be safe')
  t.equal(plainChatChunk('{"choices":[{"delta":{},"x_finish_reason":null,"finish_reason":null}]}'), true, 'a longer name ending in finish_reason, null: plain')
  t.equal(plainChatChunk('{"choices":[{"delta":{"content":"usage"}}]}'), false, 'a value spelled "usage" takes the slow way')
})

t.test('DeferredCount counts exactly, holding a bounded amount', async t => {
  let calls = 0
  const c = new DeferredCount(d => { calls++; return chatChunkChars(d) }, 100)
  const chunk = (s: string) => JSON.stringify({ choices: [{ delta: { content: s } }] })
  for (let i = 0; i < 10; i++) c.add(chunk('ab\n\u00e9\u{1F600}'))
  t.ok(calls > 0 && calls < 10, 'folded part of the way, past the bound')
  t.equal(c.value, 10 * 'ab\n\u00e9\u{1F600}'.length)
  t.equal(calls, 10, 'each event counted once')
  t.equal(c.value, 60, 'asking again counts nothing twice')
})

t.test('a cut chat stream is billed for exactly the characters relayed', async t => {
  const ev = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`
  const text = ev({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] }) +
    ev({ choices: [{ index: 0, delta: { content: 'h\u00e9llo "q" \\ \u{1F600}' }, finish_reason: null }] }) +
    ev({ choices: [{ index: 0, delta: { reasoning_content: 'think' }, finish_reason: null }] }) +
    ev({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, finish_reason: null }] }) +
    'data: {not json}\n\n'
  const { st, out } = run('chat-to-chat', text)
  t.equal(st.outputChars, 'h\u00e9llo "q" \\ \u{1F600}'.length + 5 + 7)
  t.equal(st.finished, false)
  t.equal(st.usage, undefined)
  t.equal(out, text, 'every event relayed as received, the unparsable one too')
  t.match(emitted(w => st.end(w)), /ended the stream early/)
})

t.test('chat finish, usage and errors are still read', async t => {
  const text = 'data: {"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}\n\n' +
    'data: {"choices":[{"index":0,"delta":{},"finish_reason" : "stop"}]}\n\n' +
    'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n' +
    'data: [DONE]\n\n'
  const { st, out } = run('chat-to-chat', text)
  t.equal(st.finished, true)
  t.match(st.usage, { inputTokens: 3, outputTokens: 2 })
  t.equal(st.outputChars, 2)
  t.notMatch(out, '"usage"', 'usage chunk hidden from a client that did not ask')
  const asked = run('chat-to-chat', text, { stream_options: { include_usage: true } })
  t.match(asked.out, '"usage"')
  const err = run('chat-to-chat', 'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"error":{"message":"boom at 10.0.0.1","type":"server_error"}}\n\n')
  t.match(err.out, /"error":\{"message":"boom/)
  t.equal(err.st.outputChars, 1)
})

t.test('a last chat event that is not JSON and lacks its blank line gets it: the stream\'s end stays an event of its own', async t => {
  // An upstream that closes cleanly in the middle of an event: its part is relayed as it came, and
  // [DONE] (or the error chunk) after it must not join its data line.
  const finish = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
  for (const [name, text] of [['finished', finish + 'data: {"choices":[],"usage":{"prompt_tokens":1'], ['not finished', 'data: {"usage":{"prompt_tokens":1']] as const) {
    const { st, out } = run('chat-to-chat', text)
    const all = out + emitted(w => st.end(w))
    const events = new SseParser().push(all)
    t.match(events.at(-1)?.data, /^\[DONE\]$|^\{"error":/, `${name}: the end is its own event`)
    t.ok(out.endsWith('\n\n'), `${name}: the part relayed ends with its blank line`)
  }
})

t.test('a cut messages stream is billed for exactly the characters relayed', async t => {
  const ev = (name: string, o: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...o })}\n\n`
  const text = ev('message_start', { message: { usage: { input_tokens: 7, output_tokens: 1 } } }) +
    ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'h\u00e9\u{1F600}"' } }) +
    ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"x":' } }) +
    ev('content_block_delta', { index: 2, delta: { type: 'thinking_delta', thinking: 'hmm' } }) +
    ev('content_block_delta', { index: 2, delta: { type: 'signature_delta', signature: 'sig' } })
  const { st, out } = run('messages-to-messages', text)
  t.equal(out, text)
  t.equal(st.outputChars, 'h\u00e9\u{1F600}"'.length + 5 + 3)
  t.match(st.startUsage, { inputTokens: 7 })
  t.equal(st.usage, undefined)
  const done = run('messages-to-messages', text + ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }) + ev('message_stop', {}))
  t.match(done.st.usage, { inputTokens: 7, outputTokens: 9 })
  t.equal(done.st.finished, true)
})

t.test('text and thinking a messages block starts with are relayed output, counted as deltas are', async t => {
  const ev = (name: string, o: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...o })}\n\n`
  const text = ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: 'hmm', signature: '' } }) +
    ev('content_block_start', { index: 1, content_block: { type: 'text', text: 'H\u00e9llo' } }) +
    ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: '!' } }) +
    ev('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 't', name: 'f', input: {} } })
  const { st, out } = run('messages-to-messages', text)
  t.equal(out, text, 'relayed as they came')
  t.equal(st.outputChars, 3 + 5 + 1)
})

t.test('a whole chat chunk (content, a usage chunk not asked for, [DONE]) goes out as the upstream\'s bytes', async t => {
  const content = 'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
  const finish = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
  const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'
  const relay = (done: string) => {
    const st = translators['chat-to-chat'].stream({ stream: true }, opts)
    const p = new SseParser()
    const chunk = Buffer.from(content + finish + usage + done)
    const events = p.push(chunk)
    return { st, out: new SseWriter().chunk(chunk, events, st, p.whole) }
  }
  const { st, out } = relay('data: [DONE]\n\n')
  t.ok(Buffer.isBuffer(out), 'byte ranges of the chunk, no text')
  t.equal(out.toString(), content + finish + 'data: [DONE]\n\n', 'the usage chunk dropped')
  t.ok(st.finished)
  t.same(st.usage, { inputTokens: 3, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 1 })
  const spaced = relay('data:[DONE]\n\n')
  t.equal(spaced.out, content + finish + 'data: [DONE]\n\n', 'a terminator spelled otherwise is written in its own form')
})
