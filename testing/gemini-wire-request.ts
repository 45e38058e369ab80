/**
 * @module testing/gemini-wire-request – a Gemini `GenerateContentRequest` read back as the
 * messages-protocol body it stands for, for the Gemini conformance wire (gemini-conformance): what
 * the golden cases check the adapter's request against. Written from Gemini's wire format alone
 * (not from the adapter), so that it checks the adapter's translation rather than repeating it.
 *
 * What reads as what: `systemInstruction` → `system` (one text part: a string); each content →
 * a turn (`model` → `assistant`); `text` → text, a `thought` part → a thinking block (its
 * `thoughtSignature` the signature), a `thoughtSignature` on another part → a signature-only
 * thinking block before it; `inlineData` → a base64 image (an `image/*` type) or document;
 * `fileData` → the same by URL; `functionCall` → `tool_use` (its `id`, else `call_<content>_<n>`);
 * `functionResponse` → `tool_result` answering the call at its position in the model content
 * before it (Gemini pairs them by order), `{output}` its content, `{error}` with `is_error`;
 * `functionDeclarations` → tools (`parametersJsonSchema`, else `parameters`, as `input_schema`);
 * `functionCallingConfig` AUTO/ANY/NONE → `tool_choice` auto/any/none, ANY naming one function →
 * `tool`; `generationConfig` `maxOutputTokens`, `stopSequences`, `temperature`, `topP`, `topK` →
 * `max_tokens`, `stop_sequences`, `temperature`, `top_p`, `top_k`; `responseMimeType:
 * application/json` → `output_config.format` `json_schema` (with `responseJsonSchema` or
 * `responseSchema`) or `json_object`; `thinkingConfig` → `thinking` (`thinkingBudget` 0:
 * disabled, another budget: enabled with it, none: adaptive). One plain text block is the string
 * form, as the golden cases write a plain turn.
 */
import { isObj } from './gemini-check.ts'

type Obj = Record<string, unknown>

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])

/** One plain text block is the string form; anything else stays blocks. */
function collapse (bs: Obj[]): string | Obj[] {
  return bs.length === 1 && bs[0].type === 'text' ? String(bs[0].text) : bs
}

/** `inlineData` / `fileData` → an image block (an `image/*` type) or a document block. */
function media (mimeType: unknown, source: Obj): Obj {
  return { type: typeof mimeType === 'string' && mimeType.startsWith('image/') ? 'image' : 'document', source }
}

/** A function response's `response` → the tool result's content (`output` as sent; other JSON as its text). */
function resultContent (r: Obj): { content: unknown, isError: boolean } {
  const isError = 'error' in r && !('output' in r)
  const v = isError ? r.error : 'output' in r ? r.output : r
  return { content: typeof v === 'string' ? v : JSON.stringify(v), isError }
}

/** The tool_use ids of each model content's function calls, by content index, as `blocks` gives them. */
type CallIds = Map<number, string[]>

/** One content's parts → messages blocks. */
function blocks (parts: unknown[], at: number, calls: CallIds, contents: unknown[]): Obj[] {
  const out: Obj[] = []
  const ids: string[] = []
  let answered = 0
  // Function responses answer the calls of the model content just before, in order.
  const asked = at > 0 && isObj(contents[at - 1]) && (contents[at - 1] as Obj).role === 'model' ? calls.get(at - 1) ?? [] : []
  for (const p of parts) {
    if (!isObj(p)) { out.push({ type: 'unknown:not-an-object' }); continue }
    const sig = typeof p.thoughtSignature === 'string' ? p.thoughtSignature : undefined
    if (p.thought === true) {
      out.push({ type: 'thinking', thinking: typeof p.text === 'string' ? p.text : '', signature: sig ?? '' })
      continue
    }
    if (sig !== undefined) out.push({ type: 'thinking', thinking: '', signature: sig })
    if (typeof p.text === 'string') out.push({ type: 'text', text: p.text })
    else if (isObj(p.inlineData)) {
      out.push(media(p.inlineData.mimeType, { type: 'base64', media_type: p.inlineData.mimeType, data: p.inlineData.data }))
    } else if (isObj(p.fileData)) {
      out.push(media(p.fileData.mimeType, { type: 'url', url: p.fileData.fileUri }))
    } else if (isObj(p.functionCall)) {
      const f = p.functionCall
      const id = typeof f.id === 'string' && f.id !== '' ? f.id : `call_${at}_${ids.length}`
      ids.push(id)
      out.push({ type: 'tool_use', id, name: f.name, input: isObj(f.args) ? f.args : {} })
    } else if (isObj(p.functionResponse)) {
      const f = p.functionResponse
      const id = typeof f.id === 'string' && f.id !== '' ? f.id : asked[answered] ?? `unanswered_${at}_${answered}`
      answered++
      const { content, isError } = resultContent(isObj(f.response) ? f.response : {})
      const r: Obj = { type: 'tool_result', tool_use_id: id, content }
      if (isError) r.is_error = true
      out.push(r)
    } else out.push({ type: `unknown:${Object.keys(p).join(',')}` })
  }
  calls.set(at, ids)
  return out
}

/** `tools` → messages tools (a tool that is not function declarations, e.g. `googleSearch`, reads as `gemini:<kind>`). */
function tools (body: Obj): Obj[] {
  const out: Obj[] = []
  for (const t of list(body.tools)) {
    if (!isObj(t)) continue
    for (const [kind, v] of Object.entries(t)) {
      if (kind !== 'functionDeclarations') { out.push({ type: `gemini:${kind}` }); continue }
      for (const d of list(v)) {
        if (!isObj(d)) continue
        const tool: Obj = { name: d.name, input_schema: d.parametersJsonSchema ?? d.parameters ?? { type: 'object', properties: {} } }
        if (typeof d.description === 'string') tool.description = d.description
        out.push(tool)
      }
    }
  }
  return out
}

/** `toolConfig.functionCallingConfig` → `tool_choice` (undefined for a mode with no messages equivalent). */
function toolChoice (config: unknown): Obj | undefined {
  const f = isObj(config) && isObj(config.functionCallingConfig) ? config.functionCallingConfig : undefined
  if (f === undefined) return undefined
  const names = list(f.allowedFunctionNames)
  if (f.mode === 'ANY') return names.length === 1 ? { type: 'tool', name: names[0] } : { type: 'any' }
  if (f.mode === 'NONE') return { type: 'none' }
  if (f.mode === 'AUTO' || f.mode === 'VALIDATED') return { type: 'auto' }
  return undefined
}

/** `generationConfig` → the messages fields it stands for, set on `out`. */
function generation (g: Obj, out: Obj): void {
  if (g.maxOutputTokens !== undefined) out.max_tokens = g.maxOutputTokens
  if (g.stopSequences !== undefined) out.stop_sequences = g.stopSequences
  if (g.temperature !== undefined) out.temperature = g.temperature
  if (g.topP !== undefined) out.top_p = g.topP
  if (g.topK !== undefined) out.top_k = g.topK
  if (g.responseMimeType === 'application/json') {
    const schema = g.responseJsonSchema ?? g.responseSchema
    out.output_config = { format: schema === undefined ? { type: 'json_object' } : { type: 'json_schema', schema } }
  }
  if (isObj(g.thinkingConfig)) {
    const budget = g.thinkingConfig.thinkingBudget
    out.thinking = budget === 0 ? { type: 'disabled' } : typeof budget === 'number' && budget > 0 ? { type: 'enabled', budget_tokens: budget } : { type: 'adaptive' }
  }
}

/** A `GenerateContentRequest` → the messages body it carries (`model` and `stream` from the path). */
export function messagesFromGemini (body: Obj, model: string, stream: boolean): Obj {
  const out: Obj = { model }
  const system = isObj(body.systemInstruction) ? list(body.systemInstruction.parts).map(p => ({ type: 'text', text: isObj(p) ? p.text : undefined })) : []
  if (system.length > 0) out.system = collapse(system)
  const contents = list(body.contents)
  const calls: CallIds = new Map()
  out.messages = contents.map((c, i) => {
    const content = isObj(c) ? c : {}
    return { role: content.role === 'model' ? 'assistant' : content.role, content: collapse(blocks(list(content.parts), i, calls, contents)) }
  })
  if (body.tools !== undefined) out.tools = tools(body)
  const choice = toolChoice(body.toolConfig)
  if (choice !== undefined) out.tool_choice = choice
  if (isObj(body.generationConfig)) generation(body.generationConfig, out)
  if (stream) out.stream = true
  return out
}
