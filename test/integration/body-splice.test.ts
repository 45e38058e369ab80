/**
 * Same-protocol requests reach the upstream as the client's bytes with only the top-level model
 * changed (plus `stream_options` on a chat stream that lacks it, and the output cap the call
 * reserved for when the client gave none); anything unusual falls back to serializing the parsed
 * body, which must still carry the model the gateway routed and billed. With nothing added and new
 * values that fit, they are written over the client's own buffer, padded with spaces (no copy).
 */
import t, { type Test } from 'tap'
import { scanBody, modelSpanOf, spliceModel, spliceBody } from '../../core/http/body.ts'
import { buildTestApp, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, chatTextStream, chatCompletion, messagesTextStream, messagesResponse, upstreamDoc } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { padded } from '../helpers/padded.ts'

/** The text of the model value span scanBody finds, or undefined. */
const found = (s: string) => {
  const m = scanBody(s, 64).model
  return m === undefined ? undefined : m.bytes.toString('utf8', m.start, m.end)
}

t.test('scanBody finds exactly one plain top-level "model" string, and nothing when unusual', async t => {
  t.equal(found('{"model":"a","messages":[]}'), '"a"')
  t.equal(found(' \r\n\t{ "messages" : [ ] ,\n  "model"\t:\r\n "a b" }  '), '"a b"', 'whitespace anywhere')
  t.equal(found('{"messages":[{"model":"inner","role":"user"}],"tools":[{"model":{"model":"x"}}],"model":"top"}'), '"top"', 'nested "model" keys are not the top-level one')
  t.equal(found('{"model":"v\\"e\\\\n\\u00e9\u{1F600}","x":"model"}'), '"v\\"e\\\\n\\u00e9\u{1F600}"', 'escapes and unicode inside the value')
  t.equal(found('{"x":"' + 'y'.repeat(5000) + '\\\\","model":"m"}'), '"m"', 'a long string ending in an escaped backslash')
  t.equal(found('{"x":"' + 'y'.repeat(5000) + '\\",\\"model\\":\\"no\\"","model":"m"}'), '"m"', 'a long string holding an escaped "model" key')
  t.equal(found('{"model":"a","model":"b"}'), undefined, 'duplicate keys: JSON.parse keeps the last, so no splice')
  t.equal(found('{"mod\\u0065l":"a"}'), undefined, 'an escaped key may spell model')
  t.equal(found('{"model":"a","mod\\u0065l":"b"}'), undefined, 'an escaped key next to a plain one')
  t.equal(found('{"model":"a","' + 'k'.repeat(100) + '":1}'), undefined, 'a long top-level key is not looked at byte by byte: unusual')
  t.equal(found('{"model":5}'), undefined, 'not a string')
  t.equal(found('{"model":null,"x":"y"}'), undefined)
  t.equal(found('{"messages":[]}'), undefined, 'no model')
  t.equal(found('[{"model":"a"}]'), undefined, 'not an object')
  t.equal(found('{"modelx":"a","xmodel":"b","Model":"c"}'), undefined, 'only the exact key')
  t.equal(scanBody('{"a":' + '['.repeat(70) + ']'.repeat(70) + ',"model":"m"}', 64).tooDeep, true)
  t.equal(scanBody('{"a":"' + '['.repeat(70) + '","model":"m"}', 64).tooDeep, false, 'brackets in strings do not nest')
})

t.test('spliceModel changes the value bytes only, and inserts members before the key', async t => {
  const text = '{ "messages":[{"model":"keep"}] , "model" : "client/m\\u00e9" ,"z":1}'
  const m = scanBody(text, 64).model!
  t.equal(spliceModel(m, 'up "q"'), '{ "messages":[{"model":"keep"}] , "model" : "up \\"q\\"" ,"z":1}')
  t.equal(spliceModel(m, 'é', '"s":{"x":true},'), '{ "messages":[{"model":"keep"}] , "s":{"x":true},"model" : "é" ,"z":1}')
  t.same(JSON.parse(spliceModel(m, 'u', '"s":1,')), { messages: [{ model: 'keep' }], s: 1, model: 'u', z: 1 })
  t.equal(modelSpanOf({ model: 'x' }), undefined, 'an object the parser did not make has no span')
})

t.test('spliceBody writes over the client\'s buffer when nothing is added and the values fit; else copies', async t => {
  const text = '{"max_tokens":100000,"model":"client/model-name","messages":[]}'
  const bytes = Buffer.from(text)
  const m = scanBody(bytes, 64).model!
  const out = spliceBody(m, 'up-a', '', { max_tokens: '4096' }, true)!
  t.equal(out, bytes, 'the client\'s buffer itself, no copy')
  const upA = `{"max_tokens":${padded('100000', '4096')},"model":${padded('"client/model-name"', '"up-a"')},"messages":[]}`
  t.equal(out.toString(), upA, 'each value padded to its old length with spaces')
  t.match(upA, /^\{"max_tokens":4096 {2},"model":"up-a" {13},"messages":\[\]\}$/)
  t.same(JSON.parse(out.toString()), { max_tokens: 4096, model: 'up-a', messages: [] })

  // The next deployment's name, longer than the client's: a copy, with the same ranges replaced.
  const longer = spliceBody(m, 'a-much-longer-upstream-model', '', undefined, true)!
  t.not(longer, bytes, 'a copy')
  t.equal(longer.toString(), '{"max_tokens":4096  ,"model":"a-much-longer-upstream-model","messages":[]}')
  t.equal(bytes.toString(), upA, 'the buffer is left as the last in-place splice wrote it')
  // A shorter one again: in place, over the padded range.
  t.equal(spliceBody(m, 'b', '', undefined, true), bytes)
  t.equal(bytes.toString(), `{"max_tokens":4096  ,"model":${padded('"client/model-name"', '"b"')},"messages":[]}`)
  // A member to add: always a copy, the buffer untouched.
  const before = Buffer.from(bytes)
  const inserted = spliceBody(m, 'c', '"stream_options":{"include_usage":true},', undefined, true)!
  t.not(inserted, bytes)
  t.ok(bytes.equals(before), 'an insert never edits the client\'s buffer')
  t.same(JSON.parse(inserted.toString()), { max_tokens: 4096, stream_options: { include_usage: true }, model: 'c', messages: [] })
  // A value that grows (one byte more in UTF-8) is a copy too; so is anything without inPlace.
  t.not(spliceBody(m, 'b', '', { max_tokens: '1234567' }, true), bytes)
  t.not(spliceBody(m, 'b'), bytes)
  const multi = Buffer.from('{"model":"abcd","x":1}')
  const mm = scanBody(multi, 64).model!
  t.not(spliceBody(mm, 'abcé', '', undefined, true), multi, 'é takes two bytes: "abcé" does not fit where "abcd" was')
  t.equal(spliceBody(mm, 'abé', '', undefined, true)!.toString(), '{"model":"abé","x":1}', 'exactly as long in bytes: no padding')
  // spliceModel, the public text form, never edits the client's bytes.
  const pub = Buffer.from('{"model":"client/model-name"}')
  t.equal(spliceModel(scanBody(pub, 64).model!, 'x'), '{"model":"x"}')
  t.equal(pub.toString(), '{"model":"client/model-name"}')
})

t.test('failover after an in-place splice: each deployment gets the client\'s bytes with its own model', async t => {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    {
      id: 'vendor/failing-model-name',
      deployments: [
        { provider: 'up-chat', model: 'first', priority: 0 },
        { provider: 'up-chat', model: 'second-deployment-with-a-long-name', priority: 1 },
        { provider: 'up-chat', model: 'third', priority: 2 },
      ],
    },
  ])
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY] })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  // The first two fail (500); the third answers.
  chatUp.handle((req, res) => req.body.model === 'third' ? json(res, 200, chatCompletion('Hello', { prompt: 12, completion: 3, cached: 0 })) : json(res, 500, { error: { message: 'boom' } }))
  const text = '{"model":"vendor/failing-model-name","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}'
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'content-type': 'application/json' }, payload: text })
  t.equal(res.statusCode, 200)
  t.same(chatUp.requests.map(r => r.text), [
    text.replace('"vendor/failing-model-name"', padded('"vendor/failing-model-name"', '"first"')),
    text.replace('"vendor/failing-model-name"', '"second-deployment-with-a-long-name"'),
    text.replace('"vendor/failing-model-name"', padded('"vendor/failing-model-name"', '"third"')),
  ], 'in place, then a copy (too long to fit), then in place again')
})

/** What a chat body without a cap gets before its model key: the model's output cap (4096 by default). */
const CAP = '"max_tokens":4096,'

async function setup (t: Test) {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const spy = outcomeSpy()
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: 'vendor/defaults', default_parameters: { top_p: 0.5 }, deployments: [{ provider: 'up-chat', model: 'up-defaults' }] },
    { id: 'vendor/uni', deployments: [{ provider: 'up-chat', model: 'ünï "côdé"' }] },
  ])
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin] })
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  chatUp.handle((req, res) => req.body.stream ? sse(res, chatTextStream(['Hel', 'lo'], { prompt: 20, completion: 2, cached: 0 })) : json(res, 200, chatCompletion('Hello', { prompt: 12, completion: 3, cached: 0 })))
  msgUp.handle((req, res) => req.body.stream ? sse(res, messagesTextStream(['Hel', 'lo'], { input: 9, output: 2, cacheRead: 0, cacheWrite: 0 })) : json(res, 200, messagesResponse('Hello', { input: 9, output: 2, cacheRead: 0, cacheWrite: 0 })))
  const post = (url: string, payload: string) => app.inject({ method: 'POST', url, headers: { ...auth(), 'content-type': 'application/json' }, payload })
  return { app, chatUp, msgUp, spy, post }
}

t.test('same protocol: the upstream receives the client bytes with only the model changed', async t => {
  const { chatUp, msgUp, spy, post } = await setup(t)
  const chat = '{\n  "messages": [ {"role":"user","content":"héllo \\u263a \u{1F600} \\"model\\":\\"x\\"", "model": "nested"} ],\n  "model" :  "vendor/chat-model",\n  "temperature": 0.30,\n  "tools": [{"type":"function","function":{"name":"f","parameters":{"model":{"type":"string"}}}}],\n  "x_vendor": 1e2\n}'
  let res = await post('/v1/chat/completions', chat)
  t.equal(res.statusCode, 200)
  t.equal(chatUp.requests.at(-1)!.text, chat.replace('"model" :  "vendor/chat-model"', CAP + '"model" :  "up-model"'), 'byte for byte: 0.30 and 1e2 stay as written; the cap added before the model')

  const capped = '{"model":"vendor/chat-model","max_completion_tokens":12,"messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', capped)
  t.equal(chatUp.requests.at(-1)!.text, capped.replace('"vendor/chat-model"', padded('"vendor/chat-model"', '"up-model"')), 'a cap within the model\'s: nothing added, the model written in place')

  const over = '{"model":"vendor/chat-model","max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', over)
  t.equal(res.statusCode, 200)
  t.equal(chatUp.requests.at(-1)!.text, over.replace('"vendor/chat-model"', padded('"vendor/chat-model"', '"up-model"')).replace('100000', padded('100000', '4096')), 'a cap above the model\'s: lowered in place, every other byte the client\'s')

  const stream = '{"model":"vendor/chat-model","stream":true,"messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', stream)
  t.equal(res.statusCode, 200)
  t.equal(chatUp.requests.at(-1)!.text, '{"stream_options":{"include_usage":true},' + CAP + '"model":"up-model","stream":true,"messages":[{"role":"user","content":"hi"}]}', 'a chat stream asks for usage: one member added before the model')

  const asked = '{"model":"vendor/chat-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', asked)
  t.equal(chatUp.requests.at(-1)!.text, asked.replace('"model":"vendor/chat-model"', CAP + '"model":"up-model"'), 'usage already asked for: only the cap added')

  const notAsked = '{"model":"vendor/chat-model","stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', notAsked)
  t.equal(res.statusCode, 200)
  t.same(chatUp.requests.at(-1)!.body.stream_options, { include_usage: true }, 'include_usage false: serialized again with it true')

  const uni = '{"model":"vendor/uni","messages":[{"role":"user","content":"hi"}]}'
  res = await post('/v1/chat/completions', uni)
  t.equal(res.statusCode, 200)
  t.equal(chatUp.requests.at(-1)!.text, '{' + CAP + '"model":"ünï \\"côdé\\"","messages":[{"role":"user","content":"hi"}]}', 'the upstream name is JSON-encoded')

  const msg = '{"max_tokens":64,\r\n"model":"msgvendor/msg-model","system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"\\ud83d\\ude00"}]}],"metadata":{"model":"x"}}'
  res = await post('/v1/messages', msg)
  t.equal(res.statusCode, 200)
  t.equal(msgUp.requests.at(-1)!.text, msg.replace('"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"')))
  res = await post('/v1/messages', msg.replace('{', '{"stream":true,'))
  t.equal(res.statusCode, 200)
  t.equal(msgUp.requests.at(-1)!.text, msg.replace('{', '{"stream":true,').replace('"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"')))
  await spy.settled(9)
  t.match(spy.seen.at(-1)!.outcome, { usage: { inputTokens: 9, outputTokens: 2 }, usageEstimated: false }, 'the stream is billed from its usage')
  t.match(spy.seen[3].outcome, { usage: { inputTokens: 20, outputTokens: 2 }, usageEstimated: false }, 'the chat stream too (usage was asked for)')
})

t.test('a huge body is spliced, not re-serialized', async t => {
  const { chatUp, post } = await setup(t)
  const big = '{"messages":[{"role":"user","content":"' + 'a\\n\\u00e9'.repeat(300_000) + '"}],"model":"vendor/chat-model"}'
  const res = await post('/v1/chat/completions', big)
  t.equal(res.statusCode, 200)
  const got = chatUp.requests.at(-1)!.text
  t.equal(got.length, big.length - 'vendor/chat-model'.length + 'up-model'.length + CAP.length)
  t.ok(got === big.replace('"model":"vendor/chat-model"', CAP + '"model":"up-model"'), 'the same bytes (escapes kept as written)')
})

t.test('hostile bodies fall back to serializing what the gateway parsed, routed and billed', async t => {
  const { chatUp, msgUp, spy, post } = await setup(t)
  // JSON.parse keeps the last of duplicate keys: the gateway routes to it, and the upstream must see it too.
  let res = await post('/v1/chat/completions', '{"model":"vendor/text-only","messages":[{"role":"user","content":"hi"}],"model":"vendor/chat-model"}')
  t.equal(res.statusCode, 200)
  t.equal(res.headers['x-gw-model'], 'vendor/chat-model', 'routed by the last model key')
  let up = chatUp.requests.at(-1)!
  t.equal(up.body.model, 'up-model')
  t.equal(up.text.match(/"model"/g)!.length, 1, 'one model key reaches the upstream')
  t.notMatch(up.text, 'up-text')

  res = await post('/v1/chat/completions', '{"model":"vendor/chat-model","model":"vendor/text-only","messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.headers['x-gw-model'], 'vendor/text-only')
  up = chatUp.requests.at(-1)!
  t.equal(up.body.model, 'up-text')
  t.equal(up.text.match(/"model"/g)!.length, 1)

  // An escaped spelling of the key is the same key to JSON.parse (and to the upstream).
  res = await post('/v1/chat/completions', '{"model":"vendor/text-only","mod\\u0065l":"vendor/chat-model","messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.headers['x-gw-model'], 'vendor/chat-model')
  up = chatUp.requests.at(-1)!
  t.equal(up.body.model, 'up-model')
  t.notMatch(up.text, 'text-only')
  t.notMatch(up.text, '\\u0065')

  res = await post('/v1/messages', '{"mod\\u0065l":"msgvendor/msg-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.statusCode, 200)
  t.equal(msgUp.requests.at(-1)!.body.model, 'up-model')

  // The model's default_parameters change the body: serialized again, with the default.
  res = await post('/v1/chat/completions', '{"model":"vendor/defaults","messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.statusCode, 200)
  t.same(chatUp.requests.at(-1)!.body, { model: 'up-defaults', messages: [{ role: 'user', content: 'hi' }], top_p: 0.5, max_tokens: 4096 })

  // A duplicate stream_options (the last wins) is not added to: the parsed one is serialized.
  res = await post('/v1/chat/completions', '{"model":"vendor/chat-model","stream":true,"stream_options":null,"messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.statusCode, 200)
  t.same(chatUp.requests.at(-1)!.body.stream_options, { include_usage: true })

  // Bad model values are still the spec's 400s.
  for (const bad of ['{"model":5,"messages":[]}', '{"model":"","messages":[]}', '{"model":"a","model":7,"messages":[]}']) {
    res = await post('/v1/chat/completions', bad)
    t.equal(res.statusCode, 400, bad)
  }
  await spy.settled(6)
  t.equal(spy.seen.length, 6, 'every 200 was settled once')
})

t.test('cross protocol and many calls in flight at once', async t => {
  const { chatUp, msgUp, post } = await setup(t)
  // messages client, chat model: translated, never the client bytes.
  const res = await post('/v1/messages', '{"model":"vendor/chat-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}')
  t.equal(res.statusCode, 200)
  t.same(chatUp.requests.at(-1)!.body.messages, [{ role: 'user', content: 'hi' }])
  t.equal(chatUp.requests.at(-1)!.body.model, 'up-model')
  // Concurrent calls: each upstream body is its own client's bytes.
  const n = 24
  const all = await Promise.all(Array.from({ length: n }, (_, i) => {
    const chat = i % 2 === 0
    const text = chat
      ? `{"messages":[{"role":"user","content":"call ${i}"}],"model":"vendor/chat-model"}`
      : `{"messages":[{"role":"user","content":"call ${i}"}],"max_tokens":8,"model":"msgvendor/msg-model"}`
    return post(chat ? '/v1/chat/completions' : '/v1/messages', text).then(r => ({ r, text, chat }))
  }))
  for (const { r } of all) t.equal(r.statusCode, 200)
  const seen = new Set([...chatUp.requests, ...msgUp.requests].map(r => r.text))
    // A chat body gets the cap added (a copy); a messages body has its model written in place.
  for (const { text, chat } of all) t.ok(seen.has(chat ? text.replace('"model":"vendor/chat-model"', CAP + '"model":"up-model"') : text.replace('"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"'))), text)
})

t.test('an agent-sized body (parsed in pieces) reaches the upstream as sent; a broken one is refused', async t => {
  const { chatUp, post } = await setup(t)
  const messages = []
  for (let i = 0; i < 40; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i} — “${'word '.repeat(800)}” 编码 😀` })
  const text = JSON.stringify({ messages, model: 'vendor/chat-model', tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }], max_tokens: 10 }, null, 1)
  t.ok(Buffer.byteLength(text) > 150_000, 'above the piece size, so split')
  let res = await post('/v1/chat/completions', text)
  t.equal(res.statusCode, 200)
  const up = chatUp.requests.at(-1)!
  t.ok(up.text === text.replace('"vendor/chat-model"', padded('"vendor/chat-model"', '"up-model"')), 'the client\'s bytes, model changed')
  t.same(up.body.messages, messages)
  const sent = chatUp.requests.length
  for (const broken of [
    text.replace('"max_tokens": 10', '"max_tokens": 10,'), // a trailing comma in the top-level object
    text.replace('}\n ],\n "model"', '}\n ,\n "model"'), // the messages array never closed
    text.replace('"role": "assistant"', '"role" "assistant"'), // a missing colon inside a piece
    text.replace(/\n}$/, '\n}}'), // one bracket too many
  ]) {
    t.not(broken, text)
    res = await post('/v1/chat/completions', broken)
    t.equal(res.statusCode, 400)
    t.equal(res.json().error.message, 'The request body is not valid JSON.')
  }
  t.equal(chatUp.requests.length, sent, 'nothing refused reached the upstream')
})
