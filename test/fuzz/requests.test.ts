// Seeded fuzzing of a listening gateway over raw sockets (issue 14). Every case is a request a
// stranger or a buggy client could send: malformed JSON, wrong types at every field path of valid
// chat and messages bodies, deep nesting, huge strings, invalid UTF-8, odd methods and
// percent-encodings, header injection. Whatever comes in: no 5xx (but the reserved routes' 501),
// the route's error body, nothing refused reaches the upstream, and the process stays up.
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets how many cases (default 300).
import t from 'tap'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatCompletion, chatTextStream, messagesResponse, messagesTextStream } from '../helpers/fake-upstream.ts'
import { rawRequest, head } from '../helpers/raw-http.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { pathsOf, setPath } from '../helpers/fuzz.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 300)

const CHAT_BODY = {
  model: 'vendor/chat-model',
  messages: [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":"x"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
  ],
  temperature: 0.5, top_p: 1, max_tokens: 16, stream: false, stop: ['zz'], user: 'u1', tool_choice: 'auto',
  tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } } }],
}
const MESSAGES_BODY = {
  model: 'msgvendor/msg-model',
  max_tokens: 16,
  system: [{ type: 'text', text: 'be brief' }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'f', input: { a: 'x' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'ok' }] },
  ],
  tools: [{ name: 'f', description: 'd', input_schema: { type: 'object', properties: { a: { type: 'string' } } } }],
  tool_choice: { type: 'auto' }, temperature: 0.3, stop_sequences: ['zz'], metadata: { user_id: 'u' }, stream: false,
}
const MODELS = ['vendor/chat-model', 'msgvendor/msg-model', 'vendor/text-only', 'nope/unknown']

interface Case {
  name: string
  method: string
  path: string
  headers: Record<string, string | number>
  body?: Buffer
  /** The raw head, when the case is about the request line or headers themselves. */
  rawHead?: string
  /** 'route': the route's body shape; 'numeric': the numeric body whatever the path (parser-level). */
  shape: 'route' | 'numeric' | 'either'
  /** The server may close without answering (CONNECT with no handler). */
  mayDrop?: boolean
}

const keyHeaders = { authorization: `Bearer ${TEST_KEY}` }

function generate (rnd: () => number): Case {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
  const int = (n: number): number => Math.floor(rnd() * n)
  const randomValue = (): unknown => pick([
    () => int(1e6) - 5e5, () => rnd(), () => -1, () => 1e308, () => 'str', () => '', () => true, () => false, () => null,
    () => [], () => [1, 'a', null], () => ({}), () => ({ type: 'text' }), () => 'x'.repeat(int(5000)), () => '\u0000\ud800',
    () => ({ __proto__: { polluted: true } }), () => ({ constructor: { prototype: { polluted: true } } }),
  ])()
  // As text: JSON.stringify itself recurses and cannot write 20 000 levels.
  const nested = (n: number): string => { const objects = rnd() < 0.5; return objects ? '{"a":'.repeat(n) + '1' + '}'.repeat(n) : '['.repeat(n) + '1' + ']'.repeat(n) }
  const route = pick(['chat', 'messages'] as const)
  const path = route === 'chat' ? '/v1/chat/completions' : pick(['/v1/messages', '/v1/messages?beta=true'])
  const base = structuredClone(route === 'chat' ? CHAT_BODY : MESSAGES_BODY) as Record<string, unknown>
  if (rnd() < 0.3) base.model = pick(MODELS)
  if (rnd() < 0.2) base.stream = true
  const jsonCase = (name: string, body: Buffer, extra: Record<string, string | number> = {}): Case =>
    ({ name, method: 'POST', path, headers: { ...keyHeaders, 'content-type': 'application/json', ...extra }, body, shape: 'route' })
  const kind = int(10)
  switch (kind) {
    case 0: { // malformed JSON: truncated or with a byte changed
      const text = Buffer.from(JSON.stringify(base))
      if (rnd() < 0.5) return jsonCase('truncated JSON', text.subarray(0, int(text.length)))
      const b = Buffer.from(text); b[int(b.length)] = pick([0x7b, 0x5d, 0x22, 0x2c, 0x00, 0xff, 0x5c]); return jsonCase('corrupted JSON', b)
    }
    case 1: case 2: case 3: { // a wrong type at one field path
      const paths = pathsOf(base)
      const p = pick(paths)
      const v = randomValue()
      setPath(base, p, v)
      return jsonCase(`wrong type at ${p.join('.')}: ${JSON.stringify(v)?.slice(0, 40)}`, Buffer.from(JSON.stringify(base)))
    }
    case 4: { // deep nesting somewhere
      const p = pick(pathsOf(base))
      const depth = pick([100, 127, 129, 1000, 20_000])
      setPath(base, p, '@@nested@@')
      return jsonCase(`nested ${depth} at ${p.join('.')}`, Buffer.from(JSON.stringify(base).replace('"@@nested@@"', nested(depth))))
    }
    case 5: { // huge strings, some over the size limit
      const p = pick(pathsOf(base))
      const n = pick([100_000, 200_000, 300_000, 2_000_000])
      setPath(base, p, 'y'.repeat(n))
      return jsonCase(`string of ${n} at ${p.join('.')}`, Buffer.from(JSON.stringify(base)))
    }
    case 6: { // invalid UTF-8 inside a string, or a body that is not JSON at all
      const text = JSON.stringify(base).replace('"hi"', '"h\u0001i"')
      const bytes = Buffer.from(text)
      const at = bytes.indexOf(0x01)
      bytes[at] = pick([0xff, 0xc0, 0xed, 0x80])
      if (rnd() < 0.3) return jsonCase('random bytes', Buffer.from(Array.from({ length: int(200) + 1 }, () => int(256))))
      return jsonCase('invalid UTF-8 in a string', bytes)
    }
    case 7: { // odd methods and percent-encodings
      const method = pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'SEARCH', 'POST', 'CONNECT'])
      const seg = pick(['%ZZ', '%', '%C0%AF', '%FF', '%ED%A0%80', '%25', '%2e%2e/%2e%2e/etc/passwd', '%00', '..%2f', 'echo%2Fecho-1', `%${int(256).toString(16).padStart(2, '0')}`, 'a'.repeat(3000)])
      const p = pick(['/v1/models/', '/v1/messages/', '/v1/chat/completions/', '/v1/', '/', '/v1/embeddings/']) + seg + pick(['', '?limit=%ZZ', '?limit=5&x=%', '#frag'])
      const withBody = method !== 'GET' && method !== 'OPTIONS' && rnd() < 0.6
      const body = withBody ? Buffer.from(JSON.stringify(base)) : undefined
      const c: Case = { name: `${method} ${p.slice(0, 80)}`, method, path: p, headers: { ...keyHeaders, ...(body ? { 'content-type': 'application/json' } : {}) }, body, shape: 'either', mayDrop: method === 'CONNECT' }
      return c
    }
    case 8: { // header injection and hostile header values
      const inj = pick(['v\r\nx-injected: 1', 'v\rx', 'v\nx', 'v\u0000x', 'v\u007fx', '\u00ff\u00fe', ' '.repeat(9000)])
      const name = pick(['x-locale', 'accept-language', 'authorization', 'content-type', 'x-foo', 'idempotency-key'])
      const bodyText = JSON.stringify(base)
      const lines = [`POST ${path} HTTP/1.1`, 'host: 127.0.0.1', `authorization: Bearer ${TEST_KEY}`, 'content-type: application/json', `content-length: ${Buffer.byteLength(bodyText)}`, `${name}: ${inj}`]
      return { name: `header ${name} with ${JSON.stringify(inj).slice(0, 30)}`, method: 'POST', path, headers: {}, rawHead: lines.join('\r\n') + '\r\n\r\n', body: Buffer.from(bodyText), shape: 'either' }
    }
    default: { // hostile but well-formed headers: locales, keys, content types, lengths
      const h = pick<Record<string, string | number>>([
        { 'x-locale': pick(['zh', 'zh-TW', 'xx', '', '*', 'en;q=abc']) },
        { 'accept-language': pick(['zh;q=0', 'zh;q=abc, en;q=2', '*;q=0.5', ','.repeat(500), 'zh-CN,zh;q=0.9']) },
        { authorization: pick(['Bearer', 'Bearer  ', 'Bearer sk-gw-', 'bearer ' + TEST_KEY, 'Basic eDp5', `Bearer ${TEST_KEY} extra`]) },
        { 'x-api-key': pick(['', 'sk-gw-nope', TEST_KEY]) , authorization: '' },
        { 'content-type': pick(['text/plain', 'application/json; charset=latin1', 'application/jsonx', 'multipart/form-data; boundary=x', '']) },
        { 'idempotency-key': 'k'.repeat(pick([10, 300])) },
      ])
      return { name: `header ${JSON.stringify(h).slice(0, 60)}`, method: 'POST', path, headers: { ...keyHeaders, 'content-type': 'application/json', ...h }, body: Buffer.from(JSON.stringify(base)), shape: 'route' }
    }
  }
}

t.test(`fuzz – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  const up = await startFakeUpstream((req, res) => {
    const body = req.body as Record<string, unknown>
    const messages = req.path.includes('/messages')
    if (body?.stream === true) return void sse(res, messages ? messagesTextStream(['ok']) : chatTextStream(['ok']))
    json(res, 200, messages ? messagesResponse('ok') : chatCompletion('ok'))
  })
  const app = await buildTestApp({
    pipeline: [{ plugin: 'size-limit', config: { maxBytes: 256 * 1024 } }, AUTH_ENTRY],
    doc: { ...upstreamDoc(up.origin, up.origin), server: { bodyLimitBytes: 1024 * 1024, headersTimeoutMs: 2000, bodyTimeoutMs: 4000 } },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const port = Number(new URL(await listen(app)).port)
  const rnd = prng(SEED)
  const failures: string[] = []
  const statuses = new Map<number, number>()

  for (let i = 0; i < CASES; i++) {
    const c = generate(rnd)
    const calls = up.requests.length
    const headText = c.rawHead ?? head(c.method, c.path, { ...c.headers, ...(c.body ? { 'content-length': c.body.length } : {}) })
    const res = await rawRequest(port, { head: c.body ? Buffer.concat([Buffer.from(headText, 'latin1'), c.body]) : headText, waitCloseMs: 0, maxMs: 8000 })
    const reached = up.requests.length - calls
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    const problems: string[] = []
    const reserved = /^\/v1\/(embeddings|images\/generations)(\?|$)/.test(c.path)
    if (res.status === 0 && !c.mayDrop) problems.push(`no answer (${res.raw.slice(0, 120)})`)
    if (res.status >= 500 && !(res.status === 501 && reserved)) problems.push(`status ${res.status}: ${res.body.slice(0, 200)}`)
    if (res.status >= 400) {
      let body: any
      try { body = JSON.parse(res.body) } catch { problems.push(`error body is not JSON: ${res.body.slice(0, 100)}`) }
      const messagesShape = body?.type === 'error' && typeof body.error?.type === 'string' && typeof body.error?.message === 'string'
      const numericShape = body && typeof body.error?.message === 'string' && (body.error.code === res.status || typeof body.error.code === 'string') && body.type === undefined
      const onMessages = c.path.startsWith('/v1/messages')
      const expectMessages = onMessages && res.status !== 429
      if (c.shape === 'route' && (expectMessages ? !messagesShape : !numericShape)) problems.push(`wrong body shape for ${c.path}: ${res.body.slice(0, 200)}`)
      if (c.shape === 'either' && !messagesShape && !numericShape) problems.push(`not a spec error body: ${res.body.slice(0, 200)}`)
      if (!res.headers['x-gw-trace-id']) problems.push('no x-gw-trace-id')
      if (reached > 0) problems.push(`refused with ${res.status} but reached the upstream ${reached} time(s)`)
    }
    if (problems.length) failures.push(`case ${i} (${c.name}): ${problems.join('; ')}`)
  }
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; upstream calls: ${up.requests.length}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)
  const health = await rawRequest(port, { head: head('GET', '/healthz'), waitCloseMs: 0 })
  t.equal(health.status, 200, 'the gateway is still up')
})
