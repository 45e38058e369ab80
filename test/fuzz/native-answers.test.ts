// Seeded fuzzing of what the native cloud adapters READ: the upstream's answers. Two loopback
// servers stand in for Bedrock (Converse JSON, ConverseStream binary event-stream frames) and the
// Gemini API (GenerateContentResponse JSON, SSE chunks); each case takes a valid answer and changes
// it once or twice: a wrong type or an odd value at a random path (negative, huge, fractional,
// NaN as a string, null, objects, arrays, deleted), a truncated body or frame, a corrupt byte,
// events dropped, repeated, swapped or unknown, an exception mid-stream, a connection closed
// early, another status or content type; every body goes out split at random byte positions.
// Whatever the answer: no 500 (upstream garbage is the upstream failing, 502; a 500 is the
// gateway's own failure) and no crash or hang; an error in the route's error body shape; a 200
// body valid JSON of the route's shape; a 200 stream that ends as its protocol ends or with its
// error event (a mutated answer may end either way: Gemini's answer without a finish reason
// fails by design), a streamed call answered with one JSON answer included (the client still
// gets a stream); usage shown to the client and the ledger's records in whole, non-negative,
// bounded token counts and costs (a count past MAX_TOKEN_COUNT is no count: it counts 0).
// FUZZ_SEED replays a run (the seed is printed); FUZZ_CASES sets how many cases (default 200);
// FUZZ_VERBOSE=1 prints every case's outcome.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import { EventStreamCodec } from '@smithy/eventstream-codec'
import { fromUtf8, toUtf8 } from '@smithy/util-utf8'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import {
  startFakeUpstream, BEDROCK_TEST_CREDENTIALS, GEMINI_TEST_KEY, bedrockEventFrame, bedrockExceptionFrame, converseResponse, converseStreamEvents,
  type BedrockAnswer,
} from '../../testing.ts'
import { MAX_TOKEN_COUNT } from '../../index.ts'
import { openLedger } from '../../core/ledger/index.ts'
import { mulberry32 as prng } from '../helpers/rng.ts'
import { until } from '../helpers/until.ts'
import { mutate, play, split, type Ev, type Script, type Wire } from '../helpers/fuzz-answers.ts'
import { answerProblems, DELETE, ledgerProblems, ROUTES, streamEnd, type Obj, type Route } from '../helpers/fuzz.ts'

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.FUZZ_CASES ?? 200)
/** FUZZ_VERBOSE=1 prints each case's status (and how a 200 stream ended). */
const VERBOSE = process.env.FUZZ_VERBOSE === '1'
/** Each case's answer must have come whole (status, body, stream end) within this. */
const CASE_MS = 15_000

// ── the client side ─────────────────────────────────────────────────────────────────────────

const ADAPTERS = { bedrock: 'aws/claude', gemini: 'google/gemini' } as const
type Adapter = keyof typeof ADAPTERS

// ── the upstream side: valid answers ────────────────────────────────────────────────────────

const BEDROCK_ANSWER: BedrockAnswer = {
  content: [
    { reasoning: ['Let me', ' think.'], signature: 'c2lnLWJlZHJvY2s=' },
    { text: ['Calling', ' the tool.'] },
    { toolUse: { toolUseId: 'tooluse_1', name: 'weather', input: { city: 'a' } } },
  ],
  usage: { input: 12, output: 20, cacheRead: 4, cacheWrite: 3 },
}

const GEMINI_USAGE = { promptTokenCount: 12, candidatesTokenCount: 15, cachedContentTokenCount: 4, thoughtsTokenCount: 5, toolUsePromptTokenCount: 2, totalTokenCount: 34 }
const GEMINI_PARTS = [
  [{ text: 'Let me', thought: true }],
  [{ text: ' think.', thought: true, thoughtSignature: 'c2lnLXRob3VnaHQ=' }],
  [{ text: 'Calling' }],
  [{ text: ' the tool.' }],
  [{ functionCall: { name: 'weather', args: { city: 'a' } }, thoughtSignature: 'c2lnLWNhbGw=' }],
]

function geminiChunk (parts: Obj[], final: boolean): Obj {
  const c: Obj = { content: { role: 'model', parts }, index: 0 }
  if (final) c.finishReason = 'STOP'
  return { candidates: [c], usageMetadata: final ? { ...GEMINI_USAGE } : { promptTokenCount: 12 }, modelVersion: 'gemini-2.5-flash', responseId: 'r1' }
}

/** The valid answer of an adapter, as objects (events for a stream: name and payload). */
function validAnswer (adapter: Adapter, stream: boolean): Array<[string, Obj]> {
  if (adapter === 'bedrock') return stream ? converseStreamEvents(BEDROCK_ANSWER) : [['', converseResponse(BEDROCK_ANSWER)]]
  if (!stream) {
    const parts = GEMINI_PARTS.flat().map(p => ({ ...p }))
    const joined = [{ text: 'Let me think.', thought: true, thoughtSignature: 'c2lnLXRob3VnaHQ=' }, { text: 'Calling the tool.' }, parts[4]]
    return [['', geminiChunk(joined, true)]]
  }
  return [...GEMINI_PARTS.map((p): [string, Obj] => ['data', geminiChunk(p.map(x => ({ ...x })), false)]), ['data', geminiChunk([], true)]]
}

const codec = new EventStreamCodec(toUtf8, fromUtf8)

/** An event-stream frame with any headers and body (headers as strings). */
function rawFrame (headers: Record<string, string>, body: string): Uint8Array {
  return codec.encode({ headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, { type: 'string', value: v }])), body: fromUtf8(body) })
}

/** The bytes of one event of an answer. */
function encode (adapter: Adapter, stream: boolean, [name, payload]: [string, Obj | string]): Uint8Array {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload)
  if (!stream) return Buffer.from(text)
  if (adapter === 'bedrock') {
    if (name === '!exception') return bedrockExceptionFrame(String((payload as Obj).type), 'fuzzed', { originalStatusCode: 500 })
    if (name === '!raw') return Buffer.from(text, 'latin1')
    return typeof payload === 'string' ? rawFrame({ ':event-type': name, ':content-type': 'application/json', ':message-type': 'event' }, text) : bedrockEventFrame(name, payload)
  }
  if (name === '!raw') return Buffer.from(text)
  return Buffer.from(name === 'data' ? `data: ${text}\r\n\r\n` : `event: ${name}\ndata: ${text}\n\n`)
}

// ── mutations ───────────────────────────────────────────────────────────────────────────────

t.test(`fuzz the native adapters' answers – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# native-answers fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  let script: Script | undefined
  const serve = (res: ServerResponse): Promise<void> => play(res, script)
  const bedrock = await startFakeUpstream((_req, res) => serve(res))
  const gemini = await startFakeUpstream((_req, res) => serve(res))
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const price = { input: 1, cachedInput: 0.5, cacheWrite: 1.25, output: 2 }
  // No circuit opens on the garbage: every case reaches its upstream.
  const circuit = { failureThreshold: 1_000_000, coolDownMs: 0 }
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [
        { name: 'aws', adapter: 'bedrock', circuit, config: { region: 'us-east-1', baseUrl: bedrock.origin, credentials: { ...BEDROCK_TEST_CREDENTIALS } } },
        { name: 'google', adapter: 'gemini', circuit, config: { baseUrl: gemini.origin, apiKey: GEMINI_TEST_KEY } },
      ],
      models: [
        { id: 'aws/claude', price, supported_parameters: ['max_tokens', 'tools', 'stream'], deployments: [{ provider: 'aws', model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }] },
        { id: 'google/gemini', price, supported_parameters: ['max_tokens', 'tools', 'stream'], deployments: [{ provider: 'google', model: 'gemini-2.5-flash' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await bedrock.close(); await gemini.close(); await ledger.close() })
  const base = await listen(app)
  const rnd = prng(SEED)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
  const int = (n: number): number => Math.floor(rnd() * n)
  const odd = (): unknown => pick([
    () => -1, () => 0, () => 1.5, () => 1e308, () => -1e308, () => 2 ** 53 + 2, () => 1e15, () => int(MAX_TOKEN_COUNT), () => MAX_TOKEN_COUNT,
    () => MAX_TOKEN_COUNT + 1, () => 'NaN', () => 'Infinity', () => '12',
    () => 'str', () => '', () => true, () => false, () => null, () => [], () => [1, 'a', null], () => ({}), () => ({ text: 'x' }),
    () => ({ toolUse: {} }), () => ({ functionCall: {} }), () => 'x'.repeat(int(2000)), () => '\u0000\ud800', () => '{"city":', () => DELETE,
  ])()

  const headersOf = (adapter: Adapter, stream: boolean): Record<string, string> => stream
    ? { 'content-type': adapter === 'bedrock' ? 'application/vnd.amazon.eventstream' : 'text/event-stream' }
    : { 'content-type': adapter === 'bedrock' ? 'application/json' : 'application/json; charset=UTF-8' }

  /** Bedrock's and Gemini's events, error events, statuses and content types, for the mutations. */
  const wireOf = (adapter: Adapter): Wire => ({
    odd,
    unknownEvent: () => adapter === 'bedrock'
      ? [pick(['fooEvent', 'internalServerException', '']), { x: 1 }]
      : pick([['fooEvent', { x: 1 }], ['!raw', ': keep-alive\r\n\r\n'], ['data', { somethingNew: { a: 1 } }], ['data', []], ['data', [geminiChunk([{ text: 'arr' }], false)]]] as Ev[]),
    errorEvent: () => {
      const type = adapter === 'bedrock'
        ? pick(['internalServerException', 'modelStreamErrorException', 'validationException', 'throttlingException', 'serviceUnavailableException', 'fooException'])
        : pick(['INTERNAL', 'RESOURCE_EXHAUSTED', 'INVALID_ARGUMENT', 'UNAVAILABLE', 'FOO'])
      const e: Ev = adapter === 'bedrock' ? ['!exception', { type }] : ['data', { error: { code: pick([500, 429, 400, 503, 'x', -1]), status: type, message: 'fuzzed' } }]
      return [e, type]
    },
    statuses: [201, 204, 206, 302, 400, 401, 403, 404, 408, 413, 422, 424, 429, 500, 502, 503, 504],
    withStatus: headers => {
      if (rnd() < 0.5) headers['x-amzn-errortype'] = pick(['ThrottlingException:http://x', 'ValidationException', 'FooException', '', ':::'])
      return ''
    },
    contentTypes: ['text/plain', 'application/json', 'text/event-stream', 'application/vnd.amazon.eventstream', 'text/html'],
    junk: ['', 'not json', '{"a":', 'null', '42', '"str"', '[]', '<html>502 Bad Gateway</html>', '\u0000\u0001'],
  })

  /** A valid answer, or one changed by 1–2 random mutations (their descriptions in `changes`). */
  function answer (adapter: Adapter, stream: boolean, mutateIt: boolean, changes: string[]): Script {
    const events: Ev[] = structuredClone(validAnswer(adapter, stream))
    const headers = headersOf(adapter, stream)
    const m = mutate(rnd, wireOf(adapter), events, headers, stream, !mutateIt ? 0 : rnd() < 0.3 ? 2 : 1, changes)
    const bytes = m.bytes(Buffer.concat(events.map(e => encode(adapter, stream, e))))
    return { status: m.status, headers, writes: split(bytes, rnd), close: m.close }
  }

  /** A call's answer; `streamed`: it came as a stream (event-stream content type). */
  const call = async (route: Route, adapter: Adapter, stream: boolean): Promise<{ status: number, text: string, streamed: boolean }> => {
    const res = await fetch(`${base}${ROUTES[route].path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ROUTES[route].body, model: ADAPTERS[adapter], ...(stream ? { stream } : {}) }),
      signal: AbortSignal.timeout(CASE_MS),
    })
    return { status: res.status, text: await res.text(), streamed: (res.headers.get('content-type') ?? '').startsWith('text/event-stream') }
  }

  const check = (route: Route, stream: boolean, status: number, text: string, valid: boolean): string[] => answerProblems(route, stream, status, text, valid)

  // The answers the cases start from pass, on every route, adapter and mode, split anyhow: a case
  // is one change away from a valid answer.
  for (const route of Object.keys(ROUTES) as Route[]) {
    for (const adapter of Object.keys(ADAPTERS) as Adapter[]) {
      for (const stream of [false, true]) {
        script = answer(adapter, stream, false, [])
        const { status, text } = await call(route, adapter, stream)
        t.same(check(route, stream, status, text, true), [], `${route} → ${adapter}${stream ? ', streamed' : ''}`)
      }
      // A streamed call the upstream answered with its whole JSON answer: still a stream, as valid.
      script = answer(adapter, false, false, [])
      const { status, text, streamed } = await call(route, adapter, true)
      t.equal(streamed, true, `${route} → ${adapter}, streamed, answered whole: a stream`)
      t.same(check(route, true, status, text, true), [], `${route} → ${adapter}, streamed, answered whole`)
    }
  }
  const valid = (await until(async () => (await ledger.listUsage({})).length === 18, 5000)) ? await ledger.listUsage({}) : []
  t.equal(valid.length, 18, 'each valid answer wrote its usage record')
  t.ok(valid.every(r => !r.estimated && r.outputTokens === 20), 'billed as the upstream counted')

  const failures: string[] = []
  const statuses = new Map<number, number>()
  for (let i = 0; i < CASES; i++) {
    const route = pick(Object.keys(ROUTES) as Route[])
    const adapter = pick(Object.keys(ADAPTERS) as Adapter[])
    const stream = rnd() < 0.5
    const changes: string[] = []
    // A stream request answered with one JSON answer (an upstream or proxy that does not stream).
    const whole = stream && rnd() < 0.25
    if (whole) changes.push('answered with one JSON answer')
    script = answer(adapter, stream && !whole, true, changes)
    const name = `case ${i} (${route} → ${adapter}${stream ? ', streamed' : ''}; ${changes.join('; ') || 'unchanged'})`
    let problems: string[]
    try {
      const { status, text, streamed } = await call(route, adapter, stream)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      problems = check(route, streamed, status, text, changes.length === (whole ? 1 : 0))
      if (status === 200 && streamed !== stream) problems.push(`a ${stream ? 'streamed' : 'JSON'} call answered ${streamed ? 'as a stream' : 'as JSON'}`)
      if (VERBOSE) console.error(`# ${status} ${name}${status === 200 && stream ? ` → ${streamEnd(route, text) === true ? 'end' : 'error event'}` : ''}`)
    } catch (err) {
      problems = [`no whole answer within ${CASE_MS} ms: ${String(err)}`]
    }
    if (problems.length) failures.push(`${name}: ${problems.join('; ')}`)
  }
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
  t.same(failures, [], `${CASES} cases, seed ${SEED}`)

  // Every charge is written (the in-process ledger batches them) before the records are read.
  let seen = -1
  await until(async () => { const n = (await ledger.listUsage({})).length; const same = n === seen; seen = n; return same }, 5000, 200)
  const records = await ledger.listUsage({})
  const badRecords = ledgerProblems(records, price)
  t.same(badRecords, [], `${records.length} usage records: whole, non-negative counts and costs`)
  t.equal((await fetch(`${base}/healthz`)).status, 200, 'the gateway is still up')
  t.equal((await fetch(`${base}/readyz`)).status, 200, 'and ready (no charge stuck in the spool)')
})
