// The gateway's token counter against js-tiktoken's own encoder, on both encodings: the same
// count for prose, code, CJK, emoji, numbers, whitespace runs and random strings; a piece longer
// than the merge limit counts at least as many tokens; special-token text is ordinary text.
import t from 'tap'
import { Tiktoken } from 'js-tiktoken/lite'
import { encodingFor, tokenCounter, type EncodingName } from '../../core/tokens/tokenizer.ts'

const SAMPLES: Array<[string, string]> = [
  ['English prose', 'The quick brown fox jumps over the lazy dog. It\'s what they\'ve said; we\'ll see!\n\n'],
  ['code', 'export async function f (x: number): Promise<void> {\n  for (let i = 0; i < x; i++) console.log(`${i}: ${x * 2}`)\n}\n\tconst re = /^[a-z]+$/i\n'],
  ['Chinese', '编码代理现在是模型网关最重要的用户之一。它们发送很长的提示词，其中包含代码和说明。'],
  ['Japanese and Korean', 'こんにちは、世界！今日はいい天気ですね。안녕하세요 세계, 오늘 날씨가 좋네요.'],
  ['emoji and accents', 'Grüße aus Köln 👋🏽 — naïve café, 🇫🇷 et ça va? ✨✨✨'],
  ['numbers', 'Order 1234567890 costs $42,000.99 on 2026-08-21 at 13:45:07 (+0200); pi=3.14159265358979'],
  ['whitespace runs', 'a    b\t\t\tc\n\n\n\n   \n  d          e\r\n\r\nf'],
  ['random strings', Array.from({ length: 60 }, (_, i) => (i * 7919 % 104729).toString(36) + 'x9Qz_' + (i * 31).toString(16)).join('')],
  ['base64', 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='],
  ['JSON', JSON.stringify({ type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] })],
]

async function reference (name: EncodingName): Promise<Tiktoken> {
  const ranks = name === 'o200k_base' ? (await import('js-tiktoken/ranks/o200k_base')).default : (await import('js-tiktoken/ranks/cl100k_base')).default
  return new Tiktoken(ranks)
}

for (const name of ['o200k_base', 'cl100k_base'] as const) {
  t.test(`${name} – the same counts as js-tiktoken`, async t => {
    const ref = await reference(name)
    const counter = await tokenCounter(name)
    t.equal(counter.encoding, name)
    for (const [label, text] of SAMPLES) {
      t.equal(counter.count(text), ref.encode(text).length, label)
      const long = text.repeat(20)
      t.equal(counter.count(long), ref.encode(long).length, `${label}, 20 times`)
    }
    t.equal(counter.count(''), 0, 'empty text')
  })
}

t.test('a piece longer than the merge limit counts at least as many tokens as js-tiktoken', async t => {
  const ref = await reference('o200k_base')
  const counter = await tokenCounter('o200k_base')
  const run = '编码代理现在是模型网关最重要的用户之一'.repeat(30) // one piece: no punctuation or space
  const want = ref.encode(run).length
  const got = counter.count(run)
  t.ok(got >= want, `${got} ≥ ${want}`)
  t.ok(got <= want * 1.05, 'and only a few more')
})

t.test('special-token text is counted as text (js-tiktoken would throw)', async t => {
  const counter = await tokenCounter('o200k_base')
  t.ok(counter.count('before <|endoftext|> after') > 3)
})

t.test('encodingFor – OpenAI families and the approximation for other vendors', async t => {
  t.equal(encodingFor('openai/gpt-4o-mini'), 'o200k_base')
  t.equal(encodingFor('o3'), 'o200k_base')
  t.equal(encodingFor('gpt-4-turbo'), 'cl100k_base')
  t.equal(encodingFor('claude-sonnet-4-5'), 'o200k_base')
  t.equal(await tokenCounter('cl100k_base'), await tokenCounter('cl100k_base'), 'loaded once')
})
