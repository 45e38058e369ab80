/**
 * @module test/helpers/gemini-conformance – what the conformance runs of the Gemini wire share
 * (the `gemini` adapter, and the `vertex` adapter's Gemini models): the golden cases Gemini cannot
 * pass by design, each with its reason, and a check of the tool-loop cases that fail only on their
 * tool_use ids, run with the ids Gemini's order gives them.
 */
import type { ProviderAdapter } from '../../core/dispatch/provider.ts'
import { rig, answerLike, ROUTES } from '../../testing/conformance-rig.ts'
import { GOLDEN_CASES, RESPONSES_GOLDEN_CASES, matches, standardUsage, type ConformanceWire } from '../../testing.ts'

const IDS = 'the adapter sends no function-call ids (documented: Gemini pairs function responses with their calls by order), so the client\'s tool_use ids cannot reach ' +
  'Gemini; checked with the ids the order gives by checkToolLoopCases'
const PARALLEL = 'Gemini has no switch for parallel function calls'
const TITLE = 'Gemini\'s inlineData has no file name: the document\'s title cannot reach Gemini'
const FINISH_TOOL_USE = 'Gemini has no tool-use finish reason: STOP reads as tool_use only when the answer calls functions, and this one (text only) calls none'
const PAUSE = 'Gemini has no paused turn (a pause of Anthropic\'s server tools); a finish reason Gemini does not have fails the call by design (documented: never a silent stop)'
const UNKNOWN = 'an unknown Gemini finish reason fails the call by design (documented: 502 or the stream\'s error event, never a silent stop), where the messages protocol reads an ' +
  'unknown stop_reason as a plain stop'
const REDACTED = 'Gemini has no redacted thinking, and its thought signatures reach clients wrapped (gw-gemini:…, documented), not as the upstream sent them'
const WHOLE_CALLS = 'Gemini sends a function call whole: its arguments arrive in one piece, not in the fragments the case streams'

/** Golden cases Gemini cannot pass by design: the API lacks the feature, or the adapter documents another mapping. */
export const GEMINI_UNSUPPORTED: Readonly<Record<string, string>> = {
  // requests
  'chat → messages: parallel_tool_calls false becomes disable_parallel_tool_use': PARALLEL,
  'messages → messages: tool_choice and stop_sequences pass': `${PARALLEL} (disable_parallel_tool_use); tool_choice and stop_sequences are checked by the cases without it`,
  'chat → messages: two tool_calls become tool_use blocks; their tool messages one user turn of tool_results': IDS,
  'messages → messages: parallel tool_use blocks and their tool_results pass': IDS,
  'chat → messages: reasoning_effort in a tool loop (the last assistant turn called tools, with no thinking block to give back) sends no thinking': IDS,
  'responses → messages: the same turns as tool_use and tool_result blocks': IDS,
  'responses → messages: a custom_tool_call given back is a tool_use whose input holds it; its output a tool_result': IDS,
  'responses → messages: a text-only function_call_output stays a string': IDS,
  'responses → messages: text and an image in a function_call_output become the tool_result\'s content blocks': 'a functionResponse holds JSON: the adapter sends the ' +
    'image as an inlineData part after it (documented); and the ids, as in the other tool-loop cases',
  'messages → messages: image blocks (URL and base64) and a PDF document pass': TITLE,
  'responses → messages: input_image by URL and by data URI become image blocks (image/jpg read as what the bytes are), an input_file PDF a document block': TITLE,
  'messages → messages: thinking and redacted_thinking blocks go back unchanged and in order with the tool_use': 'Gemini cannot read another vendor\'s reasoning: thinking ' +
    'blocks without a Gemini thought signature and redacted_thinking are left out (documented)',
  'messages → messages: cache_control on system, tools and message blocks reaches the upstream untouched': 'Gemini has no cache_control breakpoints (it caches ' +
    'implicitly or through cachedContents): the adapter leaves cache_control out (documented)',
  // answers
  'messages → messages: thinking and redacted_thinking blocks pass before the text': REDACTED,
  'chat ← messages: thinking blocks become message.reasoning_content (redacted_thinking has no text to show) and, whole, thinking_blocks': REDACTED,
  'responses ← messages: each thinking block is a reasoning item before the message (redacted_thinking has no text)': 'Gemini has no redacted thinking',
  'chat ← messages: stop_reason tool_use becomes finish_reason tool_calls': FINISH_TOOL_USE,
  'chat ← messages: stop_reason pause_turn becomes finish_reason stop': PAUSE,
  'chat ← messages: stop_reason something_new becomes finish_reason stop': UNKNOWN,
  // streams
  'messages → messages: a thinking block with its signature, then text, passes': REDACTED,
  'chat ← messages: a thinking block streams as reasoning_content deltas before the text; each block comes whole in thinking_blocks when it ends (signed, redacted)': REDACTED,
  'messages → messages: streamed parallel tool_use blocks pass': WHOLE_CALLS,
  'chat ← messages: streamed tool_use blocks become tool_calls indexed from 0': WHOLE_CALLS,
  'responses ← messages stream: text then a namespaced tool_use': WHOLE_CALLS,
  'chat ← messages: streamed stop_reason tool_use becomes finish_reason tool_calls': FINISH_TOOL_USE,
  'chat ← messages: streamed stop_reason pause_turn becomes finish_reason stop': PAUSE,
  'chat ← messages: streamed stop_reason something_new becomes finish_reason stop': UNKNOWN,
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * `expected` with each tool_use id and tool_result `tool_use_id` replaced by the id at the same
 * place in `actual`, one expected id always becoming the same actual id (so a result still has to
 * answer the call it answered).
 */
function withActualIds (expected: unknown, actual: unknown, ids: Map<string, string>): unknown {
  if (Array.isArray(expected)) return expected.map((e, i) => withActualIds(e, Array.isArray(actual) ? actual[i] : undefined, ids))
  if (!isObj(expected)) return expected
  const a = isObj(actual) ? actual : {}
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(expected)) {
    const isId = k === 'tool_use_id' || (k === 'id' && expected.type === 'tool_use')
    if (isId && typeof v === 'string' && typeof a[k] === 'string') {
      if (!ids.has(v)) ids.set(v, a[k] as string)
      out[k] = ids.get(v)
    } else out[k] = withActualIds(v, a[k], ids)
  }
  return out
}

/** The golden request cases marked unsupported for their ids alone. */
export const ID_ONLY_CASES = [...GOLDEN_CASES, ...RESPONSES_GOLDEN_CASES.map(c => ({ ...c, client: 'responses' as const }))]
  .filter(c => c.upstream === 'messages' && GEMINI_UNSUPPORTED[c.name] === IDS)

/** Throws unless every id-only case reaches the upstream as its golden case says, ids aside (distinct calls keep distinct ids). */
export async function checkToolLoopCases (adapter: ProviderAdapter, config: (baseUrl: string) => Record<string, unknown>, wire: ConformanceWire,
  deploymentModel?: string): Promise<number> {
  const r = await rig(adapter, config, wire, deploymentModel)
  try {
    r.handle(answerLike('messages', u => standardUsage('messages', u)))
    for (const c of ID_ONLY_CASES) {
      const res = await r.app.inject({ method: 'POST', url: ROUTES[c.client].url, payload: ROUTES[c.client].body(c.body) })
      const seen = r.requests.at(-1)
      if (seen === undefined || res.statusCode !== 200 || seen.refused !== undefined) throw new Error(`${c.name}: ${res.statusCode} ${seen?.refused ?? res.payload.slice(0, 300)}`)
      const ids = new Map<string, string>()
      const miss = matches(seen.body, withActualIds(c.expect, seen.body, ids))
      if (miss !== undefined) throw new Error(`${c.name}: ${miss}`)
      if (new Set(ids.values()).size !== ids.size) throw new Error(`${c.name}: two calls got one id: ${JSON.stringify([...ids])}`)
    }
    return ID_ONLY_CASES.length
  } finally {
    await r.close()
  }
}
