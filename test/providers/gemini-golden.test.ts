/**
 * @module test/providers/gemini-golden – golden cases for the gemini adapter's pairs (chat,
 * messages and Responses clients → Gemini), one per row of test/fixtures/gemini/golden.json:
 * the client's request through a listening gateway, the exact Gemini body the fake received, the
 * scripted Gemini answer, and what the client got back.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { TEST_KEY } from '../helpers/build-test-app.ts'
import { geminiSetup, lastGenerate } from '../helpers/gemini-setup.ts'
import type { GeminiAnswer } from '../../testing.ts'

interface GoldenRow {
  name: string
  route: string
  request: Record<string, unknown>
  gemini: Record<string, unknown>
  answer: GeminiAnswer
  client: Record<string, unknown>
}

const ROWS = JSON.parse(readFileSync(new URL('../fixtures/gemini/golden.json', import.meta.url), 'utf8')) as GoldenRow[]

t.test('gemini golden cases', async t => {
  // History from elsewhere carries no signatures: this table checks the translation, not them.
  const { fake, base } = await geminiSetup(t, { requireSignatures: false })
  for (const row of ROWS) {
    t.test(row.name, async t => {
      fake.next(row.answer)
      const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` }
      if (row.route === '/v1/messages') headers['anthropic-version'] = '2023-06-01'
      const res = await fetch(base + row.route, { method: 'POST', headers, body: JSON.stringify(row.request) })
      const body = await res.json() as Record<string, unknown>
      t.equal(res.status, 200, JSON.stringify(body).slice(0, 300))
      t.same(lastGenerate(fake).body, row.gemini, 'the Gemini body')
      t.match(body, row.client, 'the client\'s answer')
    })
  }
})
