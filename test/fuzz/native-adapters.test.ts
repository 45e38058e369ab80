// Seeded fuzzing of the native cloud adapters (Bedrock's Converse, Gemini's generateContent)
// through a listening gateway: valid chat, messages and Responses bodies, rich in the parts these
// translators rewrite (images, documents, tools and tool results, thinking, tool choices, stop
// sequences, system turns), with one or two fields given a wrong type or an odd value. Whatever
// the body: no 500 and no answer the gateway made up from its own failure (a 5xx passes only when
// the fake upstream itself answered one), an error body in the route's shape, and a 200 stream
// that ends as its protocol ends, without an error event.
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets how many cases (default 240).
import t from 'tap'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeBedrock, startFakeGemini, BEDROCK_TEST_CREDENTIALS, GEMINI_TEST_KEY } from '../../testing.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { DELETE, errorBodyProblem, pathsOf, setPath } from '../helpers/fuzz.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 240)

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF').toString('base64')
const SCHEMA = { type: 'object', properties: { city: { type: 'string', enum: ['a', 'b'] }, n: { type: 'integer' } }, required: ['city'] }

const CHAT = {
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] },
    { role: 'assistant', content: 'calling', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"a"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] },
    { role: 'user', content: 'and now?' },
  ],
  max_tokens: 64, temperature: 0.5, top_p: 0.9, stop: ['zz'], tool_choice: { type: 'function', function: { name: 'weather' } },
  tools: [{ type: 'function', function: { name: 'weather', description: 'd', parameters: SCHEMA } }],
  response_format: { type: 'json_schema', json_schema: { name: 'r', schema: SCHEMA } }, user: 'u1',
}
const MESSAGES = {
  max_tokens: 64,
  system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'doc' }] },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'text', text: 'calling' }, { type: 'tool_use', id: 'tu_1', name: 'weather', input: { city: 'a' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'sunny' }], is_error: false }, { type: 'text', text: 'and now?' }] },
  ],
  tools: [{ name: 'weather', description: 'd', input_schema: SCHEMA, cache_control: { type: 'ephemeral' } }],
  tool_choice: { type: 'auto' }, temperature: 0.3, stop_sequences: ['zz'], metadata: { user_id: 'u' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
}
const RESPONSES = {
  instructions: 'be brief',
  input: [
    { role: 'user', content: [{ type: 'input_text', text: 'hi' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }] },
    { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"a"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
    { role: 'user', content: 'and now?' },
  ],
  tools: [{ type: 'function', name: 'weather', description: 'd', parameters: SCHEMA, strict: false }],
  tool_choice: 'auto', max_output_tokens: 64, temperature: 0.5, text: { format: { type: 'text' } }, reasoning: { effort: 'low' },
}
const ROUTES = {
  chat: { path: '/v1/chat/completions', body: CHAT },
  messages: { path: '/v1/messages', body: MESSAGES },
  responses: { path: '/v1/responses', body: RESPONSES },
} as const
const MODELS = ['aws/claude', 'google/gemini']

/** The last event's name or data, per protocol, that a stream must end with. */
function streamEnded (route: keyof typeof ROUTES, text: string): boolean {
  if (route === 'chat') return /data: \[DONE\]\s*$/.test(text)
  if (route === 'messages') return /event: message_stop\s*\ndata: [^\n]*\s*$/.test(text)
  return /event: response\.(completed|incomplete)\s*\ndata: [^\n]*\s*$/.test(text)
}

t.test(`fuzz the native adapters – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# native-adapters fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  const bedrock = await startFakeBedrock()
  const gemini = await startFakeGemini({ requireSignatures: false })
  const ALL = ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata', 'response_format', 'reasoning', 'user']
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'aws', adapter: 'bedrock', config: { region: 'us-east-1', baseUrl: bedrock.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS } } },
        { name: 'google', adapter: 'gemini', config: { baseUrl: gemini.origin, apiKey: GEMINI_TEST_KEY } },
      ],
      models: [
        { id: 'aws/claude', input_modalities: ['text', 'image', 'file'], supported_parameters: ALL, deployments: [{ provider: 'aws', model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }] },
        { id: 'google/gemini', input_modalities: ['text', 'image', 'file'], supported_parameters: ALL, deployments: [{ provider: 'google', model: 'gemini-2.5-flash' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await bedrock.close(); await gemini.close() })
  const base = await listen(app)
  const rnd = prng(SEED)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
  const int = (n: number): number => Math.floor(rnd() * n)
  const odd = (): unknown => pick([
    () => int(1e6) - 5e5, () => rnd(), () => -1, () => 0, () => 1e308, () => 'str', () => '', () => true, () => false, () => null,
    () => [], () => [1, 'a', null], () => ({}), () => ({ type: 'text' }), () => ({ type: 'image' }), () => ({ type: 'tool_use' }),
    () => ({ type: 'function' }), () => 'x'.repeat(int(3000)), () => '\u0000\ud800', () => 'data:image/png;base64,@@@', () => '{"city":', () => DELETE,
  ])()
  const call = (path: string, body: unknown) => fetch(`${base}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  })
  // The bodies the cases start from pass, on every route, model and mode: a case is one change away from a valid call.
  for (const route of ['chat', 'messages', 'responses'] as const) {
    for (const model of MODELS) {
      for (const stream of [false, true]) {
        const res = await call(ROUTES[route].path, { ...ROUTES[route].body, model, ...(stream ? { stream } : {}) })
        const text = await res.text()
        t.equal(res.status, 200, `${route} → ${model}${stream ? ', streamed' : ''}: ${text.slice(0, 300)}`)
        if (stream) t.ok(streamEnded(route, text), `${route} → ${model}: the stream ends as ${route} ends`)
      }
    }
  }
  const failures: string[] = []
  const statuses = new Map<number, number>()

  for (let i = 0; i < CASES; i++) {
    const route = pick(['chat', 'messages', 'responses'] as const)
    const body = structuredClone(ROUTES[route].body) as Record<string, unknown>
    body.model = pick(MODELS)
    const stream = rnd() < 0.4
    if (stream) body.stream = true
    const changes: string[] = []
    for (let n = rnd() < 0.3 ? 2 : 1; n > 0; n--) {
      const paths = pathsOf(body).filter(p => p[0] !== 'model' && p[0] !== 'stream')
      const p = pick(paths)
      const v = odd()
      setPath(body, p, v)
      changes.push(`${p.join('.')} = ${v === DELETE ? '(deleted)' : JSON.stringify(v)?.slice(0, 40)}`)
    }
    const upstreamBefore = bedrock.requests.length + gemini.requests.length
    const res = await call(ROUTES[route].path, body)
    const text = await res.text()
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    const name = `case ${i} (${route} → ${String(body.model)}${stream ? ', streamed' : ''}; ${changes.join(', ')})`
    const problems: string[] = []
    if (res.status >= 500) {
      // A 5xx is the upstream's to give: the fakes answer 5xx for nothing they were sent here.
      problems.push(`status ${res.status}: ${text.slice(0, 300)}`)
    } else if (res.status >= 400) {
      const wrong = errorBodyProblem(route, text)
      if (wrong !== undefined) problems.push(wrong)
    } else if (stream) {
      if (/"type":\s*"error"|event: error/.test(text)) problems.push(`an error event in a 200 stream: ${text.slice(-300)}`)
      else if (!streamEnded(route, text)) problems.push(`a 200 stream that does not end as ${route} ends: ${text.slice(-200)}`)
    } else {
      try { JSON.parse(text) } catch { problems.push(`a 200 that is not JSON: ${text.slice(0, 120)}`) }
    }
    if (problems.length) failures.push(`${name}: ${problems.join('; ')} [upstream calls: ${bedrock.requests.length + gemini.requests.length - upstreamBefore}]`)
  }
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; upstream calls: bedrock ${bedrock.requests.length}, gemini ${gemini.requests.length}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)
  t.ok(bedrock.requests.length > 0 && gemini.requests.length > 0, 'both adapters were reached')
  const health = await fetch(`${base}/healthz`)
  t.equal(health.status, 200, 'the gateway is still up')
})
