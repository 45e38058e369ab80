// Reservations a client cannot shape to near zero (issue 13, item 2): a huge prompt hidden below
// the old walk's depth limit, in `response_format`, or multiplied by `n`, sent 50 at a time
// through a listening gateway, on SQLite and on PostgreSQL. The fake upstream bills what a real
// one would: the prompt it received at 4 bytes per token and the whole output cap for each of
// the `n` completions. The balance must hold to README's bound: with the estimate at 4 bytes per
// token the real input never exceeds the reserved input, so the balance never goes below zero.
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, chatCompletion } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'
import { reservedInputTokens, requestedChoices, requestedOutputCap } from '../../core/tokens/estimate.ts'

const ORG = 'org-test'
const BIG = 400_000 // characters of hidden prompt
const CONCURRENT = 50

/** A JSON schema nested `depth` levels deep whose innermost description holds `chars` characters. */
function deepSchema (depth: number, chars: number): Record<string, unknown> {
  let s: Record<string, unknown> = { type: 'string', description: 'x'.repeat(chars) }
  for (let i = 0; i < depth; i++) s = { type: 'object', properties: { p: s } }
  return s
}

const base = { model: 'vendor/game', messages: [{ role: 'user', content: 'hi' }] }
// A model that forwards every parameter the games use, so the upstream bills what was asked for.
const GAME_MODEL = {
  id: 'vendor/game', input_modalities: ['text'], price: { input: 1, output: 2 },
  supported_parameters: ['max_tokens', 'n', 'tools', 'tool_choice', 'response_format'],
  deployments: [{ provider: 'up-chat', model: 'up-game' }],
}
const GAMES: Array<[string, Record<string, unknown>]> = [
  ['a tool schema nested 13 levels', { ...base, max_tokens: 1, tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: deepSchema(13, BIG) } }] }],
  ['response_format.json_schema', { ...base, max_tokens: 1, response_format: { type: 'json_schema', json_schema: { name: 's', schema: deepSchema(1, BIG) } } }],
  ['n completions', { ...base, max_tokens: 2000, n: 40 }],
]

async function sqliteLedger (t: Test): Promise<Ledger> {
  const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await l.migrate()
  t.teardown(() => l.close())
  return l
}

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>): Promise<void> {
  // Bills like a real upstream: every received byte at 4 bytes per token, the whole cap per choice.
  const up = await startFakeUpstream((req, res) => {
    const prompt = Math.ceil(Buffer.byteLength(JSON.stringify(req.body)) / 4)
    const completion = (req.body.max_completion_tokens ?? req.body.max_tokens ?? 1) * (req.body.n ?? 1)
    setTimeout(() => json(res, 200, chatCompletion('ok', { prompt, completion, cached: 0 })), 100)
  })
  t.teardown(() => up.close())
  for (const [name, payload] of GAMES) {
    t.test(name, async t => {
      const ledger = await makeLedger(t)
      await ledger.createOrganization(ORG)
      const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin, [GAME_MODEL]), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
      t.teardown(() => app.close())
      const url = await listen(app)
      const text = JSON.stringify(payload)
      // What one such call really costs (price: input 1, output 2 micro-units per token).
      const fullCost = Math.ceil(Buffer.byteLength(text) / 4) + 2 * requestedOutputCap(payload, 4096) * requestedChoices(payload)
      t.ok(reservedInputTokens(payload, Buffer.byteLength(text), 128000) >= Math.ceil(Buffer.byteLength(text) / 4) - 100, 'the estimate covers the whole body')
      await ledger.topUp(ORG, 3 * fullCost) // enough for three such calls
      const initial = (await ledger.getBalance(ORG))!.balance

      const results = await Promise.all(Array.from({ length: CONCURRENT }, () =>
        fetch(url + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: text })
          .then(async r => ({ status: r.status, body: await r.json() as any }))))
      const ok = results.filter(r => r.status === 200).length
      const refused = results.filter(r => r.status !== 200)
      t.same([...new Set(refused.map(r => `${r.status} ${r.body.error.code}`))], refused.length ? ['402 402'] : [], 'every refusal is 402')
      t.ok(ok >= 1, `the calls the balance pays for succeed (${ok})`)
      t.ok(await until(async () => (await ledger.listUsage({})).length === ok && (await ledger.getBalance(ORG))!.reserved === 0), 'all settled')
      const records = await ledger.listUsage({})
      const charged = records.reduce((s, r) => s + r.cost, 0)
      const final = (await ledger.getBalance(ORG))!.balance
      t.equal(final, initial - charged, 'balance == initial − Σ charges')
      t.ok(final >= 0, `no overdraft (final balance ${final})`)
    })
  }
}

t.test('SQLite ledger', t => run(t, sqliteLedger))

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (url === undefined) return
  await run(t, pgLedgers(t, url, 't_est'))
})

t.test('estimate rules', async t => {
  const img = { type: 'image_url', image_url: { url: 'data:image/png;base64,' + 'A'.repeat(800_000) } }
  const withImage = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, img] }] }
  const n = reservedInputTokens(withImage, Buffer.byteLength(JSON.stringify(withImage)), 128000)
  t.ok(n >= 1600 && n < 1700, `an image counts 1600 tokens, not its base64 bytes (${n})`)
  const video = { model: 'm', messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }] }] }
  t.equal(reservedInputTokens(video, 100, 32000), 32000, 'a video by URL reserves the whole context window')
  t.equal(reservedInputTokens({ messages: [{ content: 'x'.repeat(4_000_000) }] }, 4_000_030, 128000), 128000, 'capped by the context length')
  t.equal(reservedInputTokens({ a: { b: 'x'.repeat(400) } }, 0, 128000), 101, 'without a byte count, every string and key counts')
  let deep: unknown = 'x'.repeat(40)
  for (let i = 0; i < 100_000; i++) deep = [deep]
  t.equal(reservedInputTokens({ deep }, 0, 128000), 11, 'any depth, without recursion (44 characters: the key and the string)')
  t.equal(requestedChoices({ n: 3 }), 3)
  t.equal(requestedChoices({ n: 'x' }), 1)
  t.equal(requestedOutputCap({ max_tokens: 10, max_completion_tokens: 1 }, 4096), 1, 'max_completion_tokens supersedes max_tokens (the upstream gets 1 in both fields)')
  t.equal(requestedOutputCap({ max_tokens: 10_000 }, 4096), 4096, 'clamped to the model\'s cap')
  t.equal(requestedOutputCap({ max_tokens: null, max_output_tokens: 7 }, 4096), 7, 'a null cap is no cap')
  t.equal(requestedOutputCap({}, 4096), 4096)
})
