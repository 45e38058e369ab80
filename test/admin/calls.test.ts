/**
 * @module test/admin/calls – the error rate's source and the providers view: real calls through a
 * listening gateway (served, refused, failed upstream, streamed) counted by GET
 * /admin/calls/summary; the recorder's bounds (tiers, groups) on a fake clock; GET /admin/providers
 * (adapter, protocol, masked base URL, circuits, reset) never showing a secret.
 */
import t, { type Test } from 'tap'
import { buildAdminApp, startAdmin } from '../../admin/app.ts'
import { CallRecorder, MAX_GROUPS } from '../../admin/calls.ts'
import { AUTH_ENTRY, auth, buildTestApp, LIMITED_KEY, listen, TEST_KEY } from '../helpers/build-test-app.ts'
import { ADMIN_KEY, adminCall as call } from '../helpers/admin.ts'
import { embeddedDefault } from '../../core/config/default-config.ts'

const UPSTREAM_SECRET = 'sk-upstream-secret-0123456789'
const base = embeddedDefault('sk-gw-unused-demo') as { providers: unknown[], models: unknown[] }

async function gatewayWithAdmin (t: Test) {
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      // A provider nobody answers for (a closed port): its calls fail upstream.
      providers: [...base.providers, { name: 'down', adapter: 'openai-compatible', config: { baseUrl: 'http://ops:hunter2pass@127.0.0.1:1/v1', headers: { 'x-upstream-key': UPSTREAM_SECRET } } },
        // No baseUrl in their config: the endpoint each adapter makes from its other settings.
        { name: 'azure', adapter: 'azure-openai', config: { resource: 'my-res', apiKey: UPSTREAM_SECRET } },
        { name: 'aws', adapter: 'bedrock', config: { region: 'eu-west-3', apiKey: UPSTREAM_SECRET } },
        { name: 'vx', adapter: 'vertex', config: { project: 'p', location: 'europe-west4', credentials: { access_token: UPSTREAM_SECRET } } },
        { name: 'google', adapter: 'gemini', config: { apiKey: UPSTREAM_SECRET } }],
      models: [...base.models, { id: 'down/model', deployments: [{ provider: 'down', model: 'm' }] }],
      admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }] },
    },
    env: { ADMIN_KEY },
  })
  const admin = (await startAdmin(app))!.address
  const gateway = await listen(app)
  t.teardown(() => app.close())
  return { app, admin, gateway }
}

t.test('ended calls by status class, model and organization; probes and listings not counted', async t => {
  const { admin, gateway } = await gatewayWithAdmin(t)
  const chat = async (key: string, model: string, stream = false): Promise<number> => {
    const r = await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
    })
    await r.arrayBuffer()
    return r.status
  }
  const from = new Date(Date.now() - 120_000).toISOString()
  // In flight at once: 3 served, 1 streamed, 1 not allowed for the key, 1 bad key, 1 unknown model, 2 failed upstream.
  const statuses = await Promise.all([
    chat(TEST_KEY, 'echo/echo-1'), chat(TEST_KEY, 'echo/echo-1'), chat(TEST_KEY, 'echo/echo-1'), chat(TEST_KEY, 'echo/echo-1', true),
    chat(LIMITED_KEY, 'echo/echo-1'), chat('sk-gw-not-a-key-000000', 'echo/echo-1'), chat(TEST_KEY, 'no/such-model'),
    chat(TEST_KEY, 'down/model'), chat(TEST_KEY, 'down/model'),
  ])
  t.strictSame(statuses.slice(0, 4), [200, 200, 200, 200])
  t.ok(statuses.slice(4, 7).every(s => s >= 400 && s < 500), `refused: ${statuses.slice(4, 7)}`)
  t.ok(statuses.slice(7).every(s => s >= 500), `failed upstream: ${statuses.slice(7)}`)
  const m = await fetch(`${gateway}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': TEST_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'msgvendor/echo-1', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
  })
  t.equal(m.status, 200)
  await m.arrayBuffer()
  for (const path of ['/healthz', '/v1/models']) await (await fetch(`${gateway}${path}`, { headers: auth() })).arrayBuffer()

  let r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&bucket=minute`)
  t.equal(r.status, 200, r.text)
  t.strictSame(r.body.total, { requests: 10, clientErrors: 3, serverErrors: 2 }, 'every inference call once, by status class')
  t.equal(r.body.scope, 'replica')
  t.ok(Date.parse(r.body.since) <= Date.now() && Date.parse(r.body.heldFrom) >= Date.parse(r.body.since))
  r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&bucket=hour&groupBy=model`)
  const byModel = Object.fromEntries(r.body.groups.map((g: { key: string | null, requests: number, clientErrors: number, serverErrors: number }) => [g.key, [g.requests, g.clientErrors, g.serverErrors]]))
  t.strictSame(byModel, { 'echo/echo-1': [4, 0, 0], 'down/model': [2, 0, 2], 'msgvendor/echo-1': [1, 0, 0], null: [3, 3, 0] }, 'per catalog model; refused before the model was read (bad key, model not allowed, unknown model): null')
  r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&bucket=day&groupBy=organization`)
  const byOrg = Object.fromEntries(r.body.groups.map((g: { key: string | null, requests: number }) => [g.key, g.requests]))
  t.strictSame(byOrg, { 'org-test': 9, null: 1 }, 'the organization of the authenticated key; none for a bad key')

  r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&bucket=week`)
  t.equal(r.status, 400)
  t.equal(r.body.error.metadata.path, '/querystring/bucket')
  r = await call(admin, 'GET', `/admin/calls/summary?from=${from}&organization=x`)
  t.equal(r.body.error.metadata.path, '/querystring/organization', 'only the range, bucket, groupBy and top')
})

t.test('the recorder: bounded tiers and groups, failed streams are server errors', async t => {
  let now = Date.UTC(2025, 0, 1)
  const rec = new CallRecorder(() => now)
  rec.record('a/m', 'o1', 200, false)
  rec.record('a/m', 'o1', 200, true) // a 2xx stream its upstream cut
  rec.record('a/m', 'o1', 429, true)
  t.strictSame(rec.summarize({ from: now, to: now + 60_000, bucketMs: 60_000 }), [{ bucket: now, group: null, requests: 3, clientErrors: 1, serverErrors: 1 }])
  // Four hours of one call a minute: minute buckets keep 180, hours and days keep them all.
  const start = now
  for (let i = 1; i <= 240; i++) { now = start + i * 60_000; rec.record('a/m', 'o1', 500, false) }
  const minutes = rec.summarize({ from: start, to: now + 1, bucketMs: 60_000 })
  t.equal(minutes.length, 180, 'minute buckets: the last 180 only')
  t.equal(rec.heldFrom(60_000), now - 179 * 60_000, 'and it says from when')
  const hours = rec.summarize({ from: start, to: now + 1, bucketMs: 3_600_000 })
  t.equal(hours.reduce((a, r) => a + r.requests, 0), 243, 'hour buckets hold every call')
  t.equal(rec.heldFrom(86_400_000), rec.since, 'day buckets reach back to the start')
  // More (model, organization) pairs than a bucket keeps: the rest count under (none, none).
  now += 60_000
  for (let i = 0; i < MAX_GROUPS + 50; i++) rec.record('a/m', `org-${i}`, 200, false)
  const groups = rec.summarize({ from: now, to: now + 60_000, bucketMs: 60_000, groupBy: 'organization' })
  t.equal(groups.length, MAX_GROUPS + 1, 'bounded')
  t.equal(groups.find(g => g.group === null)?.requests, 50, 'overflow counted, totals right')
  t.throws(() => rec.summarize({ from: now, to: now, bucketMs: 1000 }), /tier/)
})

t.test('providers: adapter, protocol, masked base URL, circuits and reset; no secret shown', async t => {
  const { app, admin } = await gatewayWithAdmin(t)
  let r = await call(admin, 'GET', '/admin/providers')
  t.equal(r.status, 200, r.text)
  t.notMatch(r.text, UPSTREAM_SECRET, 'no upstream API key or header is ever shown')
  t.notMatch(r.text, 'hunter2pass', 'nor a password in the base URL')
  const byName = Object.fromEntries(r.body.data.map((p: { name: string }) => [p.name, p]))
  t.match(byName.echo, { adapter: 'echo', protocol: 'chat', baseUrl: null, module: null })
  t.match(byName['echo-messages'], { adapter: 'echo', protocol: 'messages' })
  t.match(byName.down, { adapter: 'openai-compatible', protocol: 'chat', baseUrl: 'http://ops:***@127.0.0.1:1/v1' })
  t.match(byName.azure, { adapter: 'azure-openai', protocol: 'chat', baseUrl: 'https://my-res.openai.azure.com' })
  t.match(byName.aws, { adapter: 'bedrock', protocol: 'messages', baseUrl: 'https://bedrock-runtime.eu-west-3.amazonaws.com' })
  t.match(byName.vx, { adapter: 'vertex', protocol: 'messages', baseUrl: 'https://europe-west4-aiplatform.googleapis.com' })
  t.match(byName.google, { adapter: 'gemini', protocol: 'messages', baseUrl: 'https://generativelanguage.googleapis.com' })
  t.strictSame(byName.down.deployments, [{ key: 'down/m', provider: 'down', upstreamModel: 'm', models: ['down/model'], state: 'closed', failures: 0, openedAt: null }])
  t.strictSame(byName.echo.deployments.map((d: { key: string }) => d.key).sort(), ['echo/echo-1', 'echo/echo-text'])

  const d = app.gateway.catalog.all().find(m => m.id === 'down/model')!.deployments[0]!
  for (let i = 0; i < app.gateway.circuits.options(d).failureThreshold; i++) app.gateway.circuits.failure(d)
  r = await call(admin, 'GET', '/admin/providers')
  t.match(r.body.data.find((p: { name: string }) => p.name === 'down').deployments[0], { state: 'open' })
  r = await call(admin, 'POST', '/admin/circuits/reset', { key: 'down/m' })
  t.equal(r.status, 200)
  r = await call(admin, 'GET', '/admin/providers')
  t.match(r.body.data.find((p: { name: string }) => p.name === 'down').deployments[0], { state: 'closed', failures: 0 }, 'reset closes it')
})

t.test('an admin app built without a gateway app to watch has no calls summary: 404, not a 500', async t => {
  const app = await buildTestApp({})
  t.teardown(() => app.close())
  const adminApp = await buildAdminApp(app, { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: ADMIN_KEY, revoked: false }] })
  t.teardown(() => adminApp.close())
  const r = await adminApp.inject({ method: 'GET', url: `/admin/calls/summary?from=${new Date().toISOString()}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  t.equal(r.statusCode, 404)
  t.match(r.json(), { error: { code: 404, message: /counts no calls/ } })
})
