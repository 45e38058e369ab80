/**
 * @module test/providers/fake-bedrock – the test kit's fake Bedrock, checked by the official
 * @aws-sdk/client-bedrock-runtime: the SDK signs its requests with SigV4 (the fake verifies them),
 * parses the Converse JSON, decodes the ConverseStream event-stream frames (checking the prelude and
 * message CRCs) and maps x-amzn-errortype and exception frames to its exception classes. What the
 * SDK accepts from the fake, it accepts from the real service.
 */
import t from 'tap'
import {
  BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, CountTokensCommand,
  type ConverseStreamOutput, type Message,
} from '@aws-sdk/client-bedrock-runtime'
// The client's default transport is cleartext HTTP/2 with prior knowledge (for its bidirectional
// stream); the HTTP/1.1 handler it ships with sends as undici (an adapter) does. Both are run.
import { NodeHttpHandler } from '@smithy/node-http-handler'
import {
  startFakeBedrock, BEDROCK_TEST_CREDENTIALS, decodeBedrockStream, converseStreamFrames, bedrockExceptionFrame,
  type FakeBedrock, type AwsTestCredentials,
} from '../../testing.ts'

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const hello: Message[] = [{ role: 'user', content: [{ text: 'Hi' }] }]

function client (up: FakeBedrock, credentials: AwsTestCredentials = BEDROCK_TEST_CREDENTIALS, region = 'us-east-1', via: 'http2' | 'http1' = 'http2'): BedrockRuntimeClient {
  const requestHandler = via === 'http1' ? new NodeHttpHandler() : undefined
  return new BedrockRuntimeClient({ region, endpoint: up.origin, credentials: { ...credentials }, maxAttempts: 1, requestHandler })
}

async function collect (stream: AsyncIterable<ConverseStreamOutput> | undefined): Promise<ConverseStreamOutput[]> {
  const out: ConverseStreamOutput[] = []
  for await (const ev of stream ?? []) out.push(ev)
  return out
}

/** The thrown error's class name (the SDK's exception class for the x-amzn-errortype). */
async function errorName (p: Promise<unknown>): Promise<string> {
  try { await p } catch (err) { return (err as Error).name }
  return 'no error'
}

t.test('Converse: text answer, usage with cache reads and writes, the request recorded', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  up.next({ content: [{ text: 'Hello there' }], usage: { input: 12, output: 4, cacheRead: 100, cacheWrite: 50 }, latencyMs: 42 })
  const out = await client(up).send(new ConverseCommand({
    modelId: MODEL, messages: hello, system: [{ text: 'Be brief' }, { cachePoint: { type: 'default' } }], inferenceConfig: { maxTokens: 64 },
  }))
  t.same(out.output?.message, { role: 'assistant', content: [{ text: 'Hello there' }] })
  t.equal(out.stopReason, 'end_turn')
  t.same(out.usage, { inputTokens: 12, outputTokens: 4, totalTokens: 166, cacheReadInputTokens: 100, cacheWriteInputTokens: 50 })
  t.equal(out.metrics?.latencyMs, 42)
  t.equal(up.requests.length, 1)
  const rec = up.requests[0]
  t.equal(rec.method, 'POST')
  t.equal(rec.operation, 'converse')
  t.equal(rec.modelId, MODEL)
  t.equal(rec.path, `/model/${encodeURIComponent(MODEL)}/converse`)
  t.equal(rec.auth, 'sigv4')
  t.equal(rec.authError, undefined)
  t.match(rec.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/)
  t.same(rec.body, { messages: hello, system: [{ text: 'Be brief' }, { cachePoint: { type: 'default' } }], inferenceConfig: { maxTokens: 64 } })
})

t.test('Converse and ConverseStream: cache writes by ttl (cacheDetails) as the SDK reads them', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const usage = { input: 12, output: 4, cacheRead: 100, cacheWrite: 50, cacheWrite1h: 30 }
  const wire = { inputTokens: 12, outputTokens: 4, totalTokens: 166, cacheReadInputTokens: 100, cacheWriteInputTokens: 50,
    cacheDetails: [{ ttl: '1h', inputTokens: 30 }, { ttl: '5m', inputTokens: 20 }] }
  up.next({ content: [{ text: 'Hello there' }], usage })
  const out = await client(up).send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  t.same(out.usage, wire, 'the SDK keeps cacheDetails, one-hour first')
  up.next({ content: [{ text: ['Hel', 'lo'] }], usage })
  const events = await collect((await client(up).send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))).stream)
  t.same(events.at(-1), { metadata: { usage: wire, metrics: { latencyMs: 123 } } }, 'and in the stream\'s metadata')
})

t.test('Converse: tool use, reasoning with its signature, redacted reasoning, each stop reason', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const redacted = Buffer.from([1, 2, 3, 250]).toString('base64')
  up.next({
    content: [
      { reasoning: ['Let me ', 'think'], signature: 'sig-abc' },
      { redactedReasoning: redacted },
      { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris', days: [1, 2] } } },
    ],
  })
  const c = client(up)
  const toolConfig = { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: { type: 'object' } } } }] }
  const out = await c.send(new ConverseCommand({ modelId: MODEL, messages: hello, toolConfig }))
  t.equal(out.stopReason, 'tool_use')
  const content = out.output?.message?.content ?? []
  t.same(content[0], { reasoningContent: { reasoningText: { text: 'Let me think', signature: 'sig-abc' } } })
  t.same(content[1].reasoningContent?.redactedContent, new Uint8Array([1, 2, 3, 250]))
  t.same(content[2], { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris', days: [1, 2] } } })

  for (const stopReason of ['end_turn', 'max_tokens', 'stop_sequence', 'guardrail_intervened', 'content_filtered', 'model_context_window_exceeded'] as const) {
    up.next({ content: [{ text: 'x' }], stopReason })
    const r = await c.send(new ConverseCommand({ modelId: MODEL, messages: hello }))
    t.equal(r.stopReason, stopReason)
  }
})

t.test('ConverseStream: the SDK decodes every frame (CRCs checked), metadata after messageStop', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  up.next({
    content: [
      { reasoning: ['Hmm', ', ok'], signature: 'sig-1' },
      { text: ['Hel', 'lo'] },
      { toolUse: { toolUseId: 'tu_9', name: 'lookup', input: { q: 'bedrock', n: 3 } }, inputDeltas: ['{"q":', '"bedrock",', '"n":3}'] },
    ],
    usage: { input: 7, output: 9, cacheRead: 3, cacheWrite: 0 },
  })
  const res = await client(up).send(new ConverseStreamCommand({
    modelId: MODEL, messages: hello, toolConfig: { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }] },
  }))
  const events = await collect(res.stream)
  t.same(events, [
    { messageStart: { role: 'assistant' } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Hmm' } } } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { reasoningContent: { text: ', ok' } } } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig-1' } } } },
    { contentBlockStop: { contentBlockIndex: 0 } },
    { contentBlockDelta: { contentBlockIndex: 1, delta: { text: 'Hel' } } },
    { contentBlockDelta: { contentBlockIndex: 1, delta: { text: 'lo' } } },
    { contentBlockStop: { contentBlockIndex: 1 } },
    { contentBlockStart: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tu_9', name: 'lookup' } } } },
    { contentBlockDelta: { contentBlockIndex: 2, delta: { toolUse: { input: '{"q":' } } } },
    { contentBlockDelta: { contentBlockIndex: 2, delta: { toolUse: { input: '"bedrock",' } } } },
    { contentBlockDelta: { contentBlockIndex: 2, delta: { toolUse: { input: '"n":3}' } } } },
    { contentBlockStop: { contentBlockIndex: 2 } },
    { messageStop: { stopReason: 'tool_use' } },
    { metadata: { usage: { inputTokens: 7, outputTokens: 9, totalTokens: 19, cacheReadInputTokens: 3, cacheWriteInputTokens: 0 }, metrics: { latencyMs: 123 } } },
  ])
  const rec = up.requests[0]
  t.equal(rec.operation, 'converse-stream')
  t.equal(rec.path, `/model/${encodeURIComponent(MODEL)}/converse-stream`)
  t.equal(rec.auth, 'sigv4')
})

t.test('ConverseStream: redacted reasoning and the default answer', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  up.next({ content: [{ redactedReasoning: Buffer.from('opaque').toString('base64') }, { text: 'ok' }], stopReason: 'max_tokens' })
  const c = client(up)
  const events = await collect((await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))).stream)
  t.same(events[1].contentBlockDelta?.delta?.reasoningContent?.redactedContent, new Uint8Array(Buffer.from('opaque')))
  t.same(events.at(-2), { messageStop: { stopReason: 'max_tokens' } })
  const dflt = await collect((await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))).stream)
  t.same(dflt.filter(e => e.contentBlockDelta).map(e => e.contentBlockDelta?.delta?.text), ['Hello', ' from', ' Bedrock'])
  t.same(dflt.at(-1), { metadata: { usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 }, metrics: { latencyMs: 123 } } })
})

t.test('ConverseStream: an exception frame mid-stream reaches the SDK as its exception class', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const c = client(up)
  const cases = [
    ['throttlingException', 'ThrottlingException'],
    ['internalServerException', 'InternalServerException'],
    ['modelStreamErrorException', 'ModelStreamErrorException'],
    ['serviceUnavailableException', 'ServiceUnavailableException'],
    ['validationException', 'ValidationException'],
  ] as const
  for (const [type, name] of cases) {
    up.next({ content: [{ text: ['a', 'b', 'c'] }], exception: { type, message: `boom ${type}`, after: 3 } })
    const res = await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))
    const seen: ConverseStreamOutput[] = []
    let caught: Error | undefined
    try {
      for await (const ev of res.stream ?? []) seen.push(ev)
    } catch (err) { caught = err as Error }
    t.equal(seen.length, 3, `${type}: the events before the exception`)
    t.equal(caught?.name, name)
    t.equal(caught?.message, `boom ${type}`)
  }
})

t.test('scripting: a reply computed from the request, the default reply, noMetadata, additionalModelResponseFields, served models', async t => {
  const up = await startFakeBedrock({ models: [MODEL, ARN], reply: { content: [{ text: 'default' }] } })
  t.teardown(() => up.close())
  const c = client(up)
  up.next(req => ({ content: [{ text: `you said ${String((req.body as { messages: Message[] }).messages[0].content?.[0].text)} to ${req.modelId}` }] }))
  t.same((await c.send(new ConverseCommand({ modelId: ARN, messages: hello }))).output?.message?.content, [{ text: `you said Hi to ${ARN}` }])
  t.same((await c.send(new ConverseCommand({ modelId: MODEL, messages: hello }))).output?.message?.content, [{ text: 'default' }], 'the queue is empty: the default')
  up.reply({ content: [{ text: 'new default' }], additionalModelResponseFields: { stop_sequence: 'END' }, stopReason: 'stop_sequence' })
  const r = await c.send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  t.same(r.output?.message?.content, [{ text: 'new default' }])
  t.same(r.additionalModelResponseFields, { stop_sequence: 'END' })
  up.next({ content: [{ text: 'x' }], noMetadata: true, additionalModelResponseFields: { stop_sequence: null } })
  const events = await collect((await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))).stream)
  t.same(events.at(-1), { messageStop: { stopReason: 'end_turn', additionalModelResponseFields: { stop_sequence: null } } }, 'ends at messageStop, no metadata')
  let caught: Error | undefined
  try { await c.send(new ConverseCommand({ modelId: 'anthropic.unknown-v1:0', messages: hello })) } catch (err) { caught = err as Error }
  t.equal(caught?.name, 'ValidationException')
  t.equal(caught?.message, 'The provided model identifier is invalid.')
  t.equal(await errorName(c.send(new CountTokensCommand({ modelId: 'other', input: { converse: { messages: hello } } }))), 'ValidationException')
})

t.test('CountTokens', async t => {
  const up = await startFakeBedrock({ countTokens: 77 })
  t.teardown(() => up.close())
  const c = client(up)
  const out = await c.send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: hello, system: [{ text: 'sys' }] } } }))
  t.equal(out.inputTokens, 77)
  const rec = up.requests[0]
  t.equal(rec.operation, 'count-tokens')
  t.equal(rec.path, `/model/${encodeURIComponent(MODEL)}/count-tokens`)
  t.same(rec.body, { input: { converse: { messages: hello, system: [{ text: 'sys' }] } } })
  up.countTokens(req => (req.body as { input: { converse: { messages: unknown[] } } }).input.converse.messages.length * 10)
  t.equal((await c.send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: hello } } }))).inputTokens, 10)
  up.countTokens({ error: { type: 'ThrottlingException' } })
  t.equal(await errorName(c.send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: hello } } }))), 'ThrottlingException')
})

t.test('ARN model ids: percent-encoded in the path, signed over that path; a literal / gets 200 UnknownOperationException', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  up.next({ content: [{ text: 'via profile' }] })
  const out = await client(up).send(new ConverseCommand({ modelId: ARN, messages: hello }))
  t.same(out.output?.message?.content, [{ text: 'via profile' }])
  t.equal(up.requests[0].path, `/model/${encodeURIComponent(ARN)}/converse`)
  t.match(up.requests[0].path, /^\/model\/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus\./)
  t.equal(up.requests[0].modelId, ARN)

  // An adapter that forgets to encode: real Bedrock answers 200 with an UnknownOperationException body.
  const res = await fetch(`${up.origin}/model/${ARN}/converse`, { method: 'POST', headers: { authorization: 'Bearer k' }, body: '{}' })
  t.equal(res.status, 403, 'auth is checked first')
  const keyed = await startFakeBedrock({ apiKey: 'bedrock-api-key-1' })
  t.teardown(() => keyed.close())
  const unencoded = await fetch(`${keyed.origin}/model/${ARN}/converse`, {
    method: 'POST', headers: { authorization: 'Bearer bedrock-api-key-1', 'content-type': 'application/json' }, body: JSON.stringify({ messages: hello }),
  })
  t.equal(unencoded.status, 200)
  t.same(await unencoded.json(), { Output: { __type: 'com.amazon.coral.service#UnknownOperationException' }, Version: '1.0' })
  t.equal(keyed.requests[0].operation, 'unknown')
  t.equal(keyed.requests[0].modelId, '')
})

t.test('scripted errors: status and x-amzn-errortype map to the SDK exception classes', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const c = client(up)
  const cases = [
    ['ThrottlingException', 429], ['ValidationException', 400], ['AccessDeniedException', 403], ['ModelNotReadyException', 429],
    ['ServiceUnavailableException', 503], ['InternalServerException', 500], ['ResourceNotFoundException', 404],
    ['ModelTimeoutException', 408], ['ModelErrorException', 424], ['ServiceQuotaExceededException', 400],
  ] as const
  for (const [type, status] of cases) {
    up.next({ error: { type, message: `scripted ${type}` } })
    let caught: (Error & { $metadata?: { httpStatusCode?: number } }) | undefined
    try { await c.send(new ConverseCommand({ modelId: MODEL, messages: hello })) } catch (err) { caught = err as typeof caught }
    t.equal(caught?.name, type)
    t.equal(caught?.message, `scripted ${type}`)
    t.equal(caught?.$metadata?.httpStatusCode, status)
    up.next({ error: { type } })
    t.equal(await errorName(c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))), type, `${type} on converse-stream`)
  }
  // a status override and extra headers
  up.next({ error: { type: 'ThrottlingException', status: 503, headers: { 'retry-after': '7' } } })
  const res = await fetch(`${up.origin}/model/m/converse`, { method: 'POST' })
  t.equal(res.status, 403, 'unsigned: refused before the script is consumed')
  let caught: (Error & { $metadata?: { httpStatusCode?: number } }) | undefined
  try { await c.send(new ConverseCommand({ modelId: MODEL, messages: hello })) } catch (err) { caught = err as typeof caught }
  t.equal(caught?.name, 'ThrottlingException')
  t.equal(caught?.$metadata?.httpStatusCode, 503)
})

t.test('SigV4 verification: a wrong secret, a wrong key id, a wrong session token, a wrong region are refused', async t => {
  const creds = { ...BEDROCK_TEST_CREDENTIALS, sessionToken: 'session-token-1' }
  const up = await startFakeBedrock({ credentials: creds })
  t.teardown(() => up.close())
  const ok = await client(up, creds).send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  t.equal(ok.stopReason, 'end_turn')
  t.equal(up.requests[0].headers['x-amz-security-token'], 'session-token-1')

  let caught: (Error & { $metadata?: { httpStatusCode?: number } }) | undefined
  try {
    await client(up, { ...creds, secretAccessKey: 'not-the-secret' }).send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  } catch (err) { caught = err as typeof caught }
  t.equal(caught?.name, 'InvalidSignatureException')
  t.match(caught?.message, /^The request signature we calculated does not match the signature you provided/)
  t.equal(caught?.$metadata?.httpStatusCode, 403)
  t.match(up.requests.at(-1)?.authError, /does not match/)
  t.equal(up.requests.at(-1)?.auth, 'none')

  t.equal(await errorName(client(up, { ...creds, secretAccessKey: 'nope' }).send(new ConverseStreamCommand({ modelId: ARN, messages: hello }))), 'InvalidSignatureException')
  t.equal(await errorName(client(up, { ...creds, accessKeyId: 'AKIAOTHER' }).send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'UnrecognizedClientException')
  t.equal(await errorName(client(up, { ...creds, sessionToken: 'other' }).send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'UnrecognizedClientException')
  t.equal(await errorName(client(up, BEDROCK_TEST_CREDENTIALS).send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'UnrecognizedClientException', 'session token missing')
  t.equal(await errorName(client(up, creds, 'eu-west-1').send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'InvalidSignatureException')
  t.equal(await errorName(client(up, creds).send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: hello } } }))), 'no error')
  // a request signed 20 minutes ago (AWS allows 15)
  const late = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: up.origin, credentials: { ...creds }, maxAttempts: 1, systemClockOffset: -20 * 60_000 })
  let expired: Error | undefined
  try { await late.send(new ConverseCommand({ modelId: MODEL, messages: hello })) } catch (err) { expired = err as Error }
  t.equal(expired?.name, 'InvalidSignatureException')
  t.match(expired?.message, /^Signature expired: \d{8}T\d{6}Z is now earlier than/)
})

t.test('SigV4 verification covers the path and the body: a request replayed on another path or with another body is refused', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  await client(up, BEDROCK_TEST_CREDENTIALS, 'us-east-1', 'http1').send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  const signed = up.requests[0]
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(signed.headers)) if (typeof v === 'string' && k !== 'content-length' && k !== 'connection') headers[k] = v
  const replay = async (path: string, body: string) => fetch(`${up.origin}${path}`, { method: 'POST', headers, body })
  const same = await replay(signed.path, signed.text)
  t.equal(same.status, 200, 'the same request verifies again')
  const decoded = await replay(`/model/${MODEL}/converse`, signed.text)
  t.equal(decoded.status, 403, 'the path decoded: another canonical path')
  t.equal(decoded.headers.get('x-amzn-errortype')?.split(':')[0], 'InvalidSignatureException')
  const otherBody = await replay(signed.path, JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Ho' }] }] }))
  t.equal(otherBody.status, 403)
  t.same(await otherBody.json(), { message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.' })
  const auth = headers.authorization
  headers.authorization = auth.replace(/SignedHeaders=[^,]+/, m => m.replace('host;', ''))
  const hostless = await replay(signed.path, signed.text)
  t.equal(hostless.status, 403)
  t.same(await hostless.json(), { message: "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization." })
  headers.authorization = auth.replace('Credential=', 'Credentials=')
  const malformed = await replay(signed.path, signed.text)
  t.equal(malformed.status, 400)
  t.equal(malformed.headers.get('x-amzn-errortype')?.split(':')[0], 'IncompleteSignatureException')
  const none = await fetch(`${up.origin}${signed.path}`, { method: 'POST', body: signed.text })
  t.equal(none.status, 403)
  t.equal(none.headers.get('x-amzn-errortype')?.split(':')[0], 'MissingAuthenticationTokenException')
})

t.test('over HTTP/1.1 (as undici sends): answers, streams, exception frames, errors, signatures', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const c = client(up, BEDROCK_TEST_CREDENTIALS, 'us-east-1', 'http1')
  up.next({ content: [{ text: 'one' }] })
  t.same((await c.send(new ConverseCommand({ modelId: ARN, messages: hello }))).output?.message?.content, [{ text: 'one' }])
  t.equal(up.requests[0].headers.host, up.origin.slice('http://'.length), 'HTTP/1.1: a host header, no :authority')
  up.next({ content: [{ toolUse: { toolUseId: 't', name: 'f', input: { a: 1 } } }] })
  const events = await collect((await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))).stream)
  t.same(events.filter(e => e.contentBlockDelta).map(e => e.contentBlockDelta?.delta?.toolUse?.input).join(''), '{"a":1}')
  t.same(events.at(-2), { messageStop: { stopReason: 'tool_use' } })
  up.next({ content: [{ text: ['a', 'b'] }], exception: { type: 'throttlingException', message: 'slow', after: 2 } })
  const res = await c.send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))
  t.equal(await errorName(collect(res.stream)), 'ThrottlingException')
  up.next({ error: { type: 'ServiceUnavailableException' } })
  t.equal(await errorName(c.send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'ServiceUnavailableException')
  t.equal((await c.send(new CountTokensCommand({ modelId: MODEL, input: { converse: { messages: hello } } }))).inputTokens, Math.ceil(JSON.stringify({ converse: { messages: hello } }).length / 4))
  const wrong = client(up, { ...BEDROCK_TEST_CREDENTIALS, secretAccessKey: 'x' }, 'us-east-1', 'http1')
  t.equal(await errorName(wrong.send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'InvalidSignatureException')
})

t.test('Bedrock API keys: the SDK with token auth sends Bearer; a wrong key is refused', async t => {
  const up = await startFakeBedrock({ apiKey: 'ABSKbedrock-key', credentials: null })
  t.teardown(() => up.close())
  const bearer = (token: string) => new BedrockRuntimeClient({
    region: 'us-east-1', endpoint: up.origin, token: { token }, authSchemePreference: ['httpBearerAuth'], maxAttempts: 1,
  })
  up.next({ content: [{ text: 'keyed' }] })
  const out = await bearer('ABSKbedrock-key').send(new ConverseCommand({ modelId: MODEL, messages: hello }))
  t.same(out.output?.message?.content, [{ text: 'keyed' }])
  t.equal(up.requests[0].headers.authorization, 'Bearer ABSKbedrock-key')
  t.equal(up.requests[0].auth, 'bearer')
  t.equal(await errorName(bearer('wrong').send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'UnrecognizedClientException')
  t.equal(await errorName(client(up).send(new ConverseCommand({ modelId: MODEL, messages: hello }))), 'UnrecognizedClientException', 'SigV4 refused when no credentials are configured')
})

t.test('requests Bedrock refuses get ValidationException', async t => {
  const up = await startFakeBedrock()
  t.teardown(() => up.close())
  const c = client(up)
  const bad = async (input: Omit<ConstructorParameters<typeof ConverseCommand>[0], 'modelId'>): Promise<string> => {
    try { await c.send(new ConverseCommand({ modelId: MODEL, ...input })) } catch (err) { return `${(err as Error).name}: ${(err as Error).message}` }
    return 'accepted'
  }
  t.match(await bad({ messages: [] }), /^ValidationException: A conversation must start with a user message/)
  t.match(await bad({ messages: [{ role: 'assistant', content: [{ text: 'x' }] }] }), /^ValidationException: A conversation must start with a user message/)
  t.match(await bad({ messages: [...hello, ...hello] }), /^ValidationException: A conversation must alternate/)
  t.match(await bad({ messages: [{ role: 'user', content: [{ text: '' }] }] }), /^ValidationException: The text field .* is blank/)
  t.match(await bad({
    messages: [...hello, { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: {} } }] }, { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'r' }] } }] }],
  }), /^ValidationException: The toolConfig field must be defined/)
  const toolConfig = { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }] }
  const call = (...ids: string[]): Message => ({ role: 'assistant', content: ids.map(id => ({ toolUse: { toolUseId: id, name: 'f', input: {} } })) })
  const results = (...ids: string[]): Message => ({ role: 'user', content: ids.map(id => ({ toolResult: { toolUseId: id, content: [{ text: 'r' }], status: 'success' as const } })) })
  t.equal(await bad({ messages: [...hello, call('t1', 't2'), results('t1', 't2')], toolConfig }), 'accepted')
  t.equal(await bad({ messages: [...hello, call('t1', 't2'), results('t2', 't1')], toolConfig }), 'accepted', 'results in any order')
  t.match(await bad({ messages: [...hello, call('t1', 't2'), results('t1')], toolConfig }), /^ValidationException: Expected toolResult blocks at messages.2.content for the following Ids: t2$/)
  t.match(await bad({ messages: [...hello, call('t1'), results('t1', 't9')], toolConfig }), /^ValidationException: The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn.$/)
  t.match(await bad({ messages: [...hello, { role: 'assistant', content: [{ text: 'no call' }] }, results('t1')], toolConfig }), /^ValidationException: The number of toolResult blocks/)
  t.match(await bad({ messages: hello, toolConfig: { tools: [{ toolSpec: { name: 'bad name!', inputSchema: { json: {} } } }] } }), /^ValidationException: 1 validation error detected: Value at 'toolConfig.tools.1.member.toolSpec.name'/)
  const lax = await startFakeBedrock({ validate: false })
  t.teardown(() => lax.close())
  t.equal((await client(lax).send(new ConverseCommand({ modelId: MODEL, messages: [] }))).stopReason, 'end_turn', 'validate: false')
})

t.test('frame builders: the stream a test can write itself decodes back; faults', async t => {
  const frames = converseStreamFrames({ content: [{ text: ['a', 'b'] }] }, false)
  const decoded = decodeBedrockStream(Buffer.concat([...frames, bedrockExceptionFrame('throttlingException', 'slow down')]))
  t.same(decoded.map(f => f.headers[':event-type'] ?? f.headers[':exception-type']), [
    'messageStart', 'contentBlockDelta', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata', 'throttlingException',
  ])
  t.same(decoded[1], { headers: { ':event-type': 'contentBlockDelta', ':content-type': 'application/json', ':message-type': 'event' }, payload: { contentBlockIndex: 0, delta: { text: 'a' } } })
  t.same(decoded.at(-1), { headers: { ':exception-type': 'throttlingException', ':content-type': 'application/json', ':message-type': 'exception' }, payload: { message: 'slow down' } })
  const corrupt = Buffer.from(frames[1])
  corrupt[corrupt.length - 6] ^= 0xff
  t.throws(() => decodeBedrockStream(corrupt), 'a flipped payload byte fails the message CRC')

  // a cut stream: the SDK gets the frames sent, then an error, never the stop or the usage
  const up = await startFakeBedrock({ apiKey: 'k1' })
  t.teardown(() => up.close())
  up.next({ content: [{ text: ['a', 'b', 'c'] }], cutAfter: 2 })
  const res = await client(up).send(new ConverseStreamCommand({ modelId: MODEL, messages: hello }))
  const seen: ConverseStreamOutput[] = []
  let caught: unknown
  try { for await (const ev of res.stream ?? []) seen.push(ev) } catch (err) { caught = err }
  t.same(seen, [{ messageStart: { role: 'assistant' } }, { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'a' } } }])
  t.ok(caught, 'the cut surfaces as an error')

  // on the wire: content type, and the random-length `p` padding real Bedrock adds to each event
  up.next({ content: [{ text: 'x' }] })
  const raw = await fetch(`${up.origin}/model/m/converse-stream`, {
    method: 'POST', headers: { authorization: 'Bearer k1', 'content-type': 'application/json' }, body: JSON.stringify({ messages: hello }),
  })
  t.equal(raw.status, 200)
  t.equal(raw.headers.get('content-type'), 'application/vnd.amazon.eventstream')
  const wire = decodeBedrockStream(new Uint8Array(await raw.arrayBuffer()))
  t.same(wire.map(f => f.headers[':event-type']), ['messageStart', 'contentBlockDelta', 'contentBlockStop', 'messageStop', 'metadata'])
  t.ok(wire.every(f => typeof (f.payload as { p?: unknown }).p === 'string'), 'every event padded')
})
