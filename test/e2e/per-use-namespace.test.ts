// A Responses `namespace` tool (Codex) is a group of the client's own tools, not a server tool:
// on a model with a Responses upstream it passes without a per-use price, while a server tool
// inside it is checked as one at the top level (400 naming it, nothing sent upstream).
import t from 'tap'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, responsesResponse } from '../helpers/fake-upstream.ts'
import { serverTools } from '../../core/dispatch/per-use.ts'

const NAMESPACE = { type: 'namespace', name: 'fs', description: 'files', tools: [{ type: 'function', name: 'read', parameters: { type: 'object', properties: {} } }, { type: 'custom', name: 'patch' }] }

t.test('serverTools: a namespace\'s function and custom members are client tools; a server tool inside it is one', async t => {
  t.same(serverTools('responses', { tools: [NAMESPACE] }), [])
  const inside = { ...NAMESPACE, tools: [...NAMESPACE.tools, { type: 'web_search' }] }
  t.same(serverTools('responses', { tools: [{ type: 'function', name: 'f' }, inside] }), [{ where: 'tools[1].tools[2]', type: 'web_search', feature: 'web_search', maxUses: undefined }])
})

t.test('serverTools: the tools of a Responses `additional_tools` input item are checked as `tools` entries', async t => {
  const input = [{ role: 'user', content: 'hi' }, { type: 'additional_tools', tools: [{ type: 'function', name: 'g' }, { type: 'web_search_preview', max_uses: 2 }, NAMESPACE] }]
  t.same(serverTools('responses', { input }), [{ where: 'input[1].tools[1]', type: 'web_search_preview', feature: 'web_search', maxUses: 2 }])
  t.same(serverTools('responses', { input: [{ type: 'additional_tools', tools: 'x' }, { type: 'additional_tools' }, null, 'text'] }), [], 'odd items are no tools')
  t.same(serverTools('chat', { input }), [], 'only the Responses protocol has input items')
})

t.test('/v1/responses to a Responses upstream: a namespace tool passes, a server tool in it is refused unless priced', async t => {
  const up = await startFakeUpstream((_req, res) => json(res, 200, responsesResponse('ok')))
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [{ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-up' } }],
      models: [{ id: 'r/plain', price: { input: 1, output: 2 }, deployments: [{ provider: 'up-resp', model: 'up-r' }] }],
    },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const url = await listen(app)
  const post = (tools: unknown[]) => fetch(`${url}/v1/responses`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'r/plain', input: 'hi', tools }) })
  const ok = await post([NAMESPACE])
  t.equal(ok.status, 200, await ok.clone().text())
  t.same((up.requests[0]!.body as { tools: unknown }).tools, [NAMESPACE], 'the namespace reaches the Responses upstream as sent')
  const bad = await post([{ ...NAMESPACE, tools: [{ type: 'web_search' }] }])
  t.equal(bad.status, 400)
  t.match(await bad.json(), { error: { code: 400, message: /tools\[0\]\.tools\[0\].*"web_search".*not available/ } })
  t.equal(up.requests.length, 1, 'the refused call never reached the upstream')
  const extra = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'r/plain', input: [{ role: 'user', content: 'hi' }, { type: 'additional_tools', tools: [{ type: 'web_search' }] }] }),
  })
  t.equal(extra.status, 400, 'a server tool added by an additional_tools item is refused as one in tools')
  t.match(await extra.json(), { error: { code: 400, message: /input\[1\]\.tools\[0\].*"web_search".*not available/ } })
  t.equal(up.requests.length, 1, 'nor did that one')
})
