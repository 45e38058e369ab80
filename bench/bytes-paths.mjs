// Instruction counts of the request-body and same-protocol stream paths of one build, without
// sockets or plugins (deterministic, so two builds compare under callgrind on a busy machine):
//   body: the JSON body parser (registerBodyParsers' callback on a fake request), the top-level
//         freeze prepareInference applies, chat-to-chat request() and the upstream body bytes
//         (prepare's JSON.stringify, or the spliced client bytes when the build has them);
//   stream: the mock upstream's 23-event chat stream (with usage) through SseParser and the
//         chat-to-chat stream translator, and the same for messages-to-messages.
// Usage: BYTES_CALLGRIND=1 valgrind --tool=callgrind --instr-atstart=no --smc-check=all-non-file \
//          node bench/bytes-paths.mjs <dist dir> <body|body-big|chat-stream|msg-stream> [iterations=2000] [warmup=3000]
// Without valgrind it prints CPU µs per iteration.
import { execFileSync } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const [dist, which = 'body', itArg = '2000', warmArg = '3000'] = process.argv.slice(2)
const load = p => import(pathToFileURL(resolve(dist, p)).href)
const body = await load('core/http/body.js')
const { deepFreeze } = await load('core/config/config.js')
const { SseParser } = await load('core/dispatch/sse.js')
const { translators } = await load('providers/index.js')
// Builds whose stream translators emit events (core/dispatch/sse-writer.js) write them through the
// gateway's serializer, one upstream chunk at a time, as core does; older ones return text.
const writerModule = await load('core/dispatch/sse-writer.js').catch(() => undefined)
const writer = writerModule === undefined ? undefined : new writerModule.SseWriter()
const NO_BYTES = Buffer.alloc(0)
/** The client's text (its length) for one upstream chunk's events (as text: the chunks here are strings). */
const chunkOut = (st, events) => writer === undefined ? events.reduce((n, e) => n + st.push(e).length, 0) : writer.chunk(NO_BYTES, events, st, false).length
const endOut = st => {
  if (writer === undefined) return st.end().length
  st.end(writer)
  return writer.take().length
}

let parser
body.registerBodyParsers({ removeAllContentTypeParsers () {}, addContentTypeParser (type, fn) { if (type === 'application/json') parser = fn } }, { maxBytes: 64 * 1024 * 1024, maxDepth: 64 })
const model = { id: 'bench/chat', supportedParameters: new Set(['max_tokens', 'temperature', 'stream', 'tools']), public: { default_parameters: {} } }
const opts = { model, clientModel: 'bench/chat', upstreamModel: 'mock', estimatedInputTokens: 10 }
const chatBody = { model: 'bench/chat', messages: [{ role: 'user', content: 'Say twenty words.' }], max_tokens: 64 }
const big = { ...chatBody, messages: [{ role: 'system', content: 'Be brief. '.repeat(100) }, ...Array.from({ length: 40 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} `.repeat(200) }))] }
const hasSplice = typeof translators['chat-to-chat'].requestText === 'function'
// Before this change prepareInference deep-froze the body; after, it freezes the top level.
const freeze = hasSplice ? Object.freeze : deepFreeze

function parseBody (buf) {
  const payload = new EventEmitter()
  let out
  parser({ headers: { 'content-length': String(buf.length) }, raw: {} }, payload, (err, b) => { if (err) throw err; out = b })
  payload.emit('data', buf)
  payload.emit('end')
  return out
}

const created = 1767225600
const WORDS = Array.from({ length: 20 }, (_, i) => `word${i} `)
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
const chatSse = [chunk({ role: 'assistant', content: '' }), ...WORDS.map(w => chunk({ content: w })), chunk({}, 'stop'),
  `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'mock', choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50, prompt_tokens_details: { cached_tokens: 10 } } })}\n\n`,
  'data: [DONE]\n\n'].map(s => Buffer.from(s))
const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`
const msgSse = [ev('message_start', { message: { id: 'msg_mock', type: 'message', role: 'assistant', model: 'mock', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 10, output_tokens: 1 } } }),
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ...WORDS.map(w => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })),
  ev('content_block_stop', { index: 0 }),
  ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
  ev('message_stop', {})].map(s => Buffer.from(s))

let sink = 0
const cases = {
  body: () => {
    const b = freeze(parseBody(Buffer.from(JSON.stringify(chatBody))))
    const t = translators['chat-to-chat']
    const up = t.request(b, opts)
    const bytes = (hasSplice ? t.requestText(b, opts) : undefined) ?? JSON.stringify(up)
    sink += bytes.length
  },
  'body-big': () => {
    const b = freeze(parseBody(Buffer.from(JSON.stringify(big))))
    const t = translators['chat-to-chat']
    const up = t.request(b, opts)
    const bytes = (hasSplice ? t.requestText(b, opts) : undefined) ?? JSON.stringify(up)
    sink += bytes.length
  },
  'chat-stream': () => {
    const p = new SseParser({ maxEventBytes: 1 << 20 })
    const st = translators['chat-to-chat'].stream(chatBody, opts)
    for (const c of chatSse) sink += chunkOut(st, p.push(c))
    sink += endOut(st) + (st.usage ? 1 : 0)
  },
  'msg-stream': () => {
    const p = new SseParser({ maxEventBytes: 1 << 20 })
    const st = translators['messages-to-messages'].stream(chatBody, opts)
    for (const c of msgSse) sink += chunkOut(st, p.push(c))
    sink += endOut(st) + (st.usage ? 1 : 0)
  },
}
const run = cases[which]
const iterations = Number(itArg)
for (let i = 0; i < Number(warmArg); i++) run()
const cg = process.env.BYTES_CALLGRIND === '1'
if (cg) execFileSync('callgrind_control', ['-i', 'on', String(process.pid)], { stdio: 'ignore' })
const cpu0 = process.cpuUsage()
for (let i = 0; i < iterations; i++) run()
const cpu = process.cpuUsage(cpu0)
if (cg) execFileSync('callgrind_control', ['-i', 'off', String(process.pid)], { stdio: 'ignore' })
process.stdout.write(`${which} splice=${hasSplice} iterations=${iterations} cpu_us_per_iteration=${((cpu.user + cpu.system) / iterations).toFixed(2)} (${sink > 0})\n`)
