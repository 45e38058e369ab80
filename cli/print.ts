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
  return `input   ${p.input}\ncached  ${p.cachedInput ?? `${p.input} (input rate)`}\noutput  ${p.output}\n(currency units per million tokens)\n`
}

export function writeKeys (keys: KeyView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(keys, null, 2) + '\n'); return }
  const head = ['id', 'prefix', 'name', 'org', 'project', 'created', 'revoked']
  out.write(table([head, ...keys.map(k => [k.id, k.prefix, k.name, k.organization, k.project, k.createdAt, k.revokedAt].map(v => v === null ? '-' : String(v)))]))
}

export function writeHolds (holds: HoldView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(holds, null, 2) + '\n'); return }
  const head = ['id', 'org', 'amount', 'state', 'expires', 'owner', 'trace']
  out.write(table([head, ...holds.map(h => [h.id, h.organization, h.amount, h.state, h.expiresAt, h.owner ?? '-', h.traceId ?? '-'])]))
}


export function writeBalance (v: BalanceView, json: boolean, out: Writer): void {
  out.write(json ? JSON.stringify(v) + '\n' : table([['organization', v.organization], ['balance', v.balance], ['reserved', v.reserved], ['available', v.available]]))
}
