/**
 * Charges survive ledger faults: a charge the ledger will not take after its quick retries goes to
 * the local spool and is replayed until it commits, once. Through a listening gateway: a SQLite
 * ledger on a small tmpfs that fills up (spool on another file system), and PostgreSQL cut off
 * mid-traffic behind a TCP proxy. Meanwhile admission fails closed (503 with Retry-After, the
 * route's error body) and /readyz names the ledger; afterwards every served call is billed once.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { databaseUrl, randomId } from '../helpers/backends.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { until } from '../helpers/until.ts'
import { fillDisk, smallDisk } from '../helpers/tmpfs.ts'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import { PostgresLedger } from '../../core/ledger/postgres.ts'
import { readSpool } from '../../core/ledger/spool.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'

const ORG = 'org-test'
const INITIAL = 1_000_000_000 // 1000 units

interface Answer { status: number, trace: string, retryAfter: string | null, body: any }

async function chat (base: string, i: number, model = 'echo/echo-1'): Promise<Answer> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 50, messages: [{ role: 'user', content: `call number ${i}` }] }),
  })
  const text = await res.text()
  let body: unknown = text
  try { body = JSON.parse(text) } catch { /* not JSON */ }
  return { status: res.status, trace: res.headers.get('x-gw-trace-id') ?? '', retryAfter: res.headers.get('retry-after'), body }
}

/** Every served call has exactly one usage record, there is none other, and the balance went down by their sum. */
async function billedOnce (t: Test, ledger: Ledger, served: readonly string[]): Promise<void> {
  const records = await ledger.listUsage({})
  const counts = new Map<string, number>()
  for (const r of records) counts.set(r.traceId, (counts.get(r.traceId) ?? 0) + 1)
  t.equal(records.length, served.length, `${served.length} served calls, ${records.length} usage records`)
  t.ok(served.every(id => counts.get(id) === 1), 'every served call has exactly one usage record')
  const cost = records.reduce((s, r) => s + r.cost, 0)
  const b = await ledger.getBalance(ORG)
  t.equal(b?.balance, INITIAL - cost, 'the balance went down by exactly the recorded costs')
}

t.test('SQLite on a full disk: calls are spooled, admission closes, and every call is billed once after space is freed', async t => {
  // A real file system that fills up: a 4 MiB tmpfs.
  const disk = smallDisk(t, '4m')
  if (!disk) return
  const spoolDir = mkdtempSync(join(tmpdir(), 'gw-spool-')) // on another file system
  t.teardown(() => rmSync(spoolDir, { recursive: true, force: true }))
  const spoolPath = join(spoolDir, 'charges.jsonl')
  const dbPath = join(disk, 'gw.db')

  const ledger = new SqliteLedger(dbPath)
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, INITIAL)
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: { stores: { ledger: { spool: { path: spoolPath, maxCharges: 5, retryMs: 100 } } } },
  })
  t.teardown(async () => { await app.close(); await ledger.close() })
  const base = await listen(app)

  const warm = await chat(base, 0)
  t.equal(warm.status, 200)
  t.ok(await until(async () => (await ledger.listUsage({})).length === 1), 'the first call is billed')
  t.equal((await fetch(`${base}/readyz`)).status, 200, '/readyz 200 with room on the disk')

  // The write-ahead log emptied (so the next commit must grow it), then the disk filled to the last byte.
  const side = new Database(dbPath)
  side.pragma('wal_checkpoint(TRUNCATE)')
  side.close()
  const filler = join(disk, 'filler')
  fillDisk(filler)

  const full = await fetch(`${base}/readyz`)
  t.equal(full.status, 503, '/readyz 503 on a full disk, with no call made (write probe)')
  t.match(await full.json(), { error: /ledger/ })

  // Calls until admission closes: the first ones are served (their charges fail, then spool).
  const served: string[] = [warm.trace]
  const refused: Answer[] = []
  for (let wave = 0; wave < 40 && refused.length === 0; wave++) {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(base, wave * 8 + i + 1)))
    for (const a of answers) {
      if (a.status === 200) served.push(a.trace)
      else refused.push(a)
    }
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.ok(served.length > 1, `${served.length - 1} calls served on the full disk`)
  t.ok(refused.length > 0, 'admission closed')
  t.ok(refused.every(a => a.status === 503), 'refused with 503')
  t.match(refused[0]!.body, { error: { code: 503, message: String } }, 'the chat route\'s error body')
  t.equal(refused[0]!.retryAfter, '1', 'with Retry-After')

  // Every served call's charge is in the spool file (none reached the full disk).
  const spooled = new Set(served.slice(1))
  t.ok(await until(() => { const c = readSpool(spoolPath).charges; return c.length === spooled.size && c.every(x => spooled.has(x.record.traceId)) }, 10_000),
    'every call served on the full disk is in the spool file')
  t.equal(app.gateway.spool.size, spooled.size)
  const spooledCost = readSpool(spoolPath).charges.reduce((s, c) => s + c.record.cost, 0)
  const held = await ledger.getBalance(ORG)
  t.equal(held?.reserved, spooledCost, 'the spooled amount still counts against the balance (its holds are kept)')
  t.equal((await ledger.listUsage({})).length, 1, 'nothing more was written to the ledger')
  const r503 = await fetch(`${base}/readyz`)
  t.equal(r503.status, 503, '/readyz 503 while charges are failing')
  t.match(await r503.json(), { error: /ledger/ })
  t.equal((await chat(base, 999)).status, 503, 'still closed')

  // Space comes back: the spool is replayed, the file removed, admission reopens.
  unlinkSync(filler)
  t.ok(await until(() => app.gateway.spool.size === 0 && !existsSync(spoolPath), 15_000), 'the spool drained and its file is gone')
  t.ok(await until(async () => (await fetch(`${base}/readyz`)).status === 200), '/readyz 200 again')
  const again = await chat(base, 1000)
  t.equal(again.status, 200, 'admission open again')
  served.push(again.trace)
  t.ok(await until(async () => (await ledger.listUsage({})).length === served.length), 'the last call is billed')
  await billedOnce(t, ledger, served)
  t.equal((await ledger.getBalance(ORG))?.reserved, 0, 'no hold left')
})

t.test('PostgreSQL unreachable mid-traffic: every served call is billed once after it comes back', async t => {
  const url = await databaseUrl(t)
  if (!url) return
  const u = new URL(url)
  const proxy = await startTcpProxy(u.hostname, Number(u.port || 5432))
  const schema = `spool_${randomId()}`
  const viaProxy = new URL(url)
  viaProxy.host = `127.0.0.1:${proxy.port}`
  const ledger = new PostgresLedger({ url: viaProxy.toString(), schema })
  const direct = new PostgresLedger({ url, schema }) // the test's own view, never cut
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, INITIAL)
  const spoolDir = mkdtempSync(join(tmpdir(), 'gw-spool-'))
  mkdirSync(spoolDir, { recursive: true })
  const spoolPath = join(spoolDir, 'charges.jsonl')
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: {
      stores: { ledger: { spool: { path: spoolPath, retryMs: 100 } } },
      // Answers take a while, so calls are in flight (reserved, not yet charged) when the cut comes.
      providers: [{ name: 'echo-slow', adapter: 'echo', config: { protocol: 'chat', latencyMs: 200 } }],
      models: [{ id: 'echo/slow', input_modalities: ['text'], price: { input: 1, cachedInput: 0.1, output: 2 }, deployments: [{ provider: 'echo-slow', model: 'echo-slow' }] }],
    },
  })
  t.teardown(async () => {
    await app.close(); await ledger.close(); await direct.close(); await proxy.close()
    rmSync(spoolDir, { recursive: true, force: true })
    const c = new pg.Client({ connectionString: url }); await c.connect(); await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`); await c.end()
  })
  const base = await listen(app)

  const served: string[] = []
  const refused: Answer[] = []
  let stop = false
  let n = 0
  const workers = Array.from({ length: 12 }, async () => {
    while (!stop) {
      const a = await chat(base, n++, 'echo/slow')
      if (a.status === 200) served.push(a.trace)
      else {
        refused.push(a)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
  })
  t.ok(await until(async () => served.length >= 24 && (await direct.listHolds()).length >= 6), 'traffic flowing, calls in flight')
  await proxy.down()
  t.ok(await until(() => app.gateway.spool.size > 0, 15_000), 'the charges of calls in flight at the cut went to the spool')
  t.ok(await until(() => refused.length > 0, 15_000), 'admission closed while the ledger is unreachable')
  t.ok(refused.every(a => a.status === 503), 'refused with 503')
  t.ok(await until(async () => (await fetch(`${base}/readyz`)).status === 503), '/readyz 503')
  t.match(await (await fetch(`${base}/readyz`)).json(), { error: /ledger/ })
  const servedBeforeUp = served.length
  await proxy.up()
  t.ok(await until(() => app.gateway.spool.size === 0 && !app.gateway.spool.blocked, 20_000), 'the spool drained once PostgreSQL came back')
  t.ok(await until(() => served.length >= servedBeforeUp + 24, 20_000), 'calls are served again')
  stop = true
  await Promise.all(workers)
  t.ok(await until(async () => (await direct.listUsage({})).length >= served.length, 10_000), 'every charge landed')
  await billedOnce(t, direct, served)
  // A reserve cut before its answer came back may leave a hold no call knows (it expires by
  // itself); every served call's hold went with its charge.
  const servedSet = new Set(served)
  const left = await direct.listHolds()
  t.notOk(left.some(h => h.traceId !== undefined && servedSet.has(h.traceId)), `no served call's hold left (${left.length} orphan hold(s) of calls cut at reserve)`)
  t.notOk(existsSync(spoolPath), 'the spool file is gone')
})
