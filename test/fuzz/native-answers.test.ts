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
// fails by design); usage shown to the client and the ledger's records in whole, non-negative,
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
import { answerShape, badCounts, DELETE, pathsOf, ROUTES, setPath, streamEnd, usagesOf, MAX_SHOWN, MAX_TOKENS, type Obj, type Route, errorBodyProblem } from '../helpers/fuzz.ts'

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

/** The script of one upstream answer: status, headers, the bytes written (each its own write), and how it ends. */
interface Script {
  status: number
  headers: Record<string, string>
  writes: Uint8Array[]
  /** 'end': the response ends; 'destroy': the socket is destroyed after the writes. */
  close: 'end' | 'destroy'
}

/** Cuts bytes in pieces at random positions (a proxy's or the network's framing). */
function split (bytes: Uint8Array, rnd: () => number): Uint8Array[] {
  const out: Uint8Array[] = []
  let off = 0
  const n = rnd() < 0.3 ? 1 : 1 + Math.floor(rnd() * 8)
  const cuts = [...new Set(Array.from({ length: n - 1 }, () => Math.floor(rnd() * bytes.length)))].sort((a, b) => a - b)
  for (const c of [...cuts, bytes.length]) {
    if (c > off) out.push(bytes.subarray(off, c))
    off = c
  }
  return out.length ? out : [bytes]
}

t.test(`fuzz the native adapters' answers – ${CASES} seeded cases (FUZZ_SEED=${SEED})`, async t => {
  console.error(`# native-answers fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_CASES=${CASES})`)
  let script: Script | undefined
  const serve = async (res: ServerResponse): Promise<void> => {
    const s = script
    if (s === undefined) { res.writeHead(500).end(); return }
    res.writeHead(s.status, s.headers)
    for (const w of s.writes) {
      if (res.destroyed) return
      await new Promise<void>(resolve => res.write(w, () => resolve()))
    }
    if (s.close === 'destroy') res.socket?.destroy()
    else res.end()
  }
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

  /** A valid answer, or one changed by 1–2 random mutations (their descriptions in `changes`). */
  function answer (adapter: Adapter, stream: boolean, mutate: boolean, changes: string[]): Script {
    const events: Array<[string, Obj | string]> = structuredClone(validAnswer(adapter, stream))
    const headers = headersOf(adapter, stream)
    let close: Script['close'] = 'end'
    let status = 200
    let byteOp: ((b: Buffer) => Buffer) | undefined
    for (let n = !mutate ? 0 : rnd() < 0.3 ? 2 : 1; n > 0; n--) {
      const kind = stream
        ? pick(['value', 'value', 'value', 'value', 'drop', 'repeat', 'swap', 'unknown', 'truncate', 'cut', 'corrupt', 'exception', 'notJson', 'headers', 'status'] as const)
        : pick(['value', 'value', 'value', 'value', 'value', 'truncate', 'cut', 'corrupt', 'notJson', 'headers', 'status'] as const)
      const i = int(events.length)
      const ev = events[i]!
      switch (kind) {
        case 'value': {
          if (typeof ev[1] === 'string') break
          const paths = pathsOf(ev[1])
          if (paths.length === 0) break
          const p = pick(paths)
          const v = odd()
          setPath(ev[1], p, v)
          changes.push(`${stream ? `event ${i} (${ev[0]}) ` : ''}${p.join('.')} = ${v === DELETE ? '(deleted)' : JSON.stringify(v)?.slice(0, 40)}`)
          break
        }
        case 'drop': events.splice(i, 1); changes.push(`event ${i} (${ev[0]}) dropped`); break
        case 'repeat': events.splice(i, 0, structuredClone(ev)); changes.push(`event ${i} (${ev[0]}) repeated`); break
        case 'swap': {
          if (i + 1 >= events.length) break
          events.splice(i, 2, events[i + 1]!, ev)
          changes.push(`events ${i} and ${i + 1} swapped`)
          break
        }
        case 'unknown': {
          const e: [string, Obj | string] = adapter === 'bedrock'
            ? [pick(['fooEvent', 'internalServerException', '']), { x: 1 }]
            : pick([['fooEvent', { x: 1 }], ['!raw', ': keep-alive\r\n\r\n'], ['data', { somethingNew: { a: 1 } }], ['data', []], ['data', [geminiChunk([{ text: 'arr' }], false)]]] as Array<[string, Obj | string]>)
          events.splice(i, 0, e)
          changes.push(`unknown event ${JSON.stringify(e).slice(0, 60)} at ${i}`)
          break
        }
        case 'exception': {
          const type = adapter === 'bedrock'
            ? pick(['internalServerException', 'modelStreamErrorException', 'validationException', 'throttlingException', 'serviceUnavailableException', 'fooException'])
            : pick(['INTERNAL', 'RESOURCE_EXHAUSTED', 'INVALID_ARGUMENT', 'UNAVAILABLE', 'FOO'])
          events.splice(i, 0, adapter === 'bedrock' ? ['!exception', { type }] : ['data', { error: { code: pick([500, 429, 400, 503, 'x', -1]), status: type, message: 'fuzzed' } }])
          changes.push(`exception ${type} at ${i}`)
          break
        }
        case 'notJson': {
          const junk = pick(['', 'not json', '{"a":', 'null', '42', '"str"', '[]', '<html>502 Bad Gateway</html>', '\u0000\u0001'])
          if (stream) events[i] = [ev[0], junk]
          else events[0] = ['', junk]
          changes.push(`${stream ? `event ${i} (${ev[0]}) payload` : 'body'} = ${JSON.stringify(junk)}`)
          break
        }
        case 'truncate': {
          const prev = byteOp
          byteOp = b => { const c = prev ? prev(b) : b; return c.subarray(0, int(c.length)) }
          changes.push('the body truncated')
          break
        }
        case 'cut': close = 'destroy'; byteOp ??= b => b.subarray(0, int(b.length + 1)); changes.push('the connection closed early'); break
        case 'corrupt': {
          const prev = byteOp
          byteOp = b => { const c = Buffer.from(prev ? prev(b) : b); if (c.length) c[int(c.length)] ^= 1 << int(8); return c }
          changes.push('a byte flipped')
          break
        }
        case 'status': {
          status = pick([201, 204, 206, 302, 400, 401, 403, 404, 408, 413, 422, 424, 429, 500, 502, 503, 504])
          if (rnd() < 0.5) headers['x-amzn-errortype'] = pick(['ThrottlingException:http://x', 'ValidationException', 'FooException', '', ':::'])
          if (rnd() < 0.5) headers['retry-after'] = pick(['1', '-1', 'soon', '99999999999', '1.5'])
          changes.push(`status ${status} ${JSON.stringify(headers)}`)
          break
        }
        case 'headers': {
          const ct = pick(['text/plain', 'application/json', 'text/event-stream', 'application/vnd.amazon.eventstream', 'text/html'])
          headers['content-type'] = ct
          changes.push(`content-type ${ct}`)
          break
        }
      }
    }
    let bytes: Buffer = Buffer.concat(events.map(e => encode(adapter, stream, e)))
    if (byteOp) bytes = byteOp(bytes)
    return { status, headers, writes: split(bytes, rnd), close }
  }

  const call = async (route: Route, adapter: Adapter, stream: boolean): Promise<{ status: number, text: string }> => {
    const res = await fetch(`${base}${ROUTES[route].path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ROUTES[route].body, model: ADAPTERS[adapter], ...(stream ? { stream } : {}) }),
      signal: AbortSignal.timeout(CASE_MS),
    })
    return { status: res.status, text: await res.text() }
  }

  /** What is wrong with one answer the client got (empty: nothing). */
  function check (route: Route, stream: boolean, status: number, text: string, valid: boolean): string[] {
    const problems: string[] = []
    let usages: unknown[] = []
    if (status !== 200 && valid) problems.push(`status ${status} for a valid answer: ${text.slice(0, 300)}`)
    if (status >= 400) {
      // Upstream garbage is the upstream's failure (502); a 500 is the gateway's own.
      if (status === 500) problems.push(`status 500: ${text.slice(0, 300)}`)
      const wrong = errorBodyProblem(route, text)
      if (wrong !== undefined) problems.push(wrong)
    } else if (status !== 200) {
      problems.push(`status ${status}: ${text.slice(0, 200)}`)
    } else if (stream) {
      const end = streamEnd(route, text)
      if (end === false) problems.push(`a 200 stream that ends neither as ${route} ends nor with its error event: ${text.slice(-300)}`)
      if (end === 'error' && valid) problems.push(`an error event for a valid answer: ${text.slice(-300)}`)
      for (const line of text.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue
        try { usages.push(...usagesOf(JSON.parse(line.slice(6)))) } catch { problems.push(`a data line that is not JSON: ${line.slice(0, 120)}`) }
      }
    } else {
      let b: unknown
      try { b = JSON.parse(text) } catch { problems.push(`a 200 that is not JSON: ${text.slice(0, 120)}`) }
      if (b !== undefined && !answerShape(route, b)) problems.push(`a 200 not shaped as ${route}: ${text.slice(0, 200)}`)
      usages = usagesOf(b)
    }
    const bad = usages.flatMap(u => badCounts(u))
    if (bad.length) problems.push(`usage the client sees: ${bad.join(', ')}`)
    return problems
  }

  // The answers the cases start from pass, on every route, adapter and mode, split anyhow: a case
  // is one change away from a valid answer.
  for (const route of Object.keys(ROUTES) as Route[]) {
    for (const adapter of Object.keys(ADAPTERS) as Adapter[]) {
      for (const stream of [false, true]) {
        script = answer(adapter, stream, false, [])
        const { status, text } = await call(route, adapter, stream)
        t.same(check(route, stream, status, text, true), [], `${route} → ${adapter}${stream ? ', streamed' : ''}`)
      }
    }
  }
  const valid = (await until(async () => (await ledger.listUsage({})).length === 12, 5000)) ? await ledger.listUsage({}) : []
  t.equal(valid.length, 12, 'each valid answer wrote its usage record')
  t.ok(valid.every(r => !r.estimated && r.outputTokens === 20), 'billed as the upstream counted')

  const failures: string[] = []
  const statuses = new Map<number, number>()
  for (let i = 0; i < CASES; i++) {
    const route = pick(Object.keys(ROUTES) as Route[])
    const adapter = pick(Object.keys(ADAPTERS) as Adapter[])
    const stream = rnd() < 0.5
    const changes: string[] = []
    script = answer(adapter, stream, true, changes)
    const name = `case ${i} (${route} → ${adapter}${stream ? ', streamed' : ''}; ${changes.join('; ') || 'unchanged'})`
    let problems: string[]
    try {
      const { status, text } = await call(route, adapter, stream)
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      problems = check(route, stream, status, text, changes.length === 0)
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
  const badRecords: string[] = []
  for (const r of records) {
    const counts: Record<string, number> = {
      inputTokens: r.inputTokens, cachedInputTokens: r.cachedInputTokens, cacheWriteTokens: r.cacheWriteTokens ?? 0, cacheWrite1hTokens: r.cacheWrite1hTokens ?? 0,
      outputTokens: r.outputTokens, cost: r.cost,
    }
    for (const [k, v] of Object.entries(counts)) {
      if (!Number.isSafeInteger(v) || v < 0 || (k !== 'cost' && v > MAX_SHOWN)) badRecords.push(`${r.traceId}: ${k} = ${v}`)
    }
    // Output is billed at most the cap the call reserved for, whatever the upstream counts.
    if (r.outputTokens > MAX_TOKENS) badRecords.push(`${r.traceId}: outputTokens ${r.outputTokens} past the cap ${MAX_TOKENS}`)
    // The cost is the counts at the model's price: no more than all of them at its highest rate.
    const most = Math.ceil((r.inputTokens + r.outputTokens) * Math.max(price.input, price.cachedInput, price.cacheWrite, price.output))
    if (r.cost > most) badRecords.push(`${r.traceId}: cost ${r.cost} past ${most}`)
  }
  t.same(badRecords, [], `${records.length} usage records: whole, non-negative counts and costs`)
  t.equal((await fetch(`${base}/healthz`)).status, 200, 'the gateway is still up')
  t.equal((await fetch(`${base}/readyz`)).status, 200, 'and ready (no charge stuck in the spool)')
})
