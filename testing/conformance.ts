/**
 * @module testing/conformance – the provider conformance suite: runs one adapter inside a real
 * gateway (in-process, `app.inject`) against a loopback fake upstream of its protocol (chat
 * completions, messages, or the Responses API), and checks what every adapter must get right: the
 * request that reaches the upstream (model name, golden translation cases from every client route),
 * answers on every route streamed and not, the normalized usage that billing reads, and upstream
 * failures before and after the first byte. A vendor with a wire of its own (binary frames, other
 * JSON shapes) brings it as `wire`: the same cases then run through it.
 * Works with tap's `t` and with `node:test`'s `t` (only `t.test` is used; assertions throw).
 */
import assert from 'node:assert/strict'
import type { ProviderAdapter } from '../core/dispatch/provider.ts'
import type { ClientProtocol } from '../core/types/model.ts'
import type { Usage } from '../core/types/usage.ts'
import type { Recorded } from './fake-upstream.ts'
import {
  GOLDEN_CASES, GOLDEN_ANSWERS, GOLDEN_STREAMS, matches, standardUsage, clientUsage, upstreamAnswerBody,
  upstreamStreamEvents, streamShape, type SseFraming,
} from './golden.ts'
import { RESPONSES_GOLDEN_CASES, RESPONSES_GOLDEN_ANSWERS, RESPONSES_GOLDEN_STREAMS, responsesStreamShape } from './golden-responses.ts'
import {
  RESPONSES_UPSTREAM_CASES, RESPONSES_UPSTREAM_ANSWERS, RESPONSES_UPSTREAM_STREAMS, responsesAnswerBody, responsesUpstreamEvents,
  responsesUpstreamUsage,
} from './conformance-responses.ts'
import { rig, answerLike, answerText, events, fields, CLIENTS, CUT, MODEL, ROUTES, UPSTREAM_MODEL, USAGE, type ConformanceWire } from './conformance-rig.ts'

export type { ConformanceWire, WireReply } from './conformance-rig.ts'

/** The part of a test object the suite uses: tap's `t` and `node:test`'s `t` both fit. */
export interface SuiteTest {
  test (name: string, fn: () => Promise<void>): unknown
}

export interface ConformanceOptions {
  adapter: ProviderAdapter
  /** The adapter's config for one upstream at `baseUrl` (`http://127.0.0.1:<port>`, no path). */
  config (baseUrl: string): Record<string, unknown>
  /**
   * The `usage` object the vendor's upstream sends for the given normalized counts (default: the
   * protocol's standard fields). An adapter that reads a usage field of its own sets this.
   */
  upstreamUsage? (usage: Usage): Record<string, unknown>
  /**
   * Whether the vendor's usage can report prompt-cache writes (default true: the standard chat and
   * messages fields can; the Responses API's cannot, and its cases carry none). When false, the
   * golden cases that carry cache writes are left out: such a vendor cannot send them, so there is
   * nothing for the adapter to normalize.
   */
  cacheWrites?: boolean
  /**
   * Extra checks on every request the upstream received (auth header, path...); throw to fail.
   * `req.path`, `req.headers` and `req.text` are as received; `req.body` is in the adapter's
   * protocol (decoded by `wire` when there is one).
   */
  checkRequest? (req: Recorded): void
  /**
   * The vendor's own wire, when it is not one of the three protocols as they are: the fake upstream
   * then answers through it (the golden answers and streams encoded into the vendor's format) and
   * the golden requests are checked on what it decodes (see ConformanceWire).
   */
  wire?: ConformanceWire
  /**
   * Golden cases this adapter cannot pass by design, by case name, each with the reason (a feature
   * the vendor does not have, a request the adapter refuses with 400 as documented). Each name must
   * be a case the suite runs for the adapter's protocol; the suite fails on a name it does not know.
   */
  unsupported?: Readonly<Record<string, string>>
  /**
   * The model id the deployment names upstream (default `up-conformance`), for an adapter that
   * routes by it (Vertex sends `claude-…` ids to Anthropic's publisher). Its `wire` reports it back
   * as `up-conformance`, the name the golden cases expect.
   */
  deploymentModel?: string
}

/** One golden answer or stream, whatever its table: what the suite needs to run it. */
interface AnswerCase { name: string, client: ClientProtocol, body?: Record<string, unknown>, usage: Usage, expect: Record<string, unknown>, upstreamBody (usage: Record<string, unknown>): unknown }
interface StreamCase { name: string, client: ClientProtocol, body?: Record<string, unknown>, usage: Usage, shape: string[], final?: Record<string, unknown>, framing?: SseFraming,
  upstreamEvents (usage: Record<string, unknown>): string[] }

function sameUsage (got: Usage | undefined, want: Usage): boolean {
  return got !== undefined && got.inputTokens === want.inputTokens && got.cachedInputTokens === want.cachedInputTokens && got.outputTokens === want.outputTokens
}

/** The golden tables for an upstream of `protocol`, from every client route. */
function goldenFor (protocol: ClientProtocol): { requests: Array<{ name: string, client: ClientProtocol, body: Record<string, unknown>, expect: Record<string, unknown> }>,
  answers: AnswerCase[], streams: StreamCase[] } {
  if (protocol === 'responses') {
    return {
      requests: [...RESPONSES_UPSTREAM_CASES],
      answers: RESPONSES_UPSTREAM_ANSWERS.map(c => ({ ...c, upstreamBody: u => responsesAnswerBody(c.output, c.status, u, UPSTREAM_MODEL) })),
      streams: RESPONSES_UPSTREAM_STREAMS.map(c => ({ ...c, upstreamEvents: u => responsesUpstreamEvents(c.output, c.status, u, UPSTREAM_MODEL) })),
    }
  }
  return {
    requests: [
      ...GOLDEN_CASES.filter(g => g.upstream === protocol),
      ...RESPONSES_GOLDEN_CASES.filter(g => g.upstream === protocol).map(c => ({ ...c, client: 'responses' as const })),
    ],
    answers: [
      ...GOLDEN_ANSWERS.filter(g => g.upstream === protocol).map(c => ({ ...c, upstreamBody: (u: Record<string, unknown>) => upstreamAnswerBody(c.answer, u, UPSTREAM_MODEL) })),
      // These cases name the translator fixtures' model (`m/x`) where they check `model`: here it is the suite's.
      ...RESPONSES_GOLDEN_ANSWERS.filter(g => g.upstream === protocol).map(c => ({
        ...c, client: 'responses' as const, expect: 'model' in c.expect ? { ...c.expect, model: MODEL } : c.expect,
        upstreamBody: (u: Record<string, unknown>) => upstreamAnswerBody(c.answer, u, UPSTREAM_MODEL),
      })),
    ],
    streams: [
      ...GOLDEN_STREAMS.filter(g => g.upstream === protocol).map(c => ({ ...c, upstreamEvents: (u: Record<string, unknown>) => upstreamStreamEvents(c.stream, u, UPSTREAM_MODEL) })),
      ...RESPONSES_GOLDEN_STREAMS.filter(g => g.upstream === protocol).map(c => ({ ...c, client: 'responses' as const, upstreamEvents: (u: Record<string, unknown>) => upstreamStreamEvents(c.stream,
        u, UPSTREAM_MODEL) })),
    ],
  }
}

/** A client stream's shape as its golden case writes it, and the last usage object it carried. */
function clientStream (client: ClientProtocol, payload: string): { shape: string[], usage?: Record<string, unknown>, final?: Record<string, unknown> } {
  if (client !== 'responses') return streamShape(client, payload)
  const { shape, final } = responsesStreamShape(payload)
  return { shape, final, usage: fields(final?.usage) }
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
  const r = await rig(opts.adapter, opts.config, opts.wire, opts.deploymentModel)
  const protocol = r.protocol
  const usageOf = opts.upstreamUsage ?? (u => protocol === 'responses' ? responsesUpstreamUsage(u) : standardUsage(protocol, u))
  const standard = (): void => r.handle(answerLike(protocol, usageOf))
  standard()
  const name = opts.adapter.name
  let settled = 0
  const call = async (route: ClientProtocol, extra: Record<string, unknown> = {}, label: string = route) => {
    const res = await r.app.inject({ method: 'POST', url: ROUTES[route].url, payload: ROUTES[route].body(extra) })
    await r.spy.settled(++settled)
    const upstream = r.requests.at(-1)
    assert.equal(upstream?.refused, undefined, `${label}: the fake upstream refused the request`)
    return { res, outcome: r.spy.seen[settled - 1].outcome, upstream }
  }
  // A vendor's usage without a cache-write field cannot report writes: those cases are left out.
  const reportable = (u: Usage) => (opts.cacheWrites !== false && protocol !== 'responses') || !u.cacheWriteTokens
  // A same-protocol answer passes through unchanged, so its client sees the vendor's own usage object.
  const expectOf = (c: AnswerCase) => c.client === protocol && opts.upstreamUsage && 'usage' in c.expect ? { ...c.expect, usage: usageOf(c.usage) } : c.expect
  const all = goldenFor(protocol)
  const unsupported = opts.unsupported ?? {}
  const supported = <C extends { name: string }>(list: readonly C[]): C[] => list.filter(c => !(c.name in unsupported))
  const golden = { requests: supported(all.requests), answers: supported(all.answers), streams: supported(all.streams) }
  try {
    await t.test(`${name} – the upstream gets its model name and the adapter's own request details`, async () => {
      for (const route of CLIENTS) {
        const { res, upstream } = await call(route)
        assert.equal(res.statusCode, 200, `${route}: 200`)
        assert.ok(upstream, `${route}: the upstream was called`)
        assert.equal(upstream.method, 'POST')
        assert.equal(fields(upstream.body).model, UPSTREAM_MODEL, `${route}: the upstream model name replaces the gateway's`)
        opts.checkRequest?.(upstream)
      }
    })

    if (opts.unsupported !== undefined) {
      await t.test(`${name} – the golden cases declared unsupported are cases of its protocol, each with a reason`, async () => {
        const known = new Set([...all.requests, ...all.answers, ...all.streams].map(c => c.name))
        for (const [caseName, why] of Object.entries(unsupported)) {
          assert.ok(known.has(caseName), `"${caseName}" is not a golden case for a ${protocol} upstream`)
          assert.ok(why.trim() !== '', `"${caseName}": a reason is given`)
        }
      })
    }

    await t.test(`${name} – golden translation cases reach the upstream in its protocol`, async () => {
      for (const c of golden.requests) {
        const { res, upstream } = await call(c.client, c.body, c.name)
        assert.equal(res.statusCode, 200, `${c.name}: 200 (${res.payload.slice(0, 300)})`)
        const miss = matches(upstream!.body, c.expect)
        assert.equal(miss, undefined, `${c.name}: ${miss}`)
      }
    })

    await t.test(`${name} – golden answers reach the client in its protocol, usage normalized for billing`, async () => {
      try {
        for (const c of golden.answers.filter(g => reportable(g.usage))) {
          r.handle(() => ({ status: 200, body: c.upstreamBody(usageOf(c.usage)) }))
          const { res, outcome } = await call(c.client, c.body, c.name)
          assert.equal(res.statusCode, 200, `${c.name}: 200`)
          const body = fields(JSON.parse(res.payload))
          const miss = matches(body, expectOf(c))
          assert.equal(miss, undefined, `${c.name}: ${miss}`)
          if (c.client !== protocol && c.client !== 'responses') {
            const umiss = matches(body.usage, clientUsage(c.client, c.usage))
            assert.equal(umiss, undefined, `${c.name}: the client's usage ${umiss}`)
          }
          assert.ok(sameUsage(outcome.usage, c.usage), `${c.name}: normalized usage reached settle (got ${JSON.stringify(outcome.usage)})`)
        }
      } finally {
        standard()
      }
    })

    await t.test(`${name} – golden streams reach the client event by event, usage normalized for billing`, async () => {
      try {
        for (const c of golden.streams.filter(g => reportable(g.usage))) {
          r.handle(() => ({ events: c.upstreamEvents(usageOf(c.usage)), framing: c.framing }))
          const { res, outcome, upstream } = await call(c.client, { ...c.body, stream: true }, c.name)
          assert.equal(res.statusCode, 200, `${c.name}: 200`)
          assert.equal(fields(upstream?.body).stream, true, `${c.name}: the upstream was asked to stream`)
          const { shape, usage, final } = clientStream(c.client, res.payload)
          assert.deepEqual(shape, c.shape, `${c.name}: the client's stream`)
          if (c.final !== undefined) {
            const fmiss = matches(final, c.final)
            assert.equal(fmiss, undefined, `${c.name}: the final response ${fmiss}`)
          } else if (c.client !== protocol && c.client !== 'responses' && (c.client === 'messages' || shape.includes('usage'))) {
            const umiss = matches(usage, clientUsage(c.client, c.usage))
            assert.equal(umiss, undefined, `${c.name}: the client's usage ${umiss}`)
          }
          assert.equal(outcome.upstreamSucceeded, true)
          assert.equal(outcome.usageEstimated, false, `${c.name}: usage is the upstream's, not an estimate`)
          assert.ok(sameUsage(outcome.usage, c.usage), `${c.name}: normalized usage reached settle (got ${JSON.stringify(outcome.usage)})`)
        }
      } finally {
        standard()
      }
    })

    for (const streamed of [false, true]) {
      await t.test(`${name} – ${streamed ? 'streamed' : 'non-streamed'} answers on every route, usage normalized for billing`, async () => {
        for (const route of CLIENTS) {
          const { res, outcome } = await call(route, streamed ? { stream: true } : {})
          assert.equal(res.statusCode, 200, `${route}: 200`)
          assert.equal(res.headers['x-gw-provider'], 'conformance')
          assert.equal(answerText(route, res.payload, streamed), 'Hello', `${route}: the answer's text`)
          if (streamed) {
            const last = events(res.payload).at(-1)
            if (route === 'chat') assert.equal(last?.data, '[DONE]', 'chat: the stream ends with [DONE]')
            else if (route === 'messages') assert.equal(last?.event, 'message_stop', 'messages: the stream ends with message_stop')
            else assert.equal(last?.event, 'response.completed', 'responses: the stream ends with response.completed')
          }
          assert.equal(outcome.upstreamSucceeded, true)
          assert.equal(outcome.usageEstimated, false, `${route}: usage is the upstream's, not an estimate`)
          assert.ok(sameUsage(outcome.usage, USAGE),
            `${route}${streamed ? ' streamed' : ''}: normalized usage (input incl. cached, cached, output) reached settle (got ${JSON.stringify(outcome.usage)})`)
        }
      })
    }

    await t.test(`${name} – upstream failures map to the gateway's statuses`, async () => {
      const cases: [string, number, unknown, number][] = [
        ['upstream 500', 500, { error: { message: 'boom' } }, 502],
        ['upstream 401 (the operator\'s key)', 401, { error: { message: 'bad key' } }, 502],
        ['upstream 400', 400, { error: { message: 'bad request', type: 'invalid_request_error' } }, 400],
        ['upstream 200 with HTML', 200, '<html>oops</html>', 502],
      ]
      try {
        for (const [what, status, body, want] of cases) {
          r.handle(() => ({ status, body }))
          for (const route of CLIENTS) {
            const { res, outcome } = await call(route)
            assert.equal(res.statusCode, want, `${what} on ${route}: ${want}`)
            assert.ok(!res.payload.includes(r.up.origin), `${what} on ${route}: the upstream's address is not shown`)
            assert.equal(outcome.status, want)
          }
        }
      } finally {
        standard()
      }
    })

    await t.test(`${name} – a stream cut after the first byte ends with the protocol's error event and is billed`, async () => {
      for (const route of CLIENTS) {
        const prompt = route === 'responses' ? { input: CUT } : { messages: [{ role: 'user', content: CUT }] }
        const { res, outcome } = await call(route, { stream: true, ...prompt })
        assert.equal(res.statusCode, 200, `${route}: the stream had started`)
        const evs = events(res.payload)
        const last = evs.at(-1)
        if (route === 'chat') assert.match(last?.data ?? '', /"error"/, 'chat: the last event carries an error')
        else assert.equal(last?.event, 'error', `${route}: the last event is \`error\``)
        if (route === 'responses') assert.ok(evs.some(e => e.event === 'response.failed'), 'responses: the response is marked failed')
        assert.equal(outcome.upstreamSucceeded, true)
        assert.ok(outcome.usage && outcome.usage.inputTokens > 0, `${route}: a cut stream is still billed`)
      }
    })
  } finally {
    await r.close()
  }
}
