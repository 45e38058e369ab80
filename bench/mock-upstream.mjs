// Mock upstream for benchmarks: both protocols, JSON and SSE (~20 chunks + usage), on a raw TCP
// server with its own minimal HTTP/1.1 reader (keep-alive; bodies by Content-Length or chunked).
// It shares a core with the load generator, so it must cost far less per call than any proxy
// measured: node:http's request stream and its body's copies cost as much per agent-sized call as
// the bare proxy spends, which made the mock, not the proxy, the limit of those cases.
import { createServer } from 'node:net'

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

/** A JSON answer: head and body in one write. */
const jsonAnswer = text => Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n` +
  `connection: keep-alive\r\n\r\n${text}`)
/**
 * A stream's answer: the head, then each event as its own HTTP chunk (as a real upstream sends
 * them), then the last chunk. One write, as node:http sends what a handler writes in one tick (it
 * corks the socket until the next tick): a write per event costs the load generator a read each.
 */
const sseAnswer = text => Buffer.from([
  'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n',
  ...text.split(/(?<=\n\n)/).map(e => `${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`),
  '0\r\n\r\n',
].join(''))
const ANSWERS = {
  chatJson: jsonAnswer(chatJson),
  msgJson: jsonAnswer(msgJson),
  chatSseUsage: sseAnswer(chatSse(true)),
  chatSsePlain: sseAnswer(chatSse(false)),
  msgSse: sseAnswer(msgSse),
}
const NOT_FOUND = Buffer.from('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')

const STREAM_KEY = Buffer.from('stream"')
const USAGE_KEY = Buffer.from('_usage"')
const INCLUDE = Buffer.from('"include')
const QUOTE = Buffer.from('"')
const HEAD_END = Buffer.from('\r\n\r\n')
const isWs = c => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Whether a member appears anywhere as `"name": true` (any whitespace), as /"name"\s*:\s*true/
 * would find it: `key` is the end of its name with the closing quote, `before` the bytes before
 * that (the opening quote and the rest of the name), checked where `key` is found. In JSON text a
 * quote inside a string is escaped, so the member found unescaped is the member (the bench bodies
 * have no other). Buffer#indexOf goes fastest from a needle's first byte when that byte is rare in
 * the text, and slowest from a quote, JSON's commonest byte.
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

/** The answer's bytes for a request to `path` with body `raw`. */
function answer (path, raw) {
  const messages = path.endsWith('/messages')
  let stream = false
  let usage = false
  if (raw.length <= 8192) {
    let body = {}
    try { body = JSON.parse(raw.toString()) } catch {}
    stream = body?.stream === true
    usage = body?.stream_options?.include_usage === true
  } else {
    stream = memberIsTrue(raw, STREAM_KEY)
    // Only a stream's answer depends on include_usage.
    usage = stream && !messages && memberIsTrue(raw, USAGE_KEY, INCLUDE)
  }
  if (!stream) return messages ? ANSWERS.msgJson : ANSWERS.chatJson
  return messages ? ANSWERS.msgSse : (usage ? ANSWERS.chatSseUsage : ANSWERS.chatSsePlain)
}

/** Decodes a chunked body from `buf` at `at`: [body, end offset], or undefined while incomplete. */
function dechunk (buf, at) {
  const parts = []
  for (;;) {
    const eol = buf.indexOf('\r\n', at)
    if (eol < 0) return undefined
    const size = parseInt(buf.toString('latin1', at, eol), 16)
    if (!(size >= 0)) throw new Error('bad chunk size')
    if (size === 0) {
      const end = buf.indexOf('\r\n', eol + 2)
      if (end < 0) return undefined
      return [parts.length === 1 ? parts[0] : Buffer.concat(parts), end + 2]
    }
    if (buf.length < eol + 2 + size + 2) return undefined
    parts.push(buf.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

/** One connection: bytes are gathered until a whole request is in, then answered; pipelining allowed. */
function onConnection (socket) {
  socket.setNoDelay(true)
  let pending = []
  let pendingBytes = 0
  // The current request's head, once read: its path, where its body starts, and its length (-1 chunked).
  let path = ''
  let bodyAt = -1
  let bodyLength = 0
  socket.on('data', data => {
    pending.push(data)
    pendingBytes += data.length
    for (;;) {
      if (bodyAt < 0) {
        const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes)
        pending = [buf]
        const headEnd = buf.indexOf(HEAD_END)
        if (headEnd < 0) return
        const head = buf.toString('latin1', 0, headEnd)
        const line = head.slice(0, head.indexOf('\r\n'))
        path = line.split(' ')[1] ?? ''
        const cl = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head)
        bodyLength = cl ? Number(cl[1]) : (/\r\ntransfer-encoding:[ \t]*chunked/i.test(head) ? -1 : 0)
        bodyAt = headEnd + 4
      }
      let raw
      let end
      if (bodyLength >= 0) {
        end = bodyAt + bodyLength
        if (pendingBytes < end) return
        const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes)
        raw = buf.subarray(bodyAt, end)
        pending = [buf]
      } else {
        const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes)
        pending = [buf]
        let got
        try { got = dechunk(buf, bodyAt) } catch { socket.end(NOT_FOUND); return }
        if (got === undefined) return
        ;[raw, end] = got
      }
      socket.write(answer(path, raw))
      const rest = pending[0].subarray(end)
      pending = rest.length > 0 ? [rest] : []
      pendingBytes = rest.length
      bodyAt = -1
      if (pendingBytes === 0) return
    }
  })
  socket.on('error', () => {})
}

const server = createServer({ noDelay: true }, onConnection)
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`)
})
