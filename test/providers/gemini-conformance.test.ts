/**
 * @module test/providers/gemini-conformance – the provider conformance suite run on the Gemini
 * adapter through Gemini's own wire (`geminiWire`): the golden chat, messages and Responses cases
 * for a messages upstream, answered as `GenerateContentResponse` JSON and SSE chunks by a fake
 * that checks each request's route, API key and body as the Gemini API does. Gemini reports no
 * cache writes, so the cases carrying them are left out; the cases Gemini cannot pass by design
 * are listed with their reasons in test/helpers/gemini-conformance.
 */
import t from 'tap'
import { runProviderConformance, geminiWire, GEMINI_TEST_KEY } from '../../testing.ts'
import gemini from '../../providers/gemini/index.ts'
import { GEMINI_UNSUPPORTED, checkToolLoopCases } from '../helpers/gemini-conformance.ts'

const config = (baseUrl: string) => ({ apiKey: GEMINI_TEST_KEY, baseUrl })

t.test('gemini', async t => {
  await runProviderConformance(t, {
    adapter: gemini,
    wire: geminiWire(),
    cacheWrites: false,
    config,
    unsupported: GEMINI_UNSUPPORTED,
    checkRequest (req) {
      if (!/^\/v1beta\/models\/up-conformance:(generateContent|streamGenerateContent\?alt=sse)$/.test(req.path)) throw new Error(`path ${req.path}`)
      if (req.headers['x-goog-api-key'] !== GEMINI_TEST_KEY) throw new Error('no API key')
      if (req.headers.authorization !== undefined) throw new Error('an Authorization header beside the key')
    },
  })
})

t.test('gemini – the tool-loop cases unsupported for their ids pass with the ids Gemini\'s order gives', async t => {
  t.ok(await checkToolLoopCases(gemini, config, geminiWire()) > 0)
})

t.test('gemini – a request Gemini would refuse is refused by the wire', async t => {
  const wire = geminiWire()
  const req = (path: string, headers: Record<string, string>, body: unknown) => ({ method: 'POST', path, headers, body, text: JSON.stringify(body) })
  const ok = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }
  const key = { 'x-goog-api-key': GEMINI_TEST_KEY }
  t.same(await wire.decodeRequest(req('/v1beta/models/up-conformance:generateContent', key, ok)), { model: 'up-conformance', messages: [{ role: 'user', content: 'hi' }] })
  t.throws(() => wire.decodeRequest(req('/v1beta/models/up-conformance:generateContent', { 'x-goog-api-key': 'AIza-other' }, ok)), /API key not valid/)
  t.throws(() => wire.decodeRequest(req('/v1beta/models/up-conformance:streamGenerateContent', key, ok)), /alt=sse/)
  t.throws(() => wire.decodeRequest(req('/v1beta/models/other:generateContent', key, ok)), /NOT_FOUND/)
  t.throws(() => wire.decodeRequest(req('/v1beta/models/up-conformance:generateContent', key, { ...ok, generationConfig: { stopSequences: ['1', '2', '3', '4', '5', '6'] } })),
    /at most 5 stop sequences/)
})
