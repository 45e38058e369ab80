// The test kit's golden cases (testing/golden.ts) run straight through the four translators, without
// a gateway: the same data the provider conformance suite runs against every adapter.
import t from 'tap'
import { translators } from '../../providers/protocols/index.ts'
import { SseParser } from '../../core/dispatch/sse.ts'
import { answerText } from '../../testing/conformance-rig.ts'
import {
  GOLDEN_CASES, GOLDEN_ANSWERS, GOLDEN_STREAMS, GOLDEN_PARAMS, goldenBody, matches, standardUsage, clientUsage,
  upstreamAnswerBody, upstreamStreamEvents, frameUpstream, streamShape, translateFixture, emitted } from '../../testing.ts'

const { opts } = translateFixture([...GOLDEN_PARAMS])

t.test('golden requests', async t => {
  for (const c of GOLDEN_CASES) {
    const out = translators[`${c.client}-to-${c.upstream}`].request(goldenBody(c.client, 'm/x', c.body), opts)
    t.equal(matches(out, c.expect), undefined, c.name)
    t.equal(out.model, 'up-x', `${c.name}: upstream model`)
  }
})

t.test('golden answers', async t => {
  for (const c of GOLDEN_ANSWERS) {
    const { body, usage } = translators[`${c.client}-to-${c.upstream}`].response(upstreamAnswerBody(c.answer, standardUsage(c.upstream, c.usage)), opts) as { body: any, usage: any }
    t.equal(matches(body, c.expect), undefined, c.name)
    if (c.client !== c.upstream) t.equal(matches(body.usage, clientUsage(c.client, c.usage)), undefined, `${c.name}: the client's usage`)
    t.match(usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, cacheWriteTokens: c.usage.cacheWriteTokens, outputTokens: c.usage.outputTokens }, `${c.name}: normalized usage`)
  }
})

t.test('golden streams', async t => {
  for (const c of GOLDEN_STREAMS) {
    const st = translators[`${c.client}-to-${c.upstream}`].stream(goldenBody(c.client, 'm/x', { ...c.body, stream: true }), opts)
    let out = ''
    // Piece by piece, as the wire delivers them (oddities included).
    const parser = new SseParser()
    for (const piece of frameUpstream(upstreamStreamEvents(c.stream, standardUsage(c.upstream, c.usage)), c.framing)) {
      for (const ev of parser.push(Buffer.from(piece))) out += emitted(w => st.push(ev, w))
    }
    for (const ev of parser.end()) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    const { shape, usage } = streamShape(c.client, out)
    t.same(shape, c.shape, c.name)
    if (c.client !== c.upstream && (c.client === 'messages' || shape.includes('usage'))) t.equal(matches(usage, clientUsage(c.client, c.usage)), undefined, `${c.name}: the client's usage`)
    t.match(st.usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, cacheWriteTokens: c.usage.cacheWriteTokens, outputTokens: c.usage.outputTokens }, `${c.name}: normalized usage`)
    t.equal(st.finished, true, `${c.name}: finished`)
  }
})

t.test('golden answers, asked for as streams: the events of the upstream\'s whole answer, through the stream translator', async t => {
  for (const c of GOLDEN_ANSWERS) {
    const tr = translators[`${c.client}-to-${c.upstream}`]
    const upstreamAnswer = upstreamAnswerBody(c.answer, standardUsage(c.upstream, c.usage))
    type WholeAnswer = {
      choices: { message: { content?: string | null, tool_calls?: unknown[], reasoning_content?: unknown, refusal?: unknown }, finish_reason: string }[]
      content: { type: string }[], stop_reason: string
    }
    const whole = tr.response(upstreamAnswer, opts).body as WholeAnswer
    const st = tr.stream(goldenBody(c.client, 'm/x', { ...c.body, stream: true, stream_options: { include_usage: true } }), opts)
    let out = ''
    const parser = new SseParser()
    for (const ev of parser.push(Buffer.from(tr.answerEvents!(upstreamAnswer).join('')))) out += emitted(w => st.push(ev, w))
    for (const ev of parser.end()) out += emitted(w => st.push(ev, w))
    out += emitted(w => st.end(w))
    t.equal(st.finished, true, `${c.name}: finished`)
    t.match(st.usage, { inputTokens: c.usage.inputTokens, cachedInputTokens: c.usage.cachedInputTokens, cacheWriteTokens: c.usage.cacheWriteTokens, outputTokens: c.usage.outputTokens }, `${c.name}: usage`)
    const text = answerText(c.client, out, true)
    const wholeText = c.client === 'chat' ? (whole.choices[0].message.content ?? '') : answerText(c.client, JSON.stringify(whole), false)
    t.equal(text, wholeText, `${c.name}: the text`)
    const { shape } = streamShape(c.client, out)
    if (c.client === 'chat') {
      const m = whole.choices[0].message
      t.equal(shape.filter(s => s.startsWith('tool ')).length, m.tool_calls?.length ?? 0, `${c.name}: tool calls`)
      t.ok(shape.includes(`finish ${whole.choices[0].finish_reason}`), `${c.name}: finish_reason`)
      if (typeof m.reasoning_content === 'string') t.equal(shape.filter(s => s.startsWith('reasoning ')).map(s => s.slice(10)).join(''), m.reasoning_content, `${c.name}: reasoning`)
      if (typeof m.refusal === 'string') t.ok(shape.includes(`refusal ${m.refusal}`), `${c.name}: refusal`)
    } else {
      t.same(shape.filter(s => s.startsWith('start ')).map(s => s.split(' ')[2]), whole.content.map(b => b.type), `${c.name}: the blocks`)
      t.ok(shape.includes(`message_delta ${whole.stop_reason}`), `${c.name}: stop_reason`)
    }
  }
})
