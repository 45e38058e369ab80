/**
 * @module testing/golden – golden translation cases for the conformance suite: a client body on one
 * route and what the upstream must receive, per upstream protocol. Expectations are partial (only
 * the keys listed are compared) so adapter-specific additions pass; dialect settings such as
 * `systemRole` or `maxTokensField` are left out on purpose.
 */
import type { Protocol } from '../core/types/model.ts'

export interface GoldenCase {
  name: string
  client: Protocol
  upstream: Protocol
  body: Record<string, unknown>
  /** A partial upstream body: objects match by the keys listed, arrays element by element. */
  expect: Record<string, unknown>
}

const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }

export const GOLDEN_CASES: readonly GoldenCase[] = [
  {
    name: 'chat → chat: the body passes with its standard parameters',
    client: 'chat', upstream: 'chat',
    body: { temperature: 0.2, stop: ['END'], messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] },
    expect: { temperature: 0.2, stop: ['END'], messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }] },
  },
  {
    name: 'messages → chat: system first, tools as functions, tool_use and tool_result as tool_calls and tool messages',
    client: 'messages', upstream: 'chat',
    body: {
      system: 'be brief',
      tools: [{ name: 'get_weather', description: 'Weather now', input_schema: WEATHER_SCHEMA }],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }] },
      ],
    },
    expect: {
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }],
      messages: [
        { content: 'be brief' },
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      ],
    },
  },
  {
    name: 'chat → messages: system moved out, stop as stop_sequences, tools with input_schema, an output cap set',
    client: 'chat', upstream: 'messages',
    body: {
      stop: ['END'],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: WEATHER_SCHEMA } }],
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
    },
    expect: {
      system: 'be brief',
      stop_sequences: ['END'],
      tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }],
      messages: [{ role: 'user' }],
    },
  },
  {
    name: 'messages → messages: the body passes with system, tools and the output cap',
    client: 'messages', upstream: 'messages',
    body: { system: 'be brief', tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }], messages: [{ role: 'user', content: 'hi' }] },
    expect: { system: 'be brief', max_tokens: 64, tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }], messages: [{ role: 'user', content: 'hi' }] },
  },
]

/** undefined when `actual` matches the partial `expected`; otherwise where and how it differs. */
export function matches (actual: unknown, expected: unknown, path = ''): string | undefined {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path || '/'}: expected an array, got ${JSON.stringify(actual)}`
    if (actual.length !== expected.length) return `${path || '/'}: expected ${expected.length} items, got ${actual.length}`
    for (let i = 0; i < expected.length; i++) {
      const m = matches(actual[i], expected[i], `${path}/${i}`)
      if (m) return m
    }
    return undefined
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return `${path || '/'}: expected an object, got ${JSON.stringify(actual)}`
    for (const [k, v] of Object.entries(expected)) {
      const m = matches((actual as Record<string, unknown>)[k], v, `${path}/${k}`)
      if (m) return m
    }
    return undefined
  }
  return Object.is(actual, expected) ? undefined : `${path || '/'}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`
}
