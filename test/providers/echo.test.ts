import t from 'tap'
import { argumentsFor } from '../../providers/echo/arguments.ts'
import { answer, toolTrigger } from '../../providers/echo/answer.ts'
import { readPrompt } from '../../providers/echo/prompt.ts'

t.test('argumentsFor: required properties get values of their declared type', async t => {
  // Codex's exec_command: a missing `cmd` fails its parse ("missing field `cmd`").
  t.same(argumentsFor({
    type: 'object',
    properties: { cmd: { type: 'string' }, workdir: { type: 'string' }, yield_time_ms: { type: 'number' } },
    required: ['cmd'], additionalProperties: false,
  }, 'ls -la'), { cmd: 'ls -la' })
  t.same(argumentsFor({
    type: 'object',
    properties: {
      command: { type: 'array', items: { type: 'string' } },
      timeout: { type: 'integer', minimum: 1000, maximum: 600000 },
      ratio: { type: 'number', exclusiveMinimum: 2 },
      small: { type: 'integer', maximum: 0 },
      step: { type: 'integer', minimum: 3, multipleOf: 5 },
      dry: { type: 'boolean' },
      mode: { type: 'string', enum: ['fast', 'slow'] },
      kind: { const: 'shell' },
      when: { type: 'string', format: 'date-time' },
      short: { type: 'string', maxLength: 3 },
      long: { type: 'string', minLength: 8 },
      maybe: { type: ['string', 'null'] },
      nothing: { type: 'null' },
      opts: { type: 'object', properties: { depth: { type: 'integer' }, tag: { type: 'string' }, free: { type: 'string' } }, required: ['depth', 'tag'] },
      pairs: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } }, required: ['k'] }, minItems: 2 },
      withDefault: { type: 'integer', default: 7 },
    },
    required: ['command', 'timeout', 'ratio', 'small', 'step', 'dry', 'mode', 'kind', 'when', 'short', 'long', 'maybe', 'nothing', 'opts', 'pairs', 'withDefault'],
  }, 'echo hi'), {
    command: ['echo hi'], timeout: 1000, ratio: 2.5, small: 0, step: 5, dry: false, mode: 'fast', kind: 'shell',
    when: '1970-01-01T00:00:00Z', short: 'ech', long: 'echo hi.', maybe: 'echo hi', nothing: null,
    opts: { depth: 1, tag: 'echo hi' }, pairs: [{ k: 'echo hi' }, { k: 'echo hi' }], withDefault: 7,
  })
})

t.test('argumentsFor: $ref, anyOf/oneOf, allOf and untyped schemas', async t => {
  t.same(argumentsFor({
    type: 'object',
    $defs: { Place: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'integer' } }, required: ['city', 'zip'] } },
    properties: { place: { $ref: '#/$defs/Place' }, unit: { anyOf: [{ type: 'null' }, { type: 'string', enum: ['c', 'f'] }] }, n: { oneOf: [{ type: 'integer', minimum: 4 }, { type: 'string' }] } },
    required: ['place', 'unit', 'n'],
  }, 'Oslo'), { place: { city: 'Oslo', zip: 1 }, unit: 'c', n: 4 })
  t.same(argumentsFor({ allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'boolean' } }, required: ['b'] }] }, 'x'), { a: 'x', b: false })
  // A recursive schema ends (at the depth bound) instead of looping.
  const tree = argumentsFor({ type: 'object', properties: { node: { $ref: '#' }, name: { type: 'string' } }, required: ['node'] }, 'leaf')
  t.type(tree, 'object')
})

t.test('argumentsFor: where the text goes when nothing required takes it', async t => {
  // The first optional string takes the text (the demo tools of the README declare { text } unrequired).
  t.same(argumentsFor({ type: 'object', properties: { n: { type: 'integer' }, text: { type: 'string' } } }, 'find Oslo'), { text: 'find Oslo' })
  t.same(argumentsFor({ type: 'object', properties: { mode: { type: 'string', enum: ['a'] }, q: { type: 'string' } } }, 'x'), { q: 'x' })
  // No properties: { text } unless extra properties are forbidden.
  t.same(argumentsFor({ type: 'object' }, 'hi'), { text: 'hi' })
  t.same(argumentsFor(undefined, 'hi'), { text: 'hi' })
  t.same(argumentsFor({ type: 'object', properties: {}, additionalProperties: false }, 'hi'), {})
  // A required string took the text: no optional one is added.
  t.same(argumentsFor({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['b'] }, 'hi'), { b: 'hi' })
})

t.test('toolTrigger: "/tool" wherever it stands in the last user text', async t => {
  t.equal(toolTrigger(['/tool find Oslo']), 'find Oslo')
  t.equal(toolTrigger(['<system-reminder>\nuse tools wisely\n</system-reminder>', 'please /tool ls -la\nthanks']), 'ls -la')
  t.equal(toolTrigger(['# AGENTS.md\nrules\n<environment_context>cwd</environment_context>\n/tool pwd']), 'pwd')
  t.equal(toolTrigger(['/tool']), '')
  t.equal(toolTrigger(['/tool first', '/tool second']), 'second', 'the last one wins')
  t.equal(toolTrigger(['see /toolbox or a/tool x']), undefined, 'only the word "/tool" triggers')
  t.equal(toolTrigger(['no trigger']), undefined)
})

const bash = { name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' }, timeout: { type: 'number', maximum: 600000 }, description: { type: 'string' } }, required: ['command'] } }
const read = { name: 'Read', input_schema: { type: 'object', properties: { file_path: { type: 'string' }, limit: { type: 'integer' } }, required: ['file_path'] } }

t.test('answer: a messages request with prepended context calls the tool the trigger names', async t => {
  const prompt = readPrompt({
    model: 'm', max_tokens: 100, tools: [read, bash],
    messages: [{ role: 'user', content: [{ type: 'text', text: '<system-reminder>\nAs you answer, use the context.\n</system-reminder>' }, { type: 'text', text: '/tool Bash echo hi' }] }],
  }, 'messages')
  const a = answer(prompt, 'seed')
  t.equal(a.stop, 'tool')
  t.equal(a.toolCall?.name, 'Bash')
  t.same(JSON.parse(a.toolCall!.arguments), { command: 'echo hi' })
  // Without a tool name the first tool is called.
  const first = answer(readPrompt({ messages: [{ role: 'user', content: 'ctx\n/tool a.txt' }], tools: [read, bash] }, 'messages'), 's')
  t.equal(first.toolCall?.name, 'Read')
  t.same(JSON.parse(first.toolCall!.arguments), { file_path: 'a.txt' })
})

t.test('answer: a chat request (Codex shape) calls with schema-built arguments', async t => {
  const tools = [{ type: 'function', function: { name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' }, yield_time_ms: { type: 'number' } }, required: ['cmd'], additionalProperties: false } } }]
  const a = answer(readPrompt({
    model: 'm', tools,
    messages: [
      { role: 'system', content: 'You are Codex.' },
      { role: 'user', content: '# AGENTS.md instructions\nbe brief' },
      { role: 'user', content: '<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>\n/tool echo codex-42' },
    ],
  }, 'chat'), 'seed')
  t.equal(a.toolCall?.name, 'exec_command')
  t.same(JSON.parse(a.toolCall!.arguments), { cmd: 'echo codex-42' })
  // A trigger in an earlier user turn does not fire; nor does one once the tool answered.
  t.equal(answer(readPrompt({ tools, messages: [{ role: 'user', content: '/tool ls' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'thanks' }] }, 'chat'), 's').stop, 'stop')
  const after = answer(readPrompt({ tools, messages: [{ role: 'user', content: '/tool ls' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'exec_command', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c', content: 'a.txt' }] }, 'chat'), 's')
  t.equal(after.stop, 'stop')
  t.equal(after.pieces.join(''), 'Echo: tool said a.txt')
  // A named tool_choice picks the tool; the word naming it is dropped from the text.
  const named = answer(readPrompt({ tools: [...tools, { type: 'function', function: { name: 'other', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }], tool_choice: { type: 'function', function: { name: 'other' } }, messages: [{ role: 'user', content: '/tool other zz' }] }, 'chat'), 's')
  t.equal(named.toolCall?.name, 'other')
  t.same(JSON.parse(named.toolCall!.arguments), { q: 'zz' })
})
