/**
 * @module testing/conformance – the provider conformance suite: runs one adapter inside a real
 * gateway (in-process, `app.inject`) against a loopback fake upstream of its protocol, and checks
 * what every adapter must get right: the request that reaches the upstream (model name, golden
 * translation cases from both client protocols), answers on both routes streamed and not, the
 * normalized usage that billing reads, and upstream failures before and after the first byte.
 * Works with tap's `t` and with `node:test`'s `t` (only `t.test` is used; assertions throw).
 */
import assert from 'node:assert/strict'
import pino from 'pino'
import type { ProviderAdapter } from '../core/dispatch/provider.ts'
import type { Protocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import type { GatewayApp } from '../core/http/app.ts'
import { SseParser } from '../core/dispatch/sse.ts'
import { startFakeUpstream, json, sse, chatChunk, msgEvent, DONE, type FakeUpstream, type Recorded } from './fake-upstream.ts'
import { outcomeSpy } from './outcome-spy.ts'
import {
  GOLDEN_CASES, GOLDEN_ANSWERS, GOLDEN_STREAMS, GOLDEN_PARAMS, matches, standardUsage, clientUsage, upstreamAnswerBody,
  upstreamStreamEvents, frameUpstream, streamShape, goldenBody,
} from './golden.ts'

/** The part of a test object the suite uses: tap's `t` and `node:test`'s `t` both fit. */
export interface SuiteTest {
  test (name: string, fn: () => Promise<void>): unknown
}

export interface ConformanceOptions {
  adapter: ProviderAdapter<any>
  /** The adapter's config for one upstream at `baseUrl` (`http://127.0.0.1:<port>`, no path). */
  config (baseUrl: string): Record<string, unknown>
  /**
   * The `usage` object the vendor's upstream sends for the given normalized counts (default: the
   * protocol's standard fields). An adapter that reads a usage field of its own sets this.
   */
  upstreamUsage? (usage: Usage): Record<string, unknown>
  /**
   * Whether the vendor's usage can report prompt-cache writes (default true: the standard fields
   * can). When false, the golden cases that carry cache writes are left out: such a vendor cannot
   * send them, so there is nothing for the adapter to normalize.
   */
  cacheWrites?: boolean
  /** Extra checks on every request the upstream received (auth header, path...); throw to fail. */
  checkRequest? (req: Recorded): void
}

const MODEL = 'conformance/model'
const UPSTREAM_MODEL = 'up-conformance'
/** The counts the fake upstream reports; what the gateway must hand to billing, whatever the protocol. */
const USAGE: Usage = { inputTokens: 20, cachedInputTokens: 4, cacheWriteTokens: 0, outputTokens: 7 }
const PIECES = ['Hel', 'lo']
/** A prompt holding this makes the fake upstream cut its stream after the first events. */
const CUT = 'conformance-cut-the-stream'

/** A fake upstream answering like a vendor of `protocol`: JSON or SSE as asked, with the vendor's usage. */
function answerLike (protocol: Protocol, usageOf: (u: Usage) => Record<string, unknown>) {
  return (req: Recorded, res: import('node:http').ServerResponse) => {
    const stream = req.body?.stream === true
    const cutAfter = JSON.stringify(req.body).includes(CUT) ? 3 : undefined
    if (protocol === 'chat') {
      if (!stream) {
        return json(res, 200, {
          id: 'chatcmpl-c1', object: 'chat.completion', created: 1767225600, model: UPSTREAM_MODEL,
          choices: [{ index: 0, message: { role: 'assistant', content: PIECES.join('') }, finish_reason: 'stop' }], usage: usageOf(USAGE),
        })
      }
      return sse(res, [
        chatChunk({ role: 'assistant', content: '' }), ...PIECES.map(p => chatChunk({ content: p })), chatChunk({}, 'stop'),
        `data: ${JSON.stringify({ id: 'chatcmpl-c1', object: 'chat.completion.chunk', created: 1767225600, model: UPSTREAM_MODEL, choices: [], usage: usageOf(USAGE) })}\n\n`,
        DONE,
      ], { cutAfter, delayMs: cutAfter ? 20 : 0 })
    }
    if (!stream) {
      return json(res, 200, {
        id: 'msg_c1', type: 'message', role: 'assistant', model: UPSTREAM_MODEL, content: [{ type: 'text', text: PIECES.join('') }],
        stop_reason: 'end_turn', stop_sequence: null, usage: usageOf(USAGE),
      })
    }
    return sse(res, [
      msgEvent('message_start', { message: { id: 'msg_c1', type: 'message', role: 'assistant', model: UPSTREAM_MODEL, content: [], stop_reason: null, stop_sequence: null, usage: usageOf({ ...USAGE, outputTokens: 1 }) } }),
      msgEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ...PIECES.map(p => msgEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } })),
      msgEvent('content_block_stop', { index: 0 }),
      msgEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: usageOf(USAGE) }),
      msgEvent('message_stop', {}),
    ], { cutAfter, delayMs: cutAfter ? 20 : 0 })
  }
}

interface Rig { app: GatewayApp, up: FakeUpstream, spy: ReturnType<typeof outcomeSpy>, protocol: Protocol, close (): Promise<void> }

async function rig (opts: ConformanceOptions): Promise<Rig> {
  const { buildConfig } = await import('../core/config/config.ts')
  const { buildApp } = await import('../core/http/app.ts')
  const { openLedger } = await import('../core/ledger/index.ts')
  const { builtinPlugins } = await import('../plugins/index.ts')
  const { builtinProviders, translators } = await import('../providers/index.ts')
  // A built-in adapter is already registered; a third-party one joins the registry.
  const providers = builtinProviders.includes(opts.adapter) ? builtinProviders : [...builtinProviders, opts.adapter]
  const up = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = {
    providers: [{ name: 'conformance', adapter: opts.adapter.name, config: opts.config(up.origin) }],
    models: [{
      id: MODEL, input_modalities: ['text', 'image'], price: { input: 1, cachedInput: 0.5, output: 2 },
      supported_parameters: [...GOLDEN_PARAMS],
      deployments: [{ provider: 'conformance', model: UPSTREAM_MODEL }],
    }],
    pipeline: [{ plugin: 'outcome-spy' }],
    logging: { level: 'silent' },
  }
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  let app: GatewayApp
  try {
    const config = buildConfig(doc, 'conformance config', process.cwd(), {})
    config.stores.kv.backend = 'memory'
    await ledger.migrate()
    app = await buildApp(config, { ledger, providers, plugins: [...builtinPlugins, spy.plugin], translators, logger: pino({ level: 'silent' }) })
  } catch (err) {
    await ledger.close()
    await up.close()
    throw err
  }
  const speaks = app.gateway.providers.get('conformance')!.protocol
  if (speaks === 'responses') {
    await app.close(); await ledger.close(); await up.close()
    throw new Error('the conformance suite covers chat and messages upstreams; a Responses API upstream has its own tests')
  }
  const protocol: Protocol = speaks
  up.handle(answerLike(protocol, opts.upstreamUsage ?? (u => standardUsage(protocol, u))))
  return { app, up, spy, protocol, async close () { await app.close(); await ledger.close(); await up.close() } }
}

const ROUTES = {
  chat: { url: '/v1/chat/completions', body: (extra: Record<string, unknown> = {}) => goldenBody('chat', MODEL, extra) },
  messages: { url: '/v1/messages', body: (extra: Record<string, unknown> = {}) => goldenBody('messages', MODEL, extra) },
} as const

function events (text: string) {
  const p = new SseParser()
  return [...p.push(Buffer.from(text)), ...p.end()]
}

/** Text of a client-protocol answer, JSON or SSE. */
function answerText (route: Protocol, payload: string, streamed: boolean): string {
  if (!streamed) {
    const b = JSON.parse(payload)
    return route === 'chat' ? b.choices[0].message.content : b.content.map((c: any) => c.text ?? '').join('')
  }
  let text = ''
  for (const ev of events(payload)) {
    if (ev.data === '[DONE]') continue
    const d = JSON.parse(ev.data)
    if (route === 'chat') text += d.choices?.[0]?.delta?.content ?? ''
    else if (d.type === 'content_block_delta') text += d.delta?.text ?? ''
  }
  return text
}

function sameUsage (got: Usage | undefined, want: Usage, what: string): void {
  assert.ok(got, `${what}: usage reached settle`)
  assert.deepEqual(
    { inputTokens: got.inputTokens, cachedInputTokens: got.cachedInputTokens, outputTokens: got.outputTokens },
    { inputTokens: want.inputTokens, cachedInputTokens: want.cachedInputTokens, outputTokens: want.outputTokens },
    `${what}: normalized usage (input incl. cached, cached, output)`)
}

/**
 * Runs the suite as sub-tests of `t`.
 * @example
 * import t from 'tap'
 * import { runProviderConformance } from 'model-gateway/testing'
 * import adapter from './index.js'
 * await runProviderConformance(t, { adapter, config: baseUrl => ({ baseUrl: `${baseUrl}/v1`, apiKey: 'k' }) })
 */
export async function runProviderConformance (t: SuiteTest, opts: ConformanceOptions): Promise<void> {
  const r = await rig(opts)
  let settled = 0
  const call = async (route: Protocol, extra: Record<string, unknown> = {}) => {
    const res = await r.app.inject({ method: 'POST', url: ROUTES[route].url, payload: ROUTES[route].body(extra) })
    await r.spy.settled(++settled)
    return { res, outcome: r.spy.seen[settled - 1].outcome, upstream: r.up.requests.at(-1) }
  }
  try {
    await t.test(`${opts.adapter.name} – the upstream gets its model name and the adapter's own request details`, async () => {
      for (const route of ['chat', 'messages'] as const) {
        const { res, upstream } = await call(route)
        assert.equal(res.statusCode, 200, `${route}: 200`)
        assert.ok(upstream, `${route}: the upstream was called`)
        assert.equal(upstream.method, 'POST')
        assert.equal(upstream.body.model, UPSTREAM_MODEL, `${route}: the upstream model name replaces the gateway's`)
        opts.checkRequest?.(upstream)
      }
    })

    await t.test(`${opts.adapter.name} – golden translation cases reach the upstream in its protocol`, async () => {
      for (const c of GOLDEN_CASES.filter(g => g.upstream === r.protocol)) {
        const { res, upstream } = await call(c.client, c.body)
        assert.equal(res.statusCode, 200, `${c.name}: 200`)
        const miss = matches(upstream!.body, c.expect)
        assert.equal(miss, undefined, `${c.name}: ${miss}`)
      }
    })

    const usageOf = opts.upstreamUsage ?? (u => standardUsage(r.protocol, u))
    const reportable = (u: Usage) => opts.cacheWrites !== false || !u.cacheWriteTokens
    // A same-protocol answer passes through unchanged, so its client sees the vendor's own usage object.
    const expectOf = <C extends { client: Protocol, upstream: Protocol, usage: Usage, expect: Record<string, unknown> }>(c: C) =>
      c.client === c.upstream && opts.upstreamUsage && 'usage' in c.expect ? { ...c.expect, usage: usageOf(c.usage) } : c.expect
    const sameUsageOf = (got: Usage | undefined, want: Usage) =>
      got !== undefined && got.inputTokens === want.inputTokens && got.cachedInputTokens === want.cachedInputTokens && got.outputTokens === want.outputTokens

    await t.test(`${opts.adapter.name} – golden answers reach the client in its protocol, usage normalized for billing`, async () => {
      try {
        for (const c of GOLDEN_ANSWERS.filter(g => g.upstream === r.protocol && reportable(g.usage))) {
          r.up.handle((_req, res) => json(res, 200, upstreamAnswerBody(c.answer, usageOf(c.usage), UPSTREAM_MODEL)))
          const { res, outcome } = await call(c.client, c.body)
          assert.equal(res.statusCode, 200, `${c.name}: 200`)
          const body = JSON.parse(res.payload)
          const miss = matches(body, expectOf(c))
          assert.equal(miss, undefined, `${c.name}: ${miss}`)
          if (c.client !== c.upstream) {
            const umiss = matches(body.usage, clientUsage(c.client, c.usage))
            assert.equal(umiss, undefined, `${c.name}: the client's usage ${umiss}`)
          }
          assert.ok(sameUsageOf(outcome.usage, c.usage), `${c.name}: normalized usage reached settle (got ${JSON.stringify(outcome.usage)})`)
        }
      } finally {
        r.up.handle(answerLike(r.protocol, usageOf))
      }
    })

    await t.test(`${opts.adapter.name} – golden streams reach the client event by event, usage normalized for billing`, async () => {
      try {
        for (const c of GOLDEN_STREAMS.filter(g => g.upstream === r.protocol && reportable(g.usage))) {
          r.up.handle((_req, res) => sse(res, frameUpstream(upstreamStreamEvents(c.stream, usageOf(c.usage), UPSTREAM_MODEL), c.framing)))
          const { res, outcome, upstream } = await call(c.client, { ...c.body, stream: true })
          assert.equal(res.statusCode, 200, `${c.name}: 200`)
          assert.equal(upstream?.body.stream, true, `${c.name}: the upstream was asked to stream`)
          const { shape, usage } = streamShape(c.client, res.payload)
          assert.deepEqual(shape, c.shape, `${c.name}: the client's stream`)
          if (c.client !== c.upstream && (c.client === 'messages' || shape.includes('usage'))) {
            const umiss = matches(usage, clientUsage(c.client, c.usage))
            assert.equal(umiss, undefined, `${c.name}: the client's usage ${umiss}`)
          }
          assert.equal(outcome.upstreamSucceeded, true)
          assert.equal(outcome.usageEstimated, false, `${c.name}: usage is the upstream's, not an estimate`)
          assert.ok(sameUsageOf(outcome.usage, c.usage), `${c.name}: normalized usage reached settle (got ${JSON.stringify(outcome.usage)})`)
        }
      } finally {
        r.up.handle(answerLike(r.protocol, usageOf))
      }
    })

    for (const streamed of [false, true]) {
      await t.test(`${opts.adapter.name} – ${streamed ? 'streamed' : 'non-streamed'} answers on both routes, usage normalized for billing`, async () => {
        for (const route of ['chat', 'messages'] as const) {
          const { res, outcome } = await call(route, streamed ? { stream: true } : {})
          assert.equal(res.statusCode, 200, `${route}: 200`)
          assert.equal(res.headers['x-gw-provider'], 'conformance')
          assert.equal(answerText(route, res.payload, streamed), PIECES.join(''), `${route}: the answer's text`)
          if (streamed) {
            const evs = events(res.payload)
            if (route === 'chat') assert.equal(evs.at(-1)?.data, '[DONE]', 'chat: the stream ends with [DONE]')
            else assert.equal(evs.at(-1)?.event, 'message_stop', 'messages: the stream ends with message_stop')
          }
          assert.equal(outcome.upstreamSucceeded, true)
          assert.equal(outcome.usageEstimated, false, `${route}: usage is the upstream's, not an estimate`)
          sameUsage(outcome.usage, USAGE, `${route}${streamed ? ' streamed' : ''}`)
        }
      })
    }

    await t.test(`${opts.adapter.name} – upstream failures map to the gateway's statuses`, async () => {
      const cases: [string, number, unknown, number][] = [
        ['upstream 500', 500, { error: { message: 'boom' } }, 502],
        ['upstream 401 (the operator\'s key)', 401, { error: { message: 'bad key' } }, 502],
        ['upstream 400', 400, { error: { message: 'bad request', type: 'invalid_request_error' } }, 400],
        ['upstream 200 with HTML', 200, '<html>oops</html>', 502],
      ]
      for (const [name, status, body, want] of cases) {
        r.up.handle((_req, res) => json(res, status, body))
        for (const route of ['chat', 'messages'] as const) {
          const { res, outcome } = await call(route)
          assert.equal(res.statusCode, want, `${name} on ${route}: ${want}`)
          assert.ok(!res.payload.includes(r.up.origin), `${name} on ${route}: the upstream's address is not shown`)
          assert.equal(outcome.status, want)
        }
      }
      r.up.handle(answerLike(r.protocol, opts.upstreamUsage ?? (u => standardUsage(r.protocol, u))))
    })

    await t.test(`${opts.adapter.name} – a stream cut after the first byte ends with the protocol's error event and is billed`, async () => {
      for (const route of ['chat', 'messages'] as const) {
        const { res, outcome } = await call(route, { stream: true, messages: [{ role: 'user', content: CUT }] })
        assert.equal(res.statusCode, 200, `${route}: the stream had started`)
        const evs = events(res.payload)
        const last = evs.at(-1)
        if (route === 'chat') assert.match(last?.data ?? '', /"error"/, 'chat: the last event carries an error')
        else assert.equal(last?.event, 'error', 'messages: the last event is `error`')
        assert.equal(outcome.upstreamSucceeded, true)
        assert.ok(outcome.usage && outcome.usage.inputTokens > 0, `${route}: a cut stream is still billed`)
      }
    })
  } finally {
    await r.close()
  }
}
