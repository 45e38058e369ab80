/**
 * @module test/providers/fake-vertex – the test kit's fake Vertex AI: its token endpoint verifies a
 * service account's RS256 assertion (a wrong key, issuer, audience or scope is refused) and its
 * tokens expire; its Claude answers are read by the official @anthropic-ai/sdk, whose fetch is
 * pointed at the rawPredict paths the way Vertex's own client rewrites requests (no `model` in the
 * body, `anthropic_version` added, the model in the path, a bearer token), so what the SDK accepts
 * from the fake (JSON answers, the SSE stream, partial tool input) it accepts from Vertex. Its
 * Gemini paths are read by the official @google/genai in Vertex mode (`vertexai: true`, the fake
 * as `httpOptions.baseUrl`), its auth client handing over a token exchanged at the fake.
 */
import t from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { GoogleGenAI } from '@google/genai'
import { generateKeyPairSync } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { startFakeVertex, VERTEX_ANTHROPIC_VERSION, CLOUD_PLATFORM_SCOPE, type FakeVertex } from '../../testing.ts'
import { serviceAccountAssertion, serviceAccountTokens, type GoogleServiceAccount } from '../../index.ts'

const MODEL = 'claude-sonnet-4-5@20250929'

async function exchange (fake: FakeVertex, assertion: string): Promise<{ status: number, body: Record<string, unknown> }> {
  const res = await fetch(fake.serviceAccount.token_uri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  })
  return { status: res.status, body: await res.json() as Record<string, unknown> }
}

/** An Anthropic client whose requests go where AnthropicVertex would send them. */
function vertexClient (fake: FakeVertex, token: () => Promise<string>): Anthropic {
  return new Anthropic({
    apiKey: 'unused',
    baseURL: fake.origin,
    maxRetries: 0,
    fetch: async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(String(input))
      const body = JSON.parse(String(init?.body)) as Record<string, unknown>
      const base = `/v1/projects/${fake.project}/locations/${fake.location}/publishers/anthropic/models`
      let path: string
      if (url.pathname === '/v1/messages/count_tokens') {
        path = `${base}/count-tokens:rawPredict`
      } else {
        path = `${base}/${String(body.model)}:${body.stream === true ? 'streamRawPredict' : 'rawPredict'}`
        delete body.model
      }
      body.anthropic_version = VERTEX_ANTHROPIC_VERSION
      return fetch(`${fake.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${await token()}` }, body: JSON.stringify(body) })
    },
  })
}

t.test('token endpoint: a service account assertion signed with the key is exchanged for a token', async t => {
  const fake = await startFakeVertex()
  t.teardown(() => fake.close())
  const sa = fake.serviceAccount as GoogleServiceAccount
  const ok = await exchange(fake, await serviceAccountAssertion(sa, CLOUD_PLATFORM_SCOPE, Date.now()))
  t.equal(ok.status, 200)
  t.match(ok.body, { access_token: /^ya29\.fake-1-/, expires_in: 3600, token_type: 'Bearer' })

  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const cases: Array<[string, GoogleServiceAccount, string]> = [
    ['another key', { ...sa, private_key: other }, CLOUD_PLATFORM_SCOPE],
    ['another issuer', { ...sa, client_email: 'someone@else.iam.gserviceaccount.com' }, CLOUD_PLATFORM_SCOPE],
    ['another audience', { ...sa, token_uri: 'https://oauth2.googleapis.com/token' }, CLOUD_PLATFORM_SCOPE],
    ['another scope', sa, 'https://www.googleapis.com/auth/devstorage.read_only'],
    ['another key id', { ...sa, private_key_id: 'abc' }, CLOUD_PLATFORM_SCOPE],
  ]
  for (const [what, key, scope] of cases) {
    const r = await exchange(fake, await serviceAccountAssertion(key, scope, Date.now()))
    t.equal(r.status, 400, `${what}: refused`)
    t.equal(r.body.error, 'invalid_grant', what)
  }
  const old = await exchange(fake, await serviceAccountAssertion(sa, CLOUD_PLATFORM_SCOPE, Date.now() - 2 * 3600_000))
  t.equal(old.status, 400, 'an expired assertion is refused')
  t.equal(fake.issued.length, 1, 'only the good assertion got a token')
  t.equal(fake.refusedAssertions.length, 6)
})

t.test('Claude answers as the Anthropic SDK reads them: JSON, stream, tool input, count tokens', async t => {
  const fake = await startFakeVertex()
  t.teardown(() => fake.close())
  const tokens = serviceAccountTokens(fake.serviceAccount as GoogleServiceAccount)
  const client = vertexClient(fake, async () => (await tokens()).token)

  fake.next({ content: [{ text: 'Hi there' }], usage: { input: 12, output: 3, cacheRead: 4 } })
  const msg = await client.messages.create({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] })
  t.same(msg.content, [{ type: 'text', text: 'Hi there' }])
  t.equal(msg.stop_reason, 'end_turn')
  t.same(msg.usage, { input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 4, cache_creation_input_tokens: 0 })
  const first = fake.requests.find(r => r.operation === 'rawPredict')!
  t.equal(first.model, MODEL)
  t.notOk(first.refused)

  fake.next({ content: [{ thinking: 'Let me think', signature: 'sig-1' }, { text: ['One', ' two'] }, { toolUse: { id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } } }] })
  const stream = client.messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'Weather?' }] })
  const texts: string[] = []
  stream.on('text', d => texts.push(d))
  const final = await stream.finalMessage()
  t.same(texts, ['One', ' two'])
  t.equal(final.stop_reason, 'tool_use')
  t.same(final.content, [
    { type: 'thinking', thinking: 'Let me think', signature: 'sig-1' },
    { type: 'text', text: 'One two' },
    { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
  ], 'thinking, text and tool input assembled from the deltas')
  t.equal(fake.requests.at(-1)!.operation, 'streamRawPredict')

  const count = await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }] })
  t.ok(count.input_tokens > 0)
  t.equal(fake.requests.at(-1)!.operation, 'count-tokens')
  t.equal(fake.issued.length, 1, 'one token served all three calls')
})

t.test('refusals: no token, an expired token, a revoked one; a body with model or without anthropic_version', async t => {
  const fake = await startFakeVertex({ tokenTtlS: 1 })
  t.teardown(() => fake.close())
  const sa = fake.serviceAccount as GoogleServiceAccount
  const path = `/v1/projects/${fake.project}/locations/${fake.location}/publishers/anthropic/models/${MODEL}:rawPredict`
  const good = { anthropic_version: VERTEX_ANTHROPIC_VERSION, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] }
  const post = async (token: string, body: unknown) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (token !== '') headers.authorization = `Bearer ${token}`
    const r = await fetch(fake.origin + path, { method: 'POST', headers, body: JSON.stringify(body) })
    return { status: r.status, body: await r.json() as { error?: { status?: string, message?: string } } }
  }
  const none = await post('', good)
  t.equal(none.status, 401)
  t.equal(none.body.error?.status, 'UNAUTHENTICATED')
  const { body } = await exchange(fake, await serviceAccountAssertion(sa, CLOUD_PLATFORM_SCOPE, Date.now()))
  const token = String(body.access_token)
  t.equal((await post(token, good)).status, 200)
  t.equal((await post(token, { ...good, model: MODEL })).status, 400, 'model in the body is refused')
  t.equal((await post(token, { ...good, anthropic_version: undefined })).status, 400, 'no anthropic_version is refused')
  t.equal((await post(token, { ...good, messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'Hi' }] })).status, 400, 'a system turn is refused')
  fake.revoke(token)
  t.equal((await post(token, good)).status, 401, 'a revoked token is refused')
  const second = String((await exchange(fake, await serviceAccountAssertion(sa, CLOUD_PLATFORM_SCOPE, Date.now()))).body.access_token)
  await sleep(1100)
  const expired = await post(second, good)
  t.equal(expired.status, 401, 'an expired token is refused')
  t.equal(fake.requests.at(-1)!.refused, 'expired token')
  const wrongPlace = await fetch(`${fake.origin}/v1/projects/other/locations/${fake.location}/publishers/anthropic/models/${MODEL}:rawPredict`, { method: 'POST', body: '{}' })
  t.equal(wrongPlace.status, 401, 'the bearer is checked before anything else')
})

t.test('Gemini models as @google/genai reads them in Vertex mode: JSON, stream, count tokens, behind the bearer check', async t => {
  const fake = await startFakeVertex()
  t.teardown(() => fake.close())
  const tokens = serviceAccountTokens(fake.serviceAccount as GoogleServiceAccount)
  // The SDK's Google auth would fetch its own token from Google's endpoint: its auth client hands over ours.
  const authClient = { getRequestHeaders: async () => new Headers({ authorization: `Bearer ${(await tokens()).token}` }) }
  const ai = new GoogleGenAI({ vertexai: true, project: fake.project, location: fake.location, httpOptions: { baseUrl: fake.origin, apiVersion: 'v1' }, googleAuthOptions: { authClient: authClient as never } })
  fake.gemini.next({ parts: [{ text: 'Bonjour' }], usage: { prompt: 7, candidates: 2, cached: 3 } })
  const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' })
  t.equal(r.text, 'Bonjour')
  t.equal(r.usageMetadata?.cachedContentTokenCount, 3)
  fake.gemini.next({ parts: [{ text: ['Un', ' deux'] }] })
  const chunks: string[] = []
  for await (const c of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Count' })) chunks.push(c.text ?? '')
  t.same(chunks, ['Un', ' deux'])
  const n = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'Hi' })
  t.ok((n.totalTokens ?? 0) > 0)
  t.same(fake.requests.filter(r => r.operation !== 'token').map(r => [r.operation, r.model, r.refused]), [
    ['generateContent', 'gemini-2.5-flash', undefined], ['streamGenerateContent', 'gemini-2.5-flash', undefined], ['countTokens', 'gemini-2.5-flash', undefined],
  ])
  t.equal(fake.gemini.requests.length, 3, 'each reached the fake Gemini')

  const noToken = new GoogleGenAI({ vertexai: true, project: fake.project, location: fake.location, httpOptions: { baseUrl: fake.origin, apiVersion: 'v1' }, googleAuthOptions: { authClient: { getRequestHeaders: async () => new Headers() } as never } })
  const refused = await noToken.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' }).catch((e: unknown) => e)
  t.equal((refused as { status?: number }).status, 401, 'no bearer: 401')
  t.equal(fake.gemini.requests.length, 3, 'a refused call never reached the fake Gemini')
})
