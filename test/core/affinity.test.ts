// Session affinity's pure parts: what names a session, the stable prefix's bound, and where a pin
// may move a deployment (only ahead of its equals).
import t from 'tap'
import { Affinity, PREFIX_CHARS, sessionMaterial, stablePrefix } from '../../core/dispatch/affinity.ts'

const d = (provider: string, priority = 0) => ({ provider, upstreamModel: 'm', priority, weight: 1 })

t.test('the client\'s own session id wins over the prompt; prompt_cache_key first, then the session headers, then metadata.user_id', async t => {
  const body = { prompt_cache_key: 'pck', metadata: { user_id: 'u' }, messages: [{ role: 'user', content: 'hi' }] }
  t.equal(sessionMaterial('chat', body, { 'session-id': 'h' }), 'c:pck')
  t.equal(sessionMaterial('messages', { ...body, prompt_cache_key: undefined }, { 'x-claude-code-session-id': 'cc', 'session-id': 'h' }), 'h:cc')
  t.equal(sessionMaterial('responses', { input: 'x' }, { session_id: 'old-codex' }), 'h:old-codex', 'older Codex releases: session_id')
  t.equal(sessionMaterial('responses', { input: 'x' }, { conversation_id: 'conv' }), 'h:conv')
  t.equal(sessionMaterial('messages', { ...body, prompt_cache_key: undefined }, {}), 'u:u')
  t.match(sessionMaterial('messages', { messages: [{ role: 'user', content: 'hi' }] }, {}), /^p:/, 'else the prompt prefix')
  t.equal(sessionMaterial('chat', { prompt_cache_key: 'x'.repeat(5000) }, {}).length, 2 + 512, 'an id is read up to 512 characters')
})

t.test('the stable prefix: system, tools and the first message; bounded; later turns do not change it', async t => {
  const system = 'S'.repeat(50_000)
  const tools = [{ name: 'bash', description: 'run', input_schema: { type: 'object', properties: { cmd: { type: 'string' } } } }]
  const turn1 = { system, tools, messages: [{ role: 'user', content: 'first' }] }
  const turn3 = { system, tools, max_tokens: 9, messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'second' }] }
  const p1 = stablePrefix('messages', turn1)
  t.equal(stablePrefix('messages', turn3), p1, 'a later turn of the conversation has the same prefix')
  t.not(stablePrefix('messages', { ...turn1, messages: [{ role: 'user', content: 'other' }] }), p1, 'another first message: another session')
  t.not(stablePrefix('messages', { ...turn1, tools: [] }), p1, 'other tools: another prefix')
  t.ok(p1.length < 3 * PREFIX_CHARS + 100, `each part is bounded (${p1.length} characters for a 50 000-character system prompt)`)
  t.equal(stablePrefix('chat', { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }, { role: 'assistant', content: 'x' }] }),
    stablePrefix('chat', { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] }), 'chat: the system messages and the first user message')
  t.not(stablePrefix('chat', { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u1' }] }),
    stablePrefix('chat', { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u2' }] }))
  t.equal(stablePrefix('responses', { instructions: 'i', input: 'hello' }), stablePrefix('responses', { instructions: 'i', input: 'hello', previous_response_id: 'r' }))
})

t.test('session keys are scoped by organization, else by key, and by model', async t => {
  const org = { keyId: 'k1', organization: 'o' }
  t.equal(Affinity.keyOf(org, 'm', 'h:s'), Affinity.keyOf({ keyId: 'k2', organization: 'o' }, 'm', 'h:s'), 'keys of one organization share their sessions')
  t.not(Affinity.keyOf(org, 'm', 'h:s'), Affinity.keyOf({ keyId: 'k1' }, 'm', 'h:s'))
  t.not(Affinity.keyOf({ keyId: 'k1' }, 'm', 'h:s'), Affinity.keyOf({ keyId: 'k2' }, 'm', 'h:s'))
  t.not(Affinity.keyOf(org, 'm', 'h:s'), Affinity.keyOf(org, 'm2', 'h:s'))
})

t.test('a pin moves its deployment ahead of its equals only', async t => {
  const order = [d('a'), d('b'), d('c'), d('x', 1), d('y', 1)]
  t.same(Affinity.pinFirst(order, 'c/m').map(x => x.provider), ['c', 'a', 'b', 'x', 'y'])
  t.same(Affinity.pinFirst(order, 'y/m').map(x => x.provider), ['a', 'b', 'c', 'y', 'x'], 'never ahead of a lower priority')
  t.equal(Affinity.pinFirst(order, 'gone/m'), order, 'a pin to a deployment no longer configured changes nothing')
  t.equal(Affinity.pinFirst(order, undefined), order)
})

t.test('the prefix walk stops at its bound however the part is made', async t => {
  const empties = Array.from({ length: 100_000 }, () => ({}))
  const a = { tools: [...empties, { name: 'a' }], messages: [{ role: 'user', content: 'x' }] }
  const b = { tools: [...empties, { name: 'b' }], messages: [{ role: 'user', content: 'x' }] }
  t.equal(stablePrefix('messages', a), stablePrefix('messages', b), 'what lies past 100 000 empty objects is not walked')
})
