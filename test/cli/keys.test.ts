/**
 * @module test/cli/keys – `key create/update/rotate/list` with virtual key settings, on a SQLite
 * ledger file and over --url (the admin API): the ledger holds what the flags say, `none` clears,
 * a rotation prints a new secret and keeps the old one for --grace, bad values exit 2 naming the
 * flag, and each write is audited as key.update / key.rotate.
 */
import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { main } from '../../cli/admin.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { hashKey } from '../../core/ledger/keys.ts'
import { ADMIN_KEY, running } from '../helpers/admin.ts'

interface Run { code: number, out: string, err: string }

async function commands (t: Test, args: string[], env: Record<string, string>, ledger: Ledger): Promise<void> {
  const cli = async (...a: string[]): Promise<Run> => {
    let out = ''
    let err = ''
    const code = await main([...args, ...a], env, { write: s => { out += s } }, { write: s => { err += s } })
    return { code, out, err }
  }
  t.equal((await cli('org', 'create', 'acme')).code, 0)
  const made = await cli('key', 'create', '--org', 'acme', '--id', 'k1', '--models', 'echo/*,msgvendor/echo-1', '--expires', '2030-01-01', '--tags', 'team:web,prod',
    '--budget', '5', '--window', 'day', '--lifetime-budget', '50', '--rpm', '60', '--tpm', '10000')
  t.equal(made.code, 0, made.err)
  const secret = /secret {2}(\S+)/.exec(made.out)![1]
  let k = (await ledger.listKeys()).find(x => x.id === 'k1')!
  t.match(k, { models: ['echo/*', 'msgvendor/echo-1'], expiresAt: Date.UTC(2030, 0, 1), tags: ['team:web', 'prod'], budget: { amount: 5_000_000, window: 'day' },
    lifetimeBudget: 50_000_000, rpm: 60, tpm: 10000, hash: hashKey(secret) })
  const list = await cli('key', 'list')
  t.match(list.out, /0\.000000\/5\.000000 per day, lifetime 50\.000000/, 'the list shows the budget')
  t.match(list.out, /team:web,prod/, 'and the tags')
  const json = JSON.parse((await cli('key', 'list', '--json')).out)
  t.match(json[0], { id: 'k1', rpm: 60, tpm: 10000, lastUsedAt: null, spent: '0.000000' })

  const upd = await cli('key', 'update', 'k1', '--budget', '7', '--window', '3600', '--rpm', 'none', '--tags', 'none', '--expires', 'none')
  t.equal(upd.code, 0, upd.err)
  k = (await ledger.listKeys()).find(x => x.id === 'k1')!
  t.same([k.budget, k.rpm, k.tags, k.expiresAt, k.tpm], [{ amount: 7_000_000, window: 3600 }, undefined, undefined, undefined, 10000], 'set and cleared')

  const rot = await cli('key', 'rotate', 'k1', '--grace', '120')
  t.equal(rot.code, 0, rot.err)
  const fresh = /secret {2}(\S+)/.exec(rot.out)![1]
  t.not(fresh, secret)
  k = (await ledger.listKeys()).find(x => x.id === 'k1')!
  t.equal(k.hash, hashKey(fresh), 'the new secret')
  t.equal(k.previousHash, hashKey(secret), 'the old one kept')
  t.ok(k.previousValidUntil! - Date.now() > 110_000 && k.previousValidUntil! - Date.now() <= 120_000, 'for the grace time')

  for (const [bad, flag] of [[['--budget', '-1'], 'budget'], [['--budget', '1', '--window', 'week'], 'window'], [['--models', 'a*b'], 'models'], [['--expires', 'soon'], 'expires'],
    [['--rpm', '0'], 'rpm']] as Array<[string[], string]>) {
    const r = await cli('key', 'update', 'k1', ...bad)
    t.equal(r.code, 2, `${bad.join(' ')} exits 2`)
    t.match(r.err, new RegExp(`--${flag}`), `naming --${flag}`)
  }
  t.equal((await cli('key', 'update', 'k1')).code, 2, 'an update with nothing to change')
  t.equal((await cli('key', 'rotate', 'k1', '--grace', '-5')).code, 2)
  t.equal((await cli('key', 'update', 'nope', '--rpm', '5')).code, 1, 'an unknown key')
  const audit = (await ledger.listAudit({ limit: 50 })).map(a => `${a.action} ${a.target} ${a.result}`)
  t.ok(audit.includes('key.update k1 ok') && audit.includes('key.rotate k1 ok'), 'update and rotation audited')
}

t.test('on a SQLite ledger file', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-cli-keys-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  const ledger = await openLedger({ backend: 'sqlite', path })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await commands(t, ['--sqlite', path], {}, ledger)
})

t.test('over --url', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  await commands(t, ['--url', admin], { GATEWAY_ADMIN_KEY: ADMIN_KEY }, ledger)
})
