#!/usr/bin/env node
/**
 * @module cli/admin – the admin CLI, the `model-gateway-admin` bin: organizations, projects,
 * balances, holds, keys, prices, usage exports and summaries in the ledger (SQLite file or
 * PostgreSQL), or through a running gateway's admin API. Run `model-gateway-admin help`.
 */
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { openLedger, type LedgerConfig } from '../core/ledger/index.ts'
import { isGatewayError } from '../core/errors/errors.ts'
import type { Ledger } from '../core/ledger/ledger.ts'
import { readSpool, summarize } from '../core/ledger/spool.ts'
import { AdminService } from '../admin/service.ts'
import { USAGE_CSV_COLUMNS } from '../admin/views.ts'
import { cliText, ledgerConfig, options, parseArgv, positionals, spoolPath, usageError } from './args.ts'
import { writeSpool, type Writer } from './print.ts'
import { AdminClient, planRemote, type Remote } from './remote.ts'
import { writeOf } from './journal.ts'
import { audited, cliActor } from '../admin/audit.ts'
import { USAGE } from './help.ts'
import { plan, summaryQuery, type Action } from './ledger-commands.ts'

export type { Writer }
export { USAGE, summaryQuery }
export { USAGE_CSV_COLUMNS }

/** The admin key for --url: GATEWAY_ADMIN_KEY (the server's name for it), else the older GW_ADMIN_KEY. */
export function adminKeyOf (env: NodeJS.ProcessEnv): string | undefined {
  return env.GATEWAY_ADMIN_KEY || env.GW_ADMIN_KEY || undefined
}

/** Runs the CLI; returns the exit code (0 ok, 1 ledger error, 2 usage error). */
export async function main (argv: string[], env: NodeJS.ProcessEnv, out: Writer, err: Writer): Promise<number> {
  let action: Action | undefined
  let write: ReturnType<typeof writeOf>
  let cfg: LedgerConfig | undefined
  let remote: { client: AdminClient, run: Remote } | undefined
  try {
    const p = parseArgv(argv)
    const first = p.positionals[0]
    if (first === undefined || first === 'help' || p.flags.has('help')) {
      out.write(USAGE)
      return 0
    }
    if (p.positionals[0] === 'spool' && p.positionals[1] === 'show') {
      const get = options(p, 'spool show', ['spool', 'json'])
      positionals(p.positionals.slice(2), 'spool show', [])
      if (p.flags.has('url')) throw usageError('"spool show" reads the spool file only, not over --url')
      const path = spoolPath(get, env)
      let read: ReturnType<typeof readSpool>
      try {
        read = readSpool(path)
      } catch (e) {
        err.write(`admin: cannot read the spool ${path}: ${(e as Error).message}\n`)
        return 1
      }
      writeSpool(path, summarize(read.charges, read.unreadable.length), p.flags.has('json'), out)
      return 0
    }
    action = plan(p, env)
    if (!action) throw usageError(`unknown command "${p.positionals.slice(0, 2).join(' ')}"`)
    write = writeOf(p)
    const url = p.flags.get('url')
    const adminKey = p.flags.get('admin-key')
    if (url !== undefined) {
      if (typeof url !== 'string' || !/^https?:\/\/[^/]+/.test(url)) throw usageError('--url must be the admin API\'s http(s):// address')
      for (const f of ['sqlite', 'ledger-url', 'schema']) if (p.flags.has(f)) throw usageError(`give either --url or --${f}, not both`)
      const key = typeof adminKey === 'string' ? adminKey : adminKeyOf(env)
      if (!key) throw usageError('--url needs an admin key: --admin-key or $GATEWAY_ADMIN_KEY')
      const flag = (name: string): string | undefined => { const v = p.flags.get(name); return v === true ? undefined : v }
      const summary = p.positionals[0] === 'usage' && p.positionals[1] === 'summary' ? summaryQuery(flag) : undefined
      remote = { client: new AdminClient(url.replace(/\/+$/, ''), key), run: planRemote(p, summary) }
    } else {
      if (adminKey !== undefined) throw usageError('--admin-key goes with --url')
      cfg = ledgerConfig(name => { const v = p.flags.get(name); return v === true ? undefined : v }, env)
    }
  } catch (e) {
    if (isGatewayError(e) && e.code === 'GW_ERR_CLI_USAGE') {
      err.write(`admin: ${cliText(e)}\nRun "model-gateway-admin help" for usage.\n`)
      return 2
    }
    throw e
  }

  if (remote) {
    try {
      await remote.run(remote.client, out, err)
      return 0
    } catch (e) {
      err.write(`admin: ${cliText(e)}\n`)
      return 1
    }
  }
  let ledger: Ledger | undefined
  try {
    ledger = await openLedger(cfg!)
    await ledger.migrate()
    const admin = new AdminService(ledger)
    const run = (): Promise<void> => action!(admin, out, err)
    // An admin write leaves its audit row (actor cli:<OS user>), refusals included (admin/audit.ts).
    if (write) await audited({ ledger, lost: (_draft, e) => err.write(`admin: the audit row of this write could not be written: ${cliText(e)}\n`) }, { actor: cliActor(), ...write }, run)
    else await run()
    return 0
  } catch (e) {
    err.write(`admin: ${cliText(e)}\n`)
    return 1
  } finally {
    await ledger?.close().catch(() => {})
  }
}

function isEntryPoint (): boolean {
  const script = process.argv[1]
  if (!script) return false
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href
  } catch {
    return import.meta.url === pathToFileURL(script).href
  }
}

if (isEntryPoint()) {
  process.exitCode = await main(process.argv.slice(2), process.env, process.stdout, process.stderr)
}
