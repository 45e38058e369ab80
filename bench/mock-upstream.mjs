// Mock upstream for benchmarks: plain node:http, both protocols, JSON and SSE (~20 chunks + usage).
import { createServer } from 'node:http'

const WORDS = Array.from({ length: 20 }, (_, i) => `word${i} `)
const created = 1767225600
const chatJson = JSON.stringify({
  id: 'chatcmpl-mock', object: 'chat.completion', created, model: 'mock',
  choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join(''), refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50, prompt_tokens_details: { cached_tokens: 10 } },
})
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
const chatSse = (usage) => [chunk({ role: 'assistant', content: '' }), ...WORDS.map(w => chunk({ content: w })), chunk({}, 'stop'),
  ...(usage ? [`data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock', choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50, prompt_tokens_details: { cached_tokens: 10 } } })}\n\n`] : []),
  'data: [DONE]\n\n'].join('')
const chatSseUsage = chatSse(true)
const chatSsePlain = chatSse(false)
const msgJson = JSON.stringify({
  id: 'msg_mock', type: 'message', role: 'assistant', model: 'mock', content: [{ type: 'text', text: WORDS.join('') }],
  stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 10, output_tokens: 20 },
})
const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
const msgSse = [ev('message_start', { message: { id: 'msg_mock', type: 'message', role: 'assistant', model: 'mock', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 10, output_tokens: 1 } } }),
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ...WORDS.map(w => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })),
  ev('content_block_stop', { index: 0 }),
  ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
  ev('message_stop', {})].join('')

const STREAM_KEY = Buffer.from('stream"')
const USAGE_KEY = Buffer.from('_usage"')
const INCLUDE = Buffer.from('"include')
const QUOTE = Buffer.from('"')
const isWs = c => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Whether a member appears anywhere as `"name": true` (any whitespace), as /"name"\s*:\s*true/
 * would find it: `key` is the end of its name with the closing quote, `before` the bytes before
 * that (the opening quote and the rest of the name), checked where `key` is found. Buffer#indexOf
 * goes fastest from a needle's first byte when that byte is rare in the text, and slowest from a
 * quote, JSON's commonest byte; on a 145 KB body this search is most of the mock's work.
 */
function memberIsTrue (buf, key, before = QUOTE) {
  for (let i = buf.indexOf(key); i >= 0; i = buf.indexOf(key, i + 1)) {
    if (i < before.length || !buf.subarray(i - before.length, i).equals(before)) continue
    let j = i + key.length
    while (isWs(buf[j])) j++
    if (buf[j] !== 0x3a) continue
    j++
    while (isWs(buf[j])) j++
    if (buf[j] === 0x74 && buf[j + 1] === 0x72 && buf[j + 2] === 0x75 && buf[j + 3] === 0x65) return true
  }
  return false
}

/** Each stream's events, one write each. */
const eventsOf = text => text.split(/(?<=\n\n)/)
const MSG_EVENTS = eventsOf(msgSse)
const CHAT_EVENTS_USAGE = eventsOf(chatSseUsage)
const CHAT_EVENTS_PLAIN = eventsOf(chatSsePlain)

const server = createServer((req, res) => {
  const parts = []
  req.on('data', d => parts.push(d))
  req.on('end', () => {
    // A small body is parsed; a large one (an agent-sized request) is searched for the two members
    // the answer depends on, so the mock's cost stays flat with the body's size (it shares a core
    // with the load generator). In JSON text, a quote inside a string value is escaped, so
    // `"stream": true` found unescaped is the member (the agent bodies have no other).
    // Searched in the bytes, not in a decoded string: on a VM, a string over about 128 KB costs
    // half a millisecond to allocate (V8's large-object space), which made the mock, not the proxy
    // under test, the limit of the agent cases.
    const raw = parts.length === 1 ? parts[0] : Buffer.concat(parts)
    let body = {}
    if (raw.length <= 8192) {
      try { body = JSON.parse(raw.toString()) } catch {}
    } else {
      const stream = memberIsTrue(raw, STREAM_KEY)
      // Only a stream's answer depends on include_usage.
      body = { stream, stream_options: { include_usage: stream && memberIsTrue(raw, USAGE_KEY, INCLUDE) } }
    }
    const messages = req.url.endsWith('/messages')
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      // Written as separate chunks, as a real upstream would.
      const events = messages ? MSG_EVENTS : (body.stream_options?.include_usage ? CHAT_EVENTS_USAGE : CHAT_EVENTS_PLAIN)
      for (const e of events) res.write(e)
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(messages ? msgJson : chatJson)
  })
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`)
})
