// Golden tests: messages client, chat-completions upstream – the stream, event by event.
import t, { type Test } from 'tap'
import type { StreamTranslator } from '../../core/dispatch/provider.ts'
import { messagesToChat } from '../../providers/protocols/messages-to-chat.ts'
import { billedStreamUsage } from '../../core/call/stream-out.ts'
import { translateFixture, parseSse as parse, FINISH_TO_STOP_REASON, emitted } from '../../testing.ts'

const { opts } = translateFixture()

/** Feeds upstream SSE text through a fresh stream translator; returns the output and the translator. */
function run (upstream: string, clientBody: Record<string, unknown> = { stream: true }): { out: string, st: StreamTranslator } {
  const st = messagesToChat.stream(clientBody, opts)
  let out = ''
  for (const ev of parse(upstream)) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  return { out, st }
}

interface Ev { event: string, data: any }
/** Parses messages-protocol output; asserts the framing (event line first, name = data.type). */
function events (t: Test, out: string): Ev[] {
  for (const frame of out.split('\n\n').filter(f => f !== '')) {
    t.match(frame, /^event: [a-z_]+\ndata: \{.*\}$/s, 'each frame is `event:` then `data:`')
  }
  t.ok(out === '' || out.endsWith('\n\n'), 'output ends with a blank line')
  return parse(out).map(ev => {
    t.ok(ev.event, 'every messages event has an event: line')
    const data = JSON.parse(ev.data)
    t.equal(data.type, ev.event, 'event name equals data.type')
    return { event: ev.event!, data }
  })
}

/** A compact picture of the event sequence. */
function shape (evs: Ev[]): string[] {
  return evs.map(({ event, data }) => {
    switch (event) {
      case 'content_block_start': return `start ${data.index} ${data.content_block.type}${data.content_block.type === 'tool_use' ? ' ' + data.content_block.id + ' ' + data.content_block.name : ''}`
      case 'content_block_delta': return `delta ${data.index} ${data.delta.type} ${data.delta.text ?? data.delta.partial_json ?? data.delta.thinking}`
      case 'content_block_stop': return `stop ${data.index}`
      case 'message_delta': return `message_delta ${data.delta.stop_reason}`
      case 'error': return `error ${data.error.type}`
      default: return event
    }
  })
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-abc', object: 'chat.completion.chunk', created: 1, model: 'up-x', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`
const usageChunk = (u: Record<string, unknown>): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-abc', object: 'chat.completion.chunk', created: 1, model: 'up-x', choices: [], usage: u })}\n\n`
const DONE = 'data: [DONE]\n\n'
const tc = (index: number, fn: Record<string, unknown>, id?: string): Record<string, unknown> =>
  ({ tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }] })

t.test('1. plain text: message_start … message_delta, message_stop; usage split into input, cache read and output', async t => {
  const { out, st } = run(
    chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Hel' }) + chunk({ content: 'lo' }) + chunk({}, 'stop') +
    usageChunk({ prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 30, cache_write_tokens: 10 } }) + DONE)
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 text', 'delta 0 text_delta Hel', 'delta 0 text_delta lo', 'stop 0', 'message_delta end_turn', 'message_stop'])
  const ms = evs[0].data.message
  t.match(ms, { id: 'msg_abc', type: 'message', role: 'assistant', model: 'm/x', content: [], stop_reason: null, stop_sequence: null })
  t.same(ms.usage, { input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 }, 'message_start uses the estimate, never 0')
  t.same(evs[1].data.content_block, { type: 'text', text: '' })
  const md = evs[5].data
  t.same(md.delta, { stop_reason: 'end_turn', stop_sequence: null })
  t.same(md.usage, { input_tokens: 60, cache_creation_input_tokens: 10, cache_read_input_tokens: 30, output_tokens: 20 }, 'input_tokens excludes cache reads and writes')
  t.same(st.usage, { inputTokens: 100, cachedInputTokens: 30, cacheWriteTokens: 10, outputTokens: 20 })
  t.equal(st.finished, true)
  t.equal(evs.filter(e => e.event === 'message_start').length, 1, 'exactly one message_start')
})

t.test('1b. EOF after a finish without [DONE] still closes properly; no usage → the estimate billed', async t => {
  const { out, st } = run(chunk({ content: 'Hi' }) + chunk({}, 'stop'))
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 text', 'delta 0 text_delta Hi', 'stop 0', 'message_delta end_turn', 'message_stop'])
  // The input estimate and the 2 characters relayed (1 token): what billedStreamUsage bills.
  t.same(evs[4].data.usage, { input_tokens: 42, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 })
  t.same(billedStreamUsage(st, 42).usage, { inputTokens: 42, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 1 })
  t.equal(st.usage, undefined)
  t.equal(st.finished, true)
})

t.test('1c. nothing is sent after message_stop', async t => {
  const st = messagesToChat.stream({}, opts)
  let out = ''
  for (const ev of parse(chunk({ content: 'a' }, 'stop') + DONE + chunk({ content: 'late' }) + DONE)) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  out += emitted(w => st.fail(w, 'late failure', 500))
  t.same(shape(events(t, out)), ['message_start', 'start 0 text', 'delta 0 text_delta a', 'stop 0', 'message_delta end_turn', 'message_stop'])
})

t.test('2. text, then one tool call whose name and arguments arrive in the same chunk', async t => {
  const { out, st } = run(
    chunk({ role: 'assistant', content: 'Let me check.' }) +
    chunk(tc(0, { name: 'get_weather', arguments: '{"city":"Paris"}' }, 'call_1')) +
    chunk({}, 'tool_calls') + usageChunk({ prompt_tokens: 50, completion_tokens: 9 }) + DONE)
  const evs = events(t, out)
  t.same(shape(evs), [
    'message_start', 'start 0 text', 'delta 0 text_delta Let me check.', 'stop 0',
    'start 1 tool_use call_1 get_weather', 'delta 1 input_json_delta {"city":"Paris"}', 'stop 1',
    'message_delta tool_use', 'message_stop',
  ])
  t.same(evs[4].data.content_block, { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} })
  t.same(evs[7].data.usage, { input_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 9 })
  t.same(st.usage, { inputTokens: 50, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 9 })
})

const PARALLEL_EXPECTED = [
  'message_start',
  'start 0 tool_use call_a f', 'delta 0 input_json_delta {"x":1,"y":"a"}', 'stop 0',
  'start 1 tool_use call_b g', 'delta 1 input_json_delta {"z":[1,2]}', 'stop 1',
  'message_delta tool_use', 'message_stop',
]

t.test('3. two parallel tool calls, arguments split over several chunks (sequential)', async t => {
  const { out } = run(
    chunk(tc(0, { name: 'f', arguments: '' }, 'call_a')) + chunk(tc(0, { arguments: '{"x":1,' })) + chunk(tc(0, { arguments: '"y":"a"}' })) +
    chunk(tc(1, { name: 'g', arguments: '{"z":' }, 'call_b')) + chunk(tc(1, { arguments: '[1,2]}' })) + chunk({}, 'tool_calls') + DONE)
  t.same(shape(events(t, out)), PARALLEL_EXPECTED)
})

t.test('3b. two parallel tool calls with interleaved fragments: each lands in its own block', async t => {
  const { out } = run(
    chunk(tc(0, { name: 'f', arguments: '{"x":' }, 'call_a')) + chunk(tc(1, { name: 'g', arguments: '{"z":' }, 'call_b')) +
    chunk(tc(0, { arguments: '1,"y":"a"}' })) + chunk(tc(1, { arguments: '[1,2]}' })) + chunk({}, 'tool_calls') + DONE)
  const evs = events(t, out)
  t.same(shape(evs), PARALLEL_EXPECTED)
  for (const e of evs.filter(e => e.event === 'content_block_delta')) t.doesNotThrow(() => JSON.parse(e.data.delta.partial_json), 'each block gets whole JSON')
})

t.test('3c. two calls in one chunk, after text: indexes 0,1,2 in order', async t => {
  const { out } = run(
    chunk({ content: 'ok' }) +
    chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }, { index: 1, id: 'c2', type: 'function', function: { name: 'g', arguments: '{"a":1}' } }] }, 'tool_calls') + DONE)
  const evs = events(t, out)
  t.same(shape(evs), [
    'message_start', 'start 0 text', 'delta 0 text_delta ok', 'stop 0',
    'start 1 tool_use c1 f', 'delta 1 input_json_delta {}', 'stop 1',
    'start 2 tool_use c2 g', 'delta 2 input_json_delta {"a":1}', 'stop 2',
    'message_delta tool_use', 'message_stop',
  ])
  const started = new Set<number>()
  for (const e of evs) {
    if (e.event === 'content_block_start') started.add(e.data.index)
    if (e.event === 'content_block_delta' || e.event === 'content_block_stop') t.ok(started.has(e.data.index), 'never a delta/stop for an unstarted block')
  }
})

t.test('4. a tool call with empty arguments: no input_json_delta, input {}', async t => {
  const { out } = run(chunk(tc(0, { name: 'now', arguments: '' }, 'call_n')) + chunk({}, 'tool_calls') + DONE)
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 tool_use call_n now', 'stop 0', 'message_delta tool_use', 'message_stop'])
  t.same(evs[1].data.content_block.input, {})
})

t.test('4b. tool ids are made to fit [A-Za-z0-9_-]; a missing id gets toolu_…', async t => {
  const { out } = run(chunk({ tool_calls: [{ index: 0, id: 'call:1.x', function: { name: 'f', arguments: '{}' } }, { index: 1, function: { name: 'g', arguments: '{}' } }] }, 'tool_calls') + DONE)
  const starts = events(t, out).filter(e => e.event === 'content_block_start').map(e => e.data.content_block.id)
  t.equal(starts[0], 'call_1_x')
  t.match(starts[1], /^toolu_[A-Za-z0-9_-]+$/)
})

t.test('5. content and finish_reason in one chunk (fake streaming): the content is not lost', async t => {
  const { out, st } = run(chunk({ role: 'assistant', content: 'All at once.' }, 'stop', { usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }) + DONE)
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 text', 'delta 0 text_delta All at once.', 'stop 0', 'message_delta end_turn', 'message_stop'])
  t.same(evs[4].data.usage, { input_tokens: 7, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3 })
  t.equal(st.finished, true)
})

t.test('5b. text, tool call and finish all in one chunk', async t => {
  const { out } = run(chunk({ content: 'x', tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, 'tool_calls') + DONE)
  t.same(shape(events(t, out)), ['message_start', 'start 0 text', 'delta 0 text_delta x', 'stop 0', 'start 1 tool_use c f', 'delta 1 input_json_delta {"a":1}', 'stop 1', 'message_delta tool_use', 'message_stop'])
})

t.test('5c. `tool_calls: []` next to text is text, not a tool call; reasoning_content is a thinking block, never text', async t => {
  const { out } = run(chunk({ reasoning_content: 'hmm' }) + chunk({ content: 'hi', tool_calls: [] }) + chunk({}, 'stop') + DONE)
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 thinking', 'delta 0 thinking_delta hmm', 'stop 0', 'start 1 text', 'delta 1 text_delta hi', 'stop 1', 'message_delta end_turn', 'message_stop'])
  t.notOk(evs.some(e => e.data?.delta?.type === 'text_delta' && /hmm/.test(e.data.delta.text)), 'no reasoning in a text delta')
})

t.test('6. usage: legacy cache_creation_input_tokens, null details, cached > prompt floors at 0', async t => {
  const cases: Array<[string, Record<string, unknown>, Record<string, number>]> = [
    ['vendor cache_creation_input_tokens', { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 20 }, cache_creation_input_tokens: 30 },
      { input_tokens: 50, cache_creation_input_tokens: 30, cache_read_input_tokens: 20, output_tokens: 5 }],
    ['null details count as 0', { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: null },
      { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 5 }],
    ['cached over prompt floors at 0', { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 50 } },
      { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 50, output_tokens: 1 }],
  ]
  for (const [name, u, want] of cases) {
    const { out } = run(chunk({ content: 'a' }) + chunk({}, 'stop') + usageChunk(u) + DONE)
    const md = events(t, out).find(e => e.event === 'message_delta')!
    t.same(md.data.usage, want, name)
  }
})

t.test('6b. a usage-only chunk before any content opens nothing', async t => {
  const { out } = run(usageChunk({ prompt_tokens: 3, completion_tokens: 0 }) + chunk({}, 'stop') + DONE)
  t.same(shape(events(t, out)), ['message_start', 'message_delta end_turn', 'message_stop'], 'zero content blocks is legal; no invented empty text block')
})

t.test('10. every finish_reason maps to a messages stop_reason', async t => {
  // The mapping table is the test kit's golden data (the conformance suite runs it against adapters).
  for (const [finish, stop] of FINISH_TO_STOP_REASON) {
    const { out, st } = run(chunk({ content: 'a' }) + chunk({}, finish) + DONE)
    const md = events(t, out).find(e => e.event === 'message_delta')
    t.equal(md?.data.delta.stop_reason, stop, `${finish} → ${stop}`)
    t.equal(st.finished, true)
  }
})

t.test('10b. delta.refusal becomes text and stop_reason refusal', async t => {
  const { out } = run(chunk({ refusal: 'I cannot help.' }) + chunk({}, 'stop') + DONE)
  t.same(shape(events(t, out)), ['message_start', 'start 0 text', 'delta 0 text_delta I cannot help.', 'stop 0', 'message_delta refusal', 'message_stop'])
})

t.test('9. end without a finish gives an error event, not a fake end_turn', async t => {
  for (const [name, upstream] of [['EOF', chunk({ content: 'par' })], ['[DONE] without finish', chunk({ content: 'par' }) + DONE], ['empty stream', '']]) {
    const { out, st } = run(upstream)
    const evs = events(t, out)
    const s = shape(evs)
    t.equal(s[0], 'message_start', name)
    t.equal(s[s.length - 1], 'error api_error', name)
    t.notOk(s.some(x => x.startsWith('message_delta') || x === 'message_stop'), `${name}: no message_delta/message_stop`)
    t.equal(evs[evs.length - 1].data.error.message.length > 0, true)
    t.equal(st.finished, false, name)
  }
})

t.test('upstream error chunk mid-stream → open block closed, then `event: error` with the type by status', async t => {
  const { out, st } = run(chunk({ content: 'par' }) + `data: ${JSON.stringify({ error: { message: 'slow down', code: 429 } })}\n\n` + chunk({ content: 'more' }))
  const evs = events(t, out)
  t.same(shape(evs), ['message_start', 'start 0 text', 'delta 0 text_delta par', 'stop 0', 'error rate_limit_error'])
  t.same(evs[4].data, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } })
  t.equal(st.finished, false)
})

t.test('fail(): `event: error` with error.type by status', async t => {
  const table: Array<[number | undefined, string]> = [
    [400, 'invalid_request_error'], [401, 'authentication_error'], [402, 'billing_error'], [403, 'permission_error'],
    [404, 'not_found_error'], [413, 'request_too_large'], [429, 'rate_limit_error'], [500, 'api_error'], [502, 'api_error'],
    [503, 'overloaded_error'], [529, 'overloaded_error'], [504, 'timeout_error'], [undefined, 'api_error'],
  ]
  for (const [status, type] of table) {
    const st = messagesToChat.stream({}, opts)
    const first = emitted(w => st.push(parse(chunk({ content: 'a' }))[0], w))
    const out = first + emitted(w => st.fail(w, 'it broke', status))
    const evs = events(t, out)
    t.same(evs[evs.length - 1].data, { type: 'error', error: { type, message: 'it broke' } }, `status ${status}`)
    t.equal(emitted(w => st.end(w)), '', 'nothing after the error')
    t.equal(emitted(w => st.push(parse(chunk({ content: 'b' }))[0], w)), '', 'nothing after the error')
  }
})

t.test('12. comments, `data:` without a space, CRLF line ends and unknown events are tolerated', async t => {
  const crlf = (s: string): string => s.replace(/\n/g, '\r\n')
  const upstream =
    ': keep-alive\n\n' +
    crlf(chunk({ role: 'assistant', content: 'He' })) +
    chunk({ content: 'y' }).replace('data: ', 'data:') +
    'event: vendor_stats\ndata: {"latency_ms":12}\n\n' +
    ': another comment\n' +
    crlf(chunk({}, 'stop')) +
    'data:[DONE]\r\n\r\n'
  for (const chunked of [false, true]) {
    const st = messagesToChat.stream({}, opts)
    let out = ''
    for (const ev of parse(upstream, chunked)) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    t.same(shape(events(t, out)), ['message_start', 'start 0 text', 'delta 0 text_delta He', 'delta 0 text_delta y', 'stop 0', 'message_delta end_turn', 'message_stop'], chunked ? 'fed byte by byte' : 'fed at once')
    t.equal(st.finished, true)
  }
})
