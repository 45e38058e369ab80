/** @module test/admin/mask – the config view masks keys, apiKeys, hashes, passwords, tokens and URL passwords, and keeps the rest. */
import t from 'tap'
import { MASK, maskSecrets } from '../../admin/mask.ts'

t.test('secrets are masked wherever they sit; everything else is kept', async t => {
  const config = {
    server: { host: '0.0.0.0', port: 8080 },
    stores: {
      kv: { backend: 'redis', url: 'redis://:s3cret@redis:6379/0', prefix: 'gw:', maxKeys: 100000 },
      ledger: { backend: 'postgres', url: 'postgres://gw:pa%40ss@db:5432/gw?sslmode=require', schema: 'public' },
    },
    providers: [
      { name: 'openai', adapter: 'openai-compatible', config: { baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-live-1', headers: { Authorization: 'Bearer x', 'x-api-key': 'xk-secret-2', 'x-trace': 'trace-value' } } },
      { name: 'azure', adapter: 'openai-compatible', config: { headers: { 'api-key': 'az-secret-3', 'x-goog-api-key': 'AIza-secret-4' } } },
      { name: 'other', adapter: 'x', config: { apiKeys: ['a', 'b'], clientSecret: 's', accessToken: 't', password: 'p' } },
    ],
    pipeline: [{ plugin: 'auth', config: { keys: [{ key: 'sk-gw-abc', id: 'k1', organization: 'acme' }, { hash: 'f'.repeat(64), id: 'k2' }], ledgerCacheMs: 5000 } }],
    admin: { host: '127.0.0.1', port: 8081, keys: [{ id: 'ops', key: 'adm-0123456789abcdef', revoked: false }] },
    models: [{ id: 'vendor/model', price: { input: 1, output: 2 } }],
    tracing: { otlp: { url: 'https://api.honeycomb.io/v1/traces', headers: { 'x-honeycomb-team': 'hc-secret-5', 'DD-API-KEY': 'dd-secret-6' } } },
  }
  const m = maskSecrets(config) as any
  const text = JSON.stringify(m)
  for (const secret of ['s3cret', 'pa%40ss', 'sk-live-1', 'Bearer x', 'xk-secret-2', '"a"', 'sk-gw-abc', 'f'.repeat(64), 'adm-0123456789abcdef', '"s"', '"t"', '"p"', 'trace-value', 'az-secret-3', 'AIza-secret-4', 'hc-secret-5', 'dd-secret-6']) {
    t.notOk(text.includes(secret), `${secret} is masked`)
  }
  t.equal(m.stores.kv.url, `redis://:${MASK}@redis:6379/0`, 'URL password masked, the rest kept')
  t.equal(m.stores.ledger.url, `postgres://gw:${MASK}@db:5432/gw?sslmode=require`)
  t.equal(m.providers[0].config.apiKey, MASK)
  t.same(m.providers[0].config.headers, { Authorization: MASK, 'x-api-key': MASK, 'x-trace': MASK }, 'every value under headers is masked, the names kept')
  t.same(Object.keys(m.tracing.otlp.headers), ['x-honeycomb-team', 'DD-API-KEY'])
  t.equal(m.tracing.otlp.url, 'https://api.honeycomb.io/v1/traces')
  t.same(m.providers[2].config.apiKeys, [MASK, MASK])
  t.same(m.pipeline[0].config.keys, [{ key: MASK, id: 'k1', organization: 'acme' }, { hash: MASK, id: 'k2' }], 'ids and organizations kept')
  t.same(m.admin.keys, [{ id: 'ops', key: MASK, revoked: false }])
  t.equal(m.stores.kv.maxKeys, 100000, 'maxKeys is no secret')
  t.equal(m.pipeline[0].config.ledgerCacheMs, 5000)
  t.same(m.models, config.models)
  t.equal(config.providers[0]!.config.apiKey, 'sk-live-1', 'the input is not changed')
})
