// Reservations of prompts that tokenize at fewer than 4 bytes per token (issue 19, item 5): a
// Korean and Chinese prompt costs more tokens than its bytes ÷ 4, so the balance plugin reserves its token
// count (the model's tokenizer) instead. Through a listening gateway with calls in flight at
// once, on SQLite and on PostgreSQL: while they run, what is held covers every call's token count
// and never less than the 4-bytes rule; and a balance that pays for three such calls is never
// overdrawn by twenty sent together, billed at their real token counts.
import t, { type Test } from 'tap'
import { Tiktoken } from 'js-tiktoken/lite'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import type { ServerResponse } from 'node:http'
import { startFakeUpstream, upstreamDoc, json, chatCompletion, type FakeUpstream, type Recorded } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { reservedInputTokens } from '../../core/tokens/estimate.ts'
import { reservationInputTokens } from '../../core/tokens/reservation.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
const MAX_TOKENS = 10
const CONTEXT = 1_000_000
// An upstream model whose tokenizer is public (cl100k_base): the fake bills its exact count.
const MODEL = {
  id: 'vendor/cjk', input_modalities: ['text'], price: { input: 1, output: 2 }, context_length: CONTEXT,
  supported_parameters: ['max_tokens'], deployments: [{ provider: 'up-chat', model: 'gpt-4' }],
}
// Korean and Chinese: 3 bytes per character, about one token each or more in cl100k_base.
const PROMPT = ('에이전트는 로그를 읽고 다음 단계를 계획합니다. 오늘 날씨가 좋네요. ' + '编码代理现在是模型网关最重要的用户之一。').repeat(40)

let enc: Tiktoken
t.before(async () => { enc = new Tiktoken((await import('js-tiktoken/ranks/cl100k_base')).default) })

/** What the upstream bills for a chat body: the tokens of every message's text, 3 more per message. */
function promptTokens (body: { messages: Array<{ content: string }> }): number {
  return body.messages.reduce((n, m) => n + enc.encode(m.content).length + 3, 0)
}

/** Bills like the real upstream: the prompt's exact token count, the whole output cap. */
function billing (opts: { gate?: Promise<void> } = {}) {
  return async (req: Recorded, res: ServerResponse) => {
    await opts.gate
    setTimeout(() => json(res, 200, chatCompletion('好', { prompt: promptTokens(req.body), completion: req.body.max_tokens, cached: 0 })), 20)
  }
}

async function sqliteLedger (t: Test): Promise<Ledger> {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  return l
}

async function gateway (t: Test, ledger: Ledger, up: FakeUpstream): Promise<string> {
  await ledger.createOrganization(ORG)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin, [MODEL]), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
  t.teardown(() => app.close())
  return listen(app)
}

const call = (url: string, text: string) => fetch(url + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: text })
  .then(async r => ({ status: r.status, body: await r.json() as unknown }))

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>): Promise<void> {
  const payload = { model: MODEL.id, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: PROMPT }] }
  const text = JSON.stringify(payload)
  const tokens = promptTokens(payload)
  const floor = reservedInputTokens(payload, Buffer.byteLength(text), CONTEXT)
  t.ok(tokens > floor * 1.15, `the prompt has more tokens (${tokens}) than its bytes ÷ 4 (${floor})`)

  t.test('calls in flight hold at least their token count, never less than the 4-bytes rule', async t => {
    let open!: () => void
    const gate = new Promise<void>(resolve => { open = resolve })
    const up = await startFakeUpstream(billing({ gate }))
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const url = await gateway(t, ledger, up)
    await ledger.topUp(ORG, 1_000_000_000)
    const N = 12
    const calls = Array.from({ length: N }, () => call(url, text))
    t.ok(await until(async () => up.requests.length === N), 'every call reached the upstream')
    const held = (await ledger.getBalance(ORG))!.reserved
    const output = 2 * MAX_TOKENS
    t.ok(held >= N * (tokens + output), `held ${held} ≥ ${N} × (${tokens} tokens + output)`)
    t.ok(held >= N * (floor + output), 'and never below the 4-bytes rule')
    open()
    const results = await Promise.all(calls)
    t.same(results.map(r => r.status), Array(N).fill(200))
    t.ok(await until(async () => (await ledger.getBalance(ORG))!.reserved === 0), 'every hold dropped')
  })

  t.test('a balance for three such calls is never overdrawn by twenty at once', async t => {
    const up = await startFakeUpstream(billing())
    t.teardown(() => up.close())
    const ledger = await makeLedger(t)
    const url = await gateway(t, ledger, up)
    // Three reservations exactly (each a little above the call's cost: the estimate also counts the
    // model name and roles), so three run at once and a fourth never fits.
    const reservation = await reservationInputTokens(payload, Buffer.byteLength(text), CONTEXT, 'gpt-4', 8192) + 2 * MAX_TOKENS
    t.ok(reservation >= tokens + 2 * MAX_TOKENS, 'a reservation covers the real cost')
    await ledger.topUp(ORG, 3 * reservation)
    // With 4 bytes per token alone, four calls would have fit: the test would overdraw.
    t.ok(3 * reservation >= 4 * (floor + 2 * MAX_TOKENS), 'the old rule would admit a fourth call')
    const initial = (await ledger.getBalance(ORG))!.balance
    const results = await Promise.all(Array.from({ length: 20 }, () => call(url, text)))
    const ok = results.filter(r => r.status === 200).length
    t.equal(ok, 3, 'exactly the three calls the balance pays for')
    t.same([...new Set(results.filter(r => r.status !== 200).map(r => r.status))], [402], 'the others get 402')
    t.ok(await until(async () => (await ledger.listUsage({})).length === ok && (await ledger.getBalance(ORG))!.reserved === 0), 'all settled')
    const records = await ledger.listUsage({})
    t.ok(records.every(r => r.inputTokens === tokens), 'billed at the real token count')
    const final = (await ledger.getBalance(ORG))!.balance
    t.equal(final, initial - records.reduce((s, r) => s + r.cost, 0), 'balance == initial − Σ charges')
    t.ok(final >= 0, `no overdraft (final balance ${final})`)
  })
}

t.test('SQLite ledger', t => run(t, sqliteLedger))

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (url === undefined) return
  await run(t, pgLedgers(t, url, 't_tok'))
})
