/** @module cli/print – what the admin CLI prints: aligned tables or JSON, the same for the ledger mode and --url. */
import type { BalanceView } from '../admin/service.ts'
import type { HoldView, KeyView } from '../admin/views.ts'
import type { SpoolSummary } from '../core/ledger/spool.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { formatMicros } from '../money/billing.ts'

export interface Writer { write (s: string): void }

export function writeSpool (path: string, s: SpoolSummary, json: boolean, out: Writer, extra: Record<string, number> = {}): void {
  const view = { spool: path, count: s.count, total: formatMicros(s.total), oldest: s.oldest === undefined ? null : new Date(s.oldest).toISOString(), unreadable: s.unreadable, ...extra }
  out.write(json ? JSON.stringify(view) + '\n' : table(Object.entries(view).map(([k, v]) => [k, v === null ? '-' : String(v)])))
}

export function table (rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map(r => r[c]!.length)))
  return rows.map(r => r.map((v, c) => c === r.length - 1 ? v : v.padEnd(widths[c]!)).join('  ').trimEnd() + '\n').join('')
}

export function priceText (p: ModelPrice): string {
  const write = p.cacheWrite ?? `${p.input} (input rate)`
  return `input   ${p.input}\ncached  ${p.cachedInput ?? `${p.input} (input rate)`}\nwrite   ${write}\nwrite1h ${p.cacheWrite1h ?? `${p.cacheWrite ?? p.input} (cache-write rate)`}\n` +
    `output  ${p.output}\n(currency units per million tokens)\n`
}

export function writeKeys (keys: KeyView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(keys, null, 2) + '\n'); return }
  const head = ['id', 'prefix', 'name', 'org', 'project', 'created', 'revoked', 'expires', 'budget', 'spent', 'rpm', 'tpm', 'last used', 'tags']
  const budget = (k: KeyView): string | null => {
    const parts = [k.budget ? `${k.budget.spent}/${k.budget.amount} per ${k.budget.window}` : '', k.lifetimeBudget ? `lifetime ${k.lifetimeBudget}` : ''].filter(Boolean)
    return parts.length > 0 ? parts.join(', ') : null
  }
  out.write(table([head, ...keys.map(k => [k.id, k.prefix, k.name, k.organization, k.project, k.createdAt, k.revokedAt, k.expiresAt, budget(k), k.spent, k.rpm, k.tpm, k.lastUsedAt,
    k.tags.length > 0 ? k.tags.join(',') : null].map(v => v === null ? '-' : String(v)))]))
}

export function writeHolds (holds: HoldView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(holds, null, 2) + '\n'); return }
  // Columns added later go last, so a script reading the table by position keeps its columns.
  const head = ['id', 'org', 'amount', 'state', 'expires', 'owner', 'trace', 'kind', 'key']
  out.write(table([head, ...holds.map(h => [h.id, h.organization || '-', h.amount, h.state, h.expiresAt, h.owner ?? '-', h.traceId ?? '-', h.kind, h.keyId ?? '-'])]))
}

/** What `holds release` prints: `released hold <id>` for a balance hold, `released key hold <id>` for a key's budget hold. */
export const releasedText = (id: string, kind: HoldView['kind']): string => `released ${kind === 'key' ? 'key hold' : 'hold'} ${id}\n`


export function writeBalance (v: BalanceView, json: boolean, out: Writer): void {
  out.write(json ? JSON.stringify(v) + '\n' : table([['organization', v.organization], ['balance', v.balance], ['reserved', v.reserved], ['available', v.available]]))
}

/** An organization as the admin API lists it. */
export interface OrganizationRow { id: string, name: string | null, balance: string, createdAt: string }
/** A project as the admin API lists it. */
export interface ProjectRow { id: string, organization: string, name: string | null, createdAt: string }
/** Usage sums as the admin API's summary gives them. */
export interface UsageSums {
  requests: number, inputTokens: number, cachedInputTokens: number, cacheWriteTokens: number, cacheWrite1hTokens: number, outputTokens: number, cost: string
}
/** The part of the admin API's usage summary the CLI prints. */
export interface UsageSummaryView { from: string, to: string, groupBy: string | null, total: UsageSums, groups: Array<UsageSums & { key: string | null }> }

export function writeOrganizations (rows: OrganizationRow[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(rows, null, 2) + '\n'); return }
  out.write(table([['id', 'name', 'balance', 'created'], ...rows.map(o => [o.id, o.name ?? '-', o.balance, o.createdAt])]))
}

export function writeProjects (rows: ProjectRow[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(rows, null, 2) + '\n'); return }
  out.write(table([['id', 'org', 'name', 'created'], ...rows.map(p => [p.id, p.organization, p.name ?? '-', p.createdAt])]))
}

const sums = (s: UsageSums): string[] =>
  [String(s.requests), String(s.inputTokens), String(s.cachedInputTokens), String(s.outputTokens), s.cost, String(s.cacheWriteTokens), String(s.cacheWrite1hTokens)]

/** The range and totals; grouped, one row per group and the total last. */
export function writeUsageSummary (v: UsageSummaryView, json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify({ from: v.from, to: v.to, groupBy: v.groupBy, total: v.total, groups: v.groups }, null, 2) + '\n'); return }
  out.write(`from ${v.from} to ${v.to}\n`)
  // Columns added later go last, so a script reading the table by position keeps its columns.
  const head = ['requests', 'input', 'cached', 'output', 'cost', 'cache-write', 'cache-write-1h']
  if (v.groupBy === null) { out.write(table([head, sums(v.total)])); return }
  out.write(table([[v.groupBy, ...head], ...v.groups.map(g => [g.key ?? '(none)', ...sums(g)]), ['total', ...sums(v.total)]]))
}
