/**
 * The OpenAI Agents SDK (`@openai/agents`) against a listening gateway, offline: an agent with one
 * function tool runs to completion over the Responses API (`OpenAIResponsesModel` with an OpenAI
 * client whose baseURL is the gateway), on a chat upstream and on a messages upstream, streamed and
 * not. The loopback fake upstream answers first with a tool call, then (seeing the tool's result)
 * with text.
 */
import t from 'tap'
import OpenAI from 'openai'
import { Agent, run, tool, OpenAIResponsesModel, setTracingDisabled } from '@openai/agents'
import { buildTestApp, listen, TEST_KEY, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json, sse, chatChunk, chatUsageChunk, chatTextStream, chatCompletion, messagesTextStream, messagesResponse, msgEvent, DONE, type Recorded } from '../helpers/fake-upstream.ts'
import type { ServerResponse } from 'node:http'

// Traces would be exported to api.openai.com: this suite never leaves loopback.
setTracingDisabled(true)

const CITY_TEMP = '17 C and cloudy'

/** The tool result as the upstream received it (chat `tool` message or messages `tool_result`), if any. */
function toolResultIn (kind: 'chat' | 'messages', body: { messages: unknown }): string | undefined {
  if (kind === 'chat') {
    const m = (body.messages as { role: string, content: unknown }[]).find(x => x.role === 'tool')
    return m === undefined ? undefined : typeof m.content === 'string' ? m.content : JSON.stringify(m.content)
  }
  for (const m of body.messages as { role: string, content: string | { type: string, content?: unknown }[] }[]) {
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === 'tool_result') return typeof b.content === 'string' ? b.content : JSON.stringify(b.content)
    }
  }
  return undefined
}

function answer (kind: 'chat' | 'messages') {
  return (req: Recorded, res: ServerResponse) => {
    const stream = req.body.stream === true
    const result = toolResultIn(kind, req.body)
    const args = JSON.stringify({ city: 'Oslo' })
    if (result === undefined) {
      if (kind === 'chat') {
        if (!stream) return json(res, 200, { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: args } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 40, completion_tokens: 8, total_tokens: 48 } })
        return sse(res, [
          chatChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
          chatChunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }),
          chatChunk({}, 'tool_calls'), chatUsageChunk(40, 8), DONE,
        ])
      }
      if (!stream) return json(res, 200, { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [{ type: 'tool_use', id: 'toolu_w1', name: 'get_weather', input: { city: 'Oslo' } }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 40, output_tokens: 8 } })
      return sse(res, [
        msgEvent('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 40, output_tokens: 1 } } }),
        msgEvent('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_w1', name: 'get_weather', input: {} } }),
        msgEvent('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: args } }),
        msgEvent('content_block_stop', { index: 0 }),
        msgEvent('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 8 } }),
        msgEvent('message_stop', {}),
      ])
    }
    const text = `Oslo: ${result.includes(CITY_TEMP) ? CITY_TEMP : 'unknown'}.`
    if (kind === 'chat') return stream ? sse(res, chatTextStream([text.slice(0, 5), text.slice(5)])) : json(res, 200, chatCompletion(text))
    return stream ? sse(res, messagesTextStream([text.slice(0, 5), text.slice(5)])) : json(res, 200, messagesResponse(text))
  }
}

t.test('an agent with one function tool runs to completion through the gateway', async t => {
  const chatUp = await startFakeUpstream(answer('chat'))
  const msgUp = await startFakeUpstream(answer('messages'))
  const app = await buildTestApp({ doc: upstreamDoc(chatUp.origin, msgUp.origin), pipeline: [AUTH_ENTRY] })
  const url = await listen(app)
  t.teardown(async () => { await app.close(); await chatUp.close(); await msgUp.close() })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 })

  for (const [kind, modelId, up] of [['chat', 'vendor/chat-model', chatUp], ['messages', 'msgvendor/msg-model', msgUp]] as const) {
    for (const stream of [false, true]) {
      const calls: unknown[] = []
      const getWeather = tool({
        name: 'get_weather',
        description: 'Current weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        strict: true,
        execute: async (input: unknown) => { calls.push(input); return CITY_TEMP },
      })
      const agent = new Agent({ name: 'weather', instructions: 'Answer with the weather tool.', model: new OpenAIResponsesModel(client as never, modelId), tools: [getWeather] })
      const before = up.requests.length
      let final: unknown
      if (stream) {
        const r = await run(agent, 'Weather in Oslo?', { stream: true, maxTurns: 4 })
        let events = 0
        for await (const _ev of r) events++
        await r.completed
        t.ok(events > 0, `${kind} stream: events relayed`)
        final = r.finalOutput
      } else {
        final = (await run(agent, 'Weather in Oslo?', { maxTurns: 4 })).finalOutput
      }
      const label = `${kind} upstream, stream ${stream}`
      t.same(calls, [{ city: 'Oslo' }], `${label}: the tool ran once with the model's arguments`)
      t.equal(final, `Oslo: ${CITY_TEMP}.`, `${label}: the final answer is the upstream's text after the tool result`)
      const reqs = up.requests.slice(before)
      t.equal(reqs.length, 2, `${label}: two model calls`)
      t.equal(reqs[0]!.body.model, 'up-model')
      const toolNames = (reqs[0]!.body.tools as { name?: string, function: { name: string } }[]).map(x => kind === 'chat' ? x.function.name : x.name)
      t.same(toolNames, ['get_weather'], `${label}: the tool reached the upstream`)
      t.match(toolResultIn(kind, reqs[1]!.body), CITY_TEMP, `${label}: the tool's result went back upstream`)
      t.equal(reqs[1]!.body.stream === true, stream)
    }
  }
})
