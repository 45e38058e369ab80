/**
 * @module testing/gemini-check – a `GenerateContentRequest` checked as the Gemini API checks it,
 * for the fake Gemini: the INVALID_ARGUMENT message the service would answer, or undefined.
 */

export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

const REQUEST_FIELDS = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent', 'labels', 'model'])
const DATA_MEMBERS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult']
const PART_EXTRAS = new Set(['thought', 'thoughtSignature', 'videoMetadata', 'partMetadata', 'mediaResolution'])
const GENERATION_FIELDS = new Set([
  'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', '_responseJsonSchema', 'responseModalities', 'candidateCount',
  'maxOutputTokens', 'temperature', 'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs',
  'enableEnhancedCivicAnswers', 'speechConfig', 'thinkingConfig', 'imageConfig', 'mediaResolution',
])
const THINKING_FIELDS = new Set(['includeThoughts', 'thinkingBudget', 'thinkingLevel'])
/** The values Gemini documents for a function call whose signature is unknown: accepted without a check. */
const SIGNATURE_PLACEHOLDERS: ReadonlySet<string> = new Set(['skip_thought_signature_validator', 'context_engineering_is_the_way_to_go'])
const FUNCTION_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/

/** What the check needs besides the body. */
export interface GeminiCheckOptions {
  /** Signatures the fake issued: a function call of the current turn must carry one of these (undefined: not checked). */
  issued?: ReadonlySet<string>
  /** The model refuses temperature, topP and topK (as the fake's `noSampling` models do). */
  noSampling?: boolean
}

const unknownField = (where: string, k: string): string => `Invalid JSON payload received. Unknown name "${k}" at '${where}': Cannot find field.`

function checkPart (p: unknown, where: string, role: string): string | undefined {
  if (!isObj(p)) return `Invalid value at '${where}': a part must be an object.`
  const data = Object.keys(p).filter(k => DATA_MEMBERS.includes(k))
  for (const k of Object.keys(p)) if (!DATA_MEMBERS.includes(k) && !PART_EXTRAS.has(k)) return unknownField(where, k)
  if (data.length !== 1) return `* GenerateContentRequest.${where}.data: required oneof field 'data' must have one initialized field`
  if ('text' in p && typeof p.text !== 'string') return `Invalid value at '${where}.text': a string is expected.`
  if ('inlineData' in p) {
    const d = p.inlineData
    if (!isObj(d) || typeof d.mimeType !== 'string' || typeof d.data !== 'string' || !/^[A-Za-z0-9+/=_-]*$/.test(d.data)) return `Invalid value at '${where}.inline_data': mimeType and base64 data ` +
      'are required.'
  }
  if ('fileData' in p && (!isObj(p.fileData) || typeof p.fileData.fileUri !== 'string')) return `* GenerateContentRequest.${where}.file_data.file_uri: a file URI is required`
  if ('functionCall' in p) {
    const f = p.functionCall
    if (role !== 'model') return 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.'
    if (!isObj(f) || typeof f.name !== 'string' || f.name === '') return `* GenerateContentRequest.${where}.function_call.name: Name cannot be empty.`
    if (f.args !== undefined && !isObj(f.args)) return `Invalid value at '${where}.function_call.args': an object is expected.`
  }
  if ('functionResponse' in p) {
    const f = p.functionResponse
    if (role !== 'user') return 'Please ensure that function response turn comes immediately after a function call turn.'
    if (!isObj(f) || typeof f.name !== 'string' || f.name === '') return `* GenerateContentRequest.${where}.function_response.name: Name cannot be empty.`
    if (!isObj(f.response)) return `Invalid value at '${where}.function_response.response': an object is expected.`
  }
  if ('thoughtSignature' in p && (typeof p.thoughtSignature !== 'string' || !/^[A-Za-z0-9+/=_-]+$/.test(p.thoughtSignature))) return `Invalid value at '${where}.thought_signature' (TYPE_BYTES), ` +
    'Base64 decoding failed.'
  return undefined
}

/**
 * The signature rule of Gemini 3: in the current turn (the contents after the last user content
 * that is not only function responses), each model step that calls functions carries a signature
 * it was given on its first function call (or one of the placeholders Gemini documents for history
 * whose signatures are unknown).
 */
function checkSignatures (contents: unknown[], issued: ReadonlySet<string>): string | undefined {
  let start = 0
  contents.forEach((c, i) => {
    if (isObj(c) && c.role === 'user' && Array.isArray(c.parts) && c.parts.some(p => isObj(p) && !('functionResponse' in p))) start = i
  })
  for (let i = start; i < contents.length; i++) {
    const c = contents[i]
    if (!isObj(c) || c.role !== 'model' || !Array.isArray(c.parts)) continue
    const first = c.parts.findIndex(p => isObj(p) && 'functionCall' in p)
    if (first === -1) continue
    const p = c.parts[first] as Record<string, unknown>
    const name = String((p.functionCall as { name?: unknown }).name)
    if (typeof p.thoughtSignature !== 'string') {
      return 'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model ' +
        `performance. Additional data, function call \`default_api:${name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`
    }
    if (!issued.has(p.thoughtSignature) && !SIGNATURE_PLACEHOLDERS.has(p.thoughtSignature)) return `Unable to submit request because it has an invalid thought signature for content at index ${i}.`
  }
  return undefined
}

/**
 * Checks a generateContent body as the Gemini API does: known fields; a non-empty `contents` of
 * user and model contents with non-empty parts, each part one data member (function calls in
 * model turns, function responses in user turns); each model turn's function calls answered by as
 * many function responses in the next content; a system instruction of text parts; function
 * declarations with valid names and one schema field; the calling mode; generation config fields
 * (at most 5 stop sequences, thinking config fields, no sampling parameter for a `noSampling`
 * model); and, with `issued`, the thought signatures of the current turn.
 */
export function checkGeminiRequest (body: unknown, opts: GeminiCheckOptions = {}): string | undefined {
  if (!isObj(body)) return 'Invalid JSON payload received.'
  for (const k of Object.keys(body)) if (!REQUEST_FIELDS.has(k)) return unknownField('', k)
  const contents = body.contents
  if (!Array.isArray(contents) || contents.length === 0) return '* GenerateContentRequest.contents: contents is not specified'
  for (const [i, c] of contents.entries()) {
    if (!isObj(c) || (c.role !== 'user' && c.role !== 'model')) return 'Please use a valid role: user, model.'
    if (!Array.isArray(c.parts) || c.parts.length === 0) return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`
    for (const [j, p] of c.parts.entries()) {
      const err = checkPart(p, `contents[${i}].parts[${j}]`, c.role)
      if (err) return err
    }
    const calls = c.parts.filter(p => isObj(p) && 'functionCall' in p).length
    if (c.role === 'model' && calls > 0 && i + 1 < contents.length) {
      const next = contents[i + 1] as { parts?: unknown[] }
      const answers = (next.parts ?? []).filter(p => isObj(p) && 'functionResponse' in p).length
      if (answers !== calls) return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.'
    }
  }
  if (body.systemInstruction !== undefined) {
    const s = body.systemInstruction
    if (!isObj(s) || !Array.isArray(s.parts) || s.parts.some(p => !isObj(p) || typeof p.text !== 'string')) return "Invalid value at 'system_instruction': text parts are expected."
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return "Invalid value at 'tools': a list is expected."
    for (const [i, t] of body.tools.entries()) {
      if (!isObj(t)) return `Invalid value at 'tools[${i}]'.`
      for (const [j, d] of (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []).entries()) {
        const where = `tools[${i}].function_declarations[${j}]`
        if (!isObj(d) || typeof d.name !== 'string' || !FUNCTION_NAME.test(d.name)) return `* GenerateContentRequest.${where}.name: Invalid function name. Must start with a letter or an ` +
          'underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and dashes, with a maximum length of 128.'
        if (d.parameters !== undefined && d.parametersJsonSchema !== undefined) return `* GenerateContentRequest.${where}: parameters and parameters_json_schema cannot both be set.`
        if (d.parametersJsonSchema !== undefined && !isObj(d.parametersJsonSchema)) return `Invalid value at '${where}.parameters_json_schema': an object is expected.`
      }
    }
  }
  if (body.toolConfig !== undefined) {
    const f = isObj(body.toolConfig) ? body.toolConfig.functionCallingConfig : undefined
    if (!isObj(f) || !['AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(String(f.mode))) return "Invalid value at 'tool_config.function_calling_config.mode'."
  }
  if (body.generationConfig !== undefined) {
    const g = body.generationConfig
    if (!isObj(g)) return "Invalid value at 'generation_config'."
    for (const k of Object.keys(g)) if (!GENERATION_FIELDS.has(k)) return unknownField('generation_config', k)
    if (Array.isArray(g.stopSequences) && g.stopSequences.length > 5) return '* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences are allowed.'
    if (g.maxOutputTokens !== undefined && (typeof g.maxOutputTokens !== 'number' || g.maxOutputTokens < 1)) return "Invalid value at 'generation_config.max_output_tokens'."
    if (g.thinkingConfig !== undefined) {
      if (!isObj(g.thinkingConfig)) return "Invalid value at 'generation_config.thinking_config'."
      for (const k of Object.keys(g.thinkingConfig)) if (!THINKING_FIELDS.has(k)) return unknownField('generation_config.thinking_config', k)
    }
    if (opts.noSampling) for (const k of ['temperature', 'topP', 'topK']) if (k in g) return `${k} is not supported for this model.`
  }
  if (opts.issued !== undefined) return checkSignatures(contents, opts.issued)
  return undefined
}
