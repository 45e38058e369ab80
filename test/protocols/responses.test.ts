// The Responses API translators (responses-to-chat, responses-to-messages) on their golden cases
// (testing/golden-responses.ts), straight through the translators without a gateway, plus the
// stream's failure and cut ends and the name mapping's limits.
import t from 'tap'
import { translators } from '../../providers/protocols/index.ts'
import type { Translator } from '../../core/dispatch/provider.ts'
import { upstreamName } from '../../providers/protocols/responses-request.ts'
import { matches, standardUsage, upstreamAnswerBody, upstreamStreamEvents, translateFixture, parseSse, emitted } from '../../testing.ts'
import { RESPONSES_GOLDEN_CASES, RESPONSES_GOLDEN_ANSWERS, RESPONSES_GOLDEN_STREAMS, responsesGoldenBody, responsesStreamShape } from '../../testing/golden-responses.ts'
import { chatChunk, chatTextStream, messagesTextStream } from '../../testing/fake-upstream.ts'

const PARAMS = ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'metadata', 'user', 'response_format', 'thinking', 'parallel_tool_calls']
const { opts: base } = translateFixture(PARAMS)
/** One options object per call, as core makes one per attempt. */
const fresh = () => ({ ...base })

t.test('golden requests', async t => {
  for (const c of RESPONSES_GOLDEN_CASES) {
    const out = translators[`responses-to-${c.upstream}`].request(responsesGoldenBody('m/x', c.body), fresh())
    t.equal(matches(out, c.expect), undefined, c.name)
    t.equal(out.model, 'up-x', `${c.name}: upstream model`)
    for (const k of c.absent ?? []) t.notOk(k in out, `${c.name}: no ${k}`)
  }
})

t.test('golden answers', async t => {
  for (const c of RESPONSES_GOLDEN_ANSWERS) {
    const tr = translators[`responses-to-${c.upstream}`]
    const opts = fresh()
    tr.request(responsesGoldenBody('m/x', c.body), opts)
    const { body, usage } = tr.response(upstreamAnswerBody(c.answer, standardUsage(c.upstream, c.usage)), opts) as { body: any, usage: any }
    t.equal(matches(body, c.expect), undefined, c.name)
    t.match(body.id, /^resp_/, `${c.name}: a response id`)
    t.match(usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, outputTokens: c.usage.outputTokens }, `${c.name}: normalized usage`)
  }
})

/** A Responses client's stream (`extra` over the golden body) over `upstream`, fed `sse(translator)` whole or byte by byte: its SSE text and translator. */
function streamed (upstream: 'chat' | 'messages', extra: Record<string, unknown> | undefined, sse: (tr: Translator) => string, chunked = false) {
  const tr = translators[`responses-to-${upstream}`]
  const opts = fresh()
  const body = responsesGoldenBody('m/x', { ...extra, stream: true })
  tr.request(body, opts)
  const st = tr.stream(body, opts)
  let out = ''
  for (const ev of parseSse(sse(tr), chunked)) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  return { out, st }
}

t.test('golden answers, asked for as streams: the events of the upstream\'s whole answer end in the same response', async t => {
  for (const c of RESPONSES_GOLDEN_ANSWERS) {
    const { out, st } = streamed(c.upstream, c.body, tr => tr.answerEvents!(upstreamAnswerBody(c.answer, standardUsage(c.upstream, c.usage))).join(''))
    const { seqs, final } = responsesStreamShape(out)
    t.same(seqs, seqs.map((_, i) => i), `${c.name}: sequence_number counts from 0`)
    t.equal(matches(final, c.expect), undefined, `${c.name}: the final response is the answer's`)
    t.match(st.usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, outputTokens: c.usage.outputTokens }, `${c.name}: normalized usage`)
    t.equal(st.finished, true, `${c.name}: finished`)
  }
})

t.test('golden streams (whole and byte by byte)', async t => {
  for (const chunked of [false, true]) {
    for (const c of RESPONSES_GOLDEN_STREAMS) {
      const { out, st } = streamed(c.upstream, c.body, () => upstreamStreamEvents(c.stream, standardUsage(c.upstream, c.usage)).join(''), chunked)
      const { shape, seqs, final } = responsesStreamShape(out)
      t.same(shape, c.shape, c.name)
      t.same(seqs, seqs.map((_, i) => i), `${c.name}: sequence_number counts from 0`)
      t.equal(matches(final, c.final), undefined, `${c.name}: the final response`)
      t.match(st.usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, outputTokens: c.usage.outputTokens }, `${c.name}: normalized usage`)
      t.equal(st.finished, true, `${c.name}: finished`)
    }
  }
})

t.test('a cut stream ends with response.failed and error; billing sees the relayed characters', async t => {
  for (const upstream of ['chat', 'messages'] as const) {
    const tr = translators[`responses-to-${upstream}`]
    const opts = fresh()
    const body = responsesGoldenBody('m/x', { stream: true })
    tr.request(body, opts)
    const st = tr.stream(body, opts)
    const events = upstream === 'chat' ? chatTextStream(['abcd', 'efgh', 'ijkl']).slice(0, 3) : messagesTextStream(['abcd', 'efgh', 'ijkl']).slice(0, 5)
    let out = ''
    for (const ev of parseSse(events.join(''))) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    const { shape, final } = responsesStreamShape(out)
    t.same(shape.slice(-2), ['response.failed', 'error'], `${upstream}: failed, then error`)
    t.match(final, { status: 'failed', error: { code: 'server_error', message: /ended the stream/ }, output: [{ type: 'message', content: [{ text: 'abcdefgh' }] }] })
    t.equal(st.finished, false)
    t.equal(st.outputChars, 8, `${upstream}: output characters relayed`)
    // The failed response shows what the call is billed: the input the upstream reported at the
    // start (messages) or the gateway's estimate (chat), and 8 relayed characters at 4 per token.
    const input = upstream === 'messages' ? st.startUsage!.inputTokens : opts.estimatedInputTokens
    t.ok(input > 0)
    t.match(final?.usage, { input_tokens: input, output_tokens: 2, total_tokens: input + 2 }, `${upstream}: the usage billed is shown`)
    t.equal(emitted(w => st.end(w)), '', 'nothing after the end')
    t.equal(emitted(w => st.fail(w, 'x')), '', 'nor after a failure')
  }
})

t.test('fail() before any upstream event still opens the stream', async t => {
  const st = translators['responses-to-chat'].stream({}, fresh())
  const { shape, final } = responsesStreamShape(emitted(w => st.fail(w, 'The request timed out.', 408, { type: 'timeout_error', code: 408 })))
  t.same(shape, ['response.created', 'response.in_progress', 'response.failed', 'error'])
  t.match(final, { status: 'failed', error: { code: '408', message: 'The request timed out.' } })
})

t.test('an upstream error chunk is sanitized into response.failed', async t => {
  const opts = fresh()
  const st = translators['responses-to-chat'].stream({}, opts)
  let out = emitted(w => st.push(parseSse(chatChunk({ role: 'assistant', content: 'x' }))[0], w))
  out += emitted(w => st.push(parseSse(`data: ${JSON.stringify({ error: { message: 'boom at https://internal.example/secret?key=sk-123', type: 'server_error' } })}\n\n`)[0], w))
  const { shape } = responsesStreamShape(out)
  t.equal(shape.at(-1), 'error')
  t.notMatch(out, /sk-123/, 'the upstream text is sanitized')
})

t.test('names: namespaced and long names fit the upstream limit and map back', async t => {
  t.equal(upstreamName('lookup', 'crm'), 'crm__lookup')
  t.equal(upstreamName('plain'), 'plain')
  const long = upstreamName('f'.repeat(40), 'n'.repeat(40))
  t.equal(long.length, 64)
  t.match(long, /^n{40}__f{13}_[0-9a-f]{8}$/)
  t.not(upstreamName('f'.repeat(40), 'n'.repeat(41)), long, 'different names stay different')
  const opts = fresh()
  const tr = translators['responses-to-chat']
  const sent = tr.request(responsesGoldenBody('m/x', { tools: [{ type: 'namespace', name: 'n'.repeat(40), tools: [{ type: 'function', name: 'f'.repeat(40) }] }] }), opts) as any
  t.equal(sent.tools[0].function.name, long)
  const { body } = tr.response({ choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: long, arguments: '{}' } }] }, finish_reason: 'tool_calls' }] }, opts) as any
  t.match(body.output, [{ type: 'function_call', name: 'f'.repeat(40), namespace: 'n'.repeat(40) }])
})

t.test('stateful input items and unsupported parts are a 400', async t => {
  const tr = translators['responses-to-chat']
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ type: 'item_reference', id: 'msg_1' }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /stateless/ })
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /input_image/ })
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ role: 'tool', content: 'x' }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /role "tool"/ })
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ type: 'function_call', name: 'x' }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /call_id/ })
})

t.test('a stream made without its request (other options object) maps names from the client body', async t => {
  const body = responsesGoldenBody('m/x', { stream: true, tools: [{ type: 'namespace', name: 'crm', tools: [{ type: 'function', name: 'lookup' }] }] })
  const st = translators['responses-to-chat'].stream(body, fresh())
  let out = ''
  for (const ev of parseSse([
    chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'crm__lookup', arguments: '{}' } }] }),
    chatChunk({}, 'tool_calls'),
  ].join(''))) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  const { final } = responsesStreamShape(out)
  t.match(final, { status: 'completed', output: [{ type: 'function_call', name: 'lookup', namespace: 'crm' }], tools: body.tools })
})

t.test('media toward a messages upstream: what the upstream cannot take is a 400 naming the part; a modality the model does not list is dropped', async t => {
  const tr = translators['responses-to-messages']
  const image = (image_url: string) => responsesGoldenBody('m/x', { input: [{ role: 'user', content: [{ type: 'input_text', text: 'see' }, { type: 'input_image', image_url }] }] })
  t.throws(() => tr.request(image('data:image/svg+xml;base64,PHN2Zz48L3N2Zz4='), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /input\[0\]\.content\[1\].*image\/svg\+xml/ })
  t.throws(() => tr.request(image('http://example.com/a.png'), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /https URL/ })
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /input\[0\]\.content\[0\].*file_id/ })
  t.throws(() => tr.request(responsesGoldenBody('m/x', { input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_data: 'data:application/zip;base64,UEsDBA==' }] }] }), fresh()), { code: 'GW_ERR_BAD_REQUEST', message: /input\[0\]\.output\[0\].*application\/zip/ })
  // A plain-text file is a text document; a PDF by https URL a url document.
  const docs = tr.request(responsesGoldenBody('m/x', { input: [{ role: 'user', content: [
    { type: 'input_file', filename: 'notes.txt', file_data: `data:text/plain;base64,${Buffer.from('héllo').toString('base64')}` },
    { type: 'input_file', file_url: 'https://example.com/a.pdf' },
  ] }] }), fresh()) as any
  t.same(docs.messages[0].content, [
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'héllo' }, title: 'notes.txt' },
    { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
  ])
  // A model that lists text only: images and files are dropped, as on the chat route.
  const { model } = translateFixture(PARAMS)
  const textOnly = { ...model, inputModalities: new Set(['text']) }
  const sent = tr.request(image('https://example.com/a.png'), { ...base, model: textOnly }) as any
  t.same(sent.messages, [{ role: 'user', content: 'see' }])
  // The chat route keeps its own contract: content flattened to text, media dropped.
  const chat = translators['chat-to-messages'].request({ model: 'm/x', messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }, { type: 'image', source: { type: 'url', url: 'https://example.com/b.png' } }] }] }, fresh()) as any
  t.same(chat.messages, [{ role: 'user', content: 'see' }])
})

t.test('custom tools: a stream cut mid-call keeps the input so far; arguments that are not JSON holding `input` come back raw', async t => {
  const tools = [{ type: 'custom', name: 'apply_patch' }]
  const body = responsesGoldenBody('m/x', { stream: true, tools })
  const opts = fresh()
  const tr = translators['responses-to-chat']
  tr.request(body, opts)
  const st = tr.stream(body, opts)
  let out = ''
  for (const ev of parseSse(chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Be' } }] }))) out += emitted(w => st.push(ev, w))
  out += emitted(w => st.end(w))
  const { shape, final } = responsesStreamShape(out)
  t.notOk(shape.includes('response.function_call_arguments.delta'), 'no function-call events for a custom call')
  t.same(shape.slice(-2), ['response.failed', 'error'])
  t.match(final, { status: 'failed', output: [{ type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '{"input":"*** Be', status: 'incomplete' }] })

  const o2 = fresh()
  tr.request(responsesGoldenBody('m/x', { tools }), o2)
  const { body: answer } = tr.response({ choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'apply_patch', arguments: '*** Begin Patch' } }] }, finish_reason: 'tool_calls' }] }, o2) as any
  t.match(answer.output, [{ type: 'custom_tool_call', call_id: 'c2', input: '*** Begin Patch' }])
  t.notOk('arguments' in answer.output[0], 'a custom_tool_call has no arguments')
})
