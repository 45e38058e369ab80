// Seeded fuzzing of POST /v1/responses, /v1/messages/count_tokens and /v1/responses/input_tokens on
// a listening gateway with prepaid balance on (a funded organization, an SQLite ledger), over raw
// sockets. Each case takes a valid body rich in what the route reads (input items of every type,
// tools built-in and not, text.format, reasoning; for count_tokens system, media, tool_use,
// thinking) and mutates it once or twice: wrong types at random paths, deletions, odd values,
// huge strings, deep nesting, invalid UTF-8, invalid JSON. Whatever comes in:
// - no 5xx the gateway made up: a 5xx only when the fake upstream itself answered one (never on a
//   count, which counts locally when its upstream fails);
// - an error body in the route's shape: the numeric body on /v1/responses and input_tokens, the
//   messages body on count_tokens;
// - nothing refused with a 4xx the gateway made reaches the upstream, nor does a media URL naming a
//   private host (the media URL policy), on any of the three routes;
// - a refused call is not charged: no usage record, the balance unchanged, no hold left;
//   a 200 on /v1/responses is charged once (its own record, the balance down by its cost);
//   a count is never charged, whatever its status;
// - a 200 is JSON of the route's shape, or a stream that ends as the Responses API ends;
// - the process stays up.
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets how many cases (default 300);
// FUZZ_VERBOSE=1 prints every case and its answer.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import {
  startFakeUpstream, json, sse, chatCompletion, chatTextStream, messagesResponse, messagesTextStream, responsesResponse, responsesTextStream, type Recorded,
} from '../helpers/fake-upstream.ts'
import { rawRequest, head } from '../helpers/raw-http.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { pathsOf, setPath, get, answerProblems, DELETE, type Path } from '../helpers/fuzz.ts'
import { until } from '../helpers/until.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { HostResolver } from '../../core/pipeline/plugin.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 300)
const ORG = 'org-test'

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64')
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
/** A thinking block carried back in a reasoning item (what a messages upstream signed, as the gateway encodes it). */
const CARRIED = 'gw-thinking:' + Buffer.from(JSON.stringify({ type: 'thinking', thinking: 'hmm', signature: 'sig-1' })).toString('base64')

const RESPONSES_BODY = {
  model: 'resp/native',
  instructions: 'be brief',
  input: [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'dev note' }] },
    { type: 'message', role: 'system', content: 'sys note' },
    {
      type: 'message', role: 'user', content: [
        { type: 'input_text', text: 'hi' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'low' },
        { type: 'input_image', image_url: 'https://img.example.com/cat.png', detail: 'auto' },
        { type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${PDF}` },
      ],
    },
    { role: 'assistant', content: 'an item without its type' },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thought' }], encrypted_content: CARRIED },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling', annotations: [] }] },
    { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"a"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
    { type: 'function_call', call_id: 'call_2', name: 'read', namespace: 'fs', arguments: '{}' },
    { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'file text' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }] },
    { type: 'custom_tool_call', call_id: 'call_3', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
    { type: 'custom_tool_call_output', call_id: 'call_3', output: [{ type: 'input_text', text: 'done' }, { type: 'input_image', image_url: 'https://img.example.com/after.png' }] },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
    { type: 'additional_tools', tools: [{ type: 'function', name: 'extra', parameters: { type: 'object', properties: {} } }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'next?' }] },
  ],
  tools: [
    { type: 'function', name: 'weather', description: 'd', parameters: SCHEMA, strict: false },
    { type: 'namespace', name: 'fs', description: 'files', tools: [{ type: 'function', name: 'read', parameters: { type: 'object', properties: {} } }] },
    { type: 'custom', name: 'apply_patch', description: 'patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } },
    { type: 'web_search' },
    { type: 'file_search', vector_store_ids: ['vs_1'] },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  text: { format: { type: 'json_schema', name: 'out', schema: SCHEMA, strict: true }, verbosity: 'low' },
  reasoning: { effort: 'low', summary: 'auto' },
  include: ['reasoning.encrypted_content'],
  store: false,
  max_output_tokens: 64,
  temperature: 0.5,
  top_p: 1,
  metadata: { k: 'v' },
  user: 'u1',
  stream: false,
}

const COUNT_BODY = {
  model: 'msgvendor/msg-model',
  system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
  messages: [
    {
      role: 'user', content: [
        { type: 'text', text: 'hi' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'url', url: 'https://img.example.com/cat.png' } },
        { type: 'document', title: 'a.pdf', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
      ],
    },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig-1' }, { type: 'text', text: 'calling' }, { type: 'tool_use', id: 'tu_1', name: 'weather', input: { city: 'a' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'sunny' }] }] },
    { role: 'assistant', content: 'plain' },
    { role: 'user', content: 'next?' },
  ],
  tools: [{ name: 'weather', description: 'd', input_schema: SCHEMA }, { type: 'web_search_20250305', name: 'web_search', max_uses: 1 }],
  tool_choice: { type: 'auto' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
}

const MODELS = ['resp/native', 'vendor/chat-model', 'msgvendor/msg-model', 'vendor/text-only', 'nope/unknown']
const PRICE = { input: 1, cachedInput: 0.5, output: 2 }
const doc = (origin: string): Record<string, unknown> => ({
  providers: [
    { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${origin}/v1`, apiKey: 'sk-upstream' } },
    { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: origin, apiKey: 'sk-ant-upstream' } },
    { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${origin}/v1`, apiKey: 'sk-upstream' } },
  ],
  models: [
    // Its built-in tools pass (listed and priced per use); to the other upstreams they are dropped.
    {
      id: 'resp/native', input_modalities: ['text', 'image', 'file'], price: { ...PRICE, perUse: { web_search: 10, file_search: 2.5 } }, deployments: [{ provider: 'up-resp', model: 'up-resp' }],
      supported_parameters: ['temperature', 'top_p', 'max_output_tokens', 'tools', 'tool_choice', 'stream', 'reasoning', 'text', 'metadata', 'user', 'web_search', 'file_search'],
    },
    { id: 'vendor/chat-model', input_modalities: ['text', 'image', 'file'], price: PRICE, deployments: [{ provider: 'up-chat', model: 'up-chat' }] },
    {
      id: 'msgvendor/msg-model', input_modalities: ['text', 'image', 'file'], price: PRICE, deployments: [{ provider: 'up-msg', model: 'up-msg' }],
      supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata', 'reasoning_effort'],
    },
    { id: 'vendor/text-only', input_modalities: ['text'], price: PRICE, deployments: [{ provider: 'up-chat', model: 'up-text' }] },
  ],
  server: { bodyLimitBytes: 1024 * 1024, headersTimeoutMs: 2000, bodyTimeoutMs: 4000 },
})

/** DNS for the media URL policy: one public host, one private; anything else unknown. */
const resolveHost: HostResolver = async host => {
  if (host === 'img.example.com') return ['93.184.216.34']
  if (host === 'internal.example') return ['10.0.0.7']
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
}

/** The media URLs the policy refuses (private hosts): none reaches an upstream. */
const PRIVATE = /internal\.example|10\.0\.0\.7/

type Route = 'responses' | 'count_tokens' | 'input_tokens'
const PATHS: Record<Route, readonly string[]> = {
  responses: ['/v1/responses'],
  count_tokens: ['/v1/messages/count_tokens', '/v1/messages/count_tokens?beta=true'],
  input_tokens: ['/v1/responses/input_tokens'],
}
/** How the fake upstream answers a case: as its protocol does, or with an error of its own. */
type Mode = 'ok' | 500 | 503 | 429 | 400

interface Case { name: string, route: Route, path: string, headers: Record<string, string | number>, body: Buffer, stream: boolean, mode: Mode }

/** Values a field should not hold, or holds oddly, on these routes. */
function oddValues (route: Route): Array<[Path, unknown]> {
  if (route === 'count_tokens') {
    return [
      [['messages', 0, 'role'], 'system'], [['messages', 0, 'role'], 'tool'], [['messages'], []], [['system'], 'plain system'],
      [['messages', 0, 'content', 1, 'source', 'data'], '!!not base64'], [['messages', 0, 'content', 1, 'source', 'media_type'], 'image/svg+xml'],
      [['messages', 0, 'content', 2, 'source', 'url'], 'http://10.0.0.7/x.png'], [['messages', 0, 'content', 2, 'source', 'url'], 'https://internal.example/x.png'],
      [['messages', 0, 'content', 2, 'source', 'url'], 'file:///etc/passwd'], [['messages', 0, 'content', 2, 'source', 'url'], 'https://nowhere.invalid/x.png'],
      [['messages', 0, 'content', 0, 'type'], 'video'], [['thinking', 'budget_tokens'], -1], [['thinking'], { type: 'adaptive' }], [['tool_choice'], { type: 'tool', name: 'nope' }],
      [['mcp_servers'], [{ type: 'url', url: 'https://internal.example/mcp', name: 'm' }]], [['max_tokens'], 16], [['stream'], true], [['model'], 'msgvendor/msg-model'],
      [['model'], 'vendor/chat-model'], [['model'], 'vendor/text-only'], [['messages', 1, 'content', 2, 'input'], 'not an object'],
    ]
  }
  return [
    [['previous_response_id'], 'resp_123'], [['previous_response_id'], null], [['conversation'], 'conv_1'], [['background'], true], [['background'], false],
    [['prompt'], { id: 'pmpt_1' }], [['store'], true], [['stream'], true], [['stream'], null], [['max_output_tokens'], 0], [['max_output_tokens'], 1],
    [['max_output_tokens'], 1e9], [['max_output_tokens'], 1.5], [['max_output_tokens'], null], [['input'], 'just a string'], [['input'], []], [['input'], ''],
    [['input', 0], { type: 'item_reference', id: 'msg_1' }], [['input', 1, 'role'], 'tool'], [['input', 1, 'role'], 'critic'], [['input', 2, 'content', 1, 'image_url'], 'file:///etc/passwd'],
    [['input', 2, 'content', 1, 'image_url'], 'data:image/png;base64,@@@'], [['input', 2, 'content', 1, 'image_url'], 'data:image/jpg;base64,' + PNG],
    [['input', 2, 'content', 2, 'image_url'], 'http://10.0.0.7/x.png'], [['input', 2, 'content', 2, 'image_url'], 'https://internal.example/x.png'],
    [['input', 11, 'output', 1, 'image_url'], 'https://internal.example/x.png'], [['input', 9, 'output', 1, 'image_url'], 'https://internal.example/x.png'],
    [['input', 2, 'content', 3], { type: 'input_file', file_url: 'https://internal.example/a.pdf' }], [['input', 11, 'output', 1], { type: 'input_file', file_url: 'https://internal.example/a.pdf' }],
    [['input', 2, 'content', 1], { type: 'input_image', file_id: 'file_1' }], [['input', 2, 'content', 3], { type: 'input_file', file_id: 'file_1' }],
    [['input', 2, 'content', 3], { type: 'input_file', file_url: 'http://img.example.com/a.pdf' }], [['input', 2, 'content', 3, 'file_data'], 'data:application/zip;base64,UEsDBA=='],
    [['input', 4, 'encrypted_content'], 'gw-thinking:!!!'], [['input', 4, 'encrypted_content'], 'opaque-openai-blob'], [['input', 6, 'call_id'], 42],
    [['input', 6, 'arguments'], '{not json'], [['input', 7, 'output'], { weird: true }], [['tool_choice'], 'required'], [['tool_choice'], 'none'],
    [['tool_choice'], { type: 'function', name: 'nope' }], [['tool_choice'], { type: 'web_search' }], [['tool_choice'], { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'weather' }] }],
    [['tool_choice'], { type: 'custom', name: 'apply_patch' }], [['tools', 0, 'name'], 'n'.repeat(100)], [['tools', 1, 'name'], 'x'.repeat(80)], [['tools', 3], { type: 'mcp', server_url: 'https://internal.example' }],
    [['text', 'format'], { type: 'json_object' }], [['text', 'format', 'schema'], 'not a schema'], [['text', 'format', 'type'], 'xml'], [['reasoning', 'effort'], 'galaxy-brain'],
    [['include'], ['reasoning.encrypted_content', 'file_search_call.results']], [['temperature'], 1e308], [['top_p'], -3], [['service_tier'], 'flex'], [['truncation'], 'auto'],
    [['model'], 'resp/native'], [['model'], 'vendor/chat-model'], [['model'], 'msgvendor/msg-model'], [['model'], 'vendor/text-only'],
  ]
}

function generate (rnd: () => number): Case {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
  const int = (n: number): number => Math.floor(rnd() * n)
  const randomValue = (): unknown => pick([
    () => int(1e6) - 5e5, () => rnd(), () => -1, () => 0, () => 1e308, () => 'str', () => '', () => true, () => false, () => null,
    () => [], () => [1, 'a', null], () => ({}), () => ({ type: 'input_text' }), () => ({ type: 'text' }), () => 'x'.repeat(int(5000)), () => '\u0000\ud800',
    () => ({ __proto__: { polluted: true } }), () => ({ constructor: { prototype: { polluted: true } } }),
  ])()
  const nested = (n: number): string => rnd() < 0.5 ? '{"a":'.repeat(n) + '1' + '}'.repeat(n) : '['.repeat(n) + '1' + ']'.repeat(n)
  const route: Route = pick(['responses', 'responses', 'responses', 'count_tokens', 'count_tokens', 'input_tokens'] as const)
  const path = pick(PATHS[route])
  const body = structuredClone(route === 'count_tokens' ? COUNT_BODY : RESPONSES_BODY) as Record<string, unknown>
  if (rnd() < 0.4) body.model = pick(MODELS)
  if (route === 'responses' && rnd() < 0.3) body.stream = true
  const names: string[] = []
  // Structural mutations change the body; a serial one (the last) changes its bytes.
  let serial: ((text: string) => { text: string | Buffer, name: string }) | undefined
  const mutations = rnd() < 0.1 ? 0 : 1 + int(2)
  for (let m = 0; m < mutations; m++) {
    const paths = pathsOf(body)
    const kind = int(12)
    if (kind <= 3 && paths.length) { // a wrong type at one path
      const p = pick(paths)
      const v = randomValue()
      setPath(body, p, v)
      names.push(`${p.join('.')} = ${JSON.stringify(v)?.slice(0, 40)}`)
    } else if (kind === 4 && paths.length) { // a member deleted (an array's item spliced out)
      const p = pick(paths)
      const parent = get(body, ...p.slice(0, -1))
      if (Array.isArray(parent)) parent.splice(Number(p[p.length - 1]), 1)
      else setPath(body, p, DELETE)
      names.push(`delete ${p.join('.')}`)
    } else if (kind <= 6) { // an odd value where the route reads it
      const [p, v] = pick(oddValues(route))
      if (get(body, ...p.slice(0, -1)) === null || typeof get(body, ...p.slice(0, -1)) !== 'object') continue
      setPath(body, p, structuredClone(v))
      names.push(`odd ${p.join('.')} = ${JSON.stringify(v)?.slice(0, 60)}`)
    } else if (kind === 7 && paths.length) { // a huge string, some over the size limits
      const p = pick(paths)
      const n = pick([100_000, 200_000, 300_000, 2_000_000])
      setPath(body, p, 'y'.repeat(n))
      names.push(`string of ${n} at ${p.join('.')}`)
    } else if (kind === 8 && paths.length && !serial) { // deep nesting somewhere
      const p = pick(paths)
      const depth = pick([100, 127, 129, 1000, 20_000])
      setPath(body, p, '@@nested@@')
      serial = text => ({ text: text.replace('"@@nested@@"', nested(depth)), name: `nested ${depth} at ${p.join('.')}` })
    } else if (kind === 9 && !serial) { // invalid UTF-8 in a string
      const strings = paths.filter(p => typeof get(body, ...p) === 'string')
      if (!strings.length) continue
      const p = pick(strings)
      setPath(body, p, 'h\u0001i')
      const byte = pick([0xff, 0xc0, 0xed, 0x80, 0xfe])
      serial = text => { const b = Buffer.from(text); b[b.indexOf(0x01)] = byte; return { text: b, name: `invalid UTF-8 (${byte.toString(16)}) at ${p.join('.')}` } }
    } else if (!serial) { // invalid JSON: truncated, a byte changed, or not JSON at all
      const how = int(3)
      serial = text => {
        if (how === 0) return { text: text.slice(0, int(text.length)), name: 'truncated JSON' }
        if (how === 1) { const b = Buffer.from(text); b[int(b.length)] = pick([0x7b, 0x5d, 0x22, 0x2c, 0x00, 0xff, 0x5c]); return { text: b, name: 'corrupted JSON' } }
        return { text: Buffer.from(Array.from({ length: int(200) + 1 }, () => int(256))), name: 'random bytes' }
      }
    }
  }
  let bytes: string | Buffer = JSON.stringify(body)
  if (serial) { const s = serial(bytes); bytes = s.text; names.push(s.name) }
  const stream = route === 'responses' && body.stream === true
  const mode: Mode = rnd() < 0.12 ? pick([500, 503, 429, 400] as const) : 'ok'
  const headers: Record<string, string | number> = route === 'count_tokens' && rnd() < 0.5
    ? { 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
    : { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }
  const name = `${path} ${String(body.model).slice(0, 30)}${stream ? ' stream' : ''}${mode === 'ok' ? '' : ` upstream ${mode}`}: ${names.join('; ') || 'valid'}`
  return { name, route, path, headers, body: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes), stream, mode }
}

/** The protocol a request to the fake upstream speaks, by its path. */
function upstreamKind (req: Recorded): 'chat' | 'count' | 'messages' | 'responses' {
  const p = req.path.split('?')[0]
  if (p.endsWith('/chat/completions')) return 'chat'
  if (p.endsWith('/messages/count_tokens')) return 'count'
  if (p.endsWith('/messages')) return 'messages'
  return 'responses'
}

/** What is wrong with a count's 200 body. */
function countProblem (route: Route, text: string): string | undefined {
  let b: unknown
  try { b = JSON.parse(text) } catch { return `a 200 count that is not JSON: ${text.slice(0, 120)}` }
  const n = get(b, 'input_tokens')
  if (!Number.isSafeInteger(n) || (n as number) < 0) return `a 200 count without a whole input_tokens: ${text.slice(0, 120)}`
  if (route === 'input_tokens' && get(b, 'object') !== 'response.input_tokens') return `an input_tokens answer without its object: ${text.slice(0, 120)}`
  return undefined
}

/** What is wrong with an error answer's body on `route`: the messages body on count_tokens, else the numeric one. */
function errorShapeProblem (route: Route, status: number, text: string): string | undefined {
  let e: unknown
  try { e = JSON.parse(text) } catch { return `error body is not JSON: ${text.slice(0, 120)}` }
  if (route === 'count_tokens') {
    const ok = get(e, 'type') === 'error' && typeof get(e, 'error', 'type') === 'string' && typeof get(e, 'error', 'message') === 'string'
    return ok ? undefined : `not the messages error body: ${text.slice(0, 200)}`
  }
  const code = get(e, 'error', 'code')
  const ok = typeof get(e, 'error', 'message') === 'string' && (code === status || typeof code === 'string') && get(e, 'type') === undefined
  return ok ? undefined : `not the numeric error body: ${text.slice(0, 200)}`
}

t.test(`fuzz /v1/responses and the token counts – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  let mode: Mode = 'ok'
  const up = await startFakeUpstream((req: Recorded, res: ServerResponse) => {
    const kind = upstreamKind(req)
    if (mode !== 'ok') {
      const body = kind === 'messages' || kind === 'count' ? { type: 'error', error: { type: 'api_error', message: `upstream ${mode}` } } : { error: { message: `upstream ${mode}`, type: 'server_error' } }
      return json(res, mode, body)
    }
    if (kind === 'count') return json(res, 200, { input_tokens: 42 })
    const stream = get(req.body, 'stream') === true
    if (kind === 'chat') return void (stream ? sse(res, chatTextStream(['ok'])) : json(res, 200, chatCompletion('ok')))
    if (kind === 'messages') return void (stream ? sse(res, messagesTextStream(['ok'])) : json(res, 200, messagesResponse('ok')))
    return void (stream ? sse(res, responsesTextStream(['ok'])) : json(res, 200, responsesResponse('ok')))
  })
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const app = await buildTestApp({
    ledger,
    resolveHost,
    pipeline: [
      { plugin: 'size-limit', config: { maxBytes: 256 * 1024 } }, AUTH_ENTRY, { plugin: 'media-validation' },
      { plugin: 'balance', config: { organizations: [{ id: ORG, initialBalance: 1000 }] } },
    ],
    doc: doc(up.origin),
  })
  t.teardown(async () => { await app.close(); await up.close(); await ledger.close() })
  const port = Number(new URL(await listen(app)).port)
  const rnd = prng(SEED)
  const failures: string[] = []
  const statuses = new Map<string, number>()
  const balance = async (): Promise<{ balance: number, reserved: number }> => (await ledger.getBalance(ORG))!
  const records = async (): Promise<Array<{ traceId: string, cost: number }>> => ledger.listUsage({})
  const initial = await balance()
  t.equal(initial.balance, 1000 * 1e6, 'the organization is funded')
  let charged = 0

  for (let i = 0; i < CASES; i++) {
    const c = generate(rnd)
    mode = c.mode
    const calls = up.requests.length
    const before = await balance()
    const usageBefore = (await records()).length
    const headText = head('POST', c.path, { ...c.headers, 'content-length': c.body.length })
    const res = await rawRequest(port, { head: Buffer.concat([Buffer.from(headText, 'latin1'), c.body]), waitCloseMs: 0, maxMs: 8000 })
    const reached = up.requests.length - calls
    const key = `${c.route} ${res.status}`
    statuses.set(key, (statuses.get(key) ?? 0) + 1)
    const problems: string[] = []
    const upstreamFailed = c.mode !== 'ok' && reached > 0
    if (res.status === 0) problems.push(`no answer (${res.raw.slice(0, 120)})`)
    // An upstream's 5xx is the gateway's 502/503; its 429, with no other deployment to try, a 503.
    const upstream5xx = upstreamFailed && c.route === 'responses' && (c.mode !== 'ok' && c.mode >= 500 ? res.status === 502 || res.status === 503 : c.mode === 429 && res.status === 503)
    if (res.status >= 500 && !upstream5xx) problems.push(`status ${res.status}: ${res.body.slice(0, 200)}`)
    if (res.status === 402) problems.push(`402 for a funded organization (a hold left behind?): ${res.body.slice(0, 200)}`)
    if (res.status >= 400) {
      const wrong = errorShapeProblem(c.route, res.status, res.body)
      if (wrong) problems.push(wrong)
      if (!res.headers['x-gw-trace-id']) problems.push('no x-gw-trace-id')
      if (reached > 0 && !(upstreamFailed && c.route === 'responses')) problems.push(`refused with ${res.status} but reached the upstream ${reached} time(s)`)
    }
    // The media URL policy: a URL naming a private host is refused before any upstream could fetch it.
    const leaked = up.requests.slice(calls).filter(r => PRIVATE.test(r.text))
    if (leaked.length) problems.push(`a private media URL reached the upstream (${leaked.map(r => r.path).join(', ')}): ${res.status} ${res.body.slice(0, 120)}`)
    if (res.status === 200 && c.route !== 'responses') {
      const wrong = countProblem(c.route, res.body)
      if (wrong) problems.push(wrong)
    }
    if (res.status === 200 && c.route === 'responses') {
      problems.push(...answerProblems('responses', c.stream, res.status, res.body, false))
      if (c.stream && c.mode === 'ok' && /event: (error|response\.failed)\s*\ndata: [^\n]*\s*$/.test(res.body)) problems.push(`a stream ended with an error event from a good upstream: ${res.body.slice(-300)}`)
    }
    // Money: a 200 on /v1/responses is charged once, its own record and cost; anything else (a
    // refusal, an upstream's error, any count) changes neither the records nor the balance.
    const billed = c.route === 'responses' && res.status === 200
    if (billed) await until(async () => (await records()).length > usageBefore, 5000)
    else await new Promise(resolve => setTimeout(resolve, 5))
    await until(async () => (await balance()).reserved === 0, 2000)
    const after = await balance()
    const added = (await records()).slice(usageBefore)
    if (after.reserved !== 0) problems.push(`${after.reserved} still reserved once the call ended`)
    if (billed) {
      charged++
      if (added.length !== 1) problems.push(`a 200 made ${added.length} usage records`)
      else {
        if (added[0].traceId !== res.headers['x-gw-trace-id']) problems.push(`the record is ${added[0].traceId}, not this call's ${res.headers['x-gw-trace-id']}`)
        if (after.balance !== before.balance - added[0].cost) problems.push(`balance ${before.balance} → ${after.balance}, but the record cost ${added[0].cost}`)
      }
    } else {
      if (added.length) problems.push(`${c.route} ${res.status} made ${added.length} usage record(s)`)
      if (after.balance !== before.balance) problems.push(`${c.route} ${res.status} changed the balance ${before.balance} → ${after.balance}`)
    }
    if (process.env.FUZZ_VERBOSE) console.error(`# case ${i} ${res.status} ${c.name.slice(0, 200)} → ${res.body.slice(0, 160)}`)
    if (problems.length) failures.push(`case ${i} (${c.name.slice(0, 300)}): ${problems.join('; ')}`)
  }
  mode = 'ok'
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; upstream calls: ${up.requests.length}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)
  // Nothing charged late: the records are the 200s on /v1/responses, and the balance is what they cost.
  await new Promise(resolve => setTimeout(resolve, 100))
  const all = await records()
  t.equal(all.length, charged, 'one usage record per 200 on /v1/responses, none for anything else')
  t.equal((await balance()).balance, initial.balance - all.reduce((s, r) => s + r.cost, 0), 'the balance is what the records charged')
  const health = await rawRequest(port, { head: head('GET', '/healthz'), waitCloseMs: 0 })
  t.equal(health.status, 200, 'the gateway is still up')
})
