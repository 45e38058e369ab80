/**
 * The local counter of count_tokens reads a bounded amount of text: about LOCAL_COUNT_MAX_CHARS
 * characters are handed to the tokenizer however large the body is or however many strings it
 * holds, and text within the bound is counted whole.
 */
import t from 'tap'
import { countInputTokensWith, countInputTokens, LOCAL_COUNT_MAX_CHARS, MESSAGE_OVERHEAD } from '../../core/tokens/local-count.ts'
import { tokenCounter, type TokenCounter } from '../../core/tokens/tokenizer.ts'

/** A counter that counts one token per character and records how many characters it was given. */
function spy (): TokenCounter & { read: number, calls: number } {
  return {
    encoding: 'o200k_base',
    read: 0,
    calls: 0,
    count (text: string) { this.read += text.length; this.calls++; return text.length },
  }
}

t.test('one 15 MB string: at most the bound is tokenized, the count scaled to the whole', async t => {
  const text = 'x'.repeat(15_000_000)
  const c = spy()
  const n = countInputTokensWith(c, { messages: [{ role: 'user', content: text }] })
  t.ok(c.read <= LOCAL_COUNT_MAX_CHARS + 64, `read ${c.read} characters`)
  t.ok(Math.abs(n - 15_000_000 - MESSAGE_OVERHEAD) < 100, `counted ${n}`)
})

t.test('a million short strings cost no more than one long one', async t => {
  const content = Array.from({ length: 1_000_000 }, (_, i) => ({ type: 'text', text: `w${i % 10}` }))
  const c = spy()
  const n = countInputTokensWith(c, { system: 'sys', messages: [{ role: 'user', content }], tools: [{ name: 'a', description: 'b', input_schema: {} }] })
  t.ok(c.read <= LOCAL_COUNT_MAX_CHARS + 64, `read ${c.read} characters`)
  t.ok(c.calls <= 64, `${c.calls} tokenizer calls`)
  t.ok(n > 2_000_000, `counted ${n}`)
})

t.test('within the bound every string is counted whole, as before', async t => {
  const c = spy()
  const body = { system: 'abc', messages: [{ role: 'user', content: 'y'.repeat(LOCAL_COUNT_MAX_CHARS - 3) }] }
  t.equal(countInputTokensWith(c, body), LOCAL_COUNT_MAX_CHARS + MESSAGE_OVERHEAD)
  t.equal(c.read, LOCAL_COUNT_MAX_CHARS)
  const real = await tokenCounter('o200k_base')
  t.equal(await countInputTokens({ messages: [{ role: 'user', content: 'hello world' }] }, 'gpt-4o'), real.count('hello world') + MESSAGE_OVERHEAD)
})
