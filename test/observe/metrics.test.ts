/**
 * /metrics through a listening server, parsed with a real Prometheus text-format parser: request,
 * token, rejection, upstream-error, circuit, backend, ledger-batch and config metrics; labels
 * never carry client input (a hostile model name, random organizations).
 */
import type { Test } from 'tap'
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { request } from 'undici'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json } from '../helpers/fake-upstream.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'
import { definePlugin } from '../../core/pipeline/plugin.ts'
import { registerMetricsRoute } from '../../core/http/routes/metrics.ts'
import type { GatewayApp } from '../../core/http/app.ts'
import { until } from '../helpers/until.ts'

interface Sample { labels: Record<string, string>, value?: string, count?: string, sum?: string, buckets?: Record<string, string> }
interface Family { name: string, type: string, metrics: Sample[] }

type Scrape = Map<string, Family> & { text: string }

async function scrape (url: string, path = '/metrics'): Promise<Scrape> {
  const res = await request(url + path)
  if (res.statusCode !== 200) throw new Error(`scrape: ${res.statusCode}`)
  if (!String(res.headers['content-type']).startsWith('text/plain')) throw new Error(`content-type ${res.headers['content-type']}`)
  const text = await res.body.text()
  const families = parsePrometheusTextFormat(text) as Family[]
  return Object.assign(new Map(families.map(f => [f.name, f])), { text })
}

/**
 * A histogram's _count for one label set. parse-prometheus-text-format merges all series of a
 * labelled histogram into one (it keeps no labels for them), so the series are read from the
 * text the parser accepted.
 */
function histCount (m: Scrape, name: string, labels: Record<string, string>): number | undefined {
  for (const line of m.text.split('\n')) {
    const match = new RegExp(`^${name}_count(?:\\{(.*)\\})? (\\S+)$`).exec(line)
    if (!match) continue
    const have = Object.fromEntries([...(match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(x => [x[1], x[2]]))
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[2])
  }
  return undefined
}

const find = (m: Map<string, Family>, name: string, labels: Record<string, string>): Sample | undefined =>
  m.get(name)?.metrics.find(s => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))

async function post (url: string, body: unknown, headers: Record<string, string> = auth()) {
  const res = await request(url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  await res.body.text()
  return res.statusCode
}

const chat = (model = 'echo/echo-1') => ({ model, messages: [{ role: 'user', content: 'hello there' }] })

async function app (t: Test, doc: Record<string, unknown>, extra: Partial<Parameters<typeof buildTestApp>[0]> = {}): Promise<{ app: GatewayApp, url: string }> {
  const a = await buildTestApp({ ...extra, doc })
  const url = await listen(a)
  t.teardown(() => a.close())
  return { app: a, url }
}

t.test('requests, tokens, cost, rejections, upstream errors, circuits, backends, ledger batches, config', async t => {
  const up = await startFakeUpstream((_req, res) => json(res, 503, { error: { message: 'overloaded' } }))
  t.teardown(() => up.close())
  const base = embeddedDefault('sk-gw-unused')
  const { app: gw, url } = await app(t, {
    metrics: { listen: 'main' },
    providers: [...(base.providers as unknown[]), { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } }],
    models: [...(base.models as unknown[]), { id: 'vendor/failing', deployments: [{ provider: 'up-chat', model: 'up-model' }] }],
    circuit: { failureThreshold: 1, coolDownMs: 600000 },
  }, {
    pipeline: [
      { plugin: 'size-limit', config: { maxBytes: 2000 } },
      AUTH_ENTRY,
      { plugin: 'idempotency' },
      { plugin: 'balance', config: { organizations: [{ id: 'org-test', initialBalance: 100 }] } },
    ],
  })

  // Calls in flight at once: the ledger batches their charges.
  const codes = await Promise.all(Array.from({ length: 8 }, () => post(url, chat())))
  t.same(codes, Array(8).fill(200))
  t.equal(await post(url, chat(), { authorization: 'Bearer sk-gw-wrong-key-000000' }), 401)
  t.equal(await post(url, chat(), { ...auth(), 'idempotency-key': 'k1' }), 200)
  t.equal(await post(url, chat(), { ...auth(), 'idempotency-key': 'k1' }), 409)
  t.equal(await post(url, { ...chat(), pad: 'x'.repeat(3000) }), 413)
  t.equal(await post(url, chat('vendor/failing')), 502)
  t.equal(await post(url, chat('vendor/failing')), 503, 'the circuit opened after one failure')

  const m = await scrape(url)
  t.equal(find(m, 'gw_requests_total', { route: 'chat', model: 'echo/echo-1', provider: 'echo', status: '200' })?.value, '9')
  t.equal(histCount(m, 'gw_request_duration_seconds', { route: 'chat', model: 'echo/echo-1', provider: 'echo', status: '200' }), 9, 'latency histogram by route, model, provider, status')
  t.equal(m.get('gw_request_duration_seconds')?.type, 'HISTOGRAM')
  t.ok(Number(find(m, 'gw_tokens_total', { model: 'echo/echo-1', organization: 'org-test', type: 'input' })?.value) > 0, 'input tokens by model and organization')
  t.ok(Number(find(m, 'gw_tokens_total', { model: 'echo/echo-1', organization: 'org-test', type: 'output' })?.value) > 0, 'output tokens')
  t.ok(find(m, 'gw_tokens_total', { type: 'cached_input' }), 'cached input tokens')
  t.ok(Number(find(m, 'gw_cost_total', { model: 'echo/echo-1', organization: 'org-test' })?.value) > 0, 'cost')
  t.equal(find(m, 'gw_rejections_total', { plugin: 'auth', code: 'GW_ERR_AUTH_INVALID_KEY' })?.value, '1')
  t.equal(find(m, 'gw_rejections_total', { plugin: 'idempotency', code: 'GW_ERR_IDEMPOTENCY_DUPLICATE' })?.value, '1')
  t.equal(find(m, 'gw_rejections_total', { plugin: 'size-limit', code: 'GW_ERR_BODY_TOO_LARGE' })?.value, '1')
  t.equal(find(m, 'gw_upstream_errors_total', { provider: 'up-chat', kind: 'http_5xx' })?.value, '1')
  t.equal(histCount(m, 'gw_upstream_ttfb_seconds', { provider: 'up-chat', model: 'vendor/failing' }), 1)
  t.equal(find(m, 'gw_circuit_state', { deployment: 'up-chat/up-model' })?.value, '1', 'open circuit')
  t.equal(find(m, 'gw_circuit_state', { deployment: 'echo/echo-1' })?.value, '0', 'closed circuit')
  t.equal(find(m, 'gw_in_flight_calls', {})?.value, '0')
  t.equal(find(m, 'gw_backend_up', { backend: 'kv', kind: 'memory' })?.value, '1')
  t.equal(find(m, 'gw_backend_up', { backend: 'ledger', kind: 'sqlite' })?.value, '1')
  const batches = m.get('gw_ledger_batch_size')?.metrics[0]
  t.ok(Number(batches?.count) >= 1 && Number(batches?.sum) >= 9, 'ledger batches: every charge counted')
  t.ok(histCount(m, 'gw_ledger_commit_seconds', { result: 'ok' })! >= 1, 'commit latency')
  t.ok(m.get('gw_gateway_overhead_seconds'), 'gateway overhead histogram')
  const info = m.get('gw_config_info')!.metrics
  t.equal(info.length, 1)
  t.match(info[0], { labels: { version: /^[0-9a-f]{12}$/ }, value: '1' }, 'a hash of the config without configVersion')

  ;(gw.gateway as unknown as { configVersion: string }).configVersion = 'v42'
  const after = await scrape(url)
  t.same(after.get('gw_config_info')!.metrics.map(s => [s.labels.version, s.value]), [['v42', '1']], 'the gateway\'s configVersion when it has one')
})

t.test('label values never come from client input', async t => {
  // An authenticator that takes the organization from a header: the worst case of a principal.
  const headerAuth = definePlugin({
    name: 'header-auth',
    phase: 'authenticate',
    provides: ['principal'],
    configSchema: Type.Object({}),
    create: () => ({
      onRequest (ctx) { ctx.setPrincipal({ keyId: 'k', organization: String(ctx.headers['x-org']) }) },
    }),
  })
  const { url } = await app(t, { metrics: { listen: 'main', maxOrganizations: 2, path: '/prom' } }, {
    plugins: [headerAuth],
    pipeline: [{ plugin: 'header-auth', routes: ['chat'] }],
  })
  const hostile = `evil"} 1\n# ${randomBytes(8).toString('hex')}<script>`
  t.equal(await post(url, chat(hostile), {}), 404)
  const orgs = Array.from({ length: 6 }, () => randomBytes(8).toString('hex'))
  for (const org of orgs) t.equal(await post(url, chat(), { 'x-org': org }), 200)
  const postTo = async (path: string, body: unknown) => {
    const res = await request(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    await res.body.text()
    return res.statusCode
  }
  t.equal(await postTo('/v1/responses', { model: hostile, input: 'hi' }), 404)
  t.equal(await postTo('/v1/messages/count_tokens', { model: hostile, messages: [{ role: 'user', content: 'hi' }] }), 404)
  t.equal((await request(url + '/metrics')).statusCode, 404, 'served at the configured path only')
  const m = await scrape(url, '/prom')
  t.equal(find(m, 'gw_requests_total', { route: 'chat', model: 'other', status: '404' })?.value, '1', 'an unknown model counts as other')
  t.equal(find(m, 'gw_requests_total', { route: 'responses', model: 'other', status: '404' })?.value, '1', 'on responses too')
  t.equal(find(m, 'gw_requests_total', { route: 'count_tokens', model: 'other', status: '404' })?.value, '1', 'and on count_tokens')
  const values = [...m.values()].flatMap(f => f.metrics.flatMap(s => Object.values(s.labels ?? {})))
  t.notOk(values.some(v => v.includes('evil') || v.includes('script')), 'nothing of the hostile model name')
  const orgLabels = new Set(m.get('gw_tokens_total')!.metrics.map(s => s.labels?.organization))
  t.same([...orgLabels].sort(), [...orgs.slice(0, 2), 'other'].sort(), 'two organizations of their own, the rest other')
  t.equal(find(m, 'gw_tokens_total', { organization: 'other', type: 'input' }) !== undefined, true)
})

t.test('off: no route, no observer; registerMetricsRoute mounts on any fastify instance', async t => {
  const off = await buildTestApp({ doc: { logging: { level: 'silent', access: { enabled: false } }, tracing: { propagate: false } } })
  t.teardown(() => off.close())
  t.equal(off.gateway.observer, null, 'nothing observes when all is off')
  t.equal((await off.inject({ url: '/metrics' })).statusCode, 404)

  const { app: gw, url } = await app(t, { metrics: { listen: 'admin' }, admin: { keys: [{ id: 'ops', key: 'admin-key-0123456789abcdef' }] } })
  t.equal((await gw.inject({ url: '/metrics' })).statusCode, 404, 'listen admin: not on the main listener')
  const admin = Fastify()
  registerMetricsRoute(admin, gw.gateway)
  const adminUrl = await admin.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => admin.close())
  t.equal(await post(url, chat()), 200)
  const m = await scrape(adminUrl)
  t.equal(find(m, 'gw_requests_total', { route: 'chat', status: '200' })?.value, '1', 'the admin listener serves the gateway\'s metrics')
})

t.test('metrics on the main listener: the IP limit applies even though probes are exempt', async t => {
  const { url } = await app(t, { metrics: { listen: 'main' } }, {
    pipeline: [{ plugin: 'ip-limit', config: { limit: 2, windowMs: 60000 } }, AUTH_ENTRY],
  })
  for (let i = 0; i < 5; i++) t.equal((await request(url + '/healthz')).statusCode, 200, 'probes skip the IP limit (and use up no window)')
  t.equal((await request(url + '/metrics')).statusCode, 200)
  t.equal((await request(url + '/metrics')).statusCode, 200)
  const over = await request(url + '/metrics')
  t.equal(over.statusCode, 429, 'past the limit, a stranger is refused before any metric is rendered')
  t.match(over.headers['retry-after'], /^\d+$/)
  t.match(await over.body.json(), { error: { code: 429 } })
  t.equal((await request(url + '/healthz')).statusCode, 200, 'probes are still exempt')
})

t.test('ledger batch metrics count the app\'s own ledger only (two apps in one process)', async t => {
  const pipeline = [AUTH_ENTRY, { plugin: 'balance', config: { organizations: [{ id: 'org-test', initialBalance: 100 }] } }]
  const a = await app(t, { metrics: { listen: 'main' } }, { pipeline })
  const b = await app(t, { metrics: { listen: 'main' } }, { pipeline })
  t.same(await Promise.all(Array.from({ length: 4 }, () => post(a.url, chat()))), [200, 200, 200, 200])
  const batches = async (url: string) => {
    const s = (await scrape(url)).get('gw_ledger_batch_size')?.metrics[0]
    return { count: Number(s?.count ?? 0), sum: Number(s?.sum ?? 0) }
  }
  // The charges commit in the settle, after the answers: polled, not assumed.
  t.ok(await until(async () => (await batches(a.url)).sum === 4), 'the app that charged counts its charges')
  t.same(await batches(b.url), { count: 0, sum: 0 }, 'the other app counts none of them')
  t.equal(await post(b.url, chat()), 200)
  t.ok(await until(async () => (await batches(b.url)).sum === 1), 'and then its own')
  t.equal((await batches(a.url)).sum, 4, 'which the first does not count')
})
