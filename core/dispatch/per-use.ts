/**
 * @module per-use – upstream features billed per use or at another rate than the model's token
 * prices: server tools (the upstream runs them: web search, web fetch, code execution, image
 * generation...) and service tiers (priority, flex...). One passes only when the model lists it
 * in `supported_parameters` (the feature name, or `service_tier`) AND its price has a per-use
 * price (`price.perUse[feature]`) or a tier multiplier (`price.serviceTiers[tier]`); otherwise the
 * call is refused with 400 naming the parameter (a server tool is never dropped: that would change
 * the answer; a server tool sent only to upstreams of another protocol is dropped by the
 * translators and passes). Client tools (functions, and the tools the client itself executes: bash, text
 * editor, computer use, memory) are not per-use features.
 */
import { gwError } from '../errors/errors.ts'
import type { ClientProtocol, ModelEntry } from '../types/model.ts'

/** One server tool of a request: where it is, its type as sent, and the feature it is billed as. */
export interface ServerTool { where: string, type: string, feature: string, maxUses?: number }

/** `service_tier` values billed at the model's own prices (absent is the upstream's default). */
const STANDARD_TIERS = new Set(['auto', 'default', 'standard', 'standard_only'])
/** Messages tool types the client executes (Anthropic-defined client tools), by prefix. */
const MESSAGES_CLIENT_TOOLS = /^(custom$|bash_|text_editor_|computer_|memory_)/
/** Responses tool types the client executes. */
const RESPONSES_CLIENT_TOOLS = new Set(['function', 'custom', 'computer_use_preview', 'computer_use', 'local_shell', 'shell', 'apply_patch'])
/** Server uses a call is reserved for when its tool sets no `max_uses` (the Responses and chat APIs have none). */
export const DEFAULT_RESERVED_USES = 10

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The feature a server tool type is billed as: messages types lose their date (`web_search_20250305`
 * → `web_search`), Responses types their `_preview` and date (`web_search_preview_2025_03_11` →
 * `web_search`); a messages `mcp_toolset` is `mcp`, as the Responses `mcp` tool.
 */
export function featureOf (type: string): string {
  if (type === 'mcp_toolset') return 'mcp'
  return type.replace(/_\d{8}$/, '').replace(/_\d{4}_\d{2}_\d{2}$/, '').replace(/_preview$/, '')
}

/**
 * The server tools of a client body: messages and Responses `tools` entries (a Responses namespace's
 * members, and the tools of Responses `additional_tools` input items, too), chat `web_search_options`,
 * and each messages `mcp_servers` entry (the upstream connects to the server it names: the feature
 * `mcp`, as an `mcp_toolset` tool; no uses reserved for the entry, messages answers report none).
 */
export function serverTools (protocol: ClientProtocol, body: Record<string, unknown>): ServerTool[] {
  const out: ServerTool[] = []
  if (protocol === 'chat') {
    if (body.web_search_options !== undefined && body.web_search_options !== null) out.push({ where: 'web_search_options', type: 'web_search_options', feature: 'web_search', maxUses: 1 })
  }
  if (protocol === 'messages' && Array.isArray(body.mcp_servers)) {
    for (let i = 0; i < body.mcp_servers.length; i++) out.push({ where: `mcp_servers[${i}]`, type: 'mcp_servers', feature: 'mcp', maxUses: 0 })
  }
  const add = (t: unknown, where: string): void => {
    if (!isObject(t) || typeof t.type !== 'string') return
    // A Responses `namespace` (Codex) is no tool itself but a group of them: its members are checked.
    if (protocol === 'responses' && t.type === 'namespace') {
      if (Array.isArray(t.tools)) t.tools.forEach((m: unknown, j) => { add(m, `${where}.tools[${j}]`) })
      return
    }
    if (protocol === 'messages' ? MESSAGES_CLIENT_TOOLS.test(t.type) : protocol === 'responses' ? RESPONSES_CLIENT_TOOLS.has(t.type) : t.type === 'function' || t.type === 'custom') return
    const maxUses = typeof t.max_uses === 'number' && Number.isInteger(t.max_uses) && t.max_uses >= 0 ? t.max_uses : undefined
    out.push({ where, type: t.type, feature: featureOf(t.type), maxUses })
  }
  const tools = Array.isArray(body.tools) ? body.tools : []
  for (let i = 0; i < tools.length; i++) add(tools[i], `tools[${i}]`)
  // A Responses `additional_tools` input item adds tools for the turn, as `tools` does: the same checks.
  if (protocol === 'responses' && Array.isArray(body.input)) {
    body.input.forEach((item: unknown, i) => {
      if (isObject(item) && item.type === 'additional_tools' && Array.isArray(item.tools)) item.tools.forEach((m: unknown, j) => { add(m, `input[${i}].tools[${j}]`) })
    })
  }
  return out
}

/** The `service_tier` asked for when it is not a standard one; undefined otherwise. */
export function requestedTier (body: Record<string, unknown>): string | undefined {
  const t = body.service_tier
  return typeof t === 'string' && !STANDARD_TIERS.has(t) ? t : undefined
}

/**
 * Refuses (400, naming the parameter) a server tool or service tier the model does not list and
 * price. `toolsReachUpstream`: the model has a deployment speaking the client's protocol; without
 * one, the translators drop server tools (they have no form in the other protocols), so they
 * cost nothing and are not refused. A tier crosses protocols: always checked.
 */
export function checkPerUse (model: ModelEntry, protocol: ClientProtocol, body: Record<string, unknown>, toolsReachUpstream = true): void {
  for (const t of toolsReachUpstream ? serverTools(protocol, body) : []) {
    const listed = model.supportedParameters.has(t.feature) || (t.where === 'web_search_options' && model.supportedParameters.has('web_search_options'))
    if (!listed) throw gwError('GW_ERR_BAD_REQUEST', [`${t.where}: the server tool "${t.type}" is not available for model "${model.id}"`])
    if (model.price?.perUse?.[t.feature] === undefined) throw gwError('GW_ERR_BAD_REQUEST', [`${t.where}: the server tool "${t.type}" has no per-use price for model "${model.id}"`])
  }
  const tier = body.service_tier
  if (tier === undefined || tier === null) return
  if (typeof tier !== 'string') throw gwError('GW_ERR_BAD_REQUEST', ['service_tier: must be a string'])
  if (STANDARD_TIERS.has(tier)) return
  if (!model.supportedParameters.has('service_tier') || model.price?.serviceTiers?.[tier] === undefined) {
    throw gwError('GW_ERR_BAD_REQUEST', [`service_tier: "${tier}" is not available for model "${model.id}"`])
  }
}

/**
 * The uses a call is reserved for, by feature: each server tool's `max_uses`, or
 * DEFAULT_RESERVED_USES without one (chat's `web_search_options`: one search per call).
 */
export function reservedUses (protocol: ClientProtocol, body: Record<string, unknown>): Record<string, number> | undefined {
  let out: Record<string, number> | undefined
  for (const t of serverTools(protocol, body)) {
    out ??= {}
    out[t.feature] = (out[t.feature] ?? 0) + (t.maxUses ?? DEFAULT_RESERVED_USES)
  }
  return out
}

/**
 * A call's per-use terms at settle: the tier asked for, and the uses billed when the upstream
 * reports none (chat's `web_search_options`: one search per call; chat answers count none).
 */
export function settleTerms (protocol: ClientProtocol, body: Record<string, unknown> | undefined): { tier?: string, uses?: Record<string, number> } | undefined {
  if (!isObject(body)) return undefined
  const tier = requestedTier(body)
  const uses = protocol === 'chat' && body.web_search_options !== undefined && body.web_search_options !== null ? { web_search: 1 } : undefined
  return tier === undefined && uses === undefined ? undefined : { tier, uses }
}

/** A call's per-use terms at admit: the tier asked for and the uses reserved (reservedUses). */
export function reserveTerms (protocol: ClientProtocol, body: Record<string, unknown> | undefined): { tier?: string, uses?: Record<string, number> } | undefined {
  if (!isObject(body)) return undefined
  const tier = requestedTier(body)
  const uses = reservedUses(protocol, body)
  return tier === undefined && uses === undefined ? undefined : { tier, uses }
}
