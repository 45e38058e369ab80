/**
 * @module test/helpers/cache-write – the gateway the cache-write billing tests run: the balance
 * plugin in front of a fake messages upstream, admin API and metrics on, both official clients,
 * and each test run on a SQLite and a PostgreSQL ledger.
 */
import type { Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from './build-test-app.ts'
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.ts'
import { ADMIN_KEY } from './admin.ts'
import { startAdmin } from '../../admin/app.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { databaseUrl } from './backends.ts'
import { pgLedgers } from './pg-ledgers.ts'
import { until } from './until.ts'

export const ORG = 'org-test'
export const START = 1_000_000_000

/** A model served by the fake messages upstream (`up-msg`). */
export const cacheModel = (id: string, price: unknown, contextLength = 200_000) =>
  ({ id, price, context_length: contextLength, supported_parameters: ['max_tokens', 'stream'], deployments: [{ provider: 'up-msg', model: 'up-model' }] })

/** A listening gateway over `up` with `models`; `records(n)` waits for n settled calls and returns the usage records. */
export async function cacheWriteGateway (t: Test, ledger: Ledger, up: FakeUpstream, models: unknown[]) {
  await ledger.createOrganization(ORG)
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    env: { ADMIN_KEY },
    doc: {
      metrics: { listen: 'main' },
      admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] },
      providers: [{ name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: up.origin, apiKey: 'sk-ant-up' } }],
      models,
    },
  })
  t.teardown(() => app.close())
  const admin = (await startAdmin(app))!.address
  const url = await listen(app)
  const anthropic = new Anthropic({ baseURL: url, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const records = async (n: number) => {
    t.ok(await until(async () => (await ledger.listUsage({})).length === n && (await ledger.getBalance(ORG))!.reserved === 0), `${n} calls settled`)
    return ledger.listUsage({})
  }
  return { url, admin, anthropic, openai, records }
}

/** Runs `run` on an in-memory SQLite ledger and on PostgreSQL (schemas named after `tag`). */
export function onBothLedgers (t: Test, tag: string, run: (t: Test, makeLedger: (t: Test) => Promise<Ledger>) => Promise<void>): void {
  t.test('SQLite ledger', t => run(t, async t => {
    const l = await openLedger({ backend: 'sqlite', path: ':memory:' })
    await l.migrate()
    t.teardown(() => l.close())
    return l
  }))
  t.test('PostgreSQL ledger', async t => {
    const url = await databaseUrl(t)
    if (url === undefined) return
    await run(t, pgLedgers(t, url, tag))
  })
}

/** The parts of a cache-write test the whole-input check needs. */
export interface WholeInputCase {
  makeLedger: (t: Test) => Promise<Ledger>
  /** The fake upstream's handler, answering once `gate` resolves. */
  upstream: (gate: Promise<void>) => Parameters<typeof startFakeUpstream>[0]
  gateway: (t: Test, ledger: Ledger, up: FakeUpstream) => ReturnType<typeof cacheWriteGateway>
  /** The model (its context window smaller than the prompt: the input estimate is the window) and its output cap. */
  model: string
  maxTokens: number
  /** What the call holds and is charged: the whole window at the highest input-side rate + the cap. */
  worst: number
  rate: string
}

/**
 * A call whose prompt is longer than its model's context window holds the window's tokens at the
 * highest input-side rate; the upstream then reports the whole input as a cache write at that rate:
 * the reservation covered it exactly.
 */
export async function checkWholeInputWrite (t: Test, c: WholeInputCase): Promise<void> {
  let open!: () => void
  const gate = new Promise<void>(resolve => { open = resolve })
  const up = await startFakeUpstream(c.upstream(gate))
  t.teardown(() => up.close())
  const ledger = await c.makeLedger(t)
  const { anthropic, records } = await c.gateway(t, ledger, up)
  await ledger.topUp(ORG, START)
  const call = anthropic.messages.create({ model: c.model, max_tokens: c.maxTokens, messages: [{ role: 'user', content: 'cache me '.repeat(2000) }] })
  t.ok(await until(async () => up.requests.length === 1), 'the call reached the upstream')
  const held = (await ledger.getBalance(ORG))!.reserved
  t.equal(held, c.worst, `held ${held} µ: the window's input tokens at the ${c.rate} + the output cap`)
  open()
  await call
  const [r] = await records(1)
  t.equal(r!.cost, c.worst, `the charge: the whole input at the ${c.rate}`)
  t.ok(held >= r!.cost, 'never more than reserved')
}
