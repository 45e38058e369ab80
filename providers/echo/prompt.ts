/** @module providers/echo/prompt – reads a chat or messages request the way the echo model needs. */

/** What the echo model answers from. */
export interface EchoPrompt {
  /** Text of the last user turn (or of the tool results it carries). */
  lastText: string
  /** The text parts of the last user turn, each whole (the "/tool" trigger is looked for in them). */
  lastParts: string[]
  images: number
  /** Characters of all prompt text, for the token count. */
  promptChars: number
  messageCount: number
  /** Set when the last turn carries tool results. */
  toolResult?: string
  /** Offered tools with their parameter schema (chat `parameters`, messages `input_schema`). */
  tools: { name: string, schema: unknown }[]
  toolChoice?: string
  maxTokens?: number
  /** A content part or block type a real upstream of this protocol would refuse. */
  badPart?: string
}

const CHAT_PARTS = new Set(['text', 'image_url', 'video_url', 'input_audio', 'file', 'refusal'])
const MESSAGES_BLOCKS = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'search_result', 'server_tool_use', 'web_search_tool_result'])

/** The members of a JSON object, or none (a request body is untrusted: every member is checked where read). */
function fields (v: unknown): Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null ? v as Record<string, unknown> : {}
}

function textOf (content: unknown, allowed: Set<string>, out: { images: number, bad?: string }, parts: string[] = []): string {
  if (typeof content === 'string') { parts.push(content); return content }
  if (!Array.isArray(content)) return ''
  const start = parts.length
  for (const part of content) {
    const p = fields(part)
    const type = p.type
    if (typeof type !== 'string' || !allowed.has(type)) { out.bad ??= String(type); continue }
    if (type === 'text' && typeof p.text === 'string') parts.push(p.text)
    else if (type === 'image_url' || type === 'image') out.images++
    else if (type === 'tool_result') parts.push(textOf(p.content, allowed, out))
  }
  return parts.slice(start).join(' ')
}

/** Reads a request body of the given protocol; throws a message string on a shape a real upstream would refuse. */
export function readPrompt (request: unknown, protocol: 'chat' | 'messages'): EchoPrompt {
  const body = fields(request)
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0) throw new Error('messages must be a non-empty array')
  const allowed = protocol === 'chat' ? CHAT_PARTS : MESSAGES_BLOCKS
  const acc = { images: 0, bad: undefined as string | undefined }
  let promptChars = 0
  let lastText = ''
  let lastParts: string[] = []
  let toolResult: string | undefined
  if (protocol === 'messages') {
    const sys = typeof body.system === 'string' ? body.system : textOf(body.system, allowed, acc)
    promptChars += sys.length
  }
  for (const message of messages) {
    const m = fields(message)
    const parts: string[] = []
    const text = textOf(m.content, allowed, acc, parts)
    promptChars += text.length
    if (m.role === 'tool') { toolResult = text; lastText = text; lastParts = parts; continue }
    if (m.role === 'user') {
      lastText = text
      lastParts = parts
      const hasResult = Array.isArray(m.content) && m.content.some(b => fields(b).type === 'tool_result')
      toolResult = hasResult ? text : undefined
    }
  }
  const tools = Array.isArray(body.tools)
    ? body.tools.map(t => {
      const tool = protocol === 'chat' ? fields(fields(t).function) : fields(t)
      return { name: String(tool.name), schema: protocol === 'chat' ? tool.parameters : tool.input_schema }
    })
    : []
  const tc = body.tool_choice
  const choice = fields(tc)
  const toolChoice = typeof tc === 'string'
    ? tc
    : choice.type === 'function' ? `name:${String(fields(choice.function).name)}` : choice.type === 'tool' ? `name:${String(choice.name)}` : choice.type === undefined ? undefined : String(choice.type)
  const maxTokens = body.max_completion_tokens ?? body.max_tokens
  return {
    lastText, lastParts, images: acc.images, promptChars, messageCount: messages.length, toolResult, tools, toolChoice,
    maxTokens: typeof maxTokens === 'number' ? maxTokens : undefined, badPart: acc.bad,
  }
}
