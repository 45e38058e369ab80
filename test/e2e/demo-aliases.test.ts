import t from 'tap'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { buildTestApp, listen } from '../helpers/build-test-app.ts'
import { embeddedDefault, DEMO_ALIASES } from '../../core/config/default-config.ts'

// The embedded default answers the model names coding agents send when none is chosen, each with
// the echo model of its own protocol, so `claude -p hi` and `codex exec hi` need no flags.
t.test('the embedded default maps Claude and OpenAI model names to echo models', async t => {
  const KEY = 'sk-gw-demo-aliases'
  const doc = embeddedDefault(KEY)
  const app = await buildTestApp({ doc, pipeline: doc.pipeline as unknown[] })
  const base = await listen(app)
  t.teardown(() => app.close())
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 })
  const anthropic = new Anthropic({ baseURL: base, authToken: KEY, apiKey: null, maxRetries: 0 })

  for (const name of ['claude-opus-5-5', 'claude-sonnet-5-5', 'claude-haiku-5-5', 'claude-sonnet-4-5']) {
    t.equal(DEMO_ALIASES[name], 'msgvendor/echo-1')
    const { data, response } = await anthropic.messages.create({ model: name, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).withResponse()
    t.same(data.content, [{ type: 'text', text: 'Echo: hi' }], name)
    t.equal(response.headers.get('x-gw-model'), 'msgvendor/echo-1')
  }
  for (const name of ['gpt-6.2-sol', 'gpt-6.1-sol', 'gpt-5', 'gpt-5-codex', 'gpt-4o', 'o3', 'o4-mini']) {
    t.equal(DEMO_ALIASES[name], 'echo/echo-1')
    const r = await openai.responses.create({ model: name, input: 'hi', store: false })
    t.equal(r.output_text, 'Echo: hi', name)
    const c = await openai.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }] })
    t.equal(c.choices[0].message.content, 'Echo: hi')
  }
  const ids: string[] = []
  for await (const m of openai.models.list()) ids.push(m.id)
  t.same(ids, ['echo/echo-1', 'echo/echo-text', 'msgvendor/echo-1'], 'aliases are not listed')
})
