/**
 * @module testing/bedrock-check – a ConverseRequest checked as Bedrock checks it, for the fake
 * Bedrock: the ValidationException message the service would answer, or undefined.
 */

const CONVERSE_FIELDS = new Set(['messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields',
  'promptVariables', 'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'serviceTier', 'outputConfig'])
const CONTENT_MEMBERS = new Set(['text', 'image', 'document', 'video', 'audio', 'toolUse', 'toolResult', 'guardContent', 'cachePoint',
  'reasoningContent', 'citationsContent', 'searchResult', 'toolAddition', 'toolRemoval'])
const SYSTEM_MEMBERS = new Set(['text', 'guardContent', 'cachePoint'])

export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Checks a ConverseRequest body as Bedrock does, returning the ValidationException message or
 * undefined: known top-level fields, a non-empty message list starting with a user message and
 * alternating roles, content blocks each with exactly one known member (toolUse with an object
 * input, reasoningContent with reasoningText or redactedContent, cachePoint of type default,
 * image with a format and base64 bytes), each toolUse of an assistant turn answered by a
 * toolResult in the next user turn and no result without its call, system blocks, tool specs, and
 * a toolConfig whenever toolUse or toolResult blocks appear.
 */
export function checkConverseRequest (body: unknown): string | undefined {
  if (!isObj(body)) return 'Malformed input request, please reformat your input and try again.'
  for (const k of Object.keys(body)) if (!CONVERSE_FIELDS.has(k)) return `Malformed input request: extraneous key [${k}] is not permitted, please reformat your input and try again.`
  const msgs = body.messages
  if (!Array.isArray(msgs) || msgs.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
  let tools = false
  let calls: string[] = []
  for (const [i, m] of msgs.entries()) {
    if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) return `1 validation error detected: Value at 'messages.${i + 1}.member.role' failed to satisfy constraint: ` +
      'Member must satisfy enum value set: [user, assistant]'
    if (i === 0 && m.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
    if (i > 0 && (msgs[i - 1] as { role: unknown }).role === m.role) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates ' +
      'between user and assistant roles and try again.'
    if (!Array.isArray(m.content) || m.content.length === 0) return `The content field in the Message object at messages.${i}.content is empty. Add a ContentBlock object to the ` +
      'content field and try again.'
    for (const [j, b] of m.content.entries()) {
      const where = `messages.${i}.content.${j}`
      if (!isObj(b) || Object.keys(b).length !== 1 || !CONTENT_MEMBERS.has(Object.keys(b)[0])) return `Malformed input request: ${where} must hold exactly one content member, ` +
        'please reformat your input and try again.'
      if ('toolUse' in b || 'toolResult' in b) tools = true
      const err = checkBlock(b, where, m.role)
      if (err) return err
    }
    // The tool calls of an assistant turn are answered by the next user turn, one result each.
    const content: unknown[] = m.content
    const ids = (kind: 'toolUse' | 'toolResult') => content.flatMap(b => isObj(b) && isObj(b[kind]) ? [String(b[kind].toolUseId)] : [])
    if (m.role === 'user') {
      const results = ids('toolResult')
      if (results.length > calls.length) return `The number of toolResult blocks at messages.${i}.content exceeds the number of toolUse blocks of previous turn.`
      const missing = calls.filter(id => !results.includes(id))
      if (missing.length > 0) return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${missing.join(', ')}`
      calls = []
    } else {
      calls = ids('toolUse')
    }
  }
  if (body.system !== undefined) {
    if (!Array.isArray(body.system)) return 'Malformed input request: system must be a list, please reformat your input and try again.'
    for (const [j, b] of body.system.entries()) {
      if (!isObj(b) || Object.keys(b).length !== 1 || !SYSTEM_MEMBERS.has(Object.keys(b)[0])) return `Malformed input request: system.${j} must hold exactly one of text, ` +
        'guardContent, cachePoint, please reformat your input and try again.'
      if ('text' in b && (typeof b.text !== 'string' || b.text === '')) return `The text field in system.${j} is blank. Add text to the text field, and try again.`
      if ('cachePoint' in b && (!isObj(b.cachePoint) || b.cachePoint.type !== 'default')) return `Malformed input request: system.${j}.cachePoint.type must be default.`
    }
  }
  if (tools && !isObj(body.toolConfig)) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'
  if (body.toolConfig !== undefined) {
    const tc = body.toolConfig
    if (!isObj(tc) || !Array.isArray(tc.tools) || tc.tools.length === 0) return 'Malformed input request: toolConfig.tools must hold at least one tool, please reformat your input and try again.'
    for (const [k, t] of tc.tools.entries()) {
      if (isObj(t) && 'cachePoint' in t) continue
      const spec = isObj(t) ? t.toolSpec : undefined
      if (!isObj(spec) || typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) return '1 validation error detected: Value at ' +
        `'toolConfig.tools.${k + 1}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`
      if (!isObj(spec.inputSchema) || !isObj(spec.inputSchema.json)) return `Malformed input request: toolConfig.tools.${k}.toolSpec.inputSchema.json must be an object, please ` +
        'reformat your input and try again.'
    }
    if (tc.toolChoice !== undefined) {
      const c = tc.toolChoice
      if (!isObj(c) || Object.keys(c).length !== 1 || !['auto', 'any', 'tool'].includes(Object.keys(c)[0])) {
        return 'Malformed input request: toolConfig.toolChoice must hold exactly one of auto, any, tool.'
      }
      if ('tool' in c && (!isObj(c.tool) || typeof c.tool.name !== 'string')) return 'Malformed input request: toolConfig.toolChoice.tool.name is required.'
    }
  }
  return undefined
}

function checkBlock (b: Record<string, unknown>, where: string, role: unknown): string | undefined {
  if ('text' in b && (typeof b.text !== 'string' || b.text === '')) return `The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`
  if ('toolUse' in b) {
    const t = b.toolUse
    if (role !== 'assistant') return `Malformed input request: toolUse at ${where} is only allowed in an assistant message.`
    if (!isObj(t) || typeof t.toolUseId !== 'string' || typeof t.name !== 'string' || !isObj(t.input)) return `Malformed input request: ${where}.toolUse needs toolUseId, name and ` +
      'an object input, please reformat your input and try again.'
  }
  if ('toolResult' in b) {
    const t = b.toolResult
    if (role !== 'user') return `Malformed input request: toolResult at ${where} is only allowed in a user message.`
    if (!isObj(t) || typeof t.toolUseId !== 'string' || !Array.isArray(t.content)) return `Malformed input request: ${where}.toolResult needs toolUseId and content, please reformat ` +
      'your input and try again.'
    if (t.status !== undefined && t.status !== 'success' && t.status !== 'error') return `1 validation error detected: Value at '${where}.toolResult.status' failed to satisfy ` +
      'constraint: Member must satisfy enum value set: [success, error]'
  }
  if ('reasoningContent' in b) {
    const r = b.reasoningContent
    const ok = isObj(r) && Object.keys(r).length === 1 && (
      (isObj(r.reasoningText) && typeof r.reasoningText.text === 'string') || typeof r.redactedContent === 'string')
    if (!ok) return `Malformed input request: ${where}.reasoningContent must hold reasoningText {text, signature} or redactedContent, please reformat your input and try again.`
  }
  if ('cachePoint' in b && (!isObj(b.cachePoint) || b.cachePoint.type !== 'default')) return `Malformed input request: ${where}.cachePoint.type must be default.`
  if ('image' in b) {
    const im = b.image
    if (!isObj(im) || !['png', 'jpeg', 'gif', 'webp'].includes(String(im.format)) || !isObj(im.source) || Object.keys(im.source).length !== 1) {
      return `Malformed input request: ${where}.image needs a format (png, jpeg, gif, webp) and one source, please reformat your input and try again.`
    }
    if ('bytes' in im.source && (typeof im.source.bytes !== 'string' || im.source.bytes === '')) return `Malformed input request: ${where}.image.source.bytes must be base64 bytes.`
  }
  return undefined
}
