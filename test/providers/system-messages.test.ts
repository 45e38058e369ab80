import t from 'tap'
import { foldSystemMessages, hasSystemMessage } from '../../providers/anthropic-compatible/system-messages.ts'

t.test('hasSystemMessage finds a system turn anywhere in the list', async t => {
  t.equal(hasSystemMessage({ messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }] }), true)
  t.equal(hasSystemMessage({ messages: [{ role: 'user', content: 'a' }] }), false)
  t.equal(hasSystemMessage({ messages: 'nope' }), false)
  t.equal(hasSystemMessage({ messages: [null, 3] }), false)
})

t.test('foldSystemMessages: the turns join the end of system, in order, as text blocks', async t => {
  const body = {
    model: 'm', max_tokens: 5, system: 'Be brief.',
    messages: [
      { role: 'system', content: 'first' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: [{ type: 'text', text: 'second', cache_control: { type: 'ephemeral' } }, { type: 'text', text: '' }], output_config: { effort: 'low' } },
      { role: 'assistant', content: 'ok' },
    ],
  }
  const folded = foldSystemMessages(body)
  t.same(folded.system, [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'first' }, { type: 'text', text: 'second', cache_control: { type: 'ephemeral' } }], 'empty text blocks are left out (the API refuses them)')
  t.same(folded.messages, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'ok' }])
  t.equal(folded.max_tokens, 5, 'other fields kept')
  t.equal(body.messages.length, 4, 'the given body is not changed')
  t.notOk('system' in foldSystemMessages({ messages: [{ role: 'system', content: '' }, { role: 'user', content: 'x' }] }), 'nothing to fold: no system field')
})
