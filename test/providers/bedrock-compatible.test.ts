/**
 * @module test/providers/bedrock-compatible – Bedrock's compatible endpoints reached by config alone:
 * the OpenAI-compatible endpoint of Bedrock Runtime (`/openai/v1`, SigV4 service `bedrock`) and
 * Bedrock Mantle (`bedrock-mantle.<region>.api.aws`: OpenAI-compatible at `/v1`, Anthropic's
 * Messages API at `/anthropic/v1`, the Responses API at `/v1/responses`, SigV4 service
 * `bedrock-mantle`) with `openai-compatible`, `openai-responses` and `anthropic-compatible` and
 * their `aws` block, or a Bedrock API key. The fake upstream recomputes each signature (service,
 * region, session token, path, body) and checks the path, as AWS would.
 */
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import {
  startFakeUpstream, json, sse, chatCompletion, chatTextStream, messagesResponse, messagesTextStream, responsesResponse, responsesTextStream, checkAwsSignature,
  BEDROCK_TEST_CREDENTIALS, type Recorded,
} from '../../testing.ts'

const SESSION = { ...BEDROCK_TEST_CREDENTIALS, sessionToken: 'mantle-session-token' }
const API_KEY = 'ABSKbedrock-api-key-example'

/** What each upstream path expects: the signing service and region, or the Bedrock API key. */
const ENDPOINTS: Record<string, { service: string, region: string, credentials: typeof SESSION | typeof BEDROCK_TEST_CREDENTIALS } | 'api-key'> = {
  '/runtime/openai/v1/chat/completions': { service: 'bedrock', region: 'us-east-1', credentials: BEDROCK_TEST_CREDENTIALS },
  '/mantle/v1/chat/completions': { service: 'bedrock-mantle', region: 'us-west-2', credentials: SESSION },
  '/mantle/anthropic/v1/messages': { service: 'bedrock-mantle', region: 'us-west-2', credentials: SESSION },
  '/mantle/v1/responses': { service: 'bedrock-mantle', region: 'us-west-2', credentials: SESSION },
  '/runtime/openai/v1/responses': { service: 'bedrock', region: 'us-east-1', credentials: BEDROCK_TEST_CREDENTIALS },
  '/keyed-runtime/openai/v1/chat/completions': 'api-key',
  '/keyed-mantle/v1/chat/completions': 'api-key',
}

t.test('Bedrock\'s OpenAI-compatible endpoint and Bedrock Mantle, signed with SigV4 or a Bedrock API key', async t => {
  const refused: Array<{ path: string, why: string }> = []
  const up = await startFakeUpstream(async (req: Recorded, res) => {
    const want = ENDPOINTS[req.path]
    if (want === undefined) return json(res, 404, { message: `no route ${req.path}` })
    let why: string | undefined
    if (want === 'api-key') why = req.headers.authorization === `Bearer ${API_KEY}` ? undefined : 'UnrecognizedClientException: not the API key'
    else why = await checkAwsSignature(req, want)
    if (why !== undefined) {
      refused.push({ path: req.path, why })
      return json(res, 403, { message: why }, { 'x-amzn-errortype': why.split(':')[0] })
    }
    const stream = (req.body as { stream?: boolean }).stream === true
    if (req.path.endsWith('/responses')) return stream ? sse(res, responsesTextStream(['Hi', ' Responses'])) : json(res, 200, responsesResponse('Hi Responses'))
    if (req.path.endsWith('/messages')) return stream ? sse(res, messagesTextStream(['Hi', ' Mantle'])) : json(res, 200, messagesResponse('Hi Mantle'))
    return stream ? sse(res, chatTextStream(['Hi', ' Bedrock'])) : json(res, 200, chatCompletion('Hi Bedrock'))
  })
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'runtime', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/runtime/openai/v1`, aws: { region: 'us-east-1', credentials: { ...BEDROCK_TEST_CREDENTIALS } } } },
        { name: 'mantle', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/mantle/v1`, aws: { region: 'us-west-2', service: 'bedrock-mantle', credentials: SESSION } } },
        { name: 'mantle-claude', adapter: 'anthropic-compatible', config: { baseUrl: `${up.origin}/mantle/anthropic`, aws: { region: 'us-west-2', service: 'bedrock-mantle', credentials: SESSION } } },
        { name: 'mantle-responses', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/mantle/v1`, aws: { region: 'us-west-2', service: 'bedrock-mantle', credentials: SESSION } } },
        { name: 'runtime-responses', adapter: 'openai-responses', config: { baseUrl: `${up.origin}/runtime/openai/v1`, aws: { region: 'us-east-1', credentials: { ...BEDROCK_TEST_CREDENTIALS } } } },
        { name: 'keyed-runtime', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/keyed-runtime/openai/v1`, apiKey: API_KEY } },
        { name: 'keyed-mantle', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/keyed-mantle/v1`, apiKey: API_KEY } },
        // Mis-configured on purpose: Mantle signed for the service `bedrock`, and a wrong secret.
        { name: 'mantle-wrong-service', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/mantle/v1`, aws: { region: 'us-west-2', credentials: SESSION } } },
        { name: 'runtime-wrong-secret', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/runtime/openai/v1`, aws: { region: 'us-east-1', credentials: { ...BEDROCK_TEST_CREDENTIALS, secretAccessKey: 'not-the-secret' } } } },
      ],
      models: [
        { id: 'br/gpt-oss', deployments: [{ provider: 'runtime', model: 'openai.gpt-oss-120b-1:0' }] },
        { id: 'mantle/gpt-oss', deployments: [{ provider: 'mantle', model: 'openai.gpt-oss-120b' }] },
        { id: 'mantle/claude', deployments: [{ provider: 'mantle-claude', model: 'anthropic.claude-haiku-4-5' }] },
        { id: 'mantle/responses', deployments: [{ provider: 'mantle-responses', model: 'openai.gpt-oss-120b' }] },
        { id: 'br/responses', deployments: [{ provider: 'runtime-responses', model: 'openai.gpt-oss-120b-1:0' }] },
        { id: 'keyed/runtime', deployments: [{ provider: 'keyed-runtime', model: 'openai.gpt-oss-20b-1:0' }] },
        { id: 'keyed/mantle', deployments: [{ provider: 'keyed-mantle', model: 'openai.gpt-oss-20b' }] },
        { id: 'bad/service', deployments: [{ provider: 'mantle-wrong-service', model: 'openai.gpt-oss-120b' }] },
        { id: 'bad/secret', deployments: [{ provider: 'runtime-wrong-secret', model: 'openai.gpt-oss-120b-1:0' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const base = await listen(app)
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })

  for (const model of ['br/gpt-oss', 'mantle/gpt-oss', 'keyed/runtime', 'keyed/mantle']) {
    const c = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(c.choices[0].message.content, 'Hi Bedrock', `${model}: chat JSON`)
    let text = ''
    for await (const ch of await openai.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] })) text += ch.choices[0]?.delta.content ?? ''
    t.equal(text, 'Hi Bedrock', `${model}: chat stream`)
    // A messages client reaches the same OpenAI-compatible endpoint through the translation.
    const m = await anthropic.messages.create({ model, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(m.content[0].type === 'text' && m.content[0].text, 'Hi Bedrock', `${model}: messages client`)
  }
  const m = await anthropic.messages.create({ model: 'mantle/claude', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(m.content[0].type === 'text' && m.content[0].text, 'Hi Mantle', 'Mantle\'s Messages API: JSON')
  const ms = await anthropic.messages.stream({ model: 'mantle/claude', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }).finalMessage()
  t.equal(ms.content[0].type === 'text' && ms.content[0].text, 'Hi Mantle', 'Mantle\'s Messages API: stream')
  const c = await openai.chat.completions.create({ model: 'mantle/claude', messages: [{ role: 'user', content: 'hi' }] })
  t.equal(c.choices[0].message.content, 'Hi Mantle', 'Mantle\'s Messages API from a chat client')
  for (const model of ['mantle/responses', 'br/responses']) {
    const r = await openai.responses.create({ model, input: 'hi' })
    t.equal(r.output_text, 'Hi Responses', `${model}: the Responses API, JSON`)
    let text = ''
    for await (const ev of await openai.responses.create({ model, input: 'hi', stream: true })) if (ev.type === 'response.output_text.delta') text += ev.delta
    t.equal(text, 'Hi Responses', `${model}: the Responses API, streamed`)
    const c = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(c.choices[0].message.content, 'Hi Responses', `${model}: a chat client`)
  }
  t.same(refused, [], 'every request was signed (or keyed) as its endpoint expects')

  const byPath = (p: string) => up.requests.filter(r => r.path === p)
  const signedMantle = byPath('/mantle/v1/chat/completions')[0]
  t.match(String(signedMantle.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-west-2\/bedrock-mantle\/aws4_request, /, 'Mantle: scoped to bedrock-mantle in its region')
  t.equal(signedMantle.headers['x-amz-security-token'], 'mantle-session-token', 'the session token is sent')
  t.equal((signedMantle.body as { model: string }).model, 'openai.gpt-oss-120b', 'Mantle model ids go as they are')
  t.match(String(byPath('/runtime/openai/v1/chat/completions')[0].headers.authorization), /\/us-east-1\/bedrock\/aws4_request, /, 'the runtime endpoint: scoped to bedrock')
  t.equal(byPath('/keyed-mantle/v1/chat/completions')[0].headers['x-amz-date'], undefined, 'a Bedrock API key: nothing signed')

  for (const model of ['bad/service', 'bad/secret']) {
    const err = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof OpenAI.APIError && err.status === 502, `${model}: AWS refuses the signature, the client gets 502`)
  }
  t.match(refused.map(r => r.why), [/Credential should be scoped to correct service: 'bedrock-mantle'/, /signature we calculated does not match/], 'the fake refused them for the reason AWS gives')
})
