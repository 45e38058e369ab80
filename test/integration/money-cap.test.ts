// The output cap a call reserved for is the cap its upstream gets, on every client route × upstream
// protocol, streamed or not; an upstream that ignores it is billed at most the reservation (a
// stream past it is ended); a non-streamed call cut after its request went upstream is billed.
// Through a listening gateway, on SQLite and PostgreSQL ledgers.
import t, { type Test } from 'tap'
import { request as httpRequest, type ServerResponse } from 'node:http'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import {
  startFakeUpstream, json, sse, chatCompletion, chatTextStream, messagesResponse, messagesTextStream,
  responsesResponse, responsesTextStream, responsesUsage, type FakeUpstream, type Recorded,
} from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
/** The models' output cap, and the price that makes output the whole cost. */
const CAP = 16
const OUTPUT_PRICE = 1000
/** Tokens an upstream generates when no cap stops it. */
const LONG = 200
/** Input tokens the fake upstream reports (below any reservation's input estimate). */
const INPUT = 10
const PIECE = 'tok '

type Protocol = 'chat' | 'messages' | 'responses'
const UPSTREAMS: Record<Protocol, string> = { chat: 'cap/chat', messages: 'cap/msg', responses: 'cap/resp' }
const ROUTES: Record<Protocol, string> = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' }

function protocolOf (req: Recorded): Protocol {
  if (req.path.endsWith('/chat/completions')) return 'chat'
  if (req.path.endsWith('/messages')) return 'messages'
  return 'responses'
}

/** Every output cap field the upstream request carries. */
function capsOf (req: Recorded): number[] {
  const b = req.body as Record<string, unknown>
  return ['max_tokens', 'max_completion_tokens', 'max_output_tokens'].map(k => b[k]).filter((v): v is number => typeof v === 'number')
}

/**
 * An upstream that generates as many tokens as its request's cap asks for (LONG without one), or
 * LONG whatever it asks when `greedy`, and reports that many.
 */
function generate (greedy: boolean) {
  return (req: Recorded, res: ServerResponse) => {
    const caps = capsOf(req)
    const n = greedy ? LONG : Math.min(LONG, ...caps)
    const pieces = Array.from({ length: n }, () => PIECE)
    const text = pieces.join('')
    const stream = req.body.stream === true
    // A greedy stream comes event by event, as a generating upstream sends it (not one chunk).
    const pace = greedy ? { delayMs: 1 } : {}
    switch (protocolOf(req)) {
      case 'chat': return stream ? sse(res, chatTextStream(pieces, { prompt: INPUT, completion: n, cached: 0 }), pace) : json(res, 200, chatCompletion(text, { prompt: INPUT, completion: n, cached: 0 }))
      case 'messages': return stream ? sse(res, messagesTextStream(pieces, { input: INPUT, output: n, cacheRead: 0, cacheWrite: 0 }), pace) : json(res, 200, messagesResponse(text, { input: INPUT, output: n, cacheRead: 0, cacheWrite: 0 }))
      default: return stream ? sse(res, responsesTextStream(pieces, responsesUsage({ input: INPUT, output: n, cached: 0 })), pace) : json(res, 200, responsesResponse(text, responsesUsage({ input: INPUT, output: n, cached: 0 })))
    }
  }
}

function capDoc (origin: string, maxOutput = CAP): Record<string, unknown> {
  const price = { input: 1, output: OUTPUT_PRICE }
  return {
    providers: [
      { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${origin}/v1`, apiKey: 'sk-upstream', maxTokensField: 'max_completion_tokens' } },
      { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: origin, apiKey: 'sk-ant-upstream' } },
      { name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${origin}/v1`, apiKey: 'sk-upstream' } },
    ],
    models: [
      { id: 'cap/chat', max_output_tokens: maxOutput, input_modalities: ['text'], price, deployments: [{ provider: 'up-chat', model: 'up-chat' }] },
      { id: 'cap/msg', max_output_tokens: maxOutput, input_modalities: ['text'], price, supported_parameters: ['temperature', 'max_tokens', 'stream', 'stop_sequences'], deployments: [{ provider: 'up-msg', model: 'up-msg' }] },
      { id: 'cap/resp', max_output_tokens: maxOutput, input_modalities: ['text'], price, deployments: [{ provider: 'up-resp', model: 'up-resp' }] },
    ],
  }
}

/** A client body on `route` for `model` with no cap of its own (messages: one above the model's, the field is required). */
function clientBody (route: Protocol, model: string, stream: boolean, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const b: Record<string, unknown> = route === 'responses'
    ? { model, input: 'Tell me a long story.' }
    : { model, messages: [{ role: 'user', content: 'Tell me a long story.' }] }
  if (route === 'messages') b.max_tokens = 100_000
  if (stream) b.stream = true
  return { ...b, ...extra }
}

async function post (url: string, path: string, payload: unknown): Promise<{ status: number, text: string }> {
  const res = await fetch(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify(payload) })
  return { status: res.status, text: await res.text() }
}

type MakeLedger = (t: Test) => Promise<Ledger>

const sqlite: MakeLedger = async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  return ledger
}

async function gateway (t: Test, ledger: Ledger, up: FakeUpstream, opts: { balance: number, maxOutput?: number, timeoutMs?: number }): Promise<string> {
  const pipeline: unknown[] = [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: ORG, initialBalance: opts.balance }] } }]
  if (opts.timeoutMs !== undefined) pipeline.push({ plugin: 'timeout', config: { timeoutMs: opts.timeoutMs } })
  const app = await buildTestApp({ ledger, doc: capDoc(up.origin, opts.maxOutput), pipeline })
  t.teardown(() => app.close())
  return listen(app)
}

async function upstream (t: Test, greedy: boolean): Promise<FakeUpstream> {
  const up = await startFakeUpstream(generate(greedy))
  t.teardown(() => up.close())
  return up
}

const balanceOf = async (ledger: Ledger): Promise<number> => (await ledger.getBalance(ORG))!.balance

t.test('every client route × upstream protocol, streamed or not: the upstream gets the cap the call reserved for', async t => {
  const ledger = await sqlite(t)
  const up = await upstream(t, false)
  const url = await gateway(t, ledger, up, { balance: 100 })
  let calls = 0
  for (const route of ['chat', 'messages', 'responses'] as const) {
    for (const target of ['chat', 'messages', 'responses'] as const) {
      for (const stream of [false, true]) {
        const name = `${route} → ${target}${stream ? ', streamed' : ''}`
        const res = await post(url, ROUTES[route], clientBody(route, UPSTREAMS[target], stream))
        calls++
        t.equal(res.status, 200, name)
        const got = up.requests.at(-1)!
        t.equal(protocolOf(got), target, name)
        t.ok(capsOf(got).length > 0 && Math.max(...capsOf(got)) === CAP, `${name}: the upstream got the model's cap ${CAP} (got ${JSON.stringify(capsOf(got))})`)
        if (target === 'chat') t.equal(got.body.max_completion_tokens, CAP, `${name}: in the provider's maxTokensField`)
      }
    }
  }
  // A smaller cap the client asked for is what it reserved for and what the upstream gets.
  for (const route of ['chat', 'messages', 'responses'] as const) {
    const field = route === 'responses' ? 'max_output_tokens' : 'max_tokens'
    const res = await post(url, ROUTES[route], clientBody(route, UPSTREAMS[route], false, { [field]: 5 }))
    calls++
    t.equal(res.status, 200)
    t.same(capsOf(up.requests.at(-1)!), [5], `${route} → ${route}: the client's smaller cap goes as it is`)
  }
  t.ok(await until(async () => (await ledger.listUsage({})).length === calls), 'every call settled')
  for (const u of await ledger.listUsage({})) t.ok(u.outputTokens <= CAP, `billed ${u.outputTokens} output tokens, within the cap`)
})

t.test('without the balance plugin the upstream gets the same cap: the model\'s, or the client\'s smaller one', async t => {
  const up = await upstream(t, false)
  const app = await buildTestApp({ doc: capDoc(up.origin), pipeline: [AUTH_ENTRY] })
  t.teardown(() => app.close())
  const url = await listen(app)
  for (const route of ['chat', 'messages', 'responses'] as const) {
    for (const stream of [false, true]) {
      t.equal((await post(url, ROUTES[route], clientBody(route, UPSTREAMS[route], stream))).status, 200)
      t.same(capsOf(up.requests.at(-1)!), [CAP], `${route} → ${route}${stream ? ', streamed' : ''}`)
    }
  }
  t.equal((await post(url, ROUTES.chat, clientBody('chat', UPSTREAMS.chat, false, { max_completion_tokens: 3, max_tokens: 9 }))).status, 200)
  t.same(capsOf(up.requests.at(-1)!), [3, 3], 'two chat caps: max_completion_tokens wins, and the other is lowered to it')
})

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`${backend}: 20 calls in flight at once on 0.10 never overdraw, even from an upstream that ignores the cap`, async t => {
    let make = sqlite
    if (backend === 'postgres') {
      const dbUrl = await databaseUrl(t)
      if (dbUrl === undefined) return
      make = pgLedgers(t, dbUrl, 'cap')
    }
    for (const greedy of [false, true]) {
      await t.test(greedy ? 'an upstream that ignores the cap' : 'an upstream that honours the cap', async t => {
        const ledger = await make(t)
        const up = await upstream(t, greedy)
        // Answers wait until every call is in flight (or a moment has passed): they all hold at once.
        const gen = generate(greedy)
        const waiting: Array<() => void> = []
        up.handle((req, res) => {
          waiting.push(() => { void gen(req, res) })
          if (waiting.length >= 6) for (const go of waiting.splice(0)) go()
          else setTimeout(() => { for (const go of waiting.splice(0)) go() }, 500)
        })
        const url = await gateway(t, ledger, up, { balance: 0.10 })
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => {
          const route = (['chat', 'messages', 'responses'] as const)[i % 3]
          return post(url, ROUTES[route], clientBody(route, UPSTREAMS[route], i % 2 === 0))
        }))
        const served = results.filter(r => r.status === 200).length
        t.equal(served + results.filter(r => r.status === 402).length, 20, 'each call served or refused for its balance')
        t.ok(served >= 1 && served <= 6, `${served} served: what 0.10 covers at ${CAP} output tokens × ${OUTPUT_PRICE}/M each`)
        t.ok(await until(async () => (await ledger.listUsage({})).length === served), 'every served call billed once')
        const usage = await ledger.listUsage({})
        for (const u of usage) t.ok(u.outputTokens <= CAP, `billed ${u.outputTokens} output tokens, at most the cap`)
        const spent = usage.reduce((s, u) => s + u.cost, 0)
        const balance = await balanceOf(ledger)
        t.equal(balance, 100_000 - spent, 'the balance is what the records charged')
        t.ok(balance >= 0, `never below zero (${balance} micro-units left)`)
        if (greedy) t.ok(up.requests.every(r => capsOf(r).length > 0 && Math.max(...capsOf(r)) === CAP), 'every upstream request carried the cap')
      })
    }
  })
}

t.test('a stream from an upstream that ignores the cap is ended with an error event and billed once, at most the cap', async t => {
  const ledger = await sqlite(t)
  const up = await upstream(t, true)
  const url = await gateway(t, ledger, up, { balance: 100 })
  const chat = await post(url, ROUTES.chat, clientBody('chat', UPSTREAMS.chat, true))
  t.equal(chat.status, 200)
  t.ok(chat.text.split(PIECE).length - 1 < LONG, 'not every piece the upstream sent was relayed')
  t.match(chat.text, /data: \{"error":\{"message":"The model service passed the output limit of this call\."/, 'chat: an error chunk ends it')
  t.notMatch(chat.text, 'data: [DONE]')
  const msg = await post(url, ROUTES.messages, clientBody('messages', UPSTREAMS.messages, true))
  t.match(msg.text, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/, 'messages: an error event ends it')
  t.notMatch(msg.text, 'message_stop')
  const resp = await post(url, ROUTES.responses, clientBody('responses', UPSTREAMS.responses, true))
  t.match(resp.text, /event: response\.failed/, 'responses: response.failed ends it')
  t.notMatch(resp.text, 'response.completed')
  // Not streamed: the answer was generated whole, so it is relayed, but billed up to the cap.
  const whole = await post(url, ROUTES.chat, clientBody('chat', UPSTREAMS.chat, false))
  t.equal(whole.status, 200)
  t.equal(JSON.parse(whole.text).usage.completion_tokens, LONG, 'the upstream\'s own answer goes out as it is')
  t.ok(await until(async () => (await ledger.listUsage({})).length === 4), 'each call billed once')
  for (const u of await ledger.listUsage({})) t.equal(u.outputTokens, CAP, `${u.model}: billed the cap, not what the upstream generated`)
  t.equal(await balanceOf(ledger), 100_000_000 - (await ledger.listUsage({})).reduce((s, u) => s + u.cost, 0))
})

/**
 * A fake upstream that takes the request and never answers, or answers headers and part of a JSON
 * body; `written` counts the partial bodies flushed to the socket.
 */
function stalling (up: FakeUpstream, partial: string | undefined): { written: number } {
  const seen = { written: 0 }
  up.handle((_req, res) => {
    if (partial === undefined) return
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write(partial, () => { seen.written++ })
  })
  return seen
}

/** POSTs and destroys the connection once `ready` holds: a client that gives up. */
async function postThenClose (url: string, path: string, payload: unknown, ready: () => boolean): Promise<void> {
  const u = new URL(url + path)
  const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { ...auth(), 'content-type': 'application/json' } })
  req.on('error', () => { /* the close below */ })
  req.end(JSON.stringify(payload))
  await until(ready)
  req.destroy()
}

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`${backend}: a non-streamed call cut after its request went upstream is billed its input and the output read, marked estimated`, async t => {
    let make = sqlite
    if (backend === 'postgres') {
      const dbUrl = await databaseUrl(t)
      if (dbUrl === undefined) return
      make = pgLedgers(t, dbUrl, 'cut')
    }
    await t.test('the deadline passes while the upstream generates (no answer yet): 408, billed', async t => {
      const ledger = await make(t)
      const up = await upstream(t, false)
      stalling(up, undefined)
      const url = await gateway(t, ledger, up, { balance: 100, maxOutput: 4096, timeoutMs: 2000 })
      const results = await Promise.all(Array.from({ length: 8 }, () => post(url, ROUTES.chat, clientBody('chat', UPSTREAMS.chat, false))))
      for (const r of results) t.equal(r.status, 408)
      t.equal(up.requests.length, 8, 'each request reached the upstream')
      t.ok(await until(async () => (await ledger.listUsage({})).length === 8), 'each cut call has a usage record')
      for (const u of await ledger.listUsage({})) {
        t.match(u, { estimated: true, outputTokens: 0, organization: ORG, provider: 'up-chat' })
        t.ok(u.inputTokens > 0 && u.cost === u.inputTokens, `billed its input estimate (${u.inputTokens} tokens)`)
      }
      const spent = (await ledger.listUsage({})).reduce((s, u) => s + u.cost, 0)
      t.equal(await balanceOf(ledger), 100_000_000 - spent, 'the balance paid for them')
      t.equal((await ledger.getBalance(ORG))!.reserved, 0, 'no hold left')
    })
    await t.test('the client closes while the JSON answer arrives: billed the input and the bytes read', async t => {
      const ledger = await make(t)
      const up = await upstream(t, false)
      const partial = '{"id":"chatcmpl-slow","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"' + 'a'.repeat(400)
      const seen = stalling(up, partial)
      const url = await gateway(t, ledger, up, { balance: 100, maxOutput: 4096 })
      await Promise.all(Array.from({ length: 4 }, (_, i) => postThenClose(url, ROUTES.chat, clientBody('chat', UPSTREAMS.chat, false, { user: `u${i}` }), () => seen.written === 4)))
      t.ok(await until(async () => (await ledger.listUsage({})).length === 4), 'each cut call has a usage record')
      for (const u of await ledger.listUsage({})) {
        // What had arrived when the client left: the whole part the upstream sent, or less of it.
        t.match(u, { estimated: true, organization: ORG }, 'billed, marked estimated')
        t.ok(u.outputTokens <= Math.ceil(partial.length / 4), `output: the answer's bytes read, 4 per token (${u.outputTokens})`)
        t.ok(u.inputTokens > 0)
        t.equal(u.cost, u.inputTokens + u.outputTokens * OUTPUT_PRICE)
      }
      const spent = (await ledger.listUsage({})).reduce((s, u) => s + u.cost, 0)
      t.ok(await until(async () => (await balanceOf(ledger)) === 100_000_000 - spent), 'the balance paid for them')
    })
  })
}
