/**
 * @module test/providers/aws-signing – `openai-compatible` and `anthropic-compatible` opt in to
 * AWS SigV4 signing with an `aws` block (Bedrock's OpenAI-compatible endpoint and the like): each
 * request carries a signature that the AWS SDK's own signer, run again over the request exactly as
 * the upstream received it, reproduces; without the block nothing is signed.
 */
import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { SignatureV4 } from '@smithy/signature-v4'
import { Hash } from '@smithy/hash-node'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, chatCompletion, messagesResponse, type Recorded } from '../../testing.ts'

const CREDS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', sessionToken: 'session-token-1' }

/** Signs the recorded request again, at its own x-amz-date, over the headers it says it signed. */
async function expectedAuthorization (req: Recorded, origin: string): Promise<string> {
  const auth = String(req.headers.authorization)
  const signedNames = /SignedHeaders=([^,]+)/.exec(auth)![1].split(';')
  const headers: Record<string, string> = {}
  for (const n of signedNames) headers[n] = String(req.headers[n])
  const d = String(req.headers['x-amz-date'])
  const date = new Date(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`)
  const url = new URL(origin)
  const signer = new SignatureV4({ region: 'us-west-2', service: 'bedrock', credentials: { accessKeyId: CREDS.accessKeyId, secretAccessKey: CREDS.secretAccessKey, sessionToken: CREDS.sessionToken }, sha256: Hash.bind(null, 'sha256') })
  const signed = await signer.sign({ method: req.method, protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: req.path, query: {}, headers, body: req.text }, { signingDate: date })
  return String(signed.headers.authorization)
}

t.test('an aws block signs chat and messages upstream requests with SigV4', async t => {
  const up = await startFakeUpstream((req, res) => req.path.endsWith('/chat/completions') ? json(res, 200, chatCompletion('hi')) : json(res, 200, messagesResponse('hi')))
  const aws = { region: 'us-west-2', credentials: CREDS }
  const app = await buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: {
      providers: [
        { name: 'br-openai', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/openai/v1`, aws } },
        { name: 'br-anthropic', adapter: 'anthropic-compatible', config: { baseUrl: `${up.origin}/anthropic`, aws } },
        { name: 'plain', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/plain/v1`, apiKey: 'sk-plain' } },
      ],
      models: [
        { id: 'b/chat', deployments: [{ provider: 'br-openai', model: 'openai.gpt-oss-120b-1:0' }] },
        { id: 'b/msg', deployments: [{ provider: 'br-anthropic', model: 'claude' }] },
        { id: 'p/chat', deployments: [{ provider: 'plain', model: 'm' }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await up.close() })
  const base = await listen(app)
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })

  await openai.chat.completions.create({ model: 'b/chat', messages: [{ role: 'user', content: 'x' }] })
  await anthropic.messages.create({ model: 'b/msg', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
  await openai.chat.completions.create({ model: 'p/chat', messages: [{ role: 'user', content: 'x' }] })
  t.equal(up.requests.length, 3)
  for (const req of up.requests.slice(0, 2)) {
    const auth = String(req.headers.authorization)
    t.match(auth, /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-west-2\/bedrock\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/, `${req.path}: signed`)
    t.equal(req.headers['x-amz-security-token'], 'session-token-1', 'the session token is sent')
    t.equal(auth, await expectedAuthorization(req, up.origin), `${req.path}: the signature is over the request as received`)
    t.notOk(req.headers['x-api-key'], 'no API key')
  }
  t.equal(up.requests[2].headers.authorization, 'Bearer sk-plain', 'without an aws block nothing is signed')
})

t.test('apiKey and aws together are a config error', async t => {
  await t.rejects(buildTestApp({
    pipeline: [AUTH_ENTRY],
    doc: { providers: [{ name: 'x', adapter: 'openai-compatible', config: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k', aws: { region: 'us-east-1' } } }], models: [{ id: 'x/m', deployments: [{ provider: 'x', model: 'm' }] }] },
  }))
})
