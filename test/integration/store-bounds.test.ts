// The embedded store under traffic (issue 13 item 5), through a listening gateway: client IPs
// cannot evict idempotency claims or quota/spend windows; a full claim or window store fails
// closed; the IP limit counts IPv6 clients per /64. Client IPs come through X-Forwarded-For from
// a trusted proxy (the test's loopback socket). Clocks are injected.
import t from 'tap'
import pino from 'pino'
import { buildTestApp, listen, auth, AUTH_ENTRY, LIMITED_KEY } from '../helpers/build-test-app.ts'

const TRUST_LOOPBACK = { trustedProxies: ['127.0.0.1', '::1'] }
// The churn goes through /healthz, the cheapest route: probes must count toward the IP limit here.
const PROBES_LIMITED = { server: { exemptProbesFromPlugins: false } }
const chat = { model: 'echo/echo-1', max_tokens: 50, messages: [{ role: 'user', content: 'Tell me about money.' }] }
const msgs = { ...chat }

async function call (url: string, path: string, opts: { ip?: string, headers?: Record<string, string>, body?: unknown, method?: string } = {}): Promise<{ status: number, json: any, headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.ip) headers['x-forwarded-for'] = opts.ip
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url + path, { method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'), headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  const text = await res.text()
  let json: unknown = text
  try { json = JSON.parse(text) } catch { /* not JSON */ }
  return { status: res.status, json, headers: res.headers }
}

/** 150 requests, each from its own client IP: 150 IP-limit counters. */
async function churnIps (url: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    const r = await call(url, '/healthz', { ip: `198.51.${i >> 8}.${i & 255}` })
    if (r.status !== 200) throw new Error(`churn request ${i} answered ${r.status}`)
  }
}

t.test('150 distinct client IPs cannot evict an idempotency claim (stores.kv.maxKeys 100)', async t => {
  const clock = Date.UTC(2026, 2, 1, 12, 0, 0)
  const app = await buildTestApp({
    now: () => clock,
    doc: { ...PROBES_LIMITED, stores: { kv: { maxKeys: 100 } } },
    pipeline: [{ plugin: 'ip-limit', config: TRUST_LOOPBACK }, AUTH_ENTRY, { plugin: 'idempotency' }],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  const first = await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: { ...auth(), 'idempotency-key': 'pay-once' }, body: chat })
  t.equal(first.status, 200)
  await churnIps(url)
  const again = await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: { ...auth(), 'idempotency-key': 'pay-once' }, body: chat })
  t.equal(again.status, 409, 'the claim survived the churn')
  t.same(again.json, { error: { code: 'duplicate_request', message: again.json.error?.message } })
})

t.test('150 distinct client IPs cannot reset a spend window (stores.kv.maxKeys 100)', async t => {
  const clock = Date.UTC(2026, 2, 1, 12, 0, 0)
  const app = await buildTestApp({
    now: () => clock,
    doc: { ...PROBES_LIMITED, stores: { kv: { maxKeys: 100 } } },
    pipeline: [{ plugin: 'ip-limit', config: TRUST_LOOPBACK }, AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'day', spend: 0.00014 }] } }],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  const body = chat
  // A call's worst case (about 24 input + 50 output tokens at 1 and 2 per million) fits the cap
  // once; the second does not fit beside what the first spent.
  t.equal((await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: auth(), body })).status, 200, 'the first call fits')
  const capped = await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: auth(), body })
  t.equal(capped.status, 429, 'the cap holds')
  await churnIps(url)
  const after = await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: auth(), body })
  t.equal(after.status, 429, 'the spend window survived the churn')
  t.equal(after.json.error?.code, 429)
})

t.test('the claim store full: a new claim gets 503 in the route\'s body shape; claims free up as they expire', async t => {
  let clock = Date.UTC(2026, 2, 1, 12, 0, 0)
  const lines: string[] = []
  const app = await buildTestApp({
    now: () => clock,
    logger: pino({ level: 'error' }, { write: (s: string) => { lines.push(s) } }),
    // The key's claim counter takes one place, its claims the other two.
    doc: { stores: { kv: { maxClaims: 3 } } },
    pipeline: [{ plugin: 'ip-limit', config: TRUST_LOOPBACK }, AUTH_ENTRY, { plugin: 'idempotency', config: { ttlMs: 60_000 } }],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  const post = (path: string, key: string, body: unknown = chat) => call(url, path, { ip: '203.0.113.7', headers: { ...auth(), 'idempotency-key': key }, body })
  t.equal((await post('/v1/chat/completions', 'a')).status, 200)
  t.equal((await post('/v1/chat/completions', 'b')).status, 200)
  const full = await post('/v1/chat/completions', 'c')
  t.equal(full.status, 503, 'a third claim does not fit: refused, not evicting')
  t.same(full.json, { error: { code: 503, message: 'The service is temporarily unavailable.' } })
  const fullMsg = await post('/v1/messages', 'd', msgs)
  t.equal(fullMsg.status, 503)
  t.same(fullMsg.json, { type: 'error', error: { type: 'overloaded_error', message: 'The service is temporarily unavailable.' } })
  t.ok(lines.some(l => /claim store full/.test(l) && /stores\.kv\.maxClaims = 3/.test(l)), 'a log line names the bound')
  t.equal((await post('/v1/chat/completions', 'a')).status, 409, 'the held claims still answer 409')
  t.equal((await call(url, '/v1/chat/completions', { ip: '203.0.113.7', headers: auth(), body: chat })).status, 200, 'calls without a key are not affected')
  clock += 60_001
  t.equal((await post('/v1/chat/completions', 'c')).status, 200, 'after the claims expired there is room again')
})

t.test('the quota window store full: a call that needs a new window gets 503; existing windows keep counting', async t => {
  const clock = Date.UTC(2026, 2, 1, 12, 0, 0)
  const app = await buildTestApp({
    now: () => clock,
    doc: { stores: { kv: { maxWindows: 1 } } },
    pipeline: [AUTH_ENTRY, { plugin: 'quota', config: { limits: [{ scope: 'key', window: 'hour', requests: 2 }] } }],
  })
  t.teardown(() => app.close())
  const url = await listen(app)
  t.equal((await call(url, '/v1/chat/completions', { headers: auth(), body: chat })).status, 200, 'the first key opens the one window')
  const other = await call(url, '/v1/chat/completions', { headers: auth(LIMITED_KEY), body: { ...chat, model: 'echo/echo-text' } })
  t.equal(other.status, 503, 'a second key needs a window that does not fit')
  t.same(other.json, { error: { code: 503, message: 'The service is temporarily unavailable.' } })
  t.equal((await call(url, '/v1/chat/completions', { headers: auth(), body: chat })).status, 200, 'the existing window still counts')
  t.equal((await call(url, '/v1/chat/completions', { headers: auth(), body: chat })).status, 429, 'and still limits')
})

t.test('ip-limit counts IPv6 clients per /64; IPv4-mapped addresses count as IPv4', async t => {
  const clock = Date.UTC(2026, 2, 1, 12, 0, 0)
  const app = await buildTestApp({ now: () => clock, doc: PROBES_LIMITED, pipeline: [{ plugin: 'ip-limit', config: { limit: 2, ...TRUST_LOOPBACK } }, AUTH_ENTRY] })
  t.teardown(() => app.close())
  const url = await listen(app)
  const hit = async (ip: string) => (await call(url, '/healthz', { ip })).status
  t.same([await hit('2001:db8:1:2::1'), await hit('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), await hit('2001:db8:1:2::ffff')], [200, 200, 429], 'rotating addresses inside one /64 share one counter')
  t.equal(await hit('2001:db8:1:3::1'), 200, 'another /64 has its own counter')
  t.same([await hit('192.0.2.9'), await hit('::ffff:192.0.2.9'), await hit('::ffff:c000:209')], [200, 200, 429], 'IPv4-mapped IPv6 (both spellings) is the IPv4 client')
  t.equal(await hit('192.0.2.10'), 200, 'IPv4 stays per address')

  const perAddress = await buildTestApp({ now: () => clock, doc: PROBES_LIMITED, pipeline: [{ plugin: 'ip-limit', config: { limit: 1, ipv6PrefixLength: 128, ...TRUST_LOOPBACK } }, AUTH_ENTRY] })
  t.teardown(() => perAddress.close())
  const url2 = await listen(perAddress)
  t.same([(await call(url2, '/healthz', { ip: '2001:db8::1' })).status, (await call(url2, '/healthz', { ip: '2001:db8::2' })).status], [200, 200], 'ipv6PrefixLength 128: per address')
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { ipv6PrefixLength: 0 } }] }), /ip-limit/)
  await t.rejects(buildTestApp({ pipeline: [{ plugin: 'ip-limit', config: { ipv6PrefixLength: 129 } }] }), /ip-limit/)
})
