// Balance answers a sequential client can rely on (issue 13, item 3): a settled call's hold
// shrinks to its real cost at once, before its batched charge commits, so calls made one after
// another on a small balance get exactly as many 200s as the money pays for, then 402 until a
// top-up; a burst of 100 never gets more. Through a listening gateway, on SQLite and PostgreSQL.
import t, { type Test } from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, chatCompletion, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { until } from '../helpers/until.ts'
import { reserveMicros } from '../../money/billing.ts'
import { reservedInputTokens } from '../../core/tokens/estimate.ts'

const ORG = 'org-test'
const payload = { model: 'vendor/chat-model', max_tokens: 1000, messages: [{ role: 'user', content: 'Tell me about money.' }] }
const text = JSON.stringify(payload)
// vendor/chat-model: input 1, cached 0.5, output 2 (micro-units per token)
const RESERVATION = reserveMicros(reservedInputTokens(payload, Buffer.byteLength(text), 128000), 1000, { input: 1, output: 2 })
const COST = 40 + 2 * 300 // the upstream reports 40 prompt and 300 completion tokens

async function call (url: string): Promise<number> {
  const r = await fetch(url + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: text })
  await r.arrayBuffer()
  return r.status
}

/**
 * The ledger with its batched charges held back until `commit()`: the gateway sees a batch that
 * has not committed yet (under load a batch waits behind the one being written), deterministically.
 */
function slowCommits (inner: Ledger): { ledger: Ledger, commit (): void } {
  let open!: () => void
  const gate = new Promise<void>(resolve => { open = resolve })
  const ledger = new Proxy(inner, {
    get (target, prop, receiver) {
      if (prop === 'charge') return async (...args: Parameters<Ledger['charge']>) => { await gate; return target.charge(...args) }
      const v = Reflect.get(target, prop, receiver)
      return typeof v === 'function' ? v.bind(target) : v
    },
  }) as Ledger
  return { ledger, commit: open }
}

async function run (t: Test, makeLedger: (t: Test) => Promise<Ledger>, up: FakeUpstream): Promise<void> {
  const start = async (t: Test): Promise<{ ledger: Ledger, url: string, commit (): void }> => {
    const inner = await makeLedger(t)
    await inner.createOrganization(ORG)
    const { ledger, commit } = slowCommits(inner)
    t.teardown(commit)
    const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
    t.teardown(() => app.close())
    return { ledger: inner, url: await listen(app), commit }
  }

  t.test('sequential calls: exactly as many 200s as the money pays for, then 402 until a top-up', async t => {
    const { ledger, url, commit } = await start(t)
    // Pays for the first call's reservation and 11 more costs and a half: 12 calls.
    const paid = 12
    await ledger.topUp(ORG, RESERVATION + (paid - 1) * COST + COST / 2)
    const statuses: number[] = []
    for (let i = 0; i < paid + 6; i++) statuses.push(await call(url))
    t.same(statuses, [...Array(paid).fill(200), ...Array(6).fill(402)], 'monotonic: 200 while the money covers a reservation, then 402 (no charge committed yet)')
    commit()
    t.ok(await until(async () => (await ledger.listUsage({})).length === paid && (await ledger.getBalance(ORG))!.reserved === 0), 'all charged, nothing held')
    const b = (await ledger.getBalance(ORG))!
    t.equal(b.balance, RESERVATION + COST / 2 - COST, 'initial − Σ charges')
    await ledger.topUp(ORG, RESERVATION)
    t.equal(await call(url), 200, 'a top-up opens it again')
  })

  t.test('a burst of 100 never gets more than the money pays for', async t => {
    const { ledger, url, commit } = await start(t)
    const paid = 30
    const initial = RESERVATION + (paid - 1) * COST
    await ledger.topUp(ORG, initial)
    const statuses = await Promise.all(Array.from({ length: 100 }, () => call(url)))
    const ok = statuses.filter(s => s === 200).length
    t.ok(ok >= 1 && ok <= paid, `${ok} of 100 succeed, at most ${paid}`)
    t.same([...new Set(statuses.filter(s => s !== 200))], [402], 'the rest get 402')
    commit()
    t.ok(await until(async () => (await ledger.listUsage({})).length === ok && (await ledger.getBalance(ORG))!.reserved === 0), 'all charged, nothing held')
    const b = (await ledger.getBalance(ORG))!
    t.equal(b.balance, initial - ok * COST, 'initial − Σ charges')
    t.ok(b.balance >= 0)
    // What is left is exact: sequential calls take exactly what it pays for.
    const more = b.balance >= RESERVATION ? Math.floor((b.balance - RESERVATION) / COST) + 1 : 0
    const after: number[] = []
    for (let i = 0; i < more + 2; i++) after.push(await call(url))
    t.same(after, [...Array(more).fill(200), 402, 402], `then ${more} sequential calls fit, and no more`)
  })
}

const fast = (): Promise<FakeUpstream> => startFakeUpstream((_req, res) => json(res, 200, chatCompletion('paid', { prompt: 40, completion: 300, cached: 0 })))

t.test('SQLite ledger', async t => {
  const up = await fast()
  t.teardown(() => up.close())
  await run(t, async t => {
    const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await l.migrate()
    t.teardown(() => l.close())
    return l
  }, up)
})

t.test('PostgreSQL ledger', async t => {
  const url = await databaseUrl(t)
  if (url === undefined) return
  const up = await fast()
  t.teardown(() => up.close())
  await run(t, pgLedgers(t, url, 't_seq'), up)
})
