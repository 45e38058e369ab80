/**
 * @module test/providers/gemini-translate – the Gemini translation on its own: the request rules
 * (system turns, joined roles, documents, tool choice by name, `$schema` left out, thinking
 * settings, signatures put back by the call they name, another vendor's thinking left out, what is
 * refused), the stream decoder (events split at every byte with CRLF framing, the finish held for
 * the last complete usage, an error event, a stream without a finish), answers, usage and finish
 * reasons, the error mapping and the signature carrier.
 */
import t from 'tap'
import { geminiRequest, geminiPrompt } from '../../providers/gemini/request.ts'
import { messagesAnswer, messagesUsage, stopReason, countAnswer, GeminiFinishError } from '../../providers/gemini/answer.ts'
import { GeminiStreamDecoder } from '../../providers/gemini/stream.ts'
import { mapGeminiError, retryAfter } from '../../providers/gemini/errors.ts'
import { decodeSignature, encodeSignature } from '../../providers/gemini/signatures.ts'
import { noSamplingMatcher } from '../../providers/gemini/upstream.ts'
import { isGatewayError, sanitizeUpstreamMessage, type SseEvent } from '../../index.ts'

const sig = (s: string, call?: string) => encodeSignature(call === undefined ? { signature: s } : { signature: s, call })

t.test('request: system turns, joined roles, documents, tools, tool choice, thinking and sampling', async t => {
  const out = geminiRequest({
    model: 'x', max_tokens: 10, temperature: 0.5, top_p: 0.9, top_k: 4, thinking: { type: 'adaptive' },
    system: 'Top',
    tools: [{ name: 'a', description: 'A', input_schema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false } }],
    tool_choice: { type: 'tool', name: 'a' },
    messages: [
      { role: 'user', content: 'one' },
      { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }, { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain' } }] },
      { role: 'system', content: 'Later' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'theirs', signature: 'anthropic-sig' }, { type: 'redacted_thinking', data: 'x' }, { type: 'text', text: 'hi' }] },
    ],
  }, { sampling: true })
  t.same(out, {
    contents: [
      { role: 'user', parts: [{ text: 'one' }, { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } }, { text: 'plain' }] },
      { role: 'model', parts: [{ text: 'hi' }] },
    ],
    systemInstruction: { parts: [{ text: 'Top' }, { text: 'Later' }] },
    tools: [{ functionDeclarations: [{ name: 'a', description: 'A', parametersJsonSchema: { type: 'object', additionalProperties: false } }] }],
    toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a'] } },
    generationConfig: { maxOutputTokens: 10, temperature: 0.5, topP: 0.9, topK: 4, thinkingConfig: { includeThoughts: true } },
  }, 'another vendor\'s thinking left out; $schema dropped')
  const noSampling = geminiRequest({ model: 'x', max_tokens: 5, temperature: 0.5, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'x' }] }, { sampling: false })
  t.same(noSampling.generationConfig, { maxOutputTokens: 5 }, 'no sampling, thinking disabled: the model\'s default')
  t.same(geminiPrompt({ tools: [], tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'x' }] }), { contents: [{ role: 'user', parts: [{ text: 'x' }] }] }, 'no tools, no tool config')
  t.same(geminiPrompt({ tools: [{ name: 'f' }], tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'x' }] }).toolConfig, { functionCallingConfig: { mode: 'NONE' } })
})

t.test('request: signatures go back on the parts they came on, by the call they name', async t => {
  const out = geminiPrompt({
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [
        // Thinking moved to the head of the turn (chat and Responses histories do this).
        { type: 'thinking', thinking: '', signature: sig('S-text') },
        { type: 'thinking', thinking: '', signature: sig('S-call2', 'c2') },
        { type: 'thinking', thinking: 'pondering', signature: sig('S-thought') },
        { type: 'text', text: 'a' },
        { type: 'tool_use', id: 'c1', name: 'f', input: { n: 1 } },
        { type: 'text', text: 'b' },
        { type: 'tool_use', id: 'c2', name: 'g', input: {} },
      ] },
      { role: 'user', content: [{ type: 'text', text: 'also' }, { type: 'tool_result', tool_use_id: 'c2', content: [{ type: 'text', text: 'G' }, { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] }, { type: 'tool_result', tool_use_id: 'c1', content: 'F', is_error: true }] },
    ],
  })
  t.same(out.contents, [
    { role: 'user', parts: [{ text: 'go' }] },
    { role: 'model', parts: [
      { text: 'pondering', thought: true, thoughtSignature: 'S-thought' },
      { text: 'a' },
      { functionCall: { name: 'f', args: { n: 1 } } },
      { text: 'b', thoughtSignature: 'S-text' },
      { functionCall: { name: 'g', args: {} }, thoughtSignature: 'S-call2' },
    ] },
    { role: 'user', parts: [
      { functionResponse: { name: 'g', response: { output: 'G' } } },
      { functionResponse: { name: 'f', response: { error: 'F' } } },
      { text: 'also' },
      { fileData: { mimeType: 'image/png', fileUri: 'https://x.test/a.png' } },
    ] },
  ])
})

t.test('request: refused with 400', async t => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['server tool', { tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'x' }] }],
    ['six stops', { stop_sequences: ['a', 'b', 'c', 'd', 'e', 'f'], messages: [{ role: 'user', content: 'x' }] }],
    ['unknown call', { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'z' }] }] }],
    ['unknown block', { messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] }] }],
    ['bad role', { messages: [{ role: 'tool', content: 'x' }] }],
    ['nothing to send', { messages: [{ role: 'user', content: '' }] }],
    ['image without source', { messages: [{ role: 'user', content: [{ type: 'image' }] }] }],
  ]
  for (const [name, body] of cases) {
    try {
      geminiRequest(body, { sampling: true })
      t.fail(`${name}: not refused`)
    } catch (err) {
      t.ok(isGatewayError(err) && err.statusCode === 400, name)
    }
  }
})

/** A stream as Gemini frames it: `data: <json>` + CRLF CRLF per response. */
function frames (...chunks: unknown[]): Buffer {
  return Buffer.from(chunks.map(c => `data: ${JSON.stringify(c)}\r\n\r\n`).join(''))
}
const part = (parts: unknown[], extra: Record<string, unknown> = {}) => ({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], usageMetadata: { promptTokenCount: 7 } })
const names = (evs: SseEvent[]) => evs.map(e => `${e.event} ${e.data.replace(/"id":"msg_gem_[0-9a-f]+"/, '"id":"-"').replace(/"id":"toolu_gem_[0-9a-f]+"/, '"id":"-"').replace(/"signature":"gw-gemini:[^"]+"/, '"signature":"S"')}`)

const STREAM = frames(
  part([{ text: 'Hm', thought: true }]),
  part([{ text: '…', thought: true, thoughtSignature: 'T1' }]),
  part([{ text: 'Hel' }]),
  part([{ text: 'lo' }, { functionCall: { name: 'f', args: { x: 1 } }, thoughtSignature: 'C1' }]),
  { candidates: [{ content: { role: 'model', parts: [{ text: '', thoughtSignature: 'E1' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 3, thoughtsTokenCount: 2, cachedContentTokenCount: 4, totalTokenCount: 12 } },
  { usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 4, thoughtsTokenCount: 2, cachedContentTokenCount: 4, totalTokenCount: 13 } },
)

t.test('stream: message_start counts cache reads apart, as messages does (Gemini\'s prompt count includes them)', async t => {
  const start = (usageMetadata: unknown) => {
    const d = new GeminiStreamDecoder('m', 99)
    const evs = [...d.push(frames({ candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, index: 0 }], usageMetadata })), ...d.end()]
    return JSON.parse(evs[0]!.data).message.usage
  }
  t.same(start({ promptTokenCount: 20, cachedContentTokenCount: 16, totalTokenCount: 20 }), { input_tokens: 4, cache_read_input_tokens: 16, cache_creation_input_tokens: 0, output_tokens: 0 })
  t.same(start({ promptTokenCount: 20, toolUsePromptTokenCount: 3 }), { input_tokens: 23, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 }, 'tool-use prompt tokens bill as input')
  t.same(start({ promptTokenCount: -5, cachedContentTokenCount: 'x' }), { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 }, 'counts that are not counts are none')
  t.same(start({ cachedContentTokenCount: 16 }), { input_tokens: 99, output_tokens: 0 }, 'no prompt count yet: the estimate')
})

t.test('stream: split at every byte decodes as sent whole; blocks, signatures, the finish with the last usage', async t => {
  const whole = new GeminiStreamDecoder('m', 99)
  const expected = names([...whole.push(STREAM), ...whole.end()])
  const split = new GeminiStreamDecoder('m', 99)
  const got: SseEvent[] = []
  for (let i = 0; i < STREAM.length; i++) got.push(...split.push(STREAM.subarray(i, i + 1)))
  got.push(...split.end())
  t.same(names(got), expected)
  t.same(expected.map(e => e.split(' ')[0]), [
    'message_start',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', // thought + its signature
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', // text
    'content_block_start', 'content_block_delta', 'content_block_stop', // the call's signature
    'content_block_start', 'content_block_delta', 'content_block_stop', // the call
    'content_block_start', 'content_block_delta', 'content_block_stop', // the text's signature, at the end
    'message_delta', 'message_stop',
  ])
  t.same(JSON.parse(expected[0].slice('message_start '.length)).message.usage, { input_tokens: 7, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 },
    'message_start: the prompt count of the first chunk')
  const delta = JSON.parse(expected[19].slice('message_delta '.length))
  t.same(delta, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 3, cache_read_input_tokens: 4, cache_creation_input_tokens: 0, output_tokens: 6, output_tokens_details: { thinking_tokens: 2 } } }, 'the last complete usage')
  const callSig = JSON.parse(got[11].data).delta.signature
  const callId = JSON.parse(got[13].data).content_block.id
  t.same(decodeSignature(callSig), { signature: 'C1', call: callId }, 'the call\'s signature names its tool_use')
  t.same(JSON.parse(got[14].data).delta, { type: 'input_json_delta', partial_json: '{"x":1}' })
})

t.test('stream: errors, blocked prompts, no finish', async t => {
  const throttled = new GeminiStreamDecoder('m', 1)
  const err = (() => { try { throttled.push(frames({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'q', details: [{ retryDelay: '3s' }] } })); return undefined } catch (e) { return e } })()
  t.ok(isGatewayError(err) && err.statusCode === 503 && err.headers?.['retry-after'] === '3', 'throttling → 503 with Retry-After')
  const mid = new GeminiStreamDecoder('m', 1)
  const first = mid.push(Buffer.concat([frames(part([{ text: 'a' }])), frames({ error: { code: 500, status: 'INTERNAL', message: 'boom' } })]))
  t.ok(first.length > 0, 'the events before the error go out first')
  t.throws(() => mid.push(Buffer.from('')), /INTERNAL/, 'then the error')
  const blocked = new GeminiStreamDecoder('m', 1)
  const evs = [...blocked.push(frames({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 } })), ...blocked.end()]
  t.match(evs.at(-2)?.data, /"stop_reason":"refusal"/)
  const unfinished = new GeminiStreamDecoder('m', 1)
  const u = [...unfinished.push(frames(part([{ text: 'a' }]))), ...unfinished.end()]
  t.notOk(u.some(e => e.event === 'message_stop'), 'no finish: no message_stop (the gateway ends it with an error)')
  const malformed = new GeminiStreamDecoder('m', 1)
  malformed.push(frames(part([{ text: 'a' }], { finishReason: 'MALFORMED_FUNCTION_CALL' })))
  t.throws(() => malformed.end(), GeminiFinishError)
  t.throws(() => new GeminiStreamDecoder('m', 1).push(Buffer.from('data: {oops\n\n')), /not JSON/)
})

t.test('answers, usage, finish reasons, counts', async t => {
  const a = messagesAnswer({ candidates: [{ content: { parts: [{ text: 'x', thoughtSignature: 'S' }, { text: 'y' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, toolUsePromptTokenCount: 3 } }, 'm')
  t.same(a.content, [{ type: 'text', text: 'xy' }, { type: 'thinking', thinking: '', signature: sig('S') }])
  t.same(a.usage, { input_tokens: 13, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 2 }, 'tool-use prompt tokens bill as input')
  t.same(messagesUsage({ promptTokenCount: 5, cachedContentTokenCount: 9 }), { input_tokens: 0, cache_read_input_tokens: 5, cache_creation_input_tokens: 0, output_tokens: 0 }, 'cached never above the prompt')
  t.same(messagesUsage('nonsense'), { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 0 })
  t.equal(stopReason('STOP', false), 'end_turn')
  t.equal(stopReason('STOP', true), 'tool_use')
  t.equal(stopReason('MAX_TOKENS', false), 'max_tokens')
  for (const r of ['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII', 'LANGUAGE', 'IMAGE_SAFETY']) t.equal(stopReason(r, false), 'refusal', r)
  for (const r of ['MALFORMED_FUNCTION_CALL', 'OTHER', 'UNEXPECTED_TOOL_CALL', 'FINISH_REASON_UNSPECIFIED', undefined]) t.throws(() => stopReason(r, false), GeminiFinishError, String(r))
  t.throws(() => messagesAnswer({ nope: 1 }, 'm'))
  t.same(countAnswer({ totalTokens: 5 }), { input_tokens: 5 })
  t.throws(() => countAnswer({}))
})

t.test('errors and the sampling matcher', async t => {
  const m = (status: number, body: unknown, headers: Record<string, string> = {}) => mapGeminiError(status, headers, JSON.stringify(body))
  t.equal(m(429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }).error.statusCode, 503)
  t.equal(m(503, [{ error: { code: 503, status: 'UNAVAILABLE' } }]).error.statusCode, 503, 'Vertex AI\'s list form')
  t.equal(retryAfter({ 'retry-after': '12' }, undefined), '12')
  t.equal(retryAfter({}, { details: [{ retryDelay: '0.2s' }] }), '1')
  const key = m(400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'API key not valid.', details: [{ reason: 'API_KEY_INVALID' }] } })
  t.ok(key.operator && key.error.statusCode === 502, 'an invalid key is the operator\'s: 502')
  const bad = m(400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Bad' } })
  t.ok(!bad.operator && bad.error.statusCode === 400)
  t.ok(m(403, { error: { code: 403, status: 'PERMISSION_DENIED' } }).operator)
  t.ok(m(404, {}).operator)
  t.equal(mapGeminiError(500, {}, '<html>').error.statusCode, 502)
  const leaked = m(400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Key AIzaSyD-abcdefghijklmnopqrstuvwxyz012345 has no access' } })
  t.equal(leaked.error.statusCode, 400)
  t.notMatch(String(leaked.error.message), /AIza/, 'a Google API key in a message is redacted')
  t.equal(sanitizeUpstreamMessage('k AIzaSyD-abcdefghijklmnopqrstuvwxyz012345 k'), 'k [redacted] k')
  const take = noSamplingMatcher(['gemini-3*', 'exact-model'])
  t.equal(take('gemini-2.5-pro'), true)
  t.equal(take('gemini-3-pro-preview'), false)
  t.equal(take('GEMINI-3.1-flash'), false)
  t.equal(take('exact-model'), false)
  t.equal(take('exact-model-2'), true)
  t.equal(decodeSignature('gw-gemini:!!!'), undefined)
  t.equal(decodeSignature('anthropic-sig'), undefined)
})
