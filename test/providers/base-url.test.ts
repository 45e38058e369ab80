/**
 * @module test/providers/base-url – a user name and password in a provider's baseUrl are never
 * dropped without a word: the compatible adapters send them as HTTP Basic authorization (a proxy
 * with Basic auth in front of a self-hosted server), and start-up refuses them where they cannot
 * be sent (another authorization on the same request, SigV4 signing, the cloud adapters).
 */
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { splitBaseUrl, addBaseUrlAuthorization } from '../../index.ts'
import { startFakeUpstream, json, chatCompletion, messagesResponse, responsesResponse, type Recorded } from '../../testing.ts'

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`

t.test('splitBaseUrl: refused by default, Basic authorization with basicAuth, percent-escapes decoded', async t => {
  t.strictSame(splitBaseUrl('https://host.example/v1/', 'p'), { origin: 'https://host.example', prefix: '/v1' })
  t.throws(() => splitBaseUrl('https://ops:s3cret@host.example/v1', 'provider p'), /provider p: baseUrl must not carry a user name or password/)
  t.throws(() => splitBaseUrl('https://ops@host.example/v1', 'provider p'), /must not carry a user name or password/, 'a user name alone too')
  let err: unknown
  try { splitBaseUrl('https://ops:s3cret@host.example/v1', 'provider p') } catch (e) { err = e }
  t.notMatch(String(err), 's3cret', 'the message does not repeat the password')
  t.strictSame(splitBaseUrl('https://ops:s3cret@host.example/v1', 'p', { basicAuth: true }),
    { origin: 'https://host.example', prefix: '/v1', authorization: basic('ops', 's3cret') })
  t.equal(splitBaseUrl('http://d%C3%A9v:p%40ss%3Aw@127.0.0.1:8/v1', 'p', { basicAuth: true }).authorization, basic('dév', 'p@ss:w'))
  t.equal(splitBaseUrl('http://:only-password@127.0.0.1:8', 'p', { basicAuth: true }).authorization, basic('', 'only-password'))
  t.equal(splitBaseUrl('http://127.0.0.1:8/v1', 'p', { basicAuth: true }).authorization, undefined, 'none without a user or password')
  t.throws(() => splitBaseUrl('http://%E0%A4%A:x@127.0.0.1:8', 'provider p', { basicAuth: true }), /not valid percent-encoding/)
  for (const bad of ['http://ops:s3cret@host.example:99999/v1', 'http://ops:s3/cret@host.example/v1', 'http://ops:s3cret@[::1/v1']) {
    let e: unknown
    try { splitBaseUrl(bad, 'provider p', { basicAuth: true }) } catch (x) { e = x }
    t.match(String(e), /provider p: baseUrl "http:\/\/\*\*\*@.*" is not a URL/, `a malformed ${bad.split('@')[1]} is named, masked`)
    t.notMatch(String(e), /s3|cret/, 'without the password')
  }
  t.throws(() => splitBaseUrl('not a url', 'provider p'), /provider p: baseUrl "not a url" is not a URL/, 'a URL without credentials is shown as it is')

  const headers: Record<string, string> = { 'content-type': 'application/json' }
  addBaseUrlAuthorization(headers, undefined, 'p')
  t.strictSame(headers, { 'content-type': 'application/json' })
  addBaseUrlAuthorization(headers, basic('a', 'b'), 'p')
  t.equal(headers.authorization, basic('a', 'b'))
  t.throws(() => addBaseUrlAuthorization({ Authorization: 'Bearer k' }, basic('a', 'b'), 'provider p'), /provider p: baseUrl carries a user name and password .* keep one/)
})

t.test('the compatible adapters send a baseUrl\'s user and password as Basic authorization', async t => {
  const seen: Array<{ path: string, authorization: string | undefined, apiKey: string | undefined }> = []
  const up = await startFakeUpstream(async (req: Recorded, res) => {
    seen.push({ path: req.path, authorization: req.headers.authorization as string | undefined, apiKey: req.headers['x-api-key'] as string | undefined })
    // As a reverse proxy with Basic auth would: anything else is 401.
    if (req.headers.authorization !== basic('ops', 'p@ss')) return json(res, 401, { error: { message: 'proxy: Basic credentials required' } })
    if (req.path.endsWith('/messages')) return json(res, 200, messagesResponse('Hi messages'))
    if (req.path.endsWith('/responses')) return json(res, 200, responsesResponse('Hi responses'))
    return json(res, 200, chatCompletion('Hi chat'))
  })
  t.teardown(() => up.close())
  const withUser = up.origin.replace('http://', 'http://ops:p%40ss@')
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'chat', adapter: 'openai-compatible', config: { baseUrl: `${withUser}/v1` } },
        { name: 'resp', adapter: 'openai-responses', config: { baseUrl: `${withUser}/v1` } },
        // Basic for the proxy, the vendor's own key in x-api-key: both sent.
        { name: 'msgs', adapter: 'anthropic-compatible', config: { baseUrl: withUser, apiKey: 'sk-ant-behind-proxy' } },
      ],
      models: [
        { id: 'proxied/chat', deployments: [{ provider: 'chat', model: 'm' }] },
        { id: 'proxied/resp', deployments: [{ provider: 'resp', model: 'm' }] },
        { id: 'proxied/msgs', deployments: [{ provider: 'msgs', model: 'm' }] },
      ],
    },
  })
  t.teardown(() => app.close())
  const base = await listen(app)
  const openai = new OpenAI({ apiKey: TEST_KEY, baseURL: `${base}/v1`, maxRetries: 0 })
  const chat = await openai.chat.completions.create({ model: 'proxied/chat', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(chat.choices[0]!.message.content, 'Hi chat')
  const resp = await openai.responses.create({ model: 'proxied/resp', input: 'hi' })
  t.equal(resp.output_text, 'Hi responses')
  const anthropic = new Anthropic({ apiKey: TEST_KEY, baseURL: base, maxRetries: 0 })
  const msg = await anthropic.messages.create({ model: 'proxied/msgs', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
  t.match(msg.content[0], { type: 'text', text: 'Hi messages' })
  t.strictSame(seen, [
    { path: '/v1/chat/completions', authorization: basic('ops', 'p@ss'), apiKey: undefined },
    { path: '/v1/responses', authorization: basic('ops', 'p@ss'), apiKey: undefined },
    { path: '/v1/messages', authorization: basic('ops', 'p@ss'), apiKey: 'sk-ant-behind-proxy' },
  ])
})

t.test('start-up refuses a user and password in baseUrl that could not be sent', async t => {
  const doc = (adapter: string, config: Record<string, unknown>) => ({
    providers: [{ name: 'p', adapter, config }],
    models: [{ id: 'p/m', deployments: [{ provider: 'p', model: 'm' }] }],
  })
  const url = 'http://ops:s3cret@127.0.0.1:9/v1'
  const cases: Array<[string, string, Record<string, unknown>, RegExp]> = [
    ['an API key sent as a bearer token', 'openai-compatible', { baseUrl: url, apiKey: 'sk-x' }, /provider p: baseUrl carries a user name and password .* keep one/],
    ['an authorization header of the config', 'openai-responses', { baseUrl: url, headers: { Authorization: 'Bearer x' } }, /keep one/],
    ['anthropic-compatible with authHeader bearer', 'anthropic-compatible', { baseUrl: 'http://ops:s3cret@127.0.0.1:9', apiKey: 'k', authHeader: 'bearer' }, /keep one/],
    ['SigV4 signing', 'openai-compatible', { baseUrl: url, aws: { region: 'us-east-1', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'x' } } }, /must not carry a user name or password/],
    ['bedrock', 'bedrock', { region: 'us-east-1', baseUrl: 'https://ops:s3cret@bedrock.example', apiKey: 'k' }, /must not carry a user name or password/],
    ['azure-openai', 'azure-openai', { endpoint: 'https://ops:s3cret@res.openai.azure.com', apiKey: 'k' }, /must not carry a user name or password/],
    ['gemini', 'gemini', { baseUrl: 'https://ops:s3cret@generativelanguage.example', apiKey: 'k' }, /must not carry a user name or password/],
  ]
  for (const [what, adapter, config, message] of cases) {
    const err = await buildTestApp({ doc: doc(adapter, config) }).then(app => app.close(), (e: unknown) => e)
    t.match(String(err), message, what)
    t.notMatch(String(err), 's3cret', `${what}: the password is not in the message`)
  }
})
