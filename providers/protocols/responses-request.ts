/**
 * @module protocols/responses-request – an OpenAI Responses API client's request as a chat body:
 * the body sent to a chat upstream, or the intermediate one the chat → messages translator takes
 * toward a messages upstream; and what the call's answer needs from the request (CallInfo). The
 * answer side is in responses-answer.ts.
 *
 * Rules (stated in full here; the user-facing account is the Responses API section of docs/):
 * - stateless: `previous_response_id`, `conversation`, `background` and `item_reference` items are
 *   refused by the route or here (400); nothing is stored, `store` is accepted and ignored;
 * - `instructions`, system and developer messages → system messages (the upstream's system role);
 * - `function` tools → chat functions; `namespace` tools → one function per member named
 *   `<namespace>__<name>` (over 64 characters: the first 55, `_`, 8 hex of its sha256), mapped
 *   back to `name` + `namespace` in the answer; `custom` tools (free-form input, maybe under a
 *   grammar) → a function with one string parameter `input` (described by the tool's format), its
 *   call answered as a `custom_tool_call` whose `input` is that string, and `custom_tool_call` /
 *   `custom_tool_call_output` items given back → that call and its result; the tools of
 *   `additional_tools` input items join `tools`; built-in tools (`web_search`, `file_search`,
 *   `local_shell`, `mcp`, `tool_search`...) and tool choices naming them are dropped, never a 400;
 * - images and files: chat `image_url` / `file` parts toward a chat upstream; toward a messages
 *   upstream, messages `image` / `document` blocks (in user messages and in function_call_output,
 *   which becomes the tool_result's content), when the model lists the `image` / `file` modality;
 * - `reasoning` items given back: toward a messages upstream, one whose `encrypted_content` carries
 *   a thinking or redacted_thinking block (protocols/thinking.ts) becomes that block again, at the
 *   head of its assistant turn; other reasoning items, and all of them toward a chat upstream (no
 *   chat upstream takes signed reasoning back), are ignored; `include` decides whether answers show
 *   `encrypted_content` (`reasoning.encrypted_content`); `client_metadata`, `truncation`,
 *   `max_tool_calls` are ignored;
 * - `max_output_tokens` → the output cap, `text.format` → `response_format`, `reasoning.effort`
 *   → `reasoning_effort`, `text.verbosity` → `verbosity`.
 */
import { createHash } from 'node:crypto'
import { gwError, requestedOutputCap, type TranslateOptions } from '../../index.ts'
import { applyModelParameters, CHAT_STANDARD } from './common.ts'
import { documentBlock, imageBlock } from './media-blocks.ts'
import { isObject } from './wire.ts'
import { decodeThinking } from './thinking.ts'
import type { ChatContentPart, ChatFunctionTool, ChatMessage, ChatRequest, ChatToolCall } from './wire-chat.ts'
import type { ResponseEcho, ResponsesPartWire, ResponsesRequestWire, ResponsesToolChoiceWire, ResponsesToolWire } from './wire-responses.ts'

/** Upstream function names: OpenAI and Anthropic both accept `^[a-zA-Z0-9_-]{1,64}$`. */
const MAX_NAME = 64

/** What `request` learned of a call that its answer needs: the tool-name map and the fields a `response` object echoes. */
export interface CallInfo {
  /** Upstream function name → the client's name and namespace; `custom`: a custom tool (its call is a custom_tool_call). */
  names: Map<string, { name: string, namespace?: string, custom?: true }>
  echo: Partial<ResponseEcho>
  /** `include` lists `reasoning.encrypted_content`: reasoning items carry their signed thinking. */
  encrypted?: boolean
}

/**
 * Per-attempt state between `request` and `response`/`stream`: core builds one TranslateOptions
 * per attempt and hands that same object to all three, so it keys what the request found.
 */
const calls = new WeakMap<TranslateOptions, CallInfo>()

/** The CallInfo `request` recorded for `opts`, else the one `clientBody` gives, else an empty one. */
export function callInfo (opts: TranslateOptions, clientBody?: ResponsesRequestWire): CallInfo {
  return calls.get(opts) ?? (clientBody ? describeCall(clientBody) : { names: new Map(), echo: {} })
}

/** What the answer to `body` needs from it (pure: the same body gives the same CallInfo). */
export function describeCall (body: ResponsesRequestWire): CallInfo {
  const names: CallInfo['names'] = new Map()
  convertTools(toolsOf(body), names)
  return {
    names,
    encrypted: Array.isArray(body.include) && (body.include as unknown[]).includes('reasoning.encrypted_content'),
    echo: {
      instructions: typeof body.instructions === 'string' ? body.instructions : null,
      max_output_tokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : null,
      metadata: body.metadata && typeof body.metadata === 'object' ? body.metadata : {},
      parallel_tool_calls: body.parallel_tool_calls !== false,
      reasoning: { effort: typeof body.reasoning?.effort === 'string' ? body.reasoning.effort : null, summary: null },
      temperature: typeof body.temperature === 'number' ? body.temperature : null,
      text: body.text && typeof body.text === 'object' ? body.text : { format: { type: 'text' } },
      tool_choice: body.tool_choice ?? 'auto',
      tools: Array.isArray(body.tools) ? body.tools : [],
      top_p: typeof body.top_p === 'number' ? body.top_p : null,
      user: typeof body.user === 'string' ? body.user : null,
    },
  }
}

/** The request's tools: `tools`, then those of each `additional_tools` input item. */
export function toolsOf (body: ResponsesRequestWire): Array<ResponsesToolWire | null> {
  const out = Array.isArray(body.tools) ? [...body.tools] : []
  if (Array.isArray(body.input)) {
    for (const item of body.input) if (item?.type === 'additional_tools' && Array.isArray(item.tools)) out.push(...item.tools)
  }
  return out
}

/** The upstream call's arguments for a custom tool's free-form input. */
export function customArguments (input: string): string {
  return JSON.stringify({ input })
}

/** A custom tool's free-form input from the upstream call's arguments: `input` when they are JSON holding that string, else the arguments as they are. */
export function customInput (args: string): string {
  try {
    const v: unknown = JSON.parse(args)
    if (isObject(v) && typeof v.input === 'string') return v.input
  } catch {}
  return args
}

/** The upstream's name for a function, reversible through CallInfo.names. */
export function upstreamName (name: string, namespace?: string): string {
  const full = namespace ? `${namespace}__${name}` : name
  if (full.length <= MAX_NAME) return full
  return full.slice(0, 55) + '_' + createHash('sha256').update(full).digest('hex').slice(0, 8)
}

function bad (why: string): never {
  throw gwError('GW_ERR_BAD_REQUEST', [why])
}

/**
 * A user (or system) content part → a chat part; undefined to drop it. With `media` (the model's
 * input modalities, given when the upstream speaks messages) images and files become messages
 * image and document blocks, which the chat → messages translator passes on in media mode; a
 * modality the model does not list is dropped, as on the chat route.
 */
function userPart (part: unknown, where: string, media?: ReadonlySet<string>): ChatContentPart | undefined {
  const p: ResponsesPartWire = isObject(part) ? part : {}
  switch (p.type) {
    case 'input_text': case 'output_text': case 'text':
      return typeof p.text === 'string' ? { type: 'text', text: p.text } : undefined
    case 'refusal':
      return typeof p.refusal === 'string' ? { type: 'text', text: p.refusal } : undefined
    case 'input_image': {
      if (media) return media.has('image') ? imageBlock(p.image_url, where) : undefined
      if (typeof p.image_url !== 'string' || p.image_url === '') bad(`${where}: an input_image needs image_url (file_id needs stored files, which this gateway does not keep)`)
      const img: { url: string, detail?: 'low' | 'high' | 'auto' } = { url: p.image_url }
      if (p.detail === 'low' || p.detail === 'high' || p.detail === 'auto') img.detail = p.detail
      return { type: 'image_url', image_url: img }
    }
    case 'input_file': {
      if (media) return media.has('file') ? documentBlock(p, where) : undefined
      const f: { file_data?: string, file_id?: string, filename?: string } = {}
      if (typeof p.file_data === 'string') f.file_data = p.file_data
      else if (typeof p.file_id === 'string') f.file_id = p.file_id
      else bad(`${where}: an input_file needs file_data or file_id (file_url is not supported)`)
      if (typeof p.filename === 'string') f.filename = p.filename
      return { type: 'file', file: f }
    }
    default:
      return undefined
  }
}

function chatContent (content: unknown, where: string, media?: ReadonlySet<string>): string | ChatContentPart[] {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const parts: ChatContentPart[] = []
  const texts: string[] = []
  for (const [j, p] of (content as unknown[]).entries()) {
    const c = userPart(p, `${where}[${j}]`, media)
    if (c) parts.push(c)
    if (c?.type === 'text') texts.push(c.text)
  }
  return texts.length === parts.length ? texts.join('\n') : parts
}

/** The text of a string or a list of text parts (input_text, output_text, refusal); other parts skipped. */
function outputText (v: unknown): string {
  if (typeof v === 'string') return v
  if (!Array.isArray(v)) return ''
  const texts: string[] = []
  for (const p of v as unknown[]) {
    if (!isObject(p)) continue
    if (typeof p.text === 'string' && (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text')) texts.push(p.text)
    else if (p.type === 'refusal' && typeof p.refusal === 'string') texts.push(p.refusal)
  }
  return texts.join('\n')
}

/**
 * `input` (a string or items) and `instructions` → chat messages; `media` as in userPart. With
 * `thinking` (a messages upstream next) a reasoning item carrying a messages thinking block gives
 * the assistant message its `thinking_blocks`, which the chat → messages translator puts first in
 * the turn (before the text and tool_use blocks that follow the item).
 */
function convertInput (body: ResponsesRequestWire, systemRole: 'system' | 'developer', media?: ReadonlySet<string>, thinking = false): ChatMessage[] {
  const out: ChatMessage[] = []
  if (typeof body.instructions === 'string' && body.instructions !== '') out.push({ role: systemRole, content: body.instructions })
  const input = body.input
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input })
    return out
  }
  if (!Array.isArray(input)) return out
  for (const [i, item] of input.entries()) {
    if (!item) continue // no item type: skipped, as every unknown item is
    const where = `input[${i}]`
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined)
    switch (type) {
      case 'message': {
        const role = item.role
        if (role === 'system' || role === 'developer') {
          const t = outputText(item.content)
          if (t !== '') out.push({ role: systemRole, content: t })
        } else if (role === 'user') {
          out.push({ role: 'user', content: chatContent(item.content, `${where}.content`, media) })
        } else if (role === 'assistant') {
          const t = outputText(item.content)
          if (t !== '') out.push({ role: 'assistant', content: t })
        } else bad(`${where}.role "${String(role)}" is not supported`)
        break
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string') bad(`${where}: a function_call needs call_id and name`)
        const call: ChatToolCall = {
          id: item.call_id,
          type: 'function',
          function: { name: upstreamName(item.name, typeof item.namespace === 'string' ? item.namespace : undefined), arguments: typeof item.arguments === 'string' ? item.arguments : '{}' },
        }
        const last = out[out.length - 1]
        // Consecutive calls (and the text before them) are one assistant turn upstream.
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call)
        else out.push({ role: 'assistant', content: null, tool_calls: [call] })
        break
      }
      case 'custom_tool_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string') bad(`${where}: a custom_tool_call needs call_id and name`)
        const call: ChatToolCall = {
          id: item.call_id,
          type: 'function',
          function: { name: upstreamName(item.name, typeof item.namespace === 'string' ? item.namespace : undefined), arguments: customArguments(typeof item.input === 'string' ? item.input : '') },
        }
        const last = out[out.length - 1]
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call)
        else out.push({ role: 'assistant', content: null, tool_calls: [call] })
        break
      }
      case 'function_call_output': case 'custom_tool_call_output':
        if (typeof item.call_id !== 'string') bad(`${where}: a ${type} needs call_id`)
        // Toward a messages upstream a tool result can hold images and documents too.
        out.push({ role: 'tool', tool_call_id: item.call_id, content: media && Array.isArray(item.output) ? chatContent(item.output, `${where}.output`, media) : outputText(item.output) })
        break
      case 'reasoning': {
        const block = thinking ? decodeThinking(item.encrypted_content) : undefined
        if (!block) break
        const last = out[out.length - 1]
        // Consecutive reasoning items are one assistant turn's thinking, before its text and calls.
        if (last?.role === 'assistant' && last.content === null && last.tool_calls === undefined) (last.thinking_blocks ??= []).push(block)
        else out.push({ role: 'assistant', content: null, thinking_blocks: [block] })
        break
      }
      case 'item_reference':
        bad(`${where}: item_reference needs stored responses; this gateway is stateless, send the items themselves`)
        break
      default:
        break // built-in tool calls and their outputs: no chat form (ignored)
    }
  }
  return out
}

function convertTools (tools: Array<ResponsesToolWire | null>, names: CallInfo['names']): ChatFunctionTool[] {
  const out: ChatFunctionTool[] = []
  const add = (t: ResponsesToolWire | null, namespace?: string): void => {
    if ((t?.type !== 'function' && t?.type !== 'custom') || typeof t.name !== 'string') return
    const name = upstreamName(t.name, namespace)
    const custom = t.type === 'custom'
    names.set(name, { name: t.name, ...(namespace ? { namespace } : {}), ...(custom ? { custom: true as const } : {}) })
    const fn: ChatFunctionTool['function'] = { name, parameters: custom ? customParameters(t) : t.parameters ?? { type: 'object', properties: {} } }
    const desc = [namespace ? tools.find(x => x?.type === 'namespace' && x.name === namespace)?.description : undefined, t.description].filter((d): d is string => typeof d === 'string' && d !== '')
    if (desc.length > 0) fn.description = desc.join('\n')
    if (!custom && typeof t.strict === 'boolean') fn.strict = t.strict
    out.push({ type: 'function', function: fn })
  }
  for (const t of tools) {
    if (t?.type === 'namespace' && typeof t.name === 'string' && Array.isArray(t.tools)) for (const m of t.tools) add(m, t.name)
    else add(t)
  }
  return out
}

/** A custom tool's one string parameter, `input`, described by the tool's format (free text, or text a grammar accepts). */
function customParameters (t: ResponsesToolWire): object {
  const f = t.format
  const description = f?.type === 'grammar' && typeof f.definition === 'string'
    ? `The tool's raw input (not JSON), which must match this ${typeof f.syntax === 'string' ? f.syntax + ' ' : ''}grammar:\n${f.definition}`
    : "The tool's raw input as free-form text (not JSON)."
  return { type: 'object', properties: { input: { type: 'string', description } }, required: ['input'] }
}

function convertToolChoice (tc: unknown, known: Set<string>): ChatRequest['tool_choice'] {
  if (tc === 'auto' || tc === 'none' || tc === 'required') return tc
  const c: ResponsesToolChoiceWire | undefined = isObject(tc) ? tc : undefined
  if ((c?.type === 'function' || c?.type === 'custom') && typeof c.name === 'string') {
    const name = upstreamName(c.name, typeof c.namespace === 'string' ? c.namespace : undefined)
    return known.has(name) ? { type: 'function', function: { name } } : undefined
  }
  if (c?.type === 'allowed_tools' && Array.isArray(c.tools)) {
    const tools = c.tools.filter((t): t is { type: 'function' | 'custom', name: string, namespace?: unknown } => (t?.type === 'function' || t?.type === 'custom') && typeof t.name === 'string')
      .map(t => ({ type: 'function' as const, function: { name: upstreamName(t.name, typeof t.namespace === 'string' ? t.namespace : undefined) } }))
    if (tools.length === 0) return undefined
    return { type: 'allowed_tools', allowed_tools: { mode: c.mode === 'required' ? 'required' : 'auto', tools } }
  }
  return undefined // a built-in tool's choice: its tool was dropped
}

/**
 * A Responses request → a chat-completions request for `opts`' upstream; records the call's
 * CallInfo under `opts`. `forChatUpstream` false: the chat body is an intermediate one (the chat
 * → messages translator runs next, in media mode, and applies the model's parameters itself); its
 * images and files are already messages image and document blocks.
 */
export function responsesToChatRequest (body: ResponsesRequestWire, opts: TranslateOptions, forChatUpstream = true): ChatRequest {
  const info = describeCall(body)
  const out: ChatRequest = { model: opts.upstreamModel, messages: convertInput(body, opts.upstream?.systemRole ?? 'system', forChatUpstream ? undefined : opts.model.inputModalities,
    !forChatUpstream) }
  const cap = requestedOutputCap(body, opts.model.maxOutputTokens)
  const capField = opts.upstream?.maxTokensField ?? 'max_tokens'
  out[capField] = cap
  if (typeof body.temperature === 'number') out.temperature = body.temperature
  if (typeof body.top_p === 'number') out.top_p = body.top_p
  const tools = convertTools(toolsOf(body), new Map())
  if (tools.length > 0) {
    out.tools = tools
    const choice = convertToolChoice(body.tool_choice, new Set(info.names.keys()))
    if (choice !== undefined) out.tool_choice = choice
    if (typeof body.parallel_tool_calls === 'boolean') out.parallel_tool_calls = body.parallel_tool_calls
  }
  const fmt = body.text?.format
  if (fmt?.type === 'json_schema' && fmt.schema && typeof fmt.schema === 'object') {
    const js: { name: string, schema: unknown, strict?: boolean, description?: string } = { name: typeof fmt.name === 'string' ? fmt.name : 'output', schema: fmt.schema }
    if (typeof fmt.strict === 'boolean') js.strict = fmt.strict
    if (typeof fmt.description === 'string') js.description = fmt.description
    out.response_format = { type: 'json_schema', json_schema: js }
  } else if (fmt?.type === 'json_object') out.response_format = { type: 'json_object' }
  if (typeof body.text?.verbosity === 'string') out.verbosity = body.text.verbosity
  if (typeof body.reasoning?.effort === 'string') out.reasoning_effort = body.reasoning.effort
  if (body.metadata && typeof body.metadata === 'object') out.metadata = body.metadata
  if (typeof body.user === 'string' && body.user !== '') out.user = body.user
  if (typeof body.safety_identifier === 'string') out.safety_identifier = body.safety_identifier
  if (typeof body.prompt_cache_key === 'string') out.prompt_cache_key = body.prompt_cache_key
  if (typeof body.service_tier === 'string') out.service_tier = body.service_tier
  if (body.stream === true) {
    out.stream = true
    out.stream_options = { include_usage: true }
  }
  if (forChatUpstream) applyModelParameters(out, opts.model, CHAT_STANDARD)
  // The output cap is needed for the answer's size whatever supported_parameters says.
  if (out.max_tokens === undefined && out.max_completion_tokens === undefined) out[capField] = cap
  calls.set(opts, info)
  return out
}
