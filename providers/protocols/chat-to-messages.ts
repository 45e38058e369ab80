/**
 * @module protocols/chat-to-messages – chat client, messages-protocol upstream (C→M).
 *
 * Request, on the chat route: message content is flattened to plain text and images (and other
 * media parts) are dropped silently, without an error (a client sends images to these models
 * through /v1/messages, whose blocks pass on as they are). In media mode (the
 * Responses route's intermediate body) messages image and document blocks already built from the
 * client's parts pass on, in user turns and as tool_result content. System and developer
 * messages, tools, tool_choice, tool calls and tool results, stop sequences, the output cap and
 * sampling parameters are translated faithfully; `reasoning_effort` becomes a thinking budget
 * except in a tool loop whose thinking the client did not give back (see thinkingAllowed).
 * Response and stream: content blocks → message content, tool calls and `reasoning_content`
 * (thinking text), stop reasons and usage mapped, events → chunks (a usage chunk with
 * `choices: []` only when the client asked for it). Signed thinking (protocols/thinking.ts): the
 * answer's thinking and redacted_thinking blocks also come whole in the message's
 * `thinking_blocks` (in a stream, each in one delta when its block ends, with its signature); an
 * assistant message's `thinking_blocks` go back as the turn's first blocks, those the upstream
 * signed only (unsigned thinking and another vendor's reasoning are dropped). A Gemini
 * signature that names a tool call also shows on that call as `extra_content.google.thought_signature`
 * (Gemini's OpenAI-compatible field), and comes back from it.
 */
import { estimateUsage, streamUsage, gwError, requestedOutputCap, type EventSink, type StreamTranslator, type Translator, type SseEvent, type TranslateOptions, type StreamFailDetail,
  type Usage } from '../../index.ts'
import { usageFromMessages, usageToChat } from '../../index.ts'
import { ChatChunkEmitter, chatErrorChunk } from './chat-chunks.ts'
import {
  applyModelParameters, finishFromStop, messagesDeltaChars, MESSAGES_STANDARD, newId, numericUsage,
  type UsageCounts, parseArgs, safeToolId, textOf, answerUsage, usageReader,
} from './common.ts'
import { imageBlock, isMediaBlock } from './media-blocks.ts'
import { isObject, parseWire, str, type JsonObject } from './wire.ts'
import { decodeGeminiSignature, geminiSignatureBlock, isThinkingBlock, settleThinking, signedForMessages, thinkingBlock, thinkingBlocksOf } from './thinking.ts'
import type { ChatCompletion, ChatAnswerMessage, ChatRequestWire, ChatToolChoiceWire, ChatToolWire, GeminiExtraContent } from './wire-chat.ts'
import type {
  MessagesAnswerWire, MessagesBlock, MessagesBlockWire, MessagesEventWire, MessagesMediaBlock, MessagesRequest, MessagesTextBlock,
  MessagesToolChoice, MessagesToolResultBlock, MessagesTurn,
} from './wire-messages.ts'
import { messagesAnswerEvents } from './answer-events.ts'

interface Turn { role: 'user' | 'assistant', content: MessagesBlock[] }

/** A user turn for requests that would otherwise have none (only system messages, or assistant first). */
const FILLER_USER_TEXT = '(continue)'
/** The smallest thinking budget a messages upstream takes. */
const MIN_THINKING_BUDGET = 1024
const REASONING_BUDGET: ReadonlyMap<string, number> = new Map([['minimal', 1024], ['low', 1024], ['medium', 2048], ['high', 4096]])

function pushTurn (turns: Turn[], role: Turn['role'], blocks: MessagesBlock[]): void {
  if (blocks.length === 0) return
  const last = turns[turns.length - 1]
  if (last && last.role === role) last.content.push(...blocks)
  else turns.push({ role, content: blocks })
}

/** A user or tool message's content as blocks: text joined into one block, plus media blocks in media mode. */
function contentBlocks (content: unknown, media: boolean): Array<MessagesTextBlock | MessagesMediaBlock> {
  const t = textOf(content, '\n')
  const parts: unknown[] | undefined = Array.isArray(content) ? content : undefined
  if (!media || !parts?.some(isMediaBlock)) return t !== '' ? [{ type: 'text', text: t }] : []
  const blocks: Array<MessagesTextBlock | MessagesMediaBlock> = []
  for (const p of parts) {
    if (isMediaBlock(p)) blocks.push(p)
    else if (isObject(p) && p.type === 'text' && typeof p.text === 'string' && p.text !== '') blocks.push({ type: 'text', text: p.text })
  }
  return blocks
}

function convert (body: ChatRequestWire, media: boolean): { system: string[], turns: Turn[] } {
  const system: string[] = []
  const turns: Turn[] = []
  for (const [i, m] of (Array.isArray(body.messages) ? body.messages : []).entries()) {
    const where = `messages[${i}]`
    switch (m?.role) {
      case 'system': case 'developer': {
        const t = textOf(m.content, '\n')
        if (t !== '') system.push(t)
        break
      }
      case 'user':
        pushTurn(turns, 'user', contentBlocks(m.content, media))
        break
      case 'assistant': {
        // Signed thinking first: the upstream wants it back unchanged, ahead of the turn's tool_use.
        const blocks: MessagesBlock[] = thinkingBlocksOf(m.thinking_blocks).filter(signedForMessages)
        const t = textOf(m.content, '')
        if (t !== '') blocks.push({ type: 'text', text: t })
        if (typeof m.refusal === 'string' && m.refusal !== '') blocks.push({ type: 'text', text: m.refusal })
        if (Array.isArray(m.tool_calls)) {
          const carried = new Set(blocks.map(b => b.type === 'thinking' ? decodeGeminiSignature(b.signature)?.call : undefined))
          for (const [j, c] of m.tool_calls.entries()) {
            const input = parseArgs(c?.function?.arguments)
            if (input === undefined) throw gwError('GW_ERR_BAD_REQUEST', [`${where}.tool_calls[${j}].function.arguments is not a JSON object`])
            const id = safeToolId(c?.id)
            // A Gemini signature given back on the call itself (Gemini's OpenAI-compatible field), unless thinking_blocks carried it.
            const sig = c?.extra_content?.google?.thought_signature
            if (typeof sig === 'string' && sig !== '' && !carried.has(id)) blocks.unshift(geminiSignatureBlock(sig, id))
            blocks.push({ type: 'tool_use', id, name: String(c?.function?.name ?? ''), input })
          }
        }
        pushTurn(turns, 'assistant', blocks)
        break
      }
      case 'tool': case 'function': {
        const content = contentBlocks(m.content, media)
        const block: MessagesToolResultBlock = { type: 'tool_result', tool_use_id: safeToolId(m.tool_call_id ?? m.name) }
        const only = content.length === 1 ? content[0] : undefined
        if (only?.type === 'text') block.content = only.text
        else if (content.length > 0) block.content = content
        const last = turns[turns.length - 1]
        // Tool results open their user turn: put them before any text already merged into it.
        if (last && last.role === 'user') {
          let k = 0
          while (k < last.content.length && last.content[k].type === 'tool_result') k++
          last.content.splice(k, 0, block)
        } else turns.push({ role: 'user', content: [block] })
        break
      }
      default:
        throw gwError('GW_ERR_BAD_REQUEST', [`${where}.role "${String(m?.role)}" is not supported`])
    }
  }
  if (turns.length === 0 || turns[0].role !== 'user') turns.unshift({ role: 'user', content: [{ type: 'text', text: FILLER_USER_TEXT }] })
  return { system, turns }
}

function simplify (turns: Turn[]): MessagesTurn[] {
  return turns.map(t => {
    const only = t.content.length === 1 ? t.content[0] : undefined
    return only?.type === 'text' ? { role: t.role, content: only.text } : t
  })
}

/**
 * Whether thinking may be turned on for these turns. A messages upstream with thinking on requires
 * the assistant turn of a tool loop in progress (tool_use answered by tool_result, no new user
 * text since) to start with its thinking block: when the client gave none back (a chat history
 * without `thinking_blocks`, a Responses client that did not ask for encrypted reasoning) the
 * request is sent without thinking. A new user turn closes the loop; earlier turns need none.
 */
function thinkingAllowed (turns: Turn[]): boolean {
  for (let i = turns.length - 1; i >= 0; i--) {
    const t = turns[i]
    if (t.role === 'user' && !t.content.some(b => b.type === 'tool_result')) return true
    if (t.role === 'assistant' && t.content.some(b => b.type === 'tool_use')) {
      const first = t.content[0]?.type
      return first === 'thinking' || first === 'redacted_thinking'
    }
  }
  return true
}

/** A function tool with a name (what a messages upstream can take); the name as the client sent it. */
type NamedTool = ChatToolWire & { function: { name: unknown, description?: unknown, parameters?: unknown, strict?: unknown } }

function isNamedTool (t: ChatToolWire | null): t is NamedTool {
  return t?.type === 'function' && Boolean(t.function?.name)
}

/** A chat body → a messages body; `media`: the Responses route's intermediate body, whose image and document blocks pass on. */
export function chatToMessagesRequest (body: ChatRequestWire, opts: TranslateOptions, media = false): MessagesRequest {
  if (typeof body.n === 'number' && body.n > 1) throw gwError('GW_ERR_BAD_REQUEST', ['n > 1 is not supported for this model'])
  const { system, turns: converted } = convert(body, media)
  const turns = settleThinking(converted)
  const out: MessagesRequest = system.length > 0
    ? { model: opts.upstreamModel, system: system.join('\n\n'), messages: [] }
    : { model: opts.upstreamModel, messages: [] }
  const maxTokens = requestedOutputCap(body, opts.model.maxOutputTokens)
  if (typeof body.temperature === 'number') out.temperature = Math.min(1, Math.max(0, body.temperature))
  if (typeof body.top_p === 'number') out.top_p = body.top_p
  if (body.stop !== undefined && body.stop !== null) {
    const stops: unknown[] = Array.isArray(body.stop) ? body.stop : [body.stop]
    const list = stops.filter((s): s is string => typeof s === 'string' && s.trim() !== '')
    if (list.length > 0) out.stop_sequences = list
  }
  if (typeof body.user === 'string' && body.user !== '') out.metadata = { user_id: body.user }
  let tools = Array.isArray(body.tools) ? body.tools.filter(isNamedTool) : []
  let tc: string | ChatToolChoiceWire | null | undefined = body.tool_choice
  if (typeof tc === 'object' && tc?.type === 'allowed_tools') {
    const listed = tc.allowed_tools?.tools
    const allowed = new Set((Array.isArray(listed) ? listed : []).map(t => t?.function?.name))
    tools = tools.filter(t => allowed.has(t.function.name))
    tc = tc.allowed_tools?.mode === 'required' ? 'required' : 'auto'
  }
  if (tools.length > 0) {
    out.tools = tools.map(t => {
      const o: NonNullable<MessagesRequest['tools']>[number] = { name: t.function.name, input_schema: t.function.parameters ?? { type: 'object', properties: {} } }
      if (typeof t.function.description === 'string') o.description = t.function.description
      if (typeof t.function.strict === 'boolean') o.strict = t.function.strict
      return o
    })
    let choice: MessagesToolChoice | undefined
    if (tc === 'auto') choice = { type: 'auto' }
    else if (tc === 'none') choice = { type: 'none' }
    else if (tc === 'required') choice = { type: 'any' }
    else if (typeof tc === 'object' && tc?.type === 'function' && typeof tc.function?.name === 'string') choice = { type: 'tool', name: tc.function.name }
    if (body.parallel_tool_calls === false && choice?.type !== 'none') choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true }
    if (choice) out.tool_choice = choice
  }
  const effort = body.reasoning_effort
  // A Map, not an object: an effort named after an Object.prototype member ("constructor") is no budget.
  const effortBudget = typeof effort === 'string' ? REASONING_BUDGET.get(effort) : undefined
  // The budget fits under the output cap (the upstream wants it below max_tokens, and max_tokens
  // is what the call reserved for): a cap too small for the least budget gets no thinking.
  const budget = effortBudget === undefined ? undefined : Math.min(effortBudget, maxTokens - 1)
  if (budget !== undefined && budget >= MIN_THINKING_BUDGET && thinkingAllowed(turns)) {
    out.thinking = { type: 'enabled', budget_tokens: budget }
    delete out.temperature
    const c = out.tool_choice
    if (c && (c.type === 'any' || c.type === 'tool')) out.tool_choice = { type: 'auto' }
    out.messages = simplify(turns)
  } else {
    // Without thinking on, a final assistant turn (a prefill) may not hold thinking blocks.
    const last = turns[turns.length - 1]
    if (last?.role === 'assistant') last.content = last.content.filter(b => !isThinkingBlock(b))
    out.messages = simplify(turns.filter(t => t.content.length > 0))
  }
  out.max_tokens = maxTokens
  const rf = body.response_format
  if (rf?.type === 'json_schema' && rf.json_schema?.schema) out.output_config = { format: { type: 'json_schema', schema: rf.json_schema.schema } }
  else if (rf?.type === 'json_object' && opts.upstream?.jsonObject === true) out.output_config = { format: { type: 'json_object' } }
  if (body.stream === true) out.stream = true
  applyModelParameters(out, opts.model, MESSAGES_STANDARD)
  return out
}

/** Gemini signatures that name a tool call, by call id (shown on the call as `extra_content`). */
function geminiSignatures (blocks: ReadonlyArray<{ type: string, signature?: string }>): Map<string, string> {
  const out = new Map<string, string>()
  for (const b of blocks) {
    const g = b.type === 'thinking' ? decodeGeminiSignature(b.signature) : undefined
    if (g?.call !== undefined) out.set(g.call, g.signature)
  }
  return out
}

/** The `extra_content` of a tool call whose Gemini signature is known. */
function extraFor (sigs: ReadonlyMap<string, string>, id: string): { extra_content?: GeminiExtraContent } {
  const sig = sigs.get(id)
  return sig === undefined ? {} : { extra_content: { google: { thought_signature: sig } } }
}

function chatId (upstreamId: unknown): string {
  return typeof upstreamId === 'string' && upstreamId !== ''
    ? 'chatcmpl-' + upstreamId.replace(/^msg_/, '')
    : 'chatcmpl-' + newId()
}

function response (upstream: unknown, opts: TranslateOptions, fallback?: Usage): { body: ChatCompletion, usage: Usage | undefined } {
  const body: MessagesAnswerWire = isObject(upstream) ? upstream : {}
  let text = ''
  let hasText = false
  let reasoning = ''
  const thinking: NonNullable<ChatAnswerMessage['thinking_blocks']> = []
  const calls: NonNullable<ChatAnswerMessage['tool_calls']> = []
  for (const b of Array.isArray(body.content) ? body.content : []) {
    if (b?.type === 'text' && typeof b.text === 'string') { text += b.text; hasText = true }
    else if (b?.type === 'thinking' || b?.type === 'redacted_thinking') {
      if (b.type === 'thinking' && typeof b.thinking === 'string') reasoning += b.thinking
      const whole = thinkingBlock(b)
      if (whole) thinking.push(whole)
    } else if (b?.type === 'tool_use') calls.push({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } })
  }
  for (const [call, sig] of geminiSignatures(thinking)) {
    const c = calls.find(x => x.id === call)
    if (c) c.extra_content = { google: { thought_signature: sig } }
  }
  const message: ChatAnswerMessage = { role: 'assistant', content: hasText || calls.length === 0 ? text : null, refusal: null }
  // Thinking text in the field DeepSeek and vLLM use (redacted thinking has none to show).
  if (reasoning !== '') message.reasoning_content = reasoning
  if (thinking.length > 0) message.thinking_blocks = thinking
  if (calls.length > 0) message.tool_calls = calls
  const usage = answerUsage(body.usage, opts, 'messages', usageFromMessages)
  return {
    body: {
      id: chatId(body.id),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: opts.clientModel,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishFromStop(body.stop_reason) }],
      usage: usageToChat(usage ?? fallback ?? estimateUsage(opts.estimatedInputTokens)),
    },
    usage,
  }
}

/** What a content block of the upstream's stream became: text, a tool call (its chat index), thinking (its text and signature so far), or nothing. */
type BlockKind = { kind: 'text' | 'other' } | { kind: 'tool_use', toolIdx: number } | { kind: 'thinking', text: string, signature: string }

/** The chat client's stream over a messages upstream: messages events in, chat chunks out. */
class ChatOverMessagesStream implements StreamTranslator {
  finished = false
  #done = false
  readonly #chunks: ChatChunkEmitter
  #toolCount = 0
  /** Gemini signatures of the thinking blocks ended so far, by the tool call they name. */
  readonly #geminiSigs = new Map<string, string>()
  /** By the upstream's block `index`, as sent. */
  readonly #blocks = new Map<unknown, BlockKind>()
  #start: UsageCounts | undefined
  #final: UsageCounts | undefined
  outputChars = 0
  #stop: unknown = null

  readonly #readUsage: (u: JsonObject) => Usage | undefined
  readonly #estimatedInputTokens: number
  readonly #outputCap: number | undefined

  constructor (clientBody: ChatRequestWire, opts: TranslateOptions) {
    this.#chunks = new ChatChunkEmitter(opts.clientModel, clientBody.stream_options?.include_usage === true)
    this.#estimatedInputTokens = opts.estimatedInputTokens
    this.#outputCap = opts.outputCap
    this.#readUsage = usageReader(opts, 'messages', usageFromMessages)
  }

  /** Final only once `message_delta` carried usage; `message_start`'s counts are provisional. */
  get usage (): Usage | undefined {
    return this.#final ? this.#readUsage(this.#final) : undefined
  }

  get startUsage (): Usage | undefined {
    return this.#start ? this.#readUsage(this.#start) : undefined
  }

  push (ev: SseEvent, out: EventSink): void {
    if (this.#done) return
    let d: MessagesEventWire
    try { d = parseWire<MessagesEventWire>(ev.data) ?? {} } catch { return }
    const chunks = this.#chunks
    const name = ev.event ?? d.type
    switch (name) {
      case 'message_start':
        if (typeof d.message?.id === 'string') chunks.id = chatId(d.message.id)
        this.#start = numericUsage(d.message?.usage, this.#start)
        return chunks.role(out)
      case 'content_block_start': {
        const b: MessagesBlockWire = d.content_block ?? {}
        if (b.type === 'text') {
          this.#blocks.set(d.index, { kind: 'text' })
          chunks.role(out)
          // Text a block starts with is relayed output, counted as a delta's is.
          if (typeof b.text === 'string' && b.text !== '') {
            this.outputChars += b.text.length
            chunks.delta(out, { content: b.text })
          }
          return
        }
        if (b.type === 'tool_use') {
          const toolIdx = this.#toolCount++
          this.#blocks.set(d.index, { kind: 'tool_use', toolIdx })
          chunks.role(out)
          return chunks.delta(out, { tool_calls: [{ index: toolIdx, id: str(b.id), type: 'function', function: { name: str(b.name), arguments: '' }, ...extraFor(this.#geminiSigs,
            str(b.id) ?? '') }] })
        }
        if (b.type === 'redacted_thinking') {
          this.#blocks.set(d.index, { kind: 'other' })
          const whole = thinkingBlock(b)
          if (whole) {
            chunks.role(out)
            chunks.delta(out, { thinking_blocks: [whole] })
          }
          return
        }
        if (b.type !== 'thinking') {
          this.#blocks.set(d.index, { kind: 'other' })
          return
        }
        const text = typeof b.thinking === 'string' ? b.thinking : ''
        this.#blocks.set(d.index, { kind: 'thinking', text, signature: typeof b.signature === 'string' ? b.signature : '' })
        if (text !== '') {
          this.outputChars += text.length
          chunks.role(out)
          chunks.delta(out, { reasoning_content: text })
        }
        return
      }
      case 'content_block_delta': {
        const blk = this.#blocks.get(d.index)
        const delta = d.delta ?? {}
        this.outputChars += messagesDeltaChars(delta)
        if (delta.type === 'text_delta' && blk?.kind === 'text' && typeof delta.text === 'string' && delta.text !== '') return chunks.delta(out, { content: delta.text })
        if (delta.type === 'thinking_delta' && blk?.kind === 'thinking' && typeof delta.thinking === 'string' && delta.thinking !== '') {
          blk.text += delta.thinking
          return chunks.delta(out, { reasoning_content: delta.thinking })
        }
        if (delta.type === 'signature_delta' && blk?.kind === 'thinking' && typeof delta.signature === 'string') blk.signature += delta.signature
        if (delta.type === 'input_json_delta' && blk?.kind === 'tool_use' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
          chunks.delta(out, { tool_calls: [{ index: blk.toolIdx, function: { arguments: delta.partial_json } }] })
        }
        return
      }
      case 'message_delta':
        if (isObject(d.delta) && 'stop_reason' in d.delta) this.#stop = d.delta.stop_reason
        // Cumulative counts: they overwrite, never add.
        if (d.usage && typeof d.usage === 'object') this.#final = numericUsage(d.usage, { ...this.#start, ...this.#final })
        return
      case 'message_stop':
        this.#done = true
        this.finished = true
        return chunks.finish(out, finishFromStop(this.#stop), () => streamUsage(this, this.#estimatedInputTokens, this.#outputCap))
      case 'error':
        this.#done = true
        return chunks.upstreamError(out, d.error ?? {}, 'api_error', null)
      case 'content_block_stop': {
        // A signed thinking block ends: the whole block, for the client to give back.
        const blk = this.#blocks.get(d.index)
        if (blk?.kind !== 'thinking' || blk.signature === '') return
        this.#blocks.set(d.index, { kind: 'other' })
        for (const [call, sig] of geminiSignatures([{ type: 'thinking', signature: blk.signature }])) this.#geminiSigs.set(call, sig)
        chunks.role(out)
        return chunks.delta(out, { thinking_blocks: [{ type: 'thinking', thinking: blk.text, signature: blk.signature }] })
      }
      default:
        // ping, unknown events
    }
  }

  end (out: EventSink): void {
    if (this.#done) return
    this.#chunks.role(out)
    this.fail(out, 'The model service ended the stream before it finished.', 502)
  }

  fail (out: EventSink, message: string, status = 502, detail?: StreamFailDetail): void {
    if (this.#done) return
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }

  blocked (out: EventSink, message: string, status: number, detail: StreamFailDetail): void {
    this.#done = true
    out.event(undefined, chatErrorChunk(message, status, detail))
  }
}

/**
 * The chat body with its image parts as messages image blocks (data URIs as base64, https URLs as
 * URL sources; 400 for what is neither), for an upstream that takes images from chat clients
 * (`UpstreamTranslateOptions.chatImages`); the body itself when it has none.
 */
function withImageBlocks (body: ChatRequestWire): ChatRequestWire {
  const list = body.messages
  if (!Array.isArray(list)) return body
  let changed = false
  const messages = list.map((m, i) => {
    const parts = m?.content
    if (!Array.isArray(parts) || !parts.some(p => isObject(p) && p.type === 'image_url')) return m
    changed = true
    return {
      ...m,
      content: parts.map((p: unknown, j) => {
        if (!isObject(p) || p.type !== 'image_url') return p
        const img = p.image_url
        return imageBlock(typeof img === 'string' ? img : isObject(img) ? img.url : undefined, `messages.${i}.content.${j}`)
      }),
    }
  })
  return changed ? { ...body, messages } : body
}

export const chatToMessages: Translator = {
  answerEvents: messagesAnswerEvents,
  // Images from chat clients are dropped (the chat route's rule for messages upstreams) unless the
  // upstream takes them (`chatImages`): then they pass on as image blocks, as on the Responses route.
  request: (body, opts) => opts.upstream?.chatImages === true ? chatToMessagesRequest(withImageBlocks(body), opts, true) : chatToMessagesRequest(body, opts),
  response,
  stream (clientBody: ChatRequestWire, opts: TranslateOptions): StreamTranslator {
    return new ChatOverMessagesStream(clientBody, opts)
  },
}
