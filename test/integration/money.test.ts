// Money under concurrency, through a listening gateway (issue 4): idempotency claims, balance
// reservations and charges, quota windows, restarts on the same SQLite file, stream billing.
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, listen, auth, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatCompletion, chatTextStream, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, QueuedCharge } from '../../core/ledger/ledger.ts'
import { hashKey } from '../../core/ledger/keys.ts'
import { until } from '../helpers/until.ts'

const ORG = 'org-test'
const slowEcho = {
  providers: [{ name: 'echo-slow', adapter: 'echo', config: { protocol: 'chat', latencyMs: 250 } }],
  models: [{ id: 'echo/slow', input_modalities: ['text'], price: { input: 1, cachedInput: 0.1, output: 2 }, deployments: [{ provider: 'echo-slow', model: 'echo-slow' }] }],
}
const body = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 1000, messages: [{ role: 'user', content: 'Tell me about money.' }], ...extra })

async function post (url: string, path: string, payload: unknown, headers: Record<string, string> = {}): Promise<{ status: number, json: any, headers: Headers }> {
  const res = await fetch(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload) })
  const text = await res.text()
  let parsed: unknown = text
  try { parsed = JSON.parse(text) } catch { /* stream or text */ }
  return { status: res.status, json: parsed, headers: res.headers }
}

async function freshLedger (t: Test): Promise<Ledger> {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  return ledger
}

t.test('idempotency: 50 concurrent calls with one key', async t => {
  t.test('fake upstream: exactly one reaches the provider, 49 get 409 duplicate_request', async t => {
    const up: FakeUpstream = await startFakeUpstream((_req, res) => { setTimeout(() => json(res, 200, chatCompletion('once')), 300) })
    t.teardown(() => up.close())
    const ledger = await freshLedger(t)
    const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin), pipeline: [AUTH_ENTRY, { plugin: 'idempotency' }, { plugin: 'balance', config: { enforce: false } }] })
    t.teardown(() => app.close())
    const url = await listen(app)
    const results = await Promise.all(Array.from({ length: 50 }, () => post(url, '/v1/chat/completions', body('vendor/chat-model'), { 'idempotency-key': 'pay-once-1' })))
    t.equal(up.requests.length, 1, 'the upstream saw one request')
    t.equal(results.filter(r => r.status === 200).length, 1)
    const dup = results.filter(r => r.status === 409)
    t.equal(dup.length, 49)
    for (const r of dup) t.same(r.json, { error: { code: 'duplicate_request', message: r.json.error.message } })
    t.ok(await until(async () => (await ledger.listUsage({})).length === 1), 'one usage record')
    const again = await post(url, '/v1/chat/completions', body('vendor/chat-model'), { 'idempotency-key': 'pay-once-1' })
    t.equal(again.status, 409, 'a repeat after success is refused too')
    t.equal(up.requests.length, 1)
  })

  t.test('echo model: one charge; messages route gets its own 409 body; a failed first call releases the claim', async t => {
    const ledger = await freshLedger(t)
    const app = await buildTestApp({ ledger, doc: slowEcho, pipeline: [AUTH_ENTRY, { plugin: 'idempotency' }, { plugin: 'balance', config: { enforce: false } }] })
    t.teardown(() => app.close())
    const url = await listen(app)
    const results = await Promise.all(Array.from({ length: 50 }, () => post(url, '/v1/messages', body('echo/slow'), { 'idempotency-key': 'k-msg' })))
    t.equal(results.filter(r => r.status === 200).length, 1)
    const dup = results.filter(r => r.status === 409)
    t.equal(dup.length, 49)
    t.match(dup[0].json, { type: 'error', error: { type: String, message: String } })
    t.ok(await until(async () => (await ledger.listUsage({})).length === 1))
    t.equal((await ledger.listUsage({})).length, 1, 'exactly one usage record')

    // Unknown model: the call fails before any upstream success, so the key may be used again.
    const bad = await post(url, '/v1/chat/completions', body('nobody/none'), { 'idempotency-key': 'k-retry' })
    t.equal(bad.status, 404)
    const retry = await post(url, '/v1/chat/completions', body('echo/slow'), { 'idempotency-key': 'k-retry' })
    t.equal(retry.status, 200, 'released claim: the retry goes through')
    const tooLong = await post(url, '/v1/chat/completions', body('echo/slow'), { 'idempotency-key': 'x'.repeat(256) })
    t.equal(tooLong.status, 400)
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'idempotency', config: { ttlMs: 10 } }] }), /idempotency/)
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'idempotency', config: { maxKeyLength: 0 } }] }), /idempotency/)
    await t.rejects(buildTestApp({ pipeline: [{ plugin: 'idempotency' }] }), /auth/, 'needs auth before it')
  })
})

t.test('balance: 100 concurrent calls on a balance that covers 30', async t => {
  for (const [name, doc, model] of [['slow echo', slowEcho, 'echo/slow'], ['fake upstream', undefined, 'vendor/chat-model']] as const) {
    t.test(name, async t => {
      let up: FakeUpstream | undefined
      // The fake upstream answers the race's calls only once every call has either reached it or
      // been refused, so all 100 are in flight together however slowly a loaded machine admits them.
      let hold: Promise<void> | undefined
      let arrived = 0
      let refusedSoFar = 0
      let release = (): void => {}
      const settledAll = (): void => { if (arrived + refusedSoFar === 100) release() }
      if (!doc) {
        up = await startFakeUpstream((_req, res) => {
          arrived++
          void (hold ?? Promise.resolve()).then(() => json(res, 200, chatCompletion('paid', { prompt: 40, completion: 700, cached: 10 })))
          settledAll()
        })
        t.teardown(() => up!.close())
      }
      const ledger = await freshLedger(t)
      const app = await buildTestApp({ ledger, doc: doc ?? upstreamDoc(up!.origin, up!.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: ORG }] } }] })
      t.teardown(() => app.close())
      const url = await listen(app)

      // Learn one call's reservation: top up plenty, hold one call in flight, read `reserved`.
      await ledger.topUp(ORG, 1_000_000_000)
      // The probe's hold shrinks to its cost when it settles, so the reservation is the largest
      // `reserved` seen while it is in flight (the fake upstream keeps it there until one was seen).
      if (up) hold = new Promise<void>(resolve => { release = resolve })
      let probeDone = false
      const probe = post(url, '/v1/chat/completions', body(model)).finally(() => { probeDone = true })
      let reservation = 0
      while (!probeDone) {
        reservation = Math.max(reservation, (await ledger.getBalance(ORG))!.reserved)
        if (reservation > 0) release()
        await new Promise(resolve => setTimeout(resolve, 2))
      }
      t.ok(reservation > 0, 'the probe held a reservation')
      t.equal((await probe).status, 200)
      t.ok(await until(async () => (await ledger.getBalance(ORG))!.reserved === 0), 'reservation dropped at settle')
      // Bring the balance to exactly 30 reservations.
      const now = (await ledger.getBalance(ORG))!.balance
      await ledger.topUp(ORG, 30 * reservation - now)
      const initial = (await ledger.getBalance(ORG))!.balance
      t.equal(initial, 30 * reservation)
      const recordsBefore = (await ledger.listUsage({})).length

      if (up) {
        hold = new Promise<void>(resolve => { release = resolve })
        arrived = 0
        const backstop = setTimeout(release, 30_000)
        t.teardown(() => clearTimeout(backstop))
      }
      const results = await Promise.all(Array.from({ length: 100 }, () => post(url, '/v1/chat/completions', body(model)).then(r => {
        if (r.status !== 200) { refusedSoFar++; settledAll() }
        return r
      })))
      const ok = results.filter(r => r.status === 200)
      const refused = results.filter(r => r.status !== 200)
      t.ok(ok.length >= 30, `at least the 30 covered calls succeed (${ok.length})`)
      t.ok(ok.length < 100, 'the balance ran out')
      for (const r of refused) {
        t.equal(r.status, 402, 'every refused call got 402')
        t.equal(r.json.error.code, 402)
      }
      t.ok(await until(async () => (await ledger.getBalance(ORG))!.reserved === 0), 'no reservation left behind')
      const records = (await ledger.listUsage({})).slice(recordsBefore)
      t.equal(records.length, ok.length, 'one usage record per successful call')
      const charged = records.reduce((s, r) => s + r.cost, 0)
      const final = (await ledger.getBalance(ORG))!.balance
      t.equal(final, initial - charged, 'final balance == initial − Σ charges')
      t.ok(final >= 0, 'never below zero (real cost ≤ reservation here)')
      for (const r of records) t.ok(r.cost <= reservation, 'each charge within its reservation')
      if (up) {
        t.equal(ok.length, 30, 'all 100 in flight together: exactly 30 fit')
        t.equal(records[0].cost, (40 - 10) * 1 + 10 * 0.5 + 700 * 2, 'charge from reported usage, cached at the cached rate (micros)')
        t.equal(records[0].estimated, false)
      }
    })
  }

  t.test('a key without organization gets 403; config accept/reject', async t => {
    const app = await buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'balance' }] })
    t.teardown(() => app.close())
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth('sk-gw-test-noorg-0003'), payload: body('echo/echo-1') })
    t.equal(res.statusCode, 403)
    const broke = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: body('echo/echo-1') })
    t.equal(broke.statusCode, 402)
    t.match(broke.json(), { type: 'error', error: { type: String } })
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: 'yes' } }] }), /balance/)
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: 'a', initialBalance: -1 }] } }] }), /balance/)
  })
})

t.test('quota', async t => {
  t.test('request windows roll over with an injected clock; 429 + Retry-After on both routes', async t => {
    let clock = Date.UTC(2026, 5, 1, 12, 0, 30) // 30 s into a minute
    const app = await buildTestApp({ now: () => clock, pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'organization', window: 'minute', requests: 3 }] } }] })
    t.teardown(() => app.close())
    for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body('echo/echo-1') })).statusCode, 200)
    const over = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body('echo/echo-1') })
    t.equal(over.statusCode, 429)
    t.equal(over.headers['retry-after'], '30')
    t.equal(over.json().error.code, 429)
    const overMsg = await app.inject({ method: 'POST', url: '/v1/messages', headers: auth(), payload: body('echo/echo-1') })
    t.equal(overMsg.statusCode, 429)
    t.equal(overMsg.json().error.type, 'rate_limit_error')
    clock += 30_000
    t.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body('echo/echo-1') })).statusCode, 200, 'new window')
  })

  t.test('20 concurrent calls against 5 requests: exactly 5 pass', async t => {
    const app = await buildTestApp({ doc: slowEcho, pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'project', window: 'hour', requests: 5 }] } }] })
    t.teardown(() => app.close())
    const url = await listen(app)
    const results = await Promise.all(Array.from({ length: 20 }, () => post(url, '/v1/chat/completions', body('echo/slow'))))
    t.equal(results.filter(r => r.status === 200).length, 5)
    t.equal(results.filter(r => r.status === 429).length, 15)
  })

  t.test('token and spend caps count settled usage and roll over by month', async t => {
    let clock = Date.UTC(2026, 0, 31, 23, 59, 0)
    const app = await buildTestApp({ now: () => clock, pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'month', tokens: 100 }, { scope: 'organization', window: 'day', spend: 1000 }] } }] })
    t.teardown(() => app.close())
    // Each call holds its worst case (its input estimate + 20) until it settles.
    const call = () => app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(), payload: body('echo/echo-1', { max_tokens: 20 }) })
    let n = 0
    let last = 200
    while (n < 50 && last === 200) { last = (await call()).statusCode; n++; await new Promise(resolve => setImmediate(resolve)) }
    t.equal(last, 429, `the token cap stops calls (after ${n - 1})`)
    t.ok(n > 1)
    clock = Date.UTC(2026, 1, 1, 0, 0, 1) // February
    t.equal((await call()).statusCode, 200, 'a new month opens the token cap')
  })

  t.test('config accept/reject', async t => {
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [] } }] }), /quota/)
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'team', window: 'minute', requests: 1 }] } }] }), /quota/)
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'week', requests: 1 }] } }] }), /quota/)
    await t.rejects(buildTestApp({ pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'day', spend: 0 }] } }] }), /quota/)
  })
})

t.test('restart on the same SQLite file: balances, keys and usage records survive', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-restart-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'gateway.db')
  const pipeline = [{ plugin: 'auth', config: { keys: AUTH_ENTRY.config.keys, ledger: true } }, { plugin: 'balance', config: { organizations: [{ id: ORG, initialBalance: 5 }] } }]
  const secret = 'sk-gw-ledger-key-restart-0001'

  let ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  await ledger.createKey({ id: 'k-ledger', hash: hashKey(secret), prefix: secret.slice(0, 12), name: 'from ledger', organization: ORG })
  let app = await buildTestApp({ ledger, pipeline })
  for (const key of [TEST_KEY, secret]) {
    const r = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(key), payload: body('echo/echo-1') })
    t.equal(r.statusCode, 200)
  }
  t.ok(await until(async () => (await ledger.listUsage({})).length === 2))
  const balanceBefore = (await ledger.getBalance(ORG))!.balance
  t.ok(balanceBefore < 5_000_000, 'charged')
  await app.close()
  await ledger.close()

  ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  app = await buildTestApp({ ledger, pipeline })
  t.teardown(async () => { await app.close(); await ledger.close() })
  t.equal((await ledger.getBalance(ORG))!.balance, balanceBefore, 'balance kept (and not re-seeded)')
  t.same((await ledger.listUsage({})).map(r => r.keyId).sort(), ['k-ledger', 'key-test'])
  t.ok((await ledger.listKeys()).some(k => k.id === 'k-ledger'))
  const r = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth(secret), payload: body('echo/echo-1') })
  t.equal(r.statusCode, 200, 'the ledger key still works')
})

t.test('streams are billed once, when they end, from reported usage', async t => {
  const up = await startFakeUpstream((_req, res) => sse(res, chatTextStream(['a', 'b', 'c'], { prompt: 120, completion: 33, cached: 20 }), { delayMs: 30 }))
  t.teardown(() => up.close())
  const ledger = await freshLedger(t)
  const app = await buildTestApp({ ledger, doc: upstreamDoc(up.origin, up.origin), pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: ORG, initialBalance: 10 }] } }] })
  t.teardown(() => app.close())
  const url = await listen(app)
  for (const path of ['/v1/chat/completions', '/v1/messages']) {
    const res = await post(url, path, body('vendor/chat-model', { stream: true }))
    t.equal(res.status, 200)
  }
  t.ok(await until(async () => (await ledger.listUsage({})).length === 2))
  await new Promise(resolve => setTimeout(resolve, 200))
  const records = await ledger.listUsage({})
  t.equal(records.length, 2, 'one record per stream, no more')
  for (const r of records) {
    t.match(r, { inputTokens: 120, cachedInputTokens: 20, outputTokens: 33, estimated: false })
    t.equal(r.cost, 100 * 1 + 20 * 0.5 + 33 * 2)
  }
  const b = (await ledger.getBalance(ORG))!
  t.equal(b.reserved, 0)
  t.equal(b.balance, 10_000_000 - 2 * (100 + 10 + 66))
})

t.test('balance: a charge that fails is retried, also when its outcome is unknown (charges are idempotent by trace id)', async t => {
  const { ChargeOutcomeUnknown } = await import('../../core/ledger/batch.ts')
  const pino = (await import('pino')).default
  for (const [name, make, logged] of [
    ['connection lost during the commit', () => new ChargeOutcomeUnknown(Object.assign(new Error('Connection terminated'), { code: '57P01' })), true],
    ['a transient error', () => new Error('SQLITE_BUSY'), false],
  ] as const) {
    t.test(name, async t => {
      const inner = await freshLedger(t)
      let calls = 0
      // Fails the first charge as given, then writes normally: a charge awaited (charge) or, as
      // the balance plugin writes on SQLite, queued (inProcess.charge: its done() gets the error).
      const ledger = new Proxy(inner, {
        get (target, prop, receiver) {
          if (prop === 'charge') {
            return async (...args: Parameters<Ledger['charge']>) => {
              calls++
              if (calls === 1) throw make()
              return target.charge(...args)
            }
          }
          if (prop === 'inProcess') {
            const fast = target.inProcess!
            return {
              ...fast,
              charge: (c: QueuedCharge) => {
                calls++
                if (calls === 1) setImmediate(() => c.done(make()))
                else fast.charge(c)
              },
            }
          }
          const v = Reflect.get(target, prop, receiver)
          return typeof v === 'function' ? v.bind(target) : v
        },
      }) as Ledger
      const lines: any[] = []
      const logger = pino({ level: 'info' }, { write: (s: string) => { lines.push(JSON.parse(s)) } })
      const app = await buildTestApp({ ledger, logger, doc: slowEcho, pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: ORG, initialBalance: 100 }] } }] })
      t.teardown(() => app.close())
      const url = await listen(app)
      const r = await post(url, '/v1/chat/completions', body('echo/slow'))
      t.equal(r.status, 200)
      t.ok(await until(async () => (await inner.listUsage({})).length === 1, 5000), 'written by the retry')
      t.equal(calls, 2, 'one failure, one retry')
      const warned = lines.filter(l => l.level === 40 && /connection was lost/.test(l.msg))
      t.equal(warned.length, logged ? 1 : 0, logged ? 'the unknown outcome is logged with the trace id to check' : 'a plain failure is just retried')
      if (logged) t.equal(warned[0].traceId, (await inner.listUsage({}))[0].traceId)
    })
  }
})
