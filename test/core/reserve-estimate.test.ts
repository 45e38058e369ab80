// The reservation's input estimate (core/tokens/reservation.ts): never below the byte rule
// (4 bytes per token over the whole body), and at least the prompt's token count where the
// tokenizer counts more (CJK text, code); bounded work on long prompts (sampled), media payloads
// not tokenized, capped by the context length. Token counts are checked against js-tiktoken.
import t from 'tap'
import { Tiktoken } from 'js-tiktoken/lite'
import { reservedInputTokens } from '../../core/tokens/estimate.ts'
import { countedInputTokens, reservationInputTokens } from '../../core/tokens/reservation.ts'
import { reservationEncodingFor } from '../../core/tokens/tokenizer.ts'

const CJK = '编码代理现在是模型网关最重要的用户之一。它们发送很长的提示词，其中包含代码和说明。'
const CODE = 'export function f (xs: number[]): number {\n  return xs.reduce((a, b) => a + b * 2, 0) // 0x1f\n}\n'
const ENGLISH = 'The quick brown fox jumps over the lazy dog while the agent plans its next step. '

const chat = (content: unknown, extra: Record<string, unknown> = {}) => ({ model: 'm', messages: [{ role: 'user', content }], ...extra })
const bytesOf = (b: unknown) => Buffer.byteLength(JSON.stringify(b))

let cl100k: Tiktoken
t.before(async () => { cl100k = new Tiktoken((await import('js-tiktoken/ranks/cl100k_base')).default) })

t.test('the encoding: the model\'s own for OpenAI families, cl100k_base (less compact on CJK) for other vendors', async t => {
  t.equal(reservationEncodingFor('gpt-4o-mini'), 'o200k_base')
  t.equal(reservationEncodingFor('openai/gpt-4-turbo'), 'cl100k_base')
  t.equal(reservationEncodingFor('claude-sonnet-4-5'), 'cl100k_base')
  t.equal(reservationEncodingFor('deepseek-chat'), 'cl100k_base')
})

t.test('a CJK prompt reserves at least its token count, above the 4-bytes rule', async t => {
  const text = CJK.repeat(40)
  const body = chat(text)
  const floor = reservedInputTokens(body, bytesOf(body), 1_000_000)
  const tokens = cl100k.encode(text).length
  t.ok(tokens > floor, `the 4-bytes rule undercounts this prompt (${floor} < ${tokens})`)
  const r = await reservationInputTokens(body, bytesOf(body), 1_000_000, 'claude-sonnet-4-5', 8192)
  t.ok(r >= tokens, `reserved ${r} ≥ ${tokens} tokens`)
})

t.test('code is counted too: bytes ÷ 4 undercounts it', async t => {
  const body = chat(CODE.repeat(30))
  const r = await reservationInputTokens(body, bytesOf(body), 1_000_000, 'gpt-4', 8192)
  t.ok(r >= cl100k.encode(CODE.repeat(30)).length)
  t.ok(r > reservedInputTokens(body, bytesOf(body), 1_000_000))
})

t.test('never below the byte rule, whatever the body', async t => {
  const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,' + 'A'.repeat(200_000) } }
  const bodies: Array<[string, Record<string, unknown>]> = [
    ['English', chat(ENGLISH.repeat(50))],
    ['text hidden in a tool schema', chat('hi', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', description: ENGLISH.repeat(200) } } }] })],
    ['a base64 image (not tokenized)', chat([{ type: 'text', text: 'look' }, image])],
    ['a PDF as file_data (not tokenized)', chat([{ type: 'file', file: { file_data: 'data:application/pdf;base64,' + 'JVBER'.repeat(20_000) } }])],
    ['keys only', { model: 'm', messages: [{ role: 'user', content: '' }], ['k'.repeat(5000)]: 1 }],
    ['Responses input items', { model: 'm', input: [{ role: 'user', content: [{ type: 'input_text', text: ENGLISH.repeat(20) }] }], instructions: 'Be brief.' }],
  ]
  for (const [name, body] of bodies) {
    const floor = reservedInputTokens(body, bytesOf(body), 1_000_000)
    for (const max of [0, 100, 8192]) {
      t.ok(await reservationInputTokens(body, bytesOf(body), 1_000_000, 'gpt-4', max) >= floor, `${name}, maxChars ${max}: ≥ ${floor}`)
    }
  }
  const withImage = chat([{ type: 'text', text: 'look' }, image])
  const counted = await countedInputTokens(withImage, 'gpt-4', 8192)
  t.ok(counted >= 1600 && counted < 1700, `an image counts 1600 tokens, its base64 is not tokenized (${counted})`)
})

t.test('maxChars 0 is the byte rule alone; the context length caps the estimate', async t => {
  const body = chat(CJK.repeat(40))
  t.equal(await reservationInputTokens(body, bytesOf(body), 1_000_000, 'gpt-4', 0), reservedInputTokens(body, bytesOf(body), 1_000_000))
  t.equal(await reservationInputTokens(body, bytesOf(body), 500, 'gpt-4', 8192), 500)
})

t.test('a prompt longer than maxChars is sampled: close to the full count, never below the byte rule', async t => {
  // Messages of different kinds in turn, so the sample must spread over the whole prompt.
  const messages = Array.from({ length: 60 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: [ENGLISH, CODE, CJK][i % 3].repeat(12) }))
  const body = { model: 'm', messages }
  const full = await countedInputTokens(body, 'gpt-4', Number.POSITIVE_INFINITY)
  const sampled = await countedInputTokens(body, 'gpt-4', 4096)
  t.ok(Math.abs(sampled - full) / full < 0.1, `sampled ${sampled} within 10% of ${full}`)
  t.ok(await reservationInputTokens(body, bytesOf(body), 1_000_000, 'gpt-4', 4096) >= reservedInputTokens(body, bytesOf(body), 1_000_000))
  const exact = messages.reduce((n, m) => n + cl100k.encode(m.content).length, 0)
  t.ok(full >= exact, `unsampled: every message's text counted (${full} ≥ ${exact})`)
})
