// Seeded fuzzing of what the plain-protocol adapters READ: the upstream's answers. Three loopback
// servers stand in for a chat completions upstream (`openai-compatible`), a messages upstream
// (`anthropic-compatible`) and a Responses API upstream (`openai-responses`), each reached from the
// three client routes: so every translator runs, same-protocol (bytes relayed, usage read on the
// side) and cross-protocol (answers and streams translated). Each case takes a valid answer (text
// with multi-byte characters, reasoning or thinking, two tool calls with their arguments in pieces,
// usage with cache reads, cache writes and reasoning tokens, a finish reason) and changes it once
// or twice: an odd value at a random path, a truncated body, a corrupt byte, bytes that are not
// UTF-8 inside a string, events dropped, repeated, swapped or unknown, an upstream error event
// mid-stream, a connection closed early, another status or content type, CRLF framing; every body
// goes out split at random byte positions.
// Whatever the answer: no 500 (upstream garbage is the upstream failing, 502; a 500 is the
// gateway's own failure), no crash or hang; an error in the route's error body shape; a 200 body
// that is JSON; a 200 stream that ends as its protocol ends or with its error event; a translated
// stream's events in the order the SDKs parse (orderProblems); every usage record with whole,
// non-negative, bounded counts and cost. Money (docs/money.md, "Streams that end early"): the
// valid stream cut after each of its events is billed the upstream's counts once its final usage
// came, else an estimate (`estimated`); an estimate is at least what was relayed (characters ÷ 4,
// rounded up, held to the cap), so never 0 unless nothing was; and what a translated answer or
// stream shows as an estimate is what it is billed.
// What the gateway documents for a same-protocol answer (it "passes as the upstream sent it"):
// a JSON answer goes out as the upstream's bytes once it parsed as JSON (a 2xx whose body is not
// JSON is the upstream failing: the next deployment, else 502), so the client always gets JSON, but
// of whatever shape and with whatever usage the upstream wrote; a stream's events are relayed as
// received (a chat data line that is not JSON too: test/protocols/pass-streams.test.ts), so only a
// translated route is held to the route's shape, to JSON data lines and to bounded shown counts,
// and a same-protocol stream to events that are the upstream's own, whole (relayProblems). A 2xx
// JSON answer to a stream request (some cases answer one, valid or changed) is served as a stream
// made from it (providers/protocols/answer-events.ts), so it is checked as a stream, and its events
// as ones the gateway wrote (orderProblems), not relayed.
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets how many cases (default 200);
// FUZZ_VERBOSE=1 prints every case's outcome; FUZZ_DUMP=<case> prints that case's upstream and client bytes.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream } from '../helpers/fake-upstream.ts'
import { MAX_TOKEN_COUNT } from '../../index.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { SseParser } from '../../core/dispatch/sse.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { until } from '../helpers/until.ts'
import { mutate, play, split, type Ev, type Script, type Wire } from '../helpers/fuzz-answers.ts'
import { answerProblems, DELETE, get, ledgerProblems, list, MAX_TOKENS, ROUTES, streamEnd, usagesOf, type Obj, type Route } from '../helpers/fuzz.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 200)
/** FUZZ_VERBOSE=1 prints each case's status (and how a 200 stream ended). */
const VERBOSE = process.env.FUZZ_VERBOSE === '1'
/** FUZZ_DUMP=<n> prints case n's upstream bytes and what the client got. */
const DUMP = process.env.FUZZ_DUMP === undefined ? undefined : Number(process.env.FUZZ_DUMP)
/** Each case's answer must have come whole (status, body, stream end) within this. */
const CASE_MS = 15_000

// ── the client side ─────────────────────────────────────────────────────────────────────────

/** Each adapter's model, and the protocol its upstream speaks (a route of the same name relays it). */
const ADAPTERS = {
  'openai-compatible': { model: 'up/chat', protocol: 'chat' },
  'anthropic-compatible': { model: 'up/messages', protocol: 'messages' },
  'openai-responses': { model: 'up/responses', protocol: 'responses' },
} as const
type Adapter = keyof typeof ADAPTERS
const same = (route: Route, adapter: Adapter): boolean => ADAPTERS[adapter].protocol === route

/**
 * The input and output a client of `route` reads from a `usage` object it was shown, as written
 * (a sum the gateway shows may pass MAX_TOKEN_COUNT, which its own readers would count 0).
 */
function shownUsage (route: Route, u: unknown): { inputTokens: number, outputTokens: number } {
  const n = (...path: string[]): number => { const v = get(u, ...path); return typeof v === 'number' ? v : 0 }
  if (route === 'chat') return { inputTokens: n('prompt_tokens'), outputTokens: n('completion_tokens') }
  if (route === 'messages') return { inputTokens: n('input_tokens') + n('cache_read_input_tokens') + n('cache_creation_input_tokens'), outputTokens: n('output_tokens') }
  return { inputTokens: n('input_tokens'), outputTokens: n('output_tokens') }
}

/**
 * Characters of generated output (text, thinking or reasoning, tool arguments) in a client's
 * stream: what a stream that ends early is billed at least (÷ 4). An event is what its `event:`
 * line names (its data's `type` when it has none), as the gateway reads it: a relayed event whose
 * name and type disagree counts by its name.
 */
function relayedChars (route: Route, text: string): number {
  let n = 0
  // A delta that is only a blank line is left out: the one the gateway puts between the summary
  // parts of a Responses upstream's reasoning is its own, not generated output.
  const str = (v: unknown): number => typeof v === 'string' && v !== '\n\n' ? v.length : 0
  // Messages: the thinking of each block so far. A block given again whole (a Responses reasoning
  // item with its signature, once its streamed text's block was closed) repeats output: not counted.
  const thought: string[] = []
  for (const { name, data: d } of eventsOf(text)) {
    const type = name ?? get(d, 'type')
    if (route === 'messages' && type === 'content_block_start') thought.push('')
    if (route === 'messages' && get(d, 'delta', 'type') === 'thinking_delta' && thought.length > 0) {
      const t = String(get(d, 'delta', 'thinking'))
      if (thought.at(-1) === '' && thought.slice(0, -1).includes(t)) continue
      thought[thought.length - 1] += t
    }
    if (route === 'chat') {
      for (const c of list(d, 'choices')) {
        n += str(get(c, 'delta', 'content')) + str(get(c, 'delta', 'reasoning_content')) + str(get(c, 'delta', 'refusal'))
        for (const tc of list(c, 'delta', 'tool_calls')) n += str(get(tc, 'function', 'arguments'))
      }
    } else if (route === 'messages') {
      // A delta counts by its own type (one of another type is no text the SDK shows); so does
      // the text or thinking a block starts with.
      const delta = type === 'content_block_delta' ? get(d, 'delta') : undefined
      const dt = get(delta, 'type')
      n += str(get(delta, dt === 'text_delta' ? 'text' : dt === 'thinking_delta' ? 'thinking' : dt === 'input_json_delta' ? 'partial_json' : '-'))
      const block = type === 'content_block_start' ? get(d, 'content_block') : undefined
      const bt = get(block, 'type')
      n += str(get(block, bt === 'text' ? 'text' : bt === 'thinking' ? 'thinking' : '-'))
    } else if (typeof type === 'string' && /^response\.(output_text|refusal|reasoning_text|reasoning_summary_text|function_call_arguments)\.delta$/.test(type)) {
      n += str(get(d, 'delta'))
    }
  }
  return n
}

/** A client stream's events: name (undefined when unnamed) and data (parsed; a string when not JSON). */
function eventsOf (text: string): Array<{ name: string | undefined, data: unknown }> {
  const out: Array<{ name: string | undefined, data: unknown }> = []
  for (const block of text.replace(/\r\n?/g, '\n').split(/\n\n/)) {
    if (block.trim() === '') continue
    let name: string | undefined
    let data = ''
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) name = line.slice(7)
      else if (line.startsWith('data: ')) data += line.slice(6)
    }
    let d: unknown = data
    try { d = JSON.parse(data) } catch { /* kept as text */ }
    out.push({ name, data: d })
  }
  return out
}

/** The blocks (events, comments) of a stream's text, line ends made `\n`. */
const blocksOf = (text: string): string[] => text.replace(/\r\n?/g, '\n').split(/\n\n+/).map(b => b.trim()).filter(b => b !== '')

/**
 * What is wrong with a same-protocol stream, which relays the upstream's events as they came:
 * every event the client got is one the upstream sent, whole and unchanged (its bytes, read as
 * UTF-8 as the client reads them; the last one, cut short, written whole), or one the gateway
 * builds: the stream's end or error (`[DONE]`, an error chunk, `event: error`, `response.failed`)
 * or, on the Responses route, an unnamed upstream event named by its type.
 */
function relayProblems (route: Route, upstream: string, client: string): string[] {
  const sent = new Set(blocksOf(upstream))
  // The upstream's events as the gateway parses them: one it relays without its blank line (the
  // stream's last, cut short) is written again whole, as `event: <name>\ndata: <data>`.
  const parser = new SseParser()
  const parsed = new Set([...parser.push(upstream), ...parser.end()].map(e => `${e.event === undefined ? '' : `event: ${e.event}\n`}data: ${e.data}`.trim()))
  const sentData = new Set([...sent].map(b => b.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).join('\n')))
  const p: string[] = []
  for (const block of blocksOf(client)) {
    if (sent.has(block) || parsed.has(block)) continue
    if (route === 'chat' && (block === 'data: [DONE]' || block.startsWith('data: {"error":'))) continue
    if (route === 'messages' && block.startsWith('event: error\n')) continue
    if (route === 'responses' && /^event: (response\.failed|error)\n/.test(block)) continue
    if (route === 'responses' && block.startsWith('event: ')) {
      // Named by its type: the data as the upstream sent it, serialized again.
      const data = block.slice(block.indexOf('\ndata: ') + 7)
      try { if ([...sentData].some(d => { try { return JSON.stringify(JSON.parse(d)) === data } catch { return false } })) continue } catch { /* reported below */ }
    }
    p.push(`an event the upstream did not send: ${JSON.stringify(block).slice(0, 160)}`)
  }
  return p
}

/**
 * What is wrong with the order of a translated stream's events, which the gateway builds (what
 * the SDKs parse): messages – `message_start` first, every event named as its `type`, blocks
 * opened at consecutive indexes one at a time, deltas of the open block's kind, `message_delta`
 * once with no block open, nothing after `message_stop` or `error`; Responses – every event named
 * as its `type`, `sequence_number` counting from 0, `response.created` first, an item's events
 * between its `output_item.added` (at the next `output_index`) and `.done`, every item done before
 * `response.completed`, nothing after the end but `error` after `response.failed`; chat – every
 * chunk an unnamed `chat.completion.chunk`, no content after the finish reason, nothing after an
 * error chunk or `[DONE]`. (A tool call whose upstream id or name is not a string goes without it:
 * test/protocols/malformed-wire.test.ts.)
 */
function orderProblems (route: Route, text: string): string[] {
  const p: string[] = []
  const evs = eventsOf(text)
  if (route === 'messages') {
    let open: { index: unknown, kind: unknown } | undefined
    let blocks = 0
    let ended = false
    let deltas = 0
    const KIND: Record<string, string[]> = { text_delta: ['text'], thinking_delta: ['thinking'], signature_delta: ['thinking'], input_json_delta: ['tool_use', 'server_tool_use'] }
    evs.forEach(({ name, data }, i) => {
      if (ended) { p.push(`event ${i} ${name} after the end`); return }
      if (get(data, 'type') !== name) { p.push(`event ${i} named ${name}, type ${String(get(data, 'type'))}`); return }
      if (i === 0 && name !== 'message_start' && name !== 'error') p.push(`first event ${name}`)
      const index = get(data, 'index')
      if (name === 'error' || name === 'message_stop') ended = true
      else if (name === 'content_block_start') {
        if (open) p.push(`block ${String(index)} opened while ${open.index} is open`)
        if (index !== blocks) p.push(`block ${String(index)} opened after ${blocks} blocks`)
        open = { index, kind: get(data, 'content_block', 'type') }
        blocks++
      } else if (name === 'content_block_delta') {
        const type = String(get(data, 'delta', 'type'))
        if (!open || index !== open.index) p.push(`delta for block ${String(index)}, open: ${String(open?.index)}`)
        else if (!(KIND[type] ?? []).includes(String(open.kind))) p.push(`${type} in a ${String(open.kind)} block`)
      } else if (name === 'content_block_stop') {
        if (!open || index !== open.index) p.push(`stop of block ${String(index)}, open: ${String(open?.index)}`)
        open = undefined
      } else if (name === 'message_delta') {
        if (open) p.push(`message_delta with block ${String(open.index)} open`)
        if (++deltas > 1) p.push('a second message_delta')
      }
    })
    return p
  }
  if (route === 'responses') {
    const items: Array<'open' | 'done'> = []
    let ended: string | undefined
    evs.forEach(({ name, data }, i) => {
      if (ended !== undefined && !(ended === 'response.failed' && name === 'error')) { p.push(`event ${i} ${name} after ${ended}`); return }
      if (get(data, 'type') !== name) { p.push(`event ${i} named ${name}, type ${String(get(data, 'type'))}`); return }
      // A bare `error` ends a stream whose end the gateway could not relay (stream-out.ts blockedText): no number follows an end.
      const bare = name === 'error' && get(data, 'sequence_number') === undefined && i === evs.length - 1
      if (get(data, 'sequence_number') !== i && !bare) p.push(`event ${i} ${name} numbered ${String(get(data, 'sequence_number'))}`)
      if (i === 0 && name !== 'response.created' && name !== 'error') p.push(`first event ${name}`)
      const at = get(data, 'output_index')
      if (name === 'response.completed' || name === 'response.incomplete' || name === 'response.failed' || name === 'error') {
        ended = name
        if (name !== 'response.failed' && name !== 'error' && items.includes('open')) p.push(`${name} with an item open`)
        const output = get(data, 'response', 'output')
        if (name === 'response.completed' && Array.isArray(output) && output.length !== items.length) p.push(`response.completed holds ${output.length} items, ${items.length} streamed`)
      } else if (name === 'response.output_item.added') {
        if (at !== items.length) p.push(`item added at ${String(at)} after ${items.length}`)
        items.push('open')
      } else if (typeof at === 'number') {
        if (items[at] !== 'open') p.push(`${name} for item ${at}, ${items[at] ?? 'never added'}`)
        if (name === 'response.output_item.done') items[at] = 'done'
      }
    })
    return p
  }
  let finished = false
  let ended: string | undefined
  evs.forEach(({ name, data }, i) => {
    if (ended !== undefined) { p.push(`event ${i} after ${ended}`); return }
    if (data === '[DONE]') { ended = '[DONE]'; return }
    if (name !== undefined) p.push(`a named event ${name}`)
    if (get(data, 'error') !== undefined) { ended = 'an error chunk'; return }
    if (get(data, 'object') !== 'chat.completion.chunk' || !Array.isArray(get(data, 'choices'))) { p.push(`event ${i} not a chunk: ${JSON.stringify(data).slice(0, 80)}`); return }
    for (const c of list(data, 'choices')) {
      if (finished && (get(c, 'delta', 'content') || get(c, 'delta', 'reasoning_content') || get(c, 'delta', 'tool_calls'))) p.push(`event ${i}: content after the finish reason`)
      if (typeof get(c, 'finish_reason') === 'string') finished = true
    }
  })
  return p
}

// ── the upstream side: valid answers ────────────────────────────────────────────────────────

// Every valid answer counts the same: 12 uncached input tokens, 4 cache reads, 3 cache writes
// (1 of them to a one-hour cache where the protocol says so), 20 output tokens (5 of them reasoning).
const CHAT_USAGE = {
  prompt_tokens: 19, completion_tokens: 20, total_tokens: 39, prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 5 },
}
const MESSAGES_INPUT = { input_tokens: 12, cache_creation_input_tokens: 3, cache_read_input_tokens: 4, cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 1 } }
const RESPONSES_USAGE = { input_tokens: 19, input_tokens_details: { cached_tokens: 4 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 39 }
/** The answer's text in its streamed pieces (characters of 2 to 4 UTF-8 bytes: a random split may cut one). */
const TEXT = ['Calling', ' the tools ☂️', ' for é and 中.']
const THINKING = ['Let me', ' think.']
/** Two calls of the tool, each with its arguments in streamed pieces. */
const CALLS = [{ id: 'call_1', args: ['{"city":', '"a"}'] }, { id: 'call_2', args: ['{"ci', 'ty":"中"}'] }]
const join = (xs: string[]): string => xs.join('')

function chatAnswer (): Obj {
  return {
    id: 'chatcmpl-up1', object: 'chat.completion', created: 1767225600, model: 'up-model',
    choices: [{
      index: 0, logprobs: null, finish_reason: 'tool_calls',
      message: { role: 'assistant', content: join(TEXT), reasoning_content: join(THINKING), refusal: null,
        tool_calls: CALLS.map(c => ({ id: c.id, type: 'function', function: { name: 'weather', arguments: join(c.args) } })) },
    }],
    usage: structuredClone(CHAT_USAGE),
  }
}

function chatStream (): Ev[] {
  const chunk = (delta: Obj, finish: string | null = null): Ev =>
    ['', { id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: 1767225600, model: 'up-model', choices: [{ index: 0, delta, finish_reason: finish }] }]
  return [
    chunk({ role: 'assistant', content: '' }),
    ...THINKING.map(r => chunk({ reasoning_content: r })),
    ...TEXT.map(c => chunk({ content: c })),
    ...CALLS.flatMap((c, index) => [
      chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: 'weather', arguments: '' } }] }),
      ...c.args.map(a => chunk({ tool_calls: [{ index, function: { arguments: a } }] })),
    ]),
    chunk({}, 'tool_calls'),
    ['', { id: 'chatcmpl-up1', object: 'chat.completion.chunk', created: 1767225600, model: 'up-model', choices: [], usage: structuredClone(CHAT_USAGE) }],
    ['', '[DONE]'],
  ]
}

function messagesAnswer (): Obj {
  return {
    id: 'msg_up1', type: 'message', role: 'assistant', model: 'up-model',
    content: [
      { type: 'thinking', thinking: join(THINKING), signature: 'c2lnLW1zZw==' },
      { type: 'text', text: join(TEXT) },
      ...CALLS.map(c => ({ type: 'tool_use', id: c.id.replace('call', 'toolu'), name: 'weather', input: JSON.parse(join(c.args)) })),
    ],
    stop_reason: 'tool_use', stop_sequence: null,
    usage: { ...structuredClone(MESSAGES_INPUT), output_tokens: 20 },
  }
}

function messagesStream (): Ev[] {
  const ev = (name: string, data: Obj): Ev => [name, { type: name, ...data }]
  const delta = (index: number, d: Obj): Ev => ev('content_block_delta', { index, delta: d })
  return [
    ev('message_start', { message: { id: 'msg_up1', type: 'message', role: 'assistant', model: 'up-model', content: [], stop_reason: null, stop_sequence: null,
      usage: { ...structuredClone(MESSAGES_INPUT), output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
    ...THINKING.map(thinking => delta(0, { type: 'thinking_delta', thinking })),
    delta(0, { type: 'signature_delta', signature: 'c2lnLW1zZw==' }),
    ev('content_block_stop', { index: 0 }),
    ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    ev('ping', {}),
    ...TEXT.map(text => delta(1, { type: 'text_delta', text })),
    ev('content_block_stop', { index: 1 }),
    ...CALLS.flatMap((c, i): Ev[] => [
      ev('content_block_start', { index: 2 + i, content_block: { type: 'tool_use', id: c.id.replace('call', 'toolu'), name: 'weather', input: {} } }),
      ...c.args.map(partial_json => delta(2 + i, { type: 'input_json_delta', partial_json })),
      ev('content_block_stop', { index: 2 + i }),
    ]),
    ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 20 } }),
    ev('message_stop', {}),
  ]
}

const REASONING_ITEM = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: join(THINKING) }], encrypted_content: 'ZW5jcnlwdGVk' }
const MESSAGE_ITEM = { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: join(TEXT), annotations: [] }] }
const CALL_ITEMS = CALLS.map((c, i) => ({ type: 'function_call', id: `fc_${i + 1}`, call_id: c.id, name: 'weather', arguments: join(c.args), status: 'completed' }))

function responsesAnswer (): Obj {
  return {
    id: 'resp_up1', object: 'response', created_at: 1767225600, status: 'completed', error: null, incomplete_details: null,
    model: 'up-model', output: structuredClone([REASONING_ITEM, MESSAGE_ITEM, ...CALL_ITEMS]), usage: structuredClone(RESPONSES_USAGE),
    parallel_tool_calls: true, tool_choice: 'auto', tools: [], store: false,
  }
}

function responsesStream (): Ev[] {
  let seq = 0
  const ev = (type: string, data: Obj): Ev => [type, { type, sequence_number: seq++, ...data }]
  const shell = { ...responsesAnswer(), status: 'in_progress', output: [], usage: null }
  const part = { type: 'output_text', text: '', annotations: [] }
  const summary = { type: 'summary_text', text: '' }
  const text = join(TEXT)
  return [
    ev('response.created', { response: shell }),
    ev('response.in_progress', { response: shell }),
    ev('response.output_item.added', { output_index: 0, item: { type: 'reasoning', id: 'rs_1', summary: [] } }),
    ev('response.reasoning_summary_part.added', { item_id: 'rs_1', output_index: 0, summary_index: 0, part: summary }),
    ...THINKING.map(delta => ev('response.reasoning_summary_text.delta', { item_id: 'rs_1', output_index: 0, summary_index: 0, delta })),
    ev('response.reasoning_summary_text.done', { item_id: 'rs_1', output_index: 0, summary_index: 0, text: join(THINKING) }),
    ev('response.reasoning_summary_part.done', { item_id: 'rs_1', output_index: 0, summary_index: 0, part: { ...summary, text: join(THINKING) } }),
    ev('response.output_item.done', { output_index: 0, item: structuredClone(REASONING_ITEM) }),
    ev('response.output_item.added', { output_index: 1, item: { ...MESSAGE_ITEM, status: 'in_progress', content: [] } }),
    ev('response.content_part.added', { item_id: 'msg_1', output_index: 1, content_index: 0, part }),
    ...TEXT.map(delta => ev('response.output_text.delta', { item_id: 'msg_1', output_index: 1, content_index: 0, delta, logprobs: [] })),
    ev('response.output_text.done', { item_id: 'msg_1', output_index: 1, content_index: 0, text, logprobs: [] }),
    ev('response.content_part.done', { item_id: 'msg_1', output_index: 1, content_index: 0, part: { ...part, text } }),
    ev('response.output_item.done', { output_index: 1, item: structuredClone(MESSAGE_ITEM) }),
    ...CALL_ITEMS.flatMap((item, i): Ev[] => [
      ev('response.output_item.added', { output_index: 2 + i, item: { ...item, arguments: '', status: 'in_progress' } }),
      ...CALLS[i]!.args.map(delta => ev('response.function_call_arguments.delta', { item_id: item.id, output_index: 2 + i, delta })),
      ev('response.function_call_arguments.done', { item_id: item.id, output_index: 2 + i, arguments: item.arguments }),
      ev('response.output_item.done', { output_index: 2 + i, item: structuredClone(item) }),
    ]),
    ev('response.completed', { response: responsesAnswer() }),
  ]
}

/** The valid answer of an adapter, as events (one, named '', for a JSON answer). */
function validAnswer (adapter: Adapter, stream: boolean): Ev[] {
  const p = ADAPTERS[adapter].protocol
  if (!stream) return [['', p === 'chat' ? chatAnswer() : p === 'messages' ? messagesAnswer() : responsesAnswer()]]
  return p === 'chat' ? chatStream() : p === 'messages' ? messagesStream() : responsesStream()
}

/** The index of the event of a valid stream that carries its final usage. */
function finalUsageIndex (adapter: Adapter): number {
  const events = validAnswer(adapter, true)
  const p = ADAPTERS[adapter].protocol
  if (p === 'messages') return events.findIndex(e => e[0] === 'message_delta')
  if (p === 'responses') return events.findIndex(e => e[0] === 'response.completed')
  return events.findIndex(e => typeof e[1] === 'object' && 'usage' in e[1])
}

/** The bytes of one event of an answer (`eol`: the SSE line end). */
function encode (stream: boolean, [name, payload]: Ev, eol: string): Buffer {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload)
  if (!stream || name === '!raw') return Buffer.from(text)
  return Buffer.from(`${name === '' ? '' : `event: ${name}${eol}`}data: ${text}${eol}${eol}`)
}

// ── mutations ───────────────────────────────────────────────────────────────────────────────

/** Events an upstream of a protocol may send that the gateway does not know (heartbeats, comments, new event types). */
const UNKNOWN: Record<string, Ev[]> = {
  chat: [['ping', {}], ['!raw', ': OPENROUTER PROCESSING\n\n'], ['', { somethingNew: { a: 1 } }], ['', '[]'], ['', { choices: [] }], ['', 'null'],
    ['', { choices: [{ index: 1, delta: { content: 'second choice' } }] }]],
  messages: [['ping', { type: 'ping' }], ['fooEvent', { type: 'fooEvent' }], ['!raw', ': keep-alive\n\n'],
    ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: { type: 'x' } } }],
    ['content_block_start', { type: 'content_block_start', index: 7, content_block: { type: 'server_tool_use', id: 's1', name: 'web_search', input: {} } }],
    ['', { type: 'unnamed' }]],
  responses: [['response.foo', { type: 'response.foo' }], ['keepalive', { type: 'keepalive' }], ['!raw', ': keep-alive\n\n'],
    ['response.output_text.annotation.added', { type: 'response.output_text.annotation.added', item_id: 'msg_1', output_index: 1, annotation: {} }],
    ['', { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'unnamed' }]],
}

/** An upstream's error event mid-stream, in its protocol. */
function errorEvent (protocol: string, type: string): Ev {
  if (protocol === 'chat') return ['', { error: { message: 'fuzzed', type, code: type === 'rate_limit_exceeded' ? 429 : 'x' } }]
  if (protocol === 'messages') return ['error', { type: 'error', error: { type, message: 'fuzzed' } }]
  return type === 'failed'
    ? ['response.failed', { type: 'response.failed', sequence_number: 99, response: { ...responsesAnswer(), status: 'failed', error: { code: 'server_error', message: 'fuzzed' } } }]
    : ['error', { type: 'error', sequence_number: 99, code: type, message: 'fuzzed', param: null }]
}

/** An upstream's error body, in its protocol. */
function errorBody (protocol: string): Obj {
  return protocol === 'messages' ? { type: 'error', error: { type: 'overloaded_error', message: 'fuzzed https://x.example/y sk-abcdefghijklmnop' } }
    : { error: { message: 'fuzzed', type: 'server_error', code: null, param: null } }
}

t.test(`fuzz the compatible adapters' answers – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# compatible-answers fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  let script: Script | undefined
  const serve = (res: ServerResponse): Promise<void> => play(res, script)
  const ups = await Promise.all([0, 1, 2].map(() => startFakeUpstream((_req, res) => serve(res))))
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const price = { input: 1, cachedInput: 0.5, cacheWrite: 1.25, cacheWrite1h: 2, output: 2 }
  // No circuit opens on the garbage: every case reaches its upstream.
  const circuit = { failureThreshold: 1_000_000, coolDownMs: 0 }
  const params = ['max_tokens', 'tools', 'tool_choice', 'stream', 'thinking', 'reasoning_effort']
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [
        { name: 'up-chat', adapter: 'openai-compatible', circuit, config: { baseUrl: `${ups[0]!.origin}/v1`, apiKey: 'sk-up' } },
        { name: 'up-msg', adapter: 'anthropic-compatible', circuit, config: { baseUrl: ups[1]!.origin, apiKey: 'sk-ant-up' } },
        { name: 'up-resp', adapter: 'openai-responses', circuit, config: { baseUrl: `${ups[2]!.origin}/v1`, apiKey: 'sk-up' } },
      ],
      models: [
        { id: 'up/chat', price, supported_parameters: params, deployments: [{ provider: 'up-chat', model: 'up-model' }] },
        { id: 'up/messages', price, supported_parameters: params, deployments: [{ provider: 'up-msg', model: 'up-model' }] },
        { id: 'up/responses', price, supported_parameters: params, deployments: [{ provider: 'up-resp', model: 'up-model' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); for (const u of ups) await u.close(); await ledger.close() })
  const base = await listen(app)
  const rnd = prng(SEED)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
  const int = (n: number): number => Math.floor(rnd() * n)
  const odd = (): unknown => pick([
    () => -1, () => 0, () => 1.5, () => 1e308, () => -1e308, () => 2 ** 53 + 2, () => 1e15, () => int(MAX_TOKEN_COUNT), () => MAX_TOKEN_COUNT,
    () => MAX_TOKEN_COUNT + 1, () => 'NaN', () => 'Infinity', () => '12',
    () => 'str', () => '', () => true, () => false, () => null, () => [], () => [1, 'a', null], () => ({}), () => ({ text: 'x' }),
    () => ({ type: 'text', text: 'x' }), () => ({ type: 'function_call' }), () => ({ type: 'tool_use' }), () => ({ index: 0, function: {} }),
    () => 'x'.repeat(int(2000)), () => 'y'.repeat(5000), () => '\u0000\ud800', () => '{"city":', () => 'stop', () => 'length', () => 'max_tokens', () => 'refusal', () => DELETE,
  ])()

  const headersOf = (stream: boolean): Record<string, string> => stream ? { 'content-type': 'text/event-stream' } : { 'content-type': 'application/json' }

  /** A protocol's events, error events, statuses and content types, for the mutations. */
  const wireOf = (protocol: string): Wire => ({
    odd,
    unknownEvent: () => structuredClone(pick(UNKNOWN[protocol]!)),
    errorEvent: () => {
      const type = protocol === 'chat' ? pick(['server_error', 'rate_limit_exceeded', 'invalid_request_error', 'foo'])
        : protocol === 'messages' ? pick(['overloaded_error', 'api_error', 'rate_limit_error', 'invalid_request_error', 'foo_error'])
          : pick(['server_error', 'rate_limit_exceeded', 'failed', 'foo'])
      return [errorEvent(protocol, type), type]
    },
    statuses: [201, 204, 206, 302, 400, 401, 403, 404, 408, 413, 422, 424, 429, 500, 502, 503, 504, 529],
    withStatus: (headers, events) => {
      if (rnd() >= 0.5) return ''
      events.splice(0, events.length, ['!raw', JSON.stringify(errorBody(protocol))])
      headers['content-type'] = 'application/json'
      return ' with an error body'
    },
    contentTypes: ['text/plain', 'application/json', 'text/event-stream', 'text/html', 'application/x-ndjson'],
    junk: ['', 'not json', '{"a":', 'null', '42', '"str"', '[]', '<html>502 Bad Gateway</html>', '\u0000\u0001', '\ufeff{}'],
    notUtf8: true,
  })

  /** A valid answer, or one changed by 1–2 random mutations (their descriptions in `changes`). */
  function answer (adapter: Adapter, stream: boolean, mutateIt: boolean, changes: string[]): Script {
    const events: Ev[] = validAnswer(adapter, stream)
    const headers = headersOf(stream)
    // CRLF framing is as valid as LF; a mutated case picks either.
    const eol = mutateIt && rnd() < 0.2 ? '\r\n' : '\n'
    if (eol !== '\n') changes.push('CRLF framing')
    const m = mutate(rnd, wireOf(ADAPTERS[adapter].protocol), events, headers, stream, !mutateIt ? 0 : rnd() < 0.3 ? 2 : 1, changes)
    const bytes = m.bytes(Buffer.concat(events.map(e => encode(stream, e, eol))))
    return { status: m.status, headers, writes: split(bytes, rnd), close: m.close }
  }

  /** A call's answer. `stream` is whether it came as a stream (event-stream content type). */
  const call = async (route: Route, adapter: Adapter, stream: boolean): Promise<{ status: number, text: string, traceId: string | null, stream: boolean }> => {
    const res = await fetch(`${base}${ROUTES[route].path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ROUTES[route].body, model: ADAPTERS[adapter].model, ...(stream ? { stream } : {}) }),
      signal: AbortSignal.timeout(CASE_MS),
    })
    const sse = (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
    return { status: res.status, text: await res.text(), traceId: res.headers.get('x-gw-trace-id'), stream: stream && (res.status !== 200 || sse) }
  }

  /**
   * What is wrong with one answer the client got (empty: nothing). A same-protocol answer passes
   * as the upstream wrote it: its data lines, shape and counts are the upstream's.
   */
  function check (route: Route, adapter: Adapter, stream: boolean, status: number, text: string, valid: boolean, upstream = '', whole = false): string[] {
    const translated = !same(route, adapter)
    const problems = answerProblems(route, stream, status, text, valid, translated)
    // A stream made from a whole answer (`whole`) holds events the gateway wrote, in order, even on the same protocol.
    if (status === 200 && stream) problems.push(...(translated || whole ? orderProblems(route, text) : relayProblems(route, upstream, text)).slice(0, 3))
    return problems
  }

  type Rec = Awaited<ReturnType<typeof ledger.listUsage>>[number]
  /** What a case's usage record must show, checked once every charge is written. */
  interface Expect { name: string, route: Route, adapter: Adapter, stream: boolean, text: string, traceId: string, final?: boolean }
  const expects: Expect[] = []

  /** What is wrong with the usage record of one 200 answer. */
  function checkRecord (x: Expect, r: Rec | undefined): string[] {
    if (r === undefined) return ['no usage record for a 200 answer']
    const problems: string[] = []
    if (x.final === true && (r.estimated || r.outputTokens !== 20)) problems.push(`the upstream's final usage came, yet billed ${r.outputTokens} output${r.estimated ? ', estimated' : ''}`)
    if (x.final === false && !r.estimated) problems.push(`a stream cut before its final usage billed as not estimated (${r.outputTokens} output)`)
    // A JSON answer without usage is billed its whole body's characters ÷ 4: never 0.
    if (r.estimated && !x.stream && r.outputTokens === 0) problems.push('an estimated JSON answer billed 0 output')
    if (r.estimated && x.stream) {
      // Billed at least what was relayed: output characters ÷ 4, rounded up (held to the cap).
      const relayed = Math.min(MAX_TOKENS, Math.ceil(relayedChars(x.route, x.text) / 4))
      if (r.outputTokens < relayed) problems.push(`estimated ${r.outputTokens} output tokens for ${relayed} relayed`)
    }
    if (r.estimated && !same(x.route, x.adapter)) {
      // What a translated answer or stream shows as an estimate is what it is billed: its last usage.
      let shown: unknown
      if (x.stream) {
        for (const line of x.text.split('\n')) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
          try { shown = usagesOf(JSON.parse(line.slice(6))).at(-1) ?? shown } catch { /* checked elsewhere */ }
        }
      } else {
        try { shown = usagesOf(JSON.parse(x.text)).at(-1) } catch { /* checked elsewhere */ }
      }
      // A messages stream's last usage is the message_delta's (message_start's is provisional);
      // a stream that failed shows none on chat and messages (their error events carry no usage).
      const end = x.stream ? streamEnd(x.route, x.text) : true
      if (shown !== undefined && (end === true || x.route === 'responses')) {
        const u = shownUsage(x.route, shown)
        if (u.inputTokens !== r.inputTokens || u.outputTokens !== r.outputTokens) {
          problems.push(`shown ${u.inputTokens} in / ${u.outputTokens} out, billed ${r.inputTokens} in / ${r.outputTokens} out (estimated)`)
        }
      }
    }
    return problems
  }

  // The answers the cases start from pass, on every route, adapter and mode: a case is one change
  // away from a valid answer.
  let calls = 0
  for (const route of Object.keys(ROUTES) as Route[]) {
    for (const adapter of Object.keys(ADAPTERS) as Adapter[]) {
      for (const stream of [false, true]) {
        script = answer(adapter, stream, false, [])
        const { status, text, traceId, stream: streamed } = await call(route, adapter, stream)
        calls++
        t.equal(streamed, stream, `${route} → ${adapter}${stream ? ', streamed' : ''}: ${stream ? 'a stream' : 'JSON'}`)
        t.same(check(route, adapter, stream, status, text, true, Buffer.concat(script.writes).toString('utf8')), [], `${route} → ${adapter}${stream ? ', streamed' : ''}`)
        if (traceId) expects.push({ name: `valid ${route} → ${adapter}${stream ? ', streamed' : ''}`, route, adapter, stream, text, traceId, final: true })
      }
    }
  }
  const valid = (await until(async () => (await ledger.listUsage({})).length === calls, 5000)) ? await ledger.listUsage({}) : []
  t.equal(valid.length, calls, 'each valid answer wrote its usage record')
  t.same(valid.filter(r => r.estimated || r.outputTokens !== 20 || r.inputTokens !== 19 || r.cachedInputTokens !== 4).map(r => `${r.traceId} ${r.provider}: ${JSON.stringify(r)}`), [],
    'billed as the upstream counted')

  // A stream cut after each of its events: before its final usage it is billed an estimate
  // (at least what it relayed); after it, the upstream's counts.
  const failures: string[] = []
  for (const route of Object.keys(ROUTES) as Route[]) {
    for (const adapter of Object.keys(ADAPTERS) as Adapter[]) {
      const events = validAnswer(adapter, true)
      const last = finalUsageIndex(adapter)
      for (let k = 1; k < events.length; k++) {
        script = { status: 200, headers: headersOf(true), writes: [Buffer.concat(events.slice(0, k).map(e => encode(true, e, '\n')))], close: 'destroy' }
        const name = `${route} → ${adapter}, cut after ${k} of ${events.length} events`
        const { status, text, traceId } = await call(route, adapter, true)
        const problems = check(route, adapter, true, status, text, false, Buffer.concat(script.writes).toString('utf8'))
        if (status === 200 && traceId) expects.push({ name, route, adapter, stream: true, text, traceId, final: k > last })
        if (status !== 200 && relayedChars(route, text) > 0) problems.push('relayed output, yet not a 200')
        if (problems.length) failures.push(`${name}: ${problems.join('; ')}`)
      }
    }
  }
  t.same(failures, [], 'streams cut after each event')

  const statuses = new Map<number, number>()
  let jsonForStream = 0
  for (let i = 0; i < CASES; i++) {
    const route = pick(Object.keys(ROUTES) as Route[])
    const adapter = pick(Object.keys(ADAPTERS) as Adapter[])
    const stream = rnd() < 0.5
    const changes: string[] = []
    // A stream request answered with one JSON answer (an upstream that does not stream).
    const whole = stream && rnd() < 0.25
    if (whole) changes.push('answered with one JSON answer')
    script = answer(adapter, stream && !whole, true, changes)
    const name = `case ${i} (${route} → ${adapter}${stream ? ', streamed' : ''}; ${changes.join('; ') || 'unchanged'})`
    let problems: string[]
    try {
      const { status, text, traceId, stream: streamed } = await call(route, adapter, stream)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      if (stream && !streamed) jsonForStream++
      if (DUMP === i) console.error(`# case ${i}, upstream:\n${Buffer.concat(script.writes).toString('latin1')}\n# client (${status}):\n${text}`)
      problems = check(route, adapter, streamed, status, text, changes.length === (whole ? 1 : 0), Buffer.concat(script.writes).toString('utf8'), whole)
      if (status === 200 && traceId) expects.push({ name, route, adapter, stream: streamed, text, traceId })
      if (VERBOSE) console.error(`# ${status} ${name}${status === 200 && stream ? ` → ${streamEnd(route, text) === true ? 'end' : 'error event'}` : ''}`)
    } catch (err) {
      problems = [`no whole answer within ${CASE_MS} ms: ${String(err)}`]
    }
    if (problems.length) failures.push(`${name}: ${problems.join('; ')}`)
  }
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; stream requests answered JSON: ${jsonForStream}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)

  // Every charge is written (the in-process ledger batches them) before the records are read.
  let seen = -1
  await until(async () => { const n = (await ledger.listUsage({})).length; const same = n === seen; seen = n; return same }, 5000, 200)
  const records = await ledger.listUsage({})
  const byTrace = new Map(records.map(r => [r.traceId, r]))
  const recordProblems = expects.flatMap(x => checkRecord(x, byTrace.get(x.traceId)).map(p => `${x.name}: ${p}`))
  t.same(recordProblems, [], `${expects.length} 200 answers: each billed once, as its upstream counted or an estimate of what it relayed`)
  const badRecords = ledgerProblems(records, price)
  t.same(badRecords, [], `${records.length} usage records: whole, non-negative counts and costs`)
  t.equal((await fetch(`${base}/healthz`)).status, 200, 'the gateway is still up')
  t.equal((await fetch(`${base}/readyz`)).status, 200, 'and ready (no charge stuck in the spool)')
})
