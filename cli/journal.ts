/**
 * @module cli/journal – the admin CLI's balance journal, invariant check and audit log commands
 * (`balance adjust|refund|history`, `verify`, `audit list`), on the ledger and over --url, and
 * which of the CLI's commands are admin writes (audited: actor `cli:<OS user>` on the ledger; over
 * --url the admin API records the admin key's id).
 */
import { gwError } from '../core/errors/errors.ts'
import type { AuditQuery } from '../core/ledger/ledger.ts'
import type { AdminService } from '../admin/service.ts'
import { BalanceService, journalView, MAX_REASON, type AuditView, type JournalView, type VerifyView } from '../admin/balances.ts'
import { cliActor } from '../admin/audit.ts'
import { amountMicros, options, positionals, required, timeArg, usageError, type Parsed } from './args.ts'
import { table, type Writer } from './print.ts'
import type { AdminClient, Remote } from './remote.ts'

export type LedgerAction = (admin: AdminService, out: Writer, err: Writer) => Promise<void>

/**
 * The CLI's admin writes: command → audit action, and the positional argument naming the target
 * (none: the ledger names it, e.g. a key whose id the CLI made up). A new write command is audited
 * by its line here.
 */
const WRITES: Record<string, { action: string, target?: number }> = {
  'org create': { action: 'organization.create', target: 0 },
  'project create': { action: 'project.create', target: 0 },
  'balance topup': { action: 'balance.topup', target: 0 },
  'balance adjust': { action: 'balance.adjust', target: 0 },
  'balance refund': { action: 'balance.refund', target: 0 },
  'key create': { action: 'key.create' },
  'key update': { action: 'key.update', target: 0 },
  'key rotate': { action: 'key.rotate', target: 0 },
  'key revoke': { action: 'key.revoke', target: 0 },
  'price set': { action: 'price.set', target: 0 },
  'holds release': { action: 'hold.release', target: 0 },
}

/** The audit action and target of an admin write command; undefined for a read. */
export function writeOf (p: Parsed): { action: string, target: string } | undefined {
  const [group, sub, ...rest] = p.positionals
  const w = WRITES[`${group} ${sub ?? ''}`.trim()]
  return w && { action: w.action, target: w.target === undefined ? (typeof p.flags.get('id') === 'string' ? p.flags.get('id') as string : '') : rest[w.target] ?? '' }
}

/** A signed amount, not 0, in currency units → micro-units. */
function signedAmountArg (s: string): number {
  const m = amountMicros(s)
  if (m === 0) throw usageError('amount must not be 0')
  return m
}

function reasonArg (r: string | undefined, cmd: string): string {
  const v = required(r?.trim(), 'reason', cmd)
  if (v.length > MAX_REASON) throw usageError(`--reason is longer than ${MAX_REASON} characters`)
  return v
}

function limitArg (s: string | undefined): number {
  if (s === undefined) return 100
  const n = Number(s)
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw usageError(`--limit must be an integer from 1 to 1000: "${s}"`)
  return n
}

/** The commands, their arguments checked: what each sends (body, query) and prints. */
interface Planned { cmd: string, org?: string, micros?: number, amount?: string, reason?: string, trace?: string, limit: number, audit?: AuditQuery, json: boolean }

function parse (p: Parsed): Planned | undefined {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  const json = p.flags.has('json')
  switch (cmd) {
    case 'balance adjust': {
      const get = options(p, cmd, ['reason'])
      const [org, amount] = positionals(rest, cmd, ['org', 'amount'])
      return { cmd, org: org!, micros: signedAmountArg(amount!), amount: amount!.trim(), reason: reasonArg(get('reason'), cmd), limit: 0, json }
    }
    case 'balance refund': {
      const get = options(p, cmd, ['reason', 'trace'])
      const [org, amount] = positionals(rest, cmd, ['org', 'amount'])
      const micros = signedAmountArg(amount!)
      if (micros < 0) throw usageError(`amount must be positive: "${amount}"`)
      const trace = get('trace')
      if (trace === '') throw usageError('--trace needs a trace id')
      return { cmd, org: org!, micros, amount: amount!.trim(), reason: reasonArg(get('reason'), cmd), ...(trace !== undefined ? { trace } : {}), limit: 0, json }
    }
    case 'balance history': {
      const get = options(p, cmd, ['json', 'limit'])
      const [org] = positionals(rest, cmd, ['org'])
      return { cmd, org: org!, limit: limitArg(get('limit')), json }
    }
    case 'audit list': {
      const get = options(p, cmd, ['json', 'limit', 'actor', 'action', 'target', 'from', 'to'])
      positionals(rest, cmd, [])
      const from = timeArg(get('from'), 'from')
      const to = timeArg(get('to'), 'to')
      if (from !== undefined && to !== undefined && from > to) throw usageError('--from is after --to')
      const limit = limitArg(get('limit'))
      const q: AuditQuery = { limit, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) }
      for (const f of ['actor', 'action', 'target'] as const) if (get(f) !== undefined) q[f] = get(f)
      return { cmd, limit, audit: q, json }
    }
    default:
      if (group === 'verify') {
        options(p, 'verify', ['json'])
        if (sub !== undefined) throw usageError(`unexpected argument "${sub}" for "verify"`)
        return { cmd: 'verify', limit: 0, json }
      }
      return undefined
  }
}

/** The journal's commands on the ledger (undefined: not one of them). */
export function planJournal (p: Parsed): LedgerAction | undefined {
  const c = parse(p)
  if (!c) return undefined
  return async (admin, out) => {
    const b = new BalanceService(admin.ledger)
    switch (c.cmd) {
      case 'balance adjust': return posted(journalView(await b.adjust(c.org!, c.micros!, c.reason!, cliActor())), out)
      case 'balance refund': return posted(journalView(await b.refund(c.org!, c.micros!, c.reason!, cliActor(), c.trace)), out)
      case 'balance history': return writeHistory((await b.history(c.org!, c.limit)).data, c.json, out)
      case 'audit list': return writeAudit((await b.audit(c.audit!)).data, c.json, out)
      default: return writeVerify(await b.verify(), c.json, out)
    }
  }
}

/** The same commands over the admin API (undefined: not one of them). */
export function planJournalRemote (p: Parsed): Remote | undefined {
  const c = parse(p)
  if (!c) return undefined
  const org = encodeURIComponent(c.org ?? '')
  return async (api: AdminClient, out) => {
    switch (c.cmd) {
      case 'balance adjust': return posted((await api.json<{ entry: JournalView }>('POST', `/admin/organizations/${org}/adjustments`, { amount: c.amount, reason: c.reason })).entry, out)
      case 'balance refund': return posted((await api.json<{ entry: JournalView }>('POST', `/admin/organizations/${org}/refunds`,
        { amount: c.amount, reason: c.reason, ...(c.trace !== undefined ? { traceId: c.trace } : {}) })).entry, out)
      case 'balance history': return writeHistory((await api.json<{ data: JournalView[] }>('GET', `/admin/organizations/${org}/journal?limit=${c.limit}`)).data, c.json, out)
      case 'audit list': {
        const q = new URLSearchParams({ limit: String(c.limit) })
        for (const f of ['actor', 'action', 'target'] as const) if (c.audit![f] !== undefined) q.set(f, c.audit![f]!)
        for (const f of ['from', 'to'] as const) if (c.audit![f] !== undefined) q.set(f, new Date(c.audit![f]!).toISOString())
        return writeAudit((await api.json<{ data: AuditView[] }>('GET', `/admin/audit?${q}`)).data, c.json, out)
      }
      default: return writeVerify(await api.json<VerifyView>('GET', '/admin/verify'), c.json, out)
    }
  }
}

function posted (e: JournalView, out: Writer): void {
  out.write(`${e.organization} balance ${e.balance} (${e.kind} ${e.amount}, journal row ${e.id})\n`)
}

export function writeHistory (rows: JournalView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(rows, null, 2) + '\n'); return }
  out.write(table([['id', 'time', 'kind', 'amount', 'balance', 'actor', 'trace', 'reason'],
    ...rows.map(e => [String(e.id), e.time, e.kind, e.amount, e.balance, e.actor, e.traceId ?? '-', e.reason ?? '-'])]))
}

export function writeAudit (rows: AuditView[], json: boolean, out: Writer): void {
  if (json) { out.write(JSON.stringify(rows, null, 2) + '\n'); return }
  out.write(table([['id', 'time', 'actor', 'action', 'target', 'result'],
    ...rows.map(e => [String(e.id), e.time, e.actor, e.action, e.target || '-', e.status === null ? e.result : `${e.result} (${e.status})`])]))
}

/** Prints the check; differing organizations fail the command (exit 1) after they are listed. */
export function writeVerify (v: VerifyView, json: boolean, out: Writer): void {
  if (json) out.write(JSON.stringify(v, null, 2) + '\n')
  else if (v.ok) out.write(`ok: ${v.organizations} organization(s), each balance = journal − charges\n`)
  else out.write(table([['organization', 'balance', 'journal', 'charges', 'difference'], ...v.differences.map(d => [d.organization, d.balance, d.journal, d.charges, d.difference])]))
  if (!v.ok) throw gwError('GW_ERR_LEDGER_UNBALANCED', [v.differences.length])
}
