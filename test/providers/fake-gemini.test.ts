/**
 * @module test/providers/fake-gemini – the fake Gemini API checked by the official @google/genai
 * SDK pointed at it: JSON answers, SSE streams, countTokens, function calls with thought
 * signatures (a follow-up that lost its signature refused), the API key, and error bodies the
 * SDK reads as ApiError.
 */
import t, { type Test } from 'tap'
import { ApiError, GoogleGenAI, type Content } from '@google/genai'
import { startFakeGemini, GEMINI_TEST_KEY, type FakeGeminiOptions } from '../../testing.ts'

async function setup (t: Test, opts: FakeGeminiOptions = {}, apiKey = GEMINI_TEST_KEY) {
  const fake = await startFakeGemini(opts)
  t.teardown(() => fake.close())
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: fake.origin, apiVersion: 'v1beta' } })
  return { fake, ai }
}

t.test('generateContent – the SDK parses text, usage and the finish reason; the key came in x-goog-api-key', async t => {
  const { fake, ai } = await setup(t)
  fake.next({ parts: [{ text: 'Hello ' }, { text: 'world' }], usage: { prompt: 12, cached: 4, candidates: 3, thoughts: 7 } })
  const r = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi', config: { systemInstruction: 'Be brief', maxOutputTokens: 50 } })
  t.equal(r.text, 'Hello world')
  t.equal(r.candidates?.[0].finishReason, 'STOP')
  t.same(r.usageMetadata, { promptTokenCount: 12, candidatesTokenCount: 3, totalTokenCount: 22, cachedContentTokenCount: 4, thoughtsTokenCount: 7 })
  const req = fake.requests[0]
  t.equal(req.operation, 'generateContent')
  t.equal(req.model, 'gemini-2.5-flash')
  t.equal(req.path, '/v1beta/models/gemini-2.5-flash:generateContent')
  t.equal(req.headers['x-goog-api-key'], GEMINI_TEST_KEY)
  t.match(req.body, { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], systemInstruction: { parts: [{ text: 'Be brief' }] }, generationConfig: { maxOutputTokens: 50 } })
})

t.test('streamGenerateContent – each SSE event a whole response; the last carries finish and counts', async t => {
  const { fake, ai } = await setup(t)
  fake.next({ parts: [{ text: ['thinking…'], thought: true }, { text: ['One', ' two'] }], finishReason: 'MAX_TOKENS', usage: { prompt: 5, candidates: 2, thoughts: 3 } })
  const texts: string[] = []
  let finish: string | undefined
  let usage: unknown
  let thoughts = 0
  for await (const ch of await ai.models.generateContentStream({ model: 'gemini-2.5-pro', contents: 'Count' })) {
    for (const p of ch.candidates?.[0].content?.parts ?? []) {
      if (p.thought) thoughts++
      else if (p.text) texts.push(p.text)
    }
    if (ch.candidates?.[0].finishReason) finish = ch.candidates[0].finishReason
    usage = ch.usageMetadata
  }
  t.same(texts, ['One', ' two'])
  t.equal(thoughts, 1)
  t.equal(finish, 'MAX_TOKENS')
  t.same(usage, { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 10, thoughtsTokenCount: 3 })
  t.equal(fake.requests[0].query, 'alt=sse')
})

t.test('countTokens – the SDK reads totalTokens', async t => {
  const { fake, ai } = await setup(t, { countTokens: 42 })
  const r = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'How many?' })
  t.equal(r.totalTokens, 42)
  t.equal(fake.requests[0].operation, 'countTokens')
})

t.test('function calls – signed; the SDK keeps the signature; a follow-up without it is refused, with it accepted', async t => {
  const { fake, ai } = await setup(t)
  fake.next({ parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_weather', args: { city: 'Lyon' } } }] })
  const tools = [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } } }] }]
  const user: Content = { role: 'user', parts: [{ text: 'Weather?' }] }
  const first = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: [user], config: { tools } })
  t.same(first.functionCalls?.map(c => c.args), [{ city: 'Paris' }, { city: 'Lyon' }])
  const model = first.candidates![0].content!
  const sig = model.parts![0].thoughtSignature
  t.ok(sig && fake.issued.has(sig), 'the first call carries a signature the fake issued')
  t.equal(model.parts![1].thoughtSignature, undefined, 'parallel calls: only the first is signed')
  const results: Content = { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'sunny' } } }, { functionResponse: { name: 'get_weather', response: { output: 'rain' } } }] }

  const lost: Content = { role: 'model', parts: model.parts!.map(p => ({ functionCall: p.functionCall })) }
  const refused = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: [user, lost, results], config: { tools } }).catch((e: unknown) => e)
  t.ok(refused instanceof ApiError && refused.status === 400, 'refused with 400')
  t.match(String((refused as Error).message), /missing a thought_signature/)

  const forged: Content = { role: 'model', parts: [{ ...model.parts![0], thoughtSignature: 'Zm9yZ2Vk' }, model.parts![1]] }
  const bad = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: [user, forged, results], config: { tools } }).catch((e: unknown) => e)
  t.ok(bad instanceof ApiError && bad.status === 400, 'a signature the fake never gave is refused')

  fake.next({ parts: [{ text: 'Sunny in Paris, rain in Lyon.' }] })
  const ok = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: [user, model, results], config: { tools } })
  t.equal(ok.text, 'Sunny in Paris, rain in Lyon.')
})

t.test('auth – a missing key is 403, a wrong key 400 API_KEY_INVALID; a custom check answers 401', async t => {
  const { fake, ai } = await setup(t, {}, 'wrong-key')
  const wrong = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((e: unknown) => e)
  t.ok(wrong instanceof ApiError && wrong.status === 400)
  t.match(String((wrong as Error).message), /API key not valid/)
  t.equal(fake.requests[0].authError, 'API key not valid. Please pass a valid API key.')
  const res = await fetch(`${fake.origin}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', body: '{}' })
  t.equal(res.status, 403)

  const bearer = await startFakeGemini({ auth: req => req.headers.authorization === 'Bearer tok' ? undefined : 'Request had invalid authentication credentials.' })
  t.teardown(() => bearer.close())
  const vertexPath = '/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent'
  const denied = await fetch(bearer.origin + vertexPath, { method: 'POST', body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }) })
  t.equal(denied.status, 401)
  const allowed = await fetch(bearer.origin + vertexPath, { method: 'POST', headers: { authorization: 'Bearer tok' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }) })
  t.equal(allowed.status, 200)
  t.equal(bearer.requests[1].model, 'gemini-2.5-flash', 'Vertex AI paths route too')
})

t.test('errors – scripted 429 with RetryInfo, a blocked prompt, an error inside a stream', async t => {
  const { fake, ai } = await setup(t)
  fake.next({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded', retryDelay: '7s' } })
  const e = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }).catch((err: unknown) => err)
  t.ok(e instanceof ApiError && e.status === 429)
  t.match(String((e as Error).message), /Quota exceeded/)

  fake.next({ blockReason: 'PROHIBITED_CONTENT' })
  const blocked = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' })
  t.equal(blocked.promptFeedback?.blockReason, 'PROHIBITED_CONTENT')
  t.equal(blocked.candidates, undefined)

  fake.next({ parts: [{ text: ['a', 'b', 'c'] }], streamError: { after: 1, code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded.' } })
  const got: string[] = []
  const failed = await (async () => {
    for await (const ch of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'x' })) got.push(ch.text ?? '')
  })().catch((err: unknown) => err)
  t.same(got, ['a'])
  t.ok(failed instanceof Error, 'the SDK throws on the error event')
})

t.test('checks – a body Gemini would refuse gets 400 INVALID_ARGUMENT', async t => {
  const { fake, ai } = await setup(t, { noSampling: ['gemini-3-pro-preview'] })
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['unknown field', { contents: [{ role: 'user', parts: [{ text: 'x' }] }], bogus: 1 }, /Unknown name "bogus"/],
    ['empty contents', { contents: [] }, /contents is not specified/],
    ['a bad role', { contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }, /valid role/],
    ['two data members', { contents: [{ role: 'user', parts: [{ text: 'x', inlineData: { mimeType: 'image/png', data: 'AA==' } }] }] }, /oneof/],
    ['unanswered calls', { contents: [{ role: 'user', parts: [{ text: 'x' }] }, { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'AA==' }] }, { role: 'user', parts: [{ text: 'y' }] }] }, /number of function response parts/],
    ['six stop sequences', { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { stopSequences: ['a', 'b', 'c', 'd', 'e', 'f'] } }, /at most 5/],
    ['sampling on a model that refuses it', { contents: [{ role: 'user', parts: [{ text: 'x' }] }], generationConfig: { temperature: 0.5 } }, /temperature is not supported/],
  ]
  for (const [name, body, re] of cases) {
    const res = await fetch(`${fake.origin}/v1beta/models/gemini-3-pro-preview:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': GEMINI_TEST_KEY }, body: JSON.stringify(body) })
    t.equal(res.status, 400, name)
    const j = await res.json() as { error: { status: string, message: string } }
    t.equal(j.error.status, 'INVALID_ARGUMENT', name)
    t.match(j.error.message, re, name)
  }
  const ok = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x', config: { temperature: 0.5 } })
  t.ok(ok.text, 'sampling is fine on other models')
})
