/**
 * W3C trace context: a caller's traceparent is continued (an invalid one ignored, a new trace
 * started), each upstream attempt gets the same trace id with a child span id, the client gets a
 * traceresponse and the access log the trace id. OTLP/HTTP export: spans for the request, each
 * phase and each attempt, checked at a loopback receiver; no OpenTelemetry module is loaded
 * when export is off.
 */
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { request } from 'undici'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, chatCompletion, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { parseTraceparent } from '../../core/observe/trace-context.ts'
import { until } from '../helpers/until.ts'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const TP = `00-${TRACE}-${PARENT}-01`
const TP_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

async function gateway (up: FakeUpstream, doc: Record<string, unknown> = {}) {
  const lines: Record<string, unknown>[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({
    logger,
    pipeline: [AUTH_ENTRY],
    doc: {
      logging: { level: 'info' },
      providers: [
        { name: 'up-a', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/a/v1`, apiKey: 'sk-a' } },
        { name: 'up-b', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/b/v1`, apiKey: 'sk-b' } },
      ],
      models: [{ id: 'vendor/m', price: { input: 1, output: 2 }, deployments: [{ provider: 'up-a', model: 'ma', priority: 0 }, { provider: 'up-b', model: 'mb', priority: 1 }] }],
      ...doc,
    },
  })
  const url = await listen(app)
  return { app, url, lines }
}

async function call (url: string, headers: Record<string, string> = {}) {
  const res = await request(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json', ...auth(), ...headers },
    body: JSON.stringify({ model: 'vendor/m', messages: [{ role: 'user', content: 'hi' }] }),
  })
  await res.body.text()
  return res
}

/** Upstream a fails with 500, b answers: every call makes two attempts. */
const failoverUpstream = () => startFakeUpstream((req, res) => req.path.startsWith('/a/') ? json(res, 500, { error: { message: 'down' } }) : json(res, 200, chatCompletion('ok')))

t.test('parseTraceparent follows the W3C rules', async t => {
  t.same(parseTraceparent(TP), { traceId: TRACE, spanId: PARENT, flags: '01' })
  t.same(parseTraceparent(`01-${TRACE}-${PARENT}-00-extra`), { traceId: TRACE, spanId: PARENT, flags: '00' }, 'a later version may add fields')
  for (const bad of [
    undefined, '', 'garbage', [TP, TP], `ff-${TRACE}-${PARENT}-01`, `00-${TRACE.toUpperCase()}-${PARENT}-01`,
    `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`, `00-${TRACE}-${PARENT}-01-extra`,
    `00-${TRACE}-${PARENT}-0g`, `00_${TRACE}-${PARENT}-01`, `0-${TRACE}-${PARENT}-01x`,
  ]) t.equal(parseTraceparent(bad as string | string[] | undefined), undefined, `invalid: ${JSON.stringify(bad)}`)
})

t.test('a caller\'s traceparent is continued upstream with a child span per attempt', async t => {
  const up = await failoverUpstream()
  const { app, url, lines } = await gateway(up)
  t.teardown(async () => { await app.close(); await up.close() })
  const res = await call(url, { traceparent: TP })
  t.equal(res.statusCode, 200)
  t.equal(up.requests.length, 2, 'two attempts')
  const sent = up.requests.map(r => TP_RE.exec(String(r.headers.traceparent)))
  t.ok(sent.every(Boolean), 'each attempt carries a valid traceparent')
  t.same(sent.map(m => m![1]), [TRACE, TRACE], 'the caller\'s trace id')
  t.same(sent.map(m => m![3]), ['01', '01'], 'the caller\'s flags')
  t.not(sent[0]![2], sent[1]![2], 'a span id per attempt')
  t.ok(sent.every(m => m![2] !== PARENT), 'never the caller\'s span id')
  const tr = TP_RE.exec(String(res.headers.traceresponse))
  t.ok(tr, 'traceresponse header')
  t.equal(tr![1], TRACE)
  t.ok(tr![2] !== PARENT && sent.every(m => m![2] !== tr![2]), 'the gateway\'s own span id')
  t.not(String(res.headers['x-gw-trace-id']), TRACE, 'X-GW-Trace-ID stays the unique request id, not the W3C trace id')
  t.match(String(res.headers['x-gw-trace-id']), /^[A-Za-z0-9_-]{16}-[0-9a-z]+$/, 'in the request-id format')
  t.ok(await until(() => lines.some(l => l.msg === 'access')))
  t.equal(lines.find(l => l.msg === 'access')!.traceId, TRACE, 'the trace id in the access log')
})

t.test('an invalid or absent traceparent starts a new trace', async t => {
  const up = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('ok')))
  const { app, url } = await gateway(up)
  t.teardown(async () => { await app.close(); await up.close() })
  const seen = new Set<string>()
  for (const tp of [undefined, `ff-${TRACE}-${PARENT}-01`, `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE}-${PARENT}`]) {
    const before = up.requests.length
    const res = await call(url, tp === undefined ? {} : { traceparent: tp })
    t.equal(res.statusCode, 200, 'never an error for a bad traceparent')
    const sent = TP_RE.exec(String(up.requests[before].headers.traceparent))
    t.ok(sent, `a valid traceparent upstream for ${tp}`)
    t.not(sent![1], TRACE, 'a new trace id')
    t.equal(sent![3], '01', 'sampled')
    t.equal(TP_RE.exec(String(res.headers.traceresponse))![1], sent![1], 'traceresponse names the new trace')
    seen.add(sent![1])
  }
  t.equal(seen.size, 4, 'a fresh trace each time')
})

t.test('tracing.propagate false: no traceparent upstream, no traceresponse', async t => {
  const up = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('ok')))
  const { app, url } = await gateway(up, { tracing: { propagate: false } })
  t.teardown(async () => { await app.close(); await up.close() })
  const res = await call(url, { traceparent: TP })
  t.equal(res.statusCode, 200)
  t.equal(up.requests[0].headers.traceparent, undefined)
  t.equal(res.headers.traceresponse, undefined)
})

interface OtlpSpan { traceId: string, spanId: string, parentSpanId?: string, name: string, kind: number, startTimeUnixNano: string, endTimeUnixNano: string, attributes: { key: string, value: Record<string, unknown> }[], status?: { code?: number } }

t.test('OTLP/HTTP export: request, phase and attempt spans with their links and attributes', async t => {
  const bodies: any[] = []
  const contentTypes: string[] = []
  const receiver = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']))
      bodies.push({ path: req.url, auth: req.headers['x-collector-key'], json: JSON.parse(Buffer.concat(chunks).toString('utf8')) })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => receiver.close(() => resolve())))
  const port = (receiver.address() as { port: number }).port
  const up = await failoverUpstream()
  t.teardown(() => up.close())
  const { app, url } = await gateway(up, { tracing: { otlp: { url: `http://127.0.0.1:${port}/v1/traces`, headers: { 'x-collector-key': 'c1' }, serviceName: 'gw-test' } } })
  const res = await call(url, { traceparent: TP })
  t.equal(res.statusCode, 200)
  const gwSpan = TP_RE.exec(String(res.headers.traceresponse))![2]
  const upstreamParents = up.requests.map(r => TP_RE.exec(String(r.headers.traceparent))![2])
  await app.close() // flushes the batch

  t.ok(bodies.length >= 1, 'spans were posted')
  t.match(contentTypes[0], /json/, 'OTLP/HTTP JSON')
  t.equal(bodies[0].path, '/v1/traces')
  t.equal(bodies[0].auth, 'c1', 'configured headers sent')
  const resourceSpans = bodies.flatMap(b => b.json.resourceSpans)
  const service = resourceSpans[0].resource.attributes.find((a: { key: string, value: { stringValue: string } }) => a.key === 'service.name')
  t.equal(service.value.stringValue, 'gw-test')
  const spans: OtlpSpan[] = resourceSpans.flatMap((r: { scopeSpans: { spans: OtlpSpan[] }[] }) => r.scopeSpans.flatMap(s => s.spans))
  const attr = (s: OtlpSpan, k: string) => { const a = s.attributes.find(x => x.key === k)?.value; return a?.stringValue ?? (a?.intValue !== undefined ? Number(a.intValue) : a?.boolValue) }
  t.ok(spans.every(s => s.traceId === TRACE), 'every span in the caller\'s trace')
  const root = spans.find(s => s.spanId === gwSpan)!
  t.ok(root, 'the request span has the span id of traceresponse')
  t.equal(root.name, 'POST chat')
  t.equal(root.parentSpanId, PARENT, 'child of the caller\'s span')
  t.equal(root.kind, 2, 'SERVER')
  t.equal(attr(root, 'http.response.status_code'), 200)
  t.equal(attr(root, 'gen_ai.request.model'), 'vendor/m')
  t.equal(attr(root, 'gw.provider'), 'up-b')
  t.equal(attr(root, 'gw.key_id'), 'key-test')
  const phases = spans.filter(s => s.name.startsWith('phase '))
  t.same(phases.map(s => s.name), ['phase connect', 'phase authenticate', 'phase inspect', 'phase admit', 'phase dispatch', 'phase responding', 'phase settle'], 'one span per phase, in order, the settle last')
  t.ok(phases.every(s => s.parentSpanId === gwSpan), 'phases are children of the request span')
  const settle = phases.at(-1)!
  t.equal(settle.startTimeUnixNano, root.endTimeUnixNano, 'the request span ends with the response; the settle starts there')
  t.equal(settle.startTimeUnixNano, phases.at(-2)!.endTimeUnixNano, 'right after the responding phase')
  t.equal(attr(settle, 'gw.phase'), 'settle')
  const attempts = spans.filter(s => s.name.startsWith('upstream '))
  t.same(attempts.map(s => s.name), ['upstream up-a', 'upstream up-b'])
  t.same(attempts.map(s => s.spanId), upstreamParents, 'the span ids the upstreams saw as parent')
  t.ok(attempts.every(s => s.parentSpanId === gwSpan && s.kind === 3), 'CLIENT spans, children of the request span')
  t.equal(attr(attempts[0], 'http.response.status_code'), 500)
  t.equal(attr(attempts[0], 'error.type'), 'http_5xx')
  t.equal(attempts[0].status?.code, 2, 'a failed attempt has an error status')
  t.equal(attr(attempts[1], 'gen_ai.request.model'), 'mb')
  t.equal(attr(attempts[1], 'gw.attempt'), 2)
})

t.test('at sampleRatio 0 a caller\'s sampled flag exports its trace only when the call is authenticated; spans per second are capped', async t => {
  const traces: string[] = []
  const receiver = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      for (const r of body.resourceSpans) for (const sc of r.scopeSpans) for (const sp of sc.spans) traces.push(sp.traceId)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => receiver.close(() => resolve())))
  const port = (receiver.address() as { port: number }).port
  const up = await startFakeUpstream((_req, res) => json(res, 200, chatCompletion('ok')))
  t.teardown(() => up.close())
  const { app, url } = await gateway(up, { tracing: { otlp: { url: `http://127.0.0.1:${port}/v1/traces`, sampleRatio: 0, maxSpansPerSecond: 40 } } })
  const junk = '11111111111111111111111111111111'
  const authed = '22222222222222222222222222222222'
  // Unauthenticated junk with a sampled flag: 401, and nothing exported.
  for (let i = 0; i < 20; i++) {
    const res = await request(url + '/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json', traceparent: `00-${junk}-${PARENT}-01` }, body: '{}',
    })
    await res.body.text()
    t.equal(res.statusCode, 401)
  }
  // An authenticated caller's sampled flag is honoured.
  t.equal((await call(url, { traceparent: `00-${authed}-${PARENT}-01` })).statusCode, 200)
  // A burst of authenticated sampled calls: at most about maxSpansPerSecond spans go out.
  const burst = '33333333333333333333333333333333'
  await Promise.all(Array.from({ length: 40 }, () => call(url, { traceparent: `00-${burst}-${PARENT}-01` })))
  await app.close() // flushes the batch
  t.equal(traces.filter(id => id === junk).length, 0, 'no span of an unauthenticated caller\'s trace')
  t.ok(traces.filter(id => id === authed).length >= 2, 'the authenticated call\'s spans were exported')
  const burstSpans = traces.filter(id => id === burst).length
  t.ok(burstSpans > 0 && burstSpans <= 80, `the burst was capped (${burstSpans} spans for 40 calls of about 10 spans each)`)
})

t.test('no OpenTelemetry module is loaded unless OTLP export is on', async t => {
  const script = fileURLToPath(new URL('./fixtures/otel-loaded.ts', import.meta.url))
  const run = (mode: string) => {
    const r = spawnSync(process.execPath, [...process.execArgv, script, mode], { encoding: 'utf8', timeout: 60000 })
    const line = r.stdout.trim().split('\n').pop() ?? ''
    if (r.status !== 0 || !line.startsWith('{')) throw new Error(`child failed (${r.status}): ${r.stderr.slice(-2000)}`)
    return JSON.parse(line) as { status: number, loaded: string[] }
  }
  const off = run('off')
  t.equal(off.status, 200)
  t.same(off.loaded, [], 'metrics and export off: neither prom-client nor any OpenTelemetry module loaded')
  const metrics = run('metrics')
  t.equal(metrics.status, 200)
  t.ok(metrics.loaded.some(u => u.includes('prom-client')), 'metrics on: prom-client loaded')
  t.same(metrics.loaded.filter(u => /@opentelemetry\/(?!api\/)/.test(u)), [], 'export off: no OpenTelemetry module but the API prom-client itself loads')
  const on = run('on')
  t.equal(on.status, 200)
  t.ok(on.loaded.some(u => u.includes('@opentelemetry/sdk-trace')), 'on: the SDK is loaded (the check sees loads)')
})
