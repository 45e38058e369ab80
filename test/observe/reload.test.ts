/**
 * Observability settings across app.reloadConfig() (what SIGHUP calls): the access log's switch,
 * level and sampling and trace-context propagation apply to new requests; metrics and the OTLP
 * exporter are reported as needing a restart and keep their running values (so /admin/config and
 * app.gateway.config show what is in force); the organizations the config names get their metric
 * label after a reload.
 */
import type { Test } from 'tap'
import t from 'tap'
import pino from 'pino'
import { request } from 'undici'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { buildConfig } from '../../core/config/config.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen, testDoc } from '../helpers/build-test-app.ts'
import { until } from '../helpers/until.ts'

/** A pino line: its level and message, and whatever else it holds. */
type Line = { level: number, msg?: string, [key: string]: unknown }

const chat = JSON.stringify({ model: 'echo/echo-1', messages: [{ role: 'user', content: 'hello' }] })

async function post (url: string, headers: Record<string, string> = auth()) {
  const res = await request(url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: chat })
  await res.body.text()
  return res
}

async function setup (t: Test, doc: Record<string, unknown>, pipeline: unknown[] = [AUTH_ENTRY]) {
  const lines: Line[] = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const app = await buildTestApp({ logger, pipeline, doc })
  const url = await listen(app)
  t.teardown(() => app.close())
  const access = () => lines.filter(l => l.msg === 'access')
  const reload = (next: Record<string, unknown>, nextPipeline: unknown[] = pipeline) =>
    app.reloadConfig(buildConfig(testDoc({ pipeline: nextPipeline, doc: next }), 'test config', process.cwd(), {}))
  return { app, url, lines, access, reload }
}

t.test('access-log switch, level and sampling and trace propagation apply on reload', async t => {
  const s = await setup(t, { logging: { level: 'info', access: { enabled: true } } })
  const first = await post(s.url)
  t.equal(first.statusCode, 200)
  t.match(String(first.headers.traceresponse), /^00-/, 'propagation on at start')
  t.ok(await until(() => s.access().length === 1), 'one access line')

  // Off: no more lines, and no traceresponse once propagation is off too.
  let r = await s.reload({ logging: { level: 'info', access: { enabled: false } }, tracing: { propagate: false } })
  t.same(r.ignored, [], 'nothing needs a restart')
  t.equal(s.app.gateway.config.logging.access.enabled, false)
  const off = await post(s.url)
  t.equal(off.statusCode, 200)
  t.equal(off.headers.traceresponse, undefined, 'tracing.propagate: false applies to new requests')
  t.equal((await post(s.url, {})).statusCode, 401)
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(s.access().length, 1, 'access log off after the reload: no line, not even for an error')

  // On again, at warn, 2xx never sampled: only errors, at warn.
  r = await s.reload({ logging: { level: 'info', access: { enabled: true, level: 'warn', sampleRate: 0 } } })
  t.same(r.ignored, [])
  t.equal((await post(s.url)).statusCode, 200)
  t.equal((await post(s.url, {})).statusCode, 401)
  t.ok(await until(() => s.access().length === 2), 'a line for the error')
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal(s.access().length, 2, 'the 2xx was sampled out')
  t.match(s.access()[1], { status: 401, level: 40 }, 'at the level of the new version')
})

t.test('an app started with every observer part off gets an access log on reload', async t => {
  const s = await setup(t, { logging: { level: 'info', access: { enabled: false } }, tracing: { propagate: false } })
  t.equal(s.app.gateway.observer, null, 'nothing observes at start')
  t.equal((await post(s.url)).statusCode, 200)
  const r = await s.reload({ logging: { level: 'info', access: { enabled: true } }, tracing: { propagate: false } })
  t.same(r.ignored, [])
  t.not(s.app.gateway.observer, null, 'the new version observes')
  t.equal((await post(s.url)).statusCode, 200)
  t.ok(await until(() => s.access().length === 1), 'the request after the reload is logged')
  t.match(s.access()[0], { status: 200, route: 'chat' })
})

t.test('metrics and the OTLP exporter need a restart: reported, and their running values stay', async t => {
  const s = await setup(t, { logging: { level: 'info' }, metrics: { listen: 'main' } })
  const r = await s.reload({
    logging: { level: 'info' },
    metrics: { listen: 'admin', path: '/prom', prefix: 'x_', maxOrganizations: 5 },
    tracing: { propagate: true, otlp: { url: 'http://127.0.0.1:1/v1/traces', sampleRatio: 0.5 } },
    admin: { keys: [{ id: 'ops', key: 'admin-key-0123456789abcdef' }] },
  })
  t.same([...r.ignored].sort(), ['/admin', '/metrics/listen', '/metrics/path', '/metrics/prefix', '/tracing/otlp/sampleRatio', '/tracing/otlp/url'].sort(),
    'every setting a running process cannot change is reported (maxOrganizations applies)')
  const cfg = s.app.gateway.config
  t.match(cfg.metrics, { listen: 'main', path: '/metrics', prefix: 'gw_', maxOrganizations: 5 }, 'the config in force is what the version shows')
  t.equal(cfg.tracing.otlp.url, undefined)
  t.equal(cfg.tracing.otlp.sampleRatio, 1)
  t.equal(s.lines.filter(l => /ignored until restart$/.test(l.msg ?? '')).length, 1, 'one warning lists them')
  t.equal((await request(s.url + '/prom')).statusCode, 404, 'still served where it was')
  const res = await request(s.url + '/metrics')
  t.equal(res.statusCode, 200)
  t.ok(parsePrometheusTextFormat(await res.body.text()).some((f: { name: string }) => f.name === 'gw_requests_total'), 'under the running prefix')
})

t.test('an organization a reload names in the config gets its own metric label', async t => {
  const keys = (orgs: string[]) => ({ plugin: 'auth', config: { keys: orgs.map((o, i) => ({ key: `sk-gw-reload-org-key-${i}000`, id: `k${i}`, name: 'k', organization: o })) } })
  const doc = { logging: { level: 'silent' }, metrics: { listen: 'main', maxOrganizations: 1 } }
  const s = await setup(t, doc, [keys(['org-a'])])
  const key = (i: number) => ({ authorization: `Bearer sk-gw-reload-org-key-${i}000` })
  t.equal((await post(s.url, key(0))).statusCode, 200)
  await s.reload(doc, [keys(['org-a', 'org-b', 'org-c'])])
  for (const i of [0, 1, 2]) t.equal((await post(s.url, key(i))).statusCode, 200)
  const text = await (await request(s.url + '/metrics')).body.text()
  const tokens = parsePrometheusTextFormat(text).find((f: { name: string }) => f.name === 'gw_tokens_total') as { metrics: { labels: Record<string, string> }[] }
  t.same([...new Set(tokens.metrics.map(m => m.labels.organization))].sort(), ['org-a', 'org-b', 'org-c'], 'the organizations of the new config, none as other')
})
