/**
 * @module cli/ledger-commands – the admin CLI's commands on the ledger: each command line checked
 * and turned into an action on the admin service (admin/service.ts) before the ledger opens.
 */
import { gwError } from '../core/errors/errors.ts'
import { ChargeSpool, readSpool, spoolOwner, summarize } from '../core/ledger/spool.ts'
import type { ModelPrice } from '../core/types/model.ts'
import { newKeyId, type AdminService } from '../admin/service.ts'
import { holdView, keyView, USAGE_CSV_HEADER, usageCsvRow, usageView } from '../admin/views.ts'
import { amountArg, holdFilterArgs, options, positionals, priceArg, required, spoolPath, timeArg, usageError, type Parsed } from './args.ts'
import { priceText, releasedText, writeBalance, writeHolds, writeKeys, writeOrganizations, writeProjects, writeSpool, writeUsageSummary, type Writer } from './print.ts'
import { usageSummary } from '../admin/summary.ts'
import { iso } from '../admin/views.ts'
import { formatMicros } from '../money/billing.ts'
import { planJournal } from './journal.ts'
import { graceArg, KEY_SETTING_FLAGS, keyPatchOfFlags, keySettingsOf } from './key-flags.ts'
import { BalanceService, journalView } from '../admin/balances.ts'
import { cliActor } from '../admin/audit.ts'
import type { UsageSummaryQueryT } from '../admin/summary-schemas.ts'

/** Days a usage summary may span (one bucket a day; the admin API's bucket bound). */
const SUMMARY_MAX_DAYS = 1500
const DAY_MS = 86_400_000

/**
 * `usage summary`'s options as the admin API's summary query: [from, to) in days (--to default
 * now, --from default 30 days before it), grouped by --group-by, filtered by the rest.
 */
export function summaryQuery (get: (name: string) => string | undefined): UsageSummaryQueryT {
  const to = timeArg(get('to'), 'to') ?? Date.now()
  const from = timeArg(get('from'), 'from') ?? to - 30 * DAY_MS
  if (from > to) throw usageError('--from is after --to')
  if (to - from > SUMMARY_MAX_DAYS * DAY_MS) throw usageError(`a usage summary spans at most ${SUMMARY_MAX_DAYS} days`)
  const groupBy = get('group-by')
  if (groupBy !== undefined && groupBy !== 'model' && groupBy !== 'organization' && groupBy !== 'tag') throw usageError(`--group-by must be model, organization or tag: "${groupBy}"`)
  const q: UsageSummaryQueryT = { from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket: 'day', top: 10 }
  if (groupBy !== undefined) q.groupBy = groupBy
  for (const [flag, field] of [['org', 'organization'], ['project', 'project'], ['key', 'key'], ['model', 'model']] as const) {
    const v = get(flag)
    if (v !== undefined) q[field] = v
  }
  return q
}

/** A command on the ledger: the admin service's operation (admin/service.ts) and what it prints. */
export type Action = (admin: AdminService, out: Writer, err: Writer) => Promise<void>

/** Turns the command line into an action, validating every argument before the ledger opens. */
export function plan (p: Parsed, env: NodeJS.ProcessEnv): Action | undefined {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  switch (cmd) {
    case 'migrate': {
      options(p, cmd, [])
      if (sub !== undefined) throw usageError(`unexpected argument "${sub}" for "migrate"`)
      return async (_l, out) => { out.write('ledger migrated\n') }
    }
    case 'org create': {
      const get = options(p, cmd, ['name'])
      const [id] = positionals(rest, cmd, ['id'])
      const name = get('name')
      return async (admin, out) => {
        await admin.createOrganization(id!, name)
        out.write(`created organization ${id}\n`)
      }
    }
    case 'project create': {
      const get = options(p, cmd, ['org', 'name'])
      const [id] = positionals(rest, cmd, ['id'])
      const org = required(get('org'), 'org', cmd)
      const name = get('name')
      return async (admin, out) => {
        await admin.createProject(id!, org, name)
        out.write(`created project ${id} in organization ${org}\n`)
      }
    }
    case 'org list': {
      options(p, cmd, ['json'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeOrganizations((await admin.ledger.listOrganizations()).map(o => ({ id: o.id, name: o.name ?? null, balance: formatMicros(o.balance), createdAt: iso(o.createdAt) })), json, out)
      }
    }
    case 'project list': {
      const get = options(p, cmd, ['json', 'org'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      const org = get('org')
      return async (admin, out) => {
        writeProjects((await admin.ledger.listProjects(org)).map(r => ({ id: r.id, organization: r.organization, name: r.name ?? null, createdAt: iso(r.createdAt) })), json, out)
      }
    }
    case 'usage summary': {
      const get = options(p, cmd, ['from', 'to', 'group-by', 'org', 'project', 'key', 'model', 'json'])
      positionals(rest, cmd, [])
      const q = summaryQuery(get)
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeUsageSummary(await usageSummary(admin.ledger, q, Date.now()), json, out)
      }
    }
    case 'balance topup': {
      const get = options(p, cmd, ['reason'])
      const [org, amount] = positionals(rest, cmd, ['org', 'amount'])
      const micros = amountArg(amount!)
      const reason = get('reason')
      return async (admin, out) => {
        const e = await new BalanceService(admin.ledger).topUp(org!, micros, cliActor(), reason)
        out.write(`${org} balance ${journalView(e).balance}\n`)
      }
    }
    case 'balance show': {
      options(p, cmd, ['json'])
      const [org] = positionals(rest, cmd, ['org'])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeBalance(await admin.balance(org!), json, out)
      }
    }
    case 'key create': {
      const get = options(p, cmd, ['org', 'project', 'id', ...KEY_SETTING_FLAGS])
      positionals(rest, cmd, [])
      const org = required(get('org'), 'org', cmd)
      const project = get('project')
      const { name, models, ...settings } = keySettingsOf(get, false)
      const patch = keyPatchOfFlags(settings)
      const id = get('id') ?? newKeyId()
      if (!/^[\w.:@-]{1,128}$/.test(id)) throw usageError(`--id may hold letters, digits and _ . : @ - only: "${id}"`)
      return async (admin, out, err) => {
        const { secret } = await admin.createKey({
          id, organization: org,
          ...(project !== undefined ? { project } : {}),
          ...(typeof name === 'string' ? { name } : {}),
          ...(Array.isArray(models) ? { models: keyPatchOfFlags({ models }).models! } : {}),
          settings: patch,
        }, { knownProject: false })
        out.write(`id      ${id}\nsecret  ${secret}\n`)
        err.write('The secret is shown only now (the ledger keeps its sha256): store it safely.\n')
      }
    }
    case 'key update': {
      const get = options(p, cmd, [...KEY_SETTING_FLAGS])
      const [id] = positionals(rest, cmd, ['id'])
      const patch = keyPatchOfFlags(keySettingsOf(get, true))
      if (Object.keys(patch).length === 0) throw usageError(`"${cmd}" needs a setting to change (--models, --expires, --tags, --budget, --lifetime-budget, --rpm, --tpm, --name)`)
      return async (admin, out) => {
        await admin.updateKey(id!, patch)
        out.write(`updated key ${id}\n`)
      }
    }
    case 'key rotate': {
      const get = options(p, cmd, ['grace'])
      const [id] = positionals(rest, cmd, ['id'])
      const grace = graceArg(get('grace'))
      return async (admin, out, err) => {
        const { secret } = await admin.rotateKey(id!, grace)
        out.write(`id      ${id}\nsecret  ${secret}\n`)
        err.write(`The secret is shown only now; the previous one works for ${grace} s more.\n`)
      }
    }
    case 'key revoke': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (admin, out) => {
        await admin.revokeKey(id!)
        out.write(`revoked key ${id}\n`)
      }
    }
    case 'key list': {
      options(p, cmd, ['json'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      return async (admin, out) => {
        writeKeys((await admin.ledger.listKeys()).map(k => keyView(k)), json, out)
      }
    }
    case 'price set': {
      const get = options(p, cmd, ['input', 'output', 'cached', 'cache-write', 'cache-write-1h'])
      const [model] = positionals(rest, cmd, ['model'])
      const price: ModelPrice = {
        input: priceArg(required(get('input'), 'input', cmd), 'input'),
        output: priceArg(required(get('output'), 'output', cmd), 'output'),
      }
      const cached = get('cached')
      if (cached !== undefined) price.cachedInput = priceArg(cached, 'cached')
      const write = get('cache-write')
      if (write !== undefined) price.cacheWrite = priceArg(write, 'cache-write')
      const hour = get('cache-write-1h')
      if (hour !== undefined) price.cacheWrite1h = priceArg(hour, 'cache-write-1h')
      return async (admin, out) => {
        await admin.setPrice(model!, price)
        out.write(`price of ${model} set\n${priceText(price)}`)
      }
    }
    case 'price show': {
      options(p, cmd, ['json'])
      const [model] = positionals(rest, cmd, ['model'])
      const json = p.flags.has('json')
      return async (admin, out) => {
        const price = await admin.price(model!)
        out.write(json ? JSON.stringify({ model, ...price }) + '\n' : `model   ${model}\n${priceText(price)}`)
      }
    }
    case 'holds list': {
      const get = options(p, cmd, ['json', 'org', 'key', 'kind'])
      positionals(rest, cmd, [])
      const json = p.flags.has('json')
      const filter = holdFilterArgs(get)
      return async (admin, out) => {
        const holds = await admin.holds(filter)
        if (!holds) throw gwError('GW_ERR_HOLDS_NOT_STORED')
        writeHolds(holds.map(holdView), json, out)
      }
    }
    case 'holds release': {
      options(p, cmd, [])
      const [id] = positionals(rest, cmd, ['id'])
      return async (admin, out) => {
        out.write(releasedText(id!, await admin.releaseHold(id!)))
      }
    }
    case 'spool replay': {
      const get = options(p, cmd, ['spool', 'json'])
      positionals(rest, cmd, [])
      const path = spoolPath(get, env)
      const json = p.flags.has('json')
      return async (admin, out) => {
        const owner = spoolOwner(path)
        if (owner !== undefined) throw gwError('GW_ERR_SPOOL_OWNED', [path, owner])
        const before = summarize(readSpool(path).charges)
        // Loads the file and replays it once; what commits leaves the file, the rest stays.
        const spool = new ChargeSpool(path, admin.ledger)
        await spool.open()
        const left = spool.summary()
        await spool.close()
        writeSpool(path, left, json, out, { committed: before.count - left.count })
        if (left.count > 0) throw gwError('GW_ERR_SPOOL_LEFT', [left.count])
      }
    }
    case 'usage export': {
      const get = options(p, cmd, ['from', 'to', 'format'])
      positionals(rest, cmd, [])
      const from = timeArg(get('from'), 'from')
      const to = timeArg(get('to'), 'to')
      if (from !== undefined && to !== undefined && from > to) throw usageError('--from is after --to')
      const format = get('format') ?? 'csv'
      if (format !== 'csv' && format !== 'json') throw usageError(`--format must be csv or json: "${format}"`)
      return async (admin, out) => {
        const records = await admin.ledger.listUsage({ ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) })
        if (format === 'json') {
          out.write(records.length ? '[\n' + records.map(r => JSON.stringify(usageView(r))).join(',\n') + '\n]\n' : '[]\n')
          return
        }
        out.write(USAGE_CSV_HEADER)
        for (const r of records) out.write(usageCsvRow(r))
      }
    }
    default:
      // The balance journal, verify and the audit log (cli/journal.ts).
      return planJournal(p)
  }
}
