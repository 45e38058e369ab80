/**
 * Large bodies through pooled buffers, on real sockets: many agent-sized calls in flight at once,
 * round after round (so buffers are reused while others are in use), each with its own content.
 * Every upstream request must be its own client's bytes (the model written in place, members
 * added in the buffer's headroom or in a copy, or a translation of its own body), whatever other calls did with the
 * buffers before; answers and billing stay each call's own.
 */
import t from 'tap'
import { request } from 'undici'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, chatTextStream, chatCompletion, messagesResponse, upstreamDoc } from '../helpers/fake-upstream.ts'
import { outcomeSpy } from '../../testing.ts'
import { emptyPool, pooledFree } from '../../core/dispatch/body-pool.ts'
import { padded } from '../helpers/padded.ts'

/** ~150 KB of one call's own text: its number throughout, escapes, non-ASCII. */
const filler = (i: number): string => JSON.stringify(`call ${i}: const s = "q\\"" é 中文 😀 ${i}\n`.repeat(3500)).slice(1, -1)

interface Case { path: string, text: string, upstream: 'chat' | 'msg', expected: string | undefined, marker: string }

function cases (round: number, n: number): Case[] {
  const out: Case[] = []
  for (let k = 0; k < n; k++) {
    const i = round * 100 + k
    const content = filler(i)
    const marker = `call ${i}: `
    switch (k % 4) {
      case 0: { // messages, a cap within the model's: the model written in place
        const text = `{"model":"msgvendor/msg-model","max_tokens":100,"messages":[{"role":"user","content":"${content}"}]}`
        out.push({ path: '/v1/messages', text, upstream: 'msg', marker, expected: text.replace('"msgvendor/msg-model"', padded('"msgvendor/msg-model"', '"up-model"')) })
        break
      }
      case 1: { // chat with a cap: in place
        const text = `{"messages":[{"role":"user","content":"${content}"}],"max_tokens":50,"model":"vendor/chat-model"}`
        out.push({ path: '/v1/chat/completions', text, upstream: 'chat', marker, expected: text.replace('"vendor/chat-model"', padded('"vendor/chat-model"', '"up-model"')) })
        break
      }
      case 2: { // a chat stream without stream_options: members added in the buffer's headroom, the model in place
        const text = `{"model":"vendor/chat-model","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"${content}"}]}`
        const expected = text.replace('"model":"vendor/chat-model"', `"stream_options":{"include_usage":true},"model":${padded('"vendor/chat-model"', '"up-model"')}`)
        out.push({ path: '/v1/chat/completions', text, upstream: 'chat', marker, expected })
        break
      }
      default: { // messages client, chat model: translated from the parsed body
        const text = `{"model":"vendor/chat-model","max_tokens":50,"messages":[{"role":"user","content":"${content}"}]}`
        out.push({ path: '/v1/messages', text, upstream: 'chat', marker, expected: undefined })
      }
    }
  }
  return out
}

t.test('agent-sized calls in flight at once, round after round: each upstream request is its own client\'s', async t => {
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  // Each answer names its call (from the content the upstream received), so a mix-up shows in the answers too.
  const callOf = (body: unknown): string => /call (\d+): /.exec(JSON.stringify(body))?.[1] ?? 'none'
  chatUp.handle((req, res) => {
    const b = req.body as { stream?: boolean }
    const who = callOf(req.body)
    if (b.stream === true) return sse(res, chatTextStream([`answer ${who}`], { prompt: 20, completion: 2, cached: 0 }))
    json(res, 200, chatCompletion(`answer ${who}`, { prompt: 12, completion: 3, cached: 0 }))
  })
  msgUp.handle((req, res) => json(res, 200, messagesResponse(`answer ${callOf(req.body)}`, { input: 9, output: 2, cacheRead: 0, cacheWrite: 0 })))
  const spy = outcomeSpy()
  const app = await buildTestApp({ doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin] })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })

  const rounds = 4
  const n = 12
  let settled = 0
  for (let round = 0; round < rounds; round++) {
    const all = cases(round, n)
    const answers = await Promise.all(all.map(async c => {
      const res = await request(base + c.path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: c.text })
      return { status: res.statusCode, text: await res.body.text() }
    }))
    settled += n
    await spy.settled(settled)
    for (const [k, c] of all.entries()) {
      t.equal(answers[k].status, 200, `round ${round}, call ${k}: answered`)
      const who = /call (\d+): /.exec(c.marker)![1]
      t.match(answers[k].text, `answer ${who}`, `round ${round}, call ${k}: its own answer`)
      const up = (c.upstream === 'chat' ? chatUp : msgUp).requests.filter(r => r.text.includes(c.marker))
      t.equal(up.length, 1, `round ${round}, call ${k}: one upstream request carries its content`)
      if (c.expected !== undefined) {
        t.ok(up[0].text === c.expected, `round ${round}, call ${k}: byte for byte its client's bytes`)
      } else {
        const b = up[0].body as { messages: { content: unknown }[], model: string }
        t.equal(b.model, 'up-model')
        t.equal(JSON.stringify(b.messages).includes(c.marker), true, 'translated from its own body')
      }
      // No other call's content anywhere in it.
      const others = new Set(up[0].text.match(/call \d+: /g))
      t.same([...others], [c.marker], `round ${round}, call ${k}: nothing of another call`)
    }
  }
  t.ok(pooledFree() > 0, 'buffers came back to the pool between rounds')
  t.equal(spy.seen.length, rounds * n, 'every call settled once')
})

t.test('a body refused as bad JSON gives its buffer back; the next call reads only its own bytes', async t => {
  const chatUp = await startFakeUpstream()
  chatUp.handle((_req, res) => json(res, 200, chatCompletion('ok')))
  const app = await buildTestApp({ doc: upstreamDoc(chatUp.origin, chatUp.origin), pipeline: [AUTH_ENTRY] })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close() })
  const good = `{"model":"vendor/chat-model","max_tokens":5,"messages":[{"role":"user","content":"${filler(1)}"}]}`
  const broken = good.slice(0, -2)
  let res = await request(base + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: broken })
  t.equal(res.statusCode, 400)
  t.match(await res.body.json(), { error: { message: 'The request body is not valid JSON.' } })
  // A shorter valid body next: a reused buffer's older bytes past its end must not be read.
  const short = `{"model":"vendor/chat-model","max_tokens":5,"messages":[{"role":"user","content":"${filler(2).slice(0, 80_000)}"}]}`
  res = await request(base + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: short })
  t.equal(res.statusCode, 200)
  await res.body.text()
  t.ok(chatUp.requests.at(-1)!.text === short.replace('"vendor/chat-model"', padded('"vendor/chat-model"', '"up-model"')), 'exactly its own bytes')
})

t.test('members added to a pooled body go into its headroom: exact bytes per deployment, and no second buffer', async t => {
  const up = await startFakeUpstream()
  // Two of the three deployments fail (500); the last streams. The middle one's provider names the
  // cap max_completion_tokens, the others max_tokens: each attempt inserts its own member.
  up.handle((req, res) => {
    if (req.body.model !== 'third') return json(res, 500, { error: { message: 'boom' } })
    void sse(res, chatTextStream(['ok'], { prompt: 20, completion: 2, cached: 0 }))
  })
  const doc = upstreamDoc(up.origin, up.origin, [{
    id: 'vendor/insert',
    deployments: [
      { provider: 'up-chat', model: 'first', priority: 0 },
      { provider: 'up-mct', model: 'second', priority: 1 },
      { provider: 'up-chat', model: 'third', priority: 2 },
    ],
  }])
  ;(doc.providers as unknown[]).push({ name: 'up-mct', adapter: 'openai-compatible', config: { baseUrl: `${up.origin}/v1`, apiKey: 'sk-upstream', maxTokensField: 'max_completion_tokens' } })
  const spy = outcomeSpy()
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY, { plugin: 'outcome-spy' }], plugins: [spy.plugin] })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await up.close() })

  const model = '"model":"vendor/insert"'
  const usage = '"stream_options":{"include_usage":true},'
  /** What the deployment `name` receives: the members its provider needs before the model key, the model written in place. */
  const sent = (text: string, name: string, cap: string): string => text.replace(model, `${usage}${cap}"model":${padded('"vendor/insert"', `"${name}"`)}`)
  const content = filler(7)
  const variants = [
    {
      what: 'no cap: stream_options and the cap added',
      text: `{"stream":true,${model},"messages":[{"role":"user","content":"${content}"}]}`,
      expect: (text: string) => [sent(text, 'first', '"max_tokens":4096,'), sent(text, 'second', '"max_completion_tokens":4096,'), sent(text, 'third', '"max_tokens":4096,')],
      buffers: 1,
    },
    {
      what: 'a cap above the model\'s, before the model key: lowered in place, stream_options added',
      text: `{"max_tokens":100000,"stream":true,${model},"messages":[{"role":"user","content":"${content}"}]}`,
      expect: (text: string) => ['first', 'second', 'third'].map(name => sent(text, name, '').replace('"max_tokens":100000', `"max_tokens":${padded('100000', '4096')}`)),
      buffers: 1,
    },
    {
      what: 'the model key after the messages: a copy into the second buffer',
      text: `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":"${content}"}],${model}}`,
      expect: (text: string) => ['first', 'second', 'third'].map(name => text.replace(model, `${usage}"model":"${name}"`)),
      buffers: 2,
    },
  ]
  let settled = 0
  for (const v of variants) {
    emptyPool()
    up.requests.length = 0
    const res = await request(base + '/v1/chat/completions', { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: v.text })
    t.equal(res.statusCode, 200, v.what)
    t.match(await res.body.text(), /data: \[DONE\]/)
    await spy.settled(++settled)
    const got = up.requests.map(r => r.text)
    const want = v.expect(v.text)
    t.equal(got.length, 3, `${v.what}: three attempts`)
    for (let i = 0; i < 3; i++) t.ok(got[i] === want[i], `${v.what}: attempt ${i + 1} is exactly the client's bytes with its own edits`)
    t.ok(got.every(x => JSON.parse(x) !== null), `${v.what}: every attempt is JSON`)
    t.equal(pooledFree(), v.buffers, `${v.what}: ${v.buffers} pooled buffer(s) used and given back`)
  }
})
