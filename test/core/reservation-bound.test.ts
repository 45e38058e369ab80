/**
 * reservationBoundTokens, the input a reservation holds without a tokenizer, is never below the
 * prompt's real token count: the exact count (no sampling) with both public tokenizers
 * (o200k_base and cl100k_base) of the text the reservation counts, plus the same image, message
 * and tool overheads, over many generated bodies of every protocol: English, code, digits, CJK,
 * emoji, lone surrogates, escapes, and inline base64 media. And never below the 4-bytes floor,
 * never above the context window.
 */
import t from 'tap'
import { reservationBoundTokens, countedInputTokens, reservationInputTokens } from '../../core/tokens/reservation.ts'
import { estimateInputTokens, reservedInputTokens } from '../../core/tokens/estimate.ts'
import { noteRawBytes } from '../../core/tokens/raw-bytes.ts'
import { mulberry32 as rng } from '../helpers/rng.ts'

const ALPHABETS = [
  'the quick brown fox jumps over a lazy dog and then some more words ',
  'const x = (a) => { return a?.b ?? [1, 2, 3]; } // TODO: fix\n\t',
  '0123456789 3.14159 -42 1e10 0x1F ',
  '编码代理现在是模型网关最重要的用户之一。日本語のテキストも。에이전트는 로그를 읽고 ',
  '😀🎉👩‍💻🇫🇷✨🔥💡 ',
  '!@#$%^&*()_+-=[]{}|;:\'",.<>/?`~\\ ',
  'ÀÉÎÕÜßñçøåæœ ',
]

function text (r: () => number, max: number): string {
  const n = Math.floor(r() * max)
  const alpha = ALPHABETS[Math.floor(r() * ALPHABETS.length)]
  const chars = [...alpha]
  let s = ''
  for (let i = 0; i < n; i++) {
    const p = r()
    if (p < 0.002) s += String.fromCharCode(0xd800 + Math.floor(r() * 0x400)) // a lone surrogate
    else if (p < 0.01) s += String.fromCharCode(Math.floor(r() * 0x10000))
    else s += chars[Math.floor(r() * chars.length)]
  }
  return s
}

const base64 = (r: () => number, n: number): string => Buffer.from(Array.from({ length: n }, () => Math.floor(r() * 256))).toString('base64')

function chatBody (r: () => number): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'system', content: text(r, 800) }]
  const turns = 1 + Math.floor(r() * 5)
  for (let i = 0; i < turns; i++) {
    const parts: unknown[] = [{ type: 'text', text: text(r, 600) }]
    if (r() < 0.3) parts.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${base64(r, 300)}`, detail: 'high' } })
    if (r() < 0.2) parts.push({ type: 'input_audio', input_audio: { data: base64(r, 200), format: 'wav' } })
    messages.push({ role: 'user', content: r() < 0.5 ? text(r, 400) : parts })
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read', arguments: JSON.stringify({ path: text(r, 40) }) } }] })
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: text(r, 900) })
  }
  return { model: 'm', messages, tools: [{ type: 'function', function: { name: 'read', description: text(r, 200), parameters: { type: 'object', properties: { path: { type: 'string', description: text(r, 80) } } } } }], max_tokens: 100 }
}

function messagesBody (r: () => number): Record<string, unknown> {
  const content: unknown[] = [{ type: 'text', text: text(r, 700), cache_control: { type: 'ephemeral' } }]
  if (r() < 0.4) content.push({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: base64(r, 400) } })
  if (r() < 0.2) content.push({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text(r, 300) } })
  return {
    model: 'm',
    max_tokens: 100,
    system: [{ type: 'text', text: text(r, 600) }],
    messages: [{ role: 'user', content }, { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'grep', input: { q: text(r, 50) } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: text(r, 900) }] }],
    tools: [{ name: 'grep', description: text(r, 300), input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
  }
}

function responsesBody (r: () => number): Record<string, unknown> {
  return {
    model: 'm',
    instructions: text(r, 500),
    input: [{ role: 'user', content: [{ type: 'input_text', text: text(r, 800) }, ...(r() < 0.4 ? [{ type: 'input_image', image_url: `data:image/jpeg;base64,${base64(r, 300)}` }] : [])] },
      { type: 'function_call_output', call_id: 'x', output: text(r, 600) }],
    max_output_tokens: 50,
  }
}

t.test('the bound is never below the exact token count, the 4-bytes floor, nor above the context window', async t => {
  const r = rng(20261128)
  const CONTEXT = 10_000_000
  let checked = 0
  let tightest = Infinity
  for (let i = 0; i < 240; i++) {
    const body = [chatBody, messagesBody, responsesBody][i % 3](r)
    const textOf = JSON.stringify(body)
    const bytes = Buffer.byteLength(textOf)
    const bound = reservationBoundTokens(body, bytes, CONTEXT)
    // The same body as the body parser hands it over: its bound comes from the text's size. Every
    // other body is written with non-ASCII escaped, as Python's json.dumps does by default.
    const text = i % 2 === 0 ? textOf : textOf.replace(/[\u0080-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
    const parsed = JSON.parse(text) as Record<string, unknown>
    noteRawBytes(parsed, Buffer.byteLength(text))
    const rawBound = reservationBoundTokens(parsed, Buffer.byteLength(text), CONTEXT)
    for (const model of ['gpt-4o', 'claude-sonnet-4']) { // o200k_base, cl100k_base
      const exact = await countedInputTokens(body, model, Number.MAX_SAFE_INTEGER)
      if (bound < exact) t.fail(`body ${i} (${model}): bound ${bound} < exact ${exact}`)
      if (rawBound < exact) t.fail(`body ${i} (${model}), from the text's size: bound ${rawBound} < exact ${exact}`)
      tightest = Math.min(tightest, bound / exact, rawBound / exact)
      checked++
    }
    if (bound < reservedInputTokens(body, bytes, CONTEXT)) t.fail(`body ${i}: below the 4-bytes floor`)
    if (bound < await reservationInputTokens(body, bytes, CONTEXT, 'claude-sonnet-4', 0)) t.fail(`body ${i}: below the byte rule`)
  }
  t.equal(checked, 480, 'every body counted with both tokenizers')
  t.ok(tightest >= 1, `the bound over the exact count: at least ${tightest.toFixed(2)}×`)
})

t.test('the bound when the body is empty of text, has an unsized part, or passes the context window', async t => {
  t.equal(reservationBoundTokens({ messages: [] }, 15, 1000), 4, 'the 4-bytes floor of the body')
  t.equal(reservationBoundTokens({ messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: 'https://x/v.mp4' } }] }] }, 80, 128_000), 128_000, 'a part the gateway cannot size: the whole window')
  t.equal(reservationBoundTokens({ messages: [{ role: 'user', content: '中'.repeat(100_000) }] }, 300_030, 128_000), 128_000, 'capped by the window')
  const cjk = { messages: [{ role: 'user', content: '中'.repeat(1000) }] }
  t.equal(reservationBoundTokens(cjk, 3030, 1_000_000), 3000 + 3 * 4 + 3, 'CJK: three bytes a character, plus "user" (short: 3 bytes a unit) and the message overhead')
})

t.test('from the text\'s size: inline media is taken off, short strings cost their bytes only', async t => {
  const image = `data:image/png;base64,${'A'.repeat(100_000)}`
  const body = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: image } }] }] }
  const text = JSON.stringify(body)
  const parsed = JSON.parse(text) as Record<string, unknown>
  noteRawBytes(parsed, Buffer.byteLength(text))
  const bound = reservationBoundTokens(parsed, Buffer.byteLength(text), 10_000_000)
  const measured = reservationBoundTokens(body, Buffer.byteLength(text), 10_000_000)
  t.ok(bound < 100_000 / 4, `the image's payload is not text (bound ${bound})`)
  t.equal(bound, Buffer.byteLength(text) - image.length + 1600 + 3, 'the text\'s bytes, less the payload, plus one image and one message')
  t.ok(measured <= bound + 40 && measured >= bound - 100, `close to the measured bound (${measured})`)
})

/** The rules of the estimate's walk, written out plainly: characters of text and keys, images, their inline payloads, unsized parts. */
function referenceScan (roots: unknown[]): { chars: number, images: number, payload: number, unsized: number } {
  const acc = { chars: 0, images: 0, payload: 0, unsized: 0 }
  const visit = (v: unknown): void => {
    if (typeof v === 'string') { acc.chars += v.length; return }
    if (typeof v !== 'object' || v === null) return
    if (Array.isArray(v)) { v.forEach(visit); return }
    const o = v as Record<string, unknown>
    const field = (x: unknown, k: string): unknown => typeof x === 'object' && x !== null ? (x as Record<string, unknown>)[k] : undefined
    const type = o.type
    const unsized = type === 'video_url' || type === 'video' ||
      (type === 'file' && typeof field(o.file, 'file_data') !== 'string') ||
      (type === 'document' && (field(o.source, 'type') === 'url' || field(o.source, 'type') === 'file'))
    if (unsized) { acc.unsized++; return }
    if (type === 'image_url' || type === 'image' || type === 'input_image') {
      acc.images++
      const url = typeof o.image_url === 'string' ? o.image_url : field(o.image_url, 'url')
      const data = field(o.source, 'data')
      if (typeof url === 'string' && url.startsWith('data:')) acc.payload += url.length
      else if (field(o.source, 'type') === 'base64' && typeof data === 'string') acc.payload += data.length
    }
    for (const k of Object.keys(o)) {
      if (k === 'cache_control') continue
      acc.chars += k.length
      visit(o[k])
    }
  }
  roots.forEach(visit)
  return acc
}

t.test('one walk serves the prompt estimate and the byte rule: both as their rules say', async t => {
  const r = rng(7)
  const extra = [
    { type: 'video', source: 'x' }, // a body that is itself an unsized part
    { type: 'image', source: { type: 'base64', data: 'AAAA' } }, // itself an image
    { cache_control: { type: 'ephemeral' }, metadata: { user_id: 'u' } },
    { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f' } }] }] },
  ]
  for (let i = 0; i < 150; i++) {
    const body = i < extra.length ? extra[i] as Record<string, unknown> : [chatBody, messagesBody, responsesBody][i % 3](r)
    const roots = referenceScan([body.messages, body.system, body.tools, body.input, body.instructions])
    const messages = Array.isArray(body.messages) ? body.messages.length : Array.isArray(body.input) ? body.input.length : 0
    const estimate = Math.max(1, Math.ceil(Math.max(0, roots.chars - roots.payload) / 4) + 3 * messages + 1600 * (roots.images + roots.unsized))
    if (estimateInputTokens(body) !== estimate) t.fail(`body ${i}: estimate ${estimateInputTokens(body)} ≠ ${estimate}`)
    const all = referenceScan([body])
    // With the body's byte count, and without (0: the characters of its strings and keys instead).
    for (const bytes of [Buffer.byteLength(JSON.stringify(body)), 0]) {
      const rule = all.unsized > 0 ? 128_000 : Math.min(128_000, Math.max(1, Math.ceil(Math.max(0, Math.max(bytes, all.chars) - all.payload) / 4) + 1600 * all.images))
      if (reservedInputTokens(body, bytes, 128_000) !== rule) t.fail(`body ${i}: byte rule ${reservedInputTokens(body, bytes, 128_000)} ≠ ${rule}`)
    }
    t.equal(estimateInputTokens(body), estimate, 'the same again (remembered)')
  }
})

/**
 * The bound from the text's size, by its rules written out plainly as a walk of its own: the
 * text's bytes, less every string the tokenizer's text leaves out (a `data:` string anywhere; a
 * string `cache_control`, `file_data`, or `data` of an inline part, those members not walked
 * further), plus 1600 per image part, 3 per message and 8 per tool. The gateway takes the same
 * parts from the walk its estimate makes; both must agree to the token.
 */
function referenceRawBound (body: Record<string, unknown>, raw: number): number {
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : undefined
  let n = 3 * (list?.length ?? 1) + 8 * (Array.isArray(body.tools) ? body.tools.length : 0) + raw
  const visit = (v: unknown): void => {
    if (typeof v === 'string') { if (v.startsWith('data:')) n -= v.length; return }
    if (typeof v !== 'object' || v === null) return
    if (Array.isArray(v)) { v.forEach(visit); return }
    const o = v as Record<string, unknown>
    if (o.type === 'image_url' || o.type === 'image' || o.type === 'input_image') n += 1600
    const inline = o.type === 'base64' || 'format' in o
    for (const k of Object.keys(o)) {
      if (k === 'cache_control' || k === 'file_data' || (k === 'data' && inline)) {
        if (typeof o[k] === 'string') n -= (o[k] as string).length
        continue
      }
      visit(o[k])
    }
  }
  visit(body)
  return n
}

t.test('from the text\'s size, the bound\'s parts come from the estimate\'s walk: the same bound as a walk of its own', async t => {
  const r = rng(11)
  const png = `data:image/png;base64,${'iVBOR'.repeat(40)}`
  const edge: Array<Record<string, unknown>> = [
    // An unsized part (the estimate does not enter it) holding an inline video and an image.
    { messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: `data:video/mp4;base64,${'AAAA'.repeat(50)}` } },
      { type: 'video', parts: [{ type: 'image_url', image_url: { url: png } }] }] }] },
    // file_data as a data URL (left out once, not twice), and as an object holding data URLs and an image.
    { messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${'JVBE'.repeat(60)}` } }] }] },
    { messages: [{ role: 'user', content: [{ type: 'text', text: 'x', file_data: { a: png, b: [{ type: 'image', source: { type: 'base64', data: 'QUJD' } }], c: 'plain text' } }] }] },
    // An inline part's data (audio with its format, a base64 source) and a data member elsewhere, which is text.
    { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGR'.repeat(30), format: 'wav' } },
      { type: 'text', text: 'y', data: 'this is text, not a payload' }] }] },
    // At the top of the body: a format member (Ollama's) makes its data a payload; a string cache_control.
    { model: 'm', format: 'json', data: 'top-level payload '.repeat(10), cache_control: 'ephemeral-string', messages: [{ role: 'user', content: 'hi' }] },
    { model: 'm', data: { nested: png }, messages: [{ role: 'user', content: 'hi' }] },
    // A left-out object inside an inline part, holding left-out members of its own.
    { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: { inner: png, file_data: 'zzz' } } }] }] },
    // The body itself a part.
    { type: 'image', source: { type: 'base64', data: 'QUJDRA' } },
    { type: 'video', video: { url: png } },
  ]
  for (let i = 0; i < 120 + edge.length; i++) {
    const body = i < edge.length ? edge[i]! : [chatBody, messagesBody, responsesBody][i % 3](r)
    const text = JSON.stringify(body)
    const parsed = JSON.parse(text) as Record<string, unknown>
    const raw = Buffer.byteLength(text)
    noteRawBytes(parsed, raw)
    // No context window (0): an unsized part does not make the bound the window, so every part counts.
    const want = Math.max(reservedInputTokens(parsed, raw, 0), referenceRawBound(parsed, raw))
    const got = reservationBoundTokens(parsed, raw, 0)
    if (got !== want) t.fail(`body ${i}: bound ${got} ≠ ${want} (${text.slice(0, 160)})`)
  }
  t.pass(`${120 + edge.length} bodies: the same bound to the token`)
})
