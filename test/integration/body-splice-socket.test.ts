/**
 * Same-protocol forwarding on real sockets, compared byte for byte: a client writes a request on a
 * TCP socket to a listening gateway, and a raw upstream (node:http, the body kept as the bytes
 * that arrived) must receive exactly the client's bytes except the spliced members: the model
 * name, an output cap above the model's lowered in place (or one added before the model when
 * there is none), `stream_options` asked on a chat stream, and Responses' `store: false`. The
 * bodies are agent-sized (over 128 KB) and carry what must survive untouched: escapes as written,
 * non-ASCII text, emoji, numbers as written, nested "model" and "max_tokens" keys, whitespace.
 */
import t from 'tap'
import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { upstreamDoc } from '../helpers/fake-upstream.ts'
import { padded } from '../helpers/padded.ts'

interface Raw { path: string, bytes: Buffer }

/** An upstream that records each request's body as the bytes that arrived and answers per protocol. */
async function rawUpstream (): Promise<{ origin: string, seen: Raw[], close: () => Promise<void> }> {
  const seen: Raw[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const bytes = Buffer.concat(chunks)
      seen.push({ path: req.url ?? '', bytes })
      const stream = /"stream"\s*:\s*true/.test(bytes.toString('latin1'))
      const path = req.url ?? ''
      if (stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        if (path.endsWith('/chat/completions')) {
          res.end('data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n' +
            'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\ndata: [DONE]\n\n')
        } else {
          res.end('event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n' +
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
        }
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      if (path.endsWith('/chat/completions')) res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }))
      else if (path.endsWith('/responses')) res.end(JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', model: 'm', output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hi', annotations: [] }] }], usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 } }))
      else res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 5, output_tokens: 1 } }))
    })
  })
  await new Promise<void>(r => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  return { origin: `http://127.0.0.1:${port}`, seen, close: () => new Promise(r => server.close(() => r())) }
}

/** One request written on a raw TCP socket (the body's bytes exactly); resolves the status line's code and the whole answer. */
function post (base: string, path: string, body: Buffer): Promise<{ status: number, text: string }> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const sock = connect({ host: hostname, port: Number(port) }, () => {
      sock.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nAuthorization: ${auth().authorization}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
      sock.write(body) // not end(): a half-closed client is a client gone, and its call is cut
    })
    const chunks: Buffer[] = []
    sock.on('data', (c: Buffer) => chunks.push(c))
    sock.on('error', reject)
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), text })
    })
  })
}

/** ~140 KB of what agents send: file contents with escapes, non-ASCII, emoji, nested look-alike keys. */
function filler (): string {
  // JSON-encoded as a client would (quotes, backslashes, tabs, newlines escaped), plus an escape written as \u00e9.
  const line = JSON.stringify('const s = "tab\there \\"quoted\\"" C:\\path é — 中文 😀; // {"model":"nested","max_tokens":99999}\n').slice(1, -1) + '\\u00e9'
  return line.repeat(1400)
}

const replaced = (bytes: Buffer, pairs: [string, string][]): Buffer => {
  let s = bytes.toString('utf8')
  for (const [a, b] of pairs) {
    if (!s.includes(a)) throw new Error(`test setup: ${a} not in the body`)
    s = s.replace(a, b)
  }
  return Buffer.from(s, 'utf8')
}

t.test('same protocol on real sockets: the upstream receives the client bytes except the spliced members', async t => {
  const up = await rawUpstream()
  const doc = upstreamDoc(up.origin, up.origin, [
    { id: 'vendor/resp-model', price: { input: 1, cachedInput: 0.5, output: 2 }, deployments: [{ provider: 'up-resp', model: 'up-resp "ü"' }] },
  ])
  ;(doc.providers as unknown[]).push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-resp' } })
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY] })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await up.close() })
  const content = filler()

  // Chat, a cap above the model's (4096): lowered in place; 0.50 and 1E2 stay as written.
  const chat = Buffer.from(`{\n  "messages" : [ {"role":"system","content":"${content}"}, {"role":"user","content":"hi","model":"x"} ],\n  "temperature": 0.50,\n  "max_tokens" :  100000 ,\n  "x_vendor": 1E2,\n  "model": "vendor/chat-model"\n}`, 'utf8')
  t.ok(chat.length > 128 * 1024, 'an agent-sized body')
  let res = await post(base, '/v1/chat/completions', chat)
  t.equal(res.status, 200, 'answered 200')
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(chat, [['"max_tokens" :  100000', padded('"max_tokens" :  100000', '"max_tokens" :  4096')], ['"model": "vendor/chat-model"', padded('"model": "vendor/chat-model"', '"model": "up-model"')]])), 'chat JSON: byte for byte but the model and the cap')

  // Chat stream without a cap or stream_options: both added before the model key.
  const stream = Buffer.from(`{"model":"vendor/chat-model","stream":true,"messages":[{"role":"user","content":"${content}"}]}`, 'utf8')
  res = await post(base, '/v1/chat/completions', stream)
  t.equal(res.status, 200)
  t.match(res.text, /data: \[DONE\]/)
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(stream, [['"model":"vendor/chat-model"', `"stream_options":{"include_usage":true},"max_tokens":4096,"model":${padded('"vendor/chat-model"', '"up-model"')}`]])),
    'chat stream: usage asked and the cap added (in the buffer\'s headroom), the model in place, nothing else changed')

  // Messages: max_tokens above the model's lowered in place; a cap within it stays.
  const msg = Buffer.from(`{"max_tokens":64000,"model":"msgvendor/msg-model","system":[{"type":"text","text":"${content}","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"\\ud83d\\ude00 hi"}]}],"metadata":{"model":"x"}}`, 'utf8')
  res = await post(base, '/v1/messages', msg)
  t.equal(res.status, 200, 'answered 200')
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(msg, [['"max_tokens":64000', padded('"max_tokens":64000', '"max_tokens":4096')], ['"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"')]])), 'messages: byte for byte but the model and the cap')
  const within = replaced(msg, [['"max_tokens":64000', '"max_tokens":100']])
  res = await post(base, '/v1/messages', replaced(within, [['{"max_tokens"', '{"stream":true,"max_tokens"']]))
  t.equal(res.status, 200)
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(within, [['{"max_tokens"', '{"stream":true,"max_tokens"'], ['"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"')]])), 'messages stream: only the model')

  // Responses: store forced false in place, the cap lowered in place, the upstream name JSON-encoded.
  const resp = Buffer.from(`{"model":"vendor/resp-model","store":true,"max_output_tokens":50000,"input":[{"role":"user","content":"${content}"}]}`, 'utf8')
  res = await post(base, '/v1/responses', resp)
  t.equal(res.status, 200, 'answered 200')
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(resp, [['"vendor/resp-model"', '"up-resp \\"ü\\""'], ['"store":true', '"store":false'], ['"max_output_tokens":50000', '"max_output_tokens":4096']])), 'responses: byte for byte but model, store and cap')
  const bare = Buffer.from(`{"model":"vendor/resp-model","input":"${content}"}`, 'utf8')
  res = await post(base, '/v1/responses', bare)
  t.equal(res.status, 200)
  t.ok(up.seen.at(-1)!.bytes.equals(replaced(bare, [['"model":"vendor/resp-model"', `"store":false,"max_output_tokens":4096,"model":${padded('"vendor/resp-model"', '"up-resp \\"ü\\""')}`]])),
    'responses without store or cap: both added before the model, the model in place')

  // Not exact in place: a cap that is not a number, or a duplicate cap key, is rebuilt from what was parsed.
  res = await post(base, '/v1/chat/completions', Buffer.from('{"model":"vendor/chat-model","max_tokens":null,"messages":[{"role":"user","content":"hi"}]}'))
  t.equal(res.status, 200)
  t.same(JSON.parse(up.seen.at(-1)!.bytes.toString('utf8')), { model: 'up-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4096 }, 'a null cap: dropped, the model\'s added (serialized again)')
  res = await post(base, '/v1/chat/completions', Buffer.from('{"model":"vendor/chat-model","max_tokens":9,"max_tokens":90000,"messages":[{"role":"user","content":"hi"}]}'))
  t.equal(res.status, 200)
  const dup = up.seen.at(-1)!.bytes.toString('utf8')
  t.same(JSON.parse(dup), { model: 'up-model', max_tokens: 4096, messages: [{ role: 'user', content: 'hi' }] }, 'duplicate cap keys: the last one (what JSON.parse read) is what is capped')
  t.equal(dup.match(/max_tokens/g)!.length, 1, 'one cap key reaches the upstream')
  // The last within the cap, the first above it: an upstream keeping the first must not see it.
  res = await post(base, '/v1/messages', Buffer.from('{"model":"msgvendor/msg-model","max_tokens":90000,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}'))
  t.equal(res.status, 200)
  t.same(JSON.parse(up.seen.at(-1)!.bytes.toString('utf8')), { model: 'up-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(up.seen.at(-1)!.bytes.toString('utf8').match(/max_tokens/g)!.length, 1, 'a duplicate cap within the cap is rebuilt too: one key')
  res = await post(base, '/v1/responses', Buffer.from('{"model":"vendor/resp-model","store":true,"store":false,"input":"hi"}'))
  t.equal(res.status, 200)
  t.equal(up.seen.at(-1)!.bytes.toString('utf8').match(/"store"/g)!.length, 1, 'a duplicate store: rebuilt, one key, false')
  t.equal(JSON.parse(up.seen.at(-1)!.bytes.toString('utf8')).store, false)

  // Invalid UTF-8 from the client: JSON.parse read U+FFFD, so the bytes are not sent as they came.
  const invalid = Buffer.concat([Buffer.from('{"model":"vendor/chat-model","messages":[{"role":"user","content":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}]}')])
  res = await post(base, '/v1/chat/completions', invalid)
  t.equal(res.status, 200)
  const sent = up.seen.at(-1)!.bytes
  t.ok(sent.includes(Buffer.from('a\ufffd\ufffdb', 'utf8')), 'what the gateway parsed is what the upstream gets')
  t.notOk(sent.includes(Buffer.from([0xff])), 'no invalid byte forwarded')
})
