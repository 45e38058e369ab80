/**
 * Another process holding the SQLite ledger's write lock (an admin CLI write, a migration) never
 * stops the event loop: the gateway's connection does not wait for the lock (busy_timeout 0; a
 * charge that meets it is retried later, then spooled). A child process holds BEGIN IMMEDIATE on
 * the file until the test tells it to let go (or, as a bound, until it gives up by itself): every
 * call and /healthz is answered while the lock is held, before the child is told, and the charges
 * land once the lock goes.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'
import { until } from '../helpers/until.ts'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'

const ORG = 'org-test'

/** Holds the write lock of the file argv[1] until a line arrives on stdin, or for 4 s at most. */
const HOLDER = `
const Database = require('better-sqlite3')
const db = new Database(process.argv[1])
db.exec('BEGIN IMMEDIATE')
db.prepare("UPDATE organizations SET name = 'held' WHERE id = ?").run(process.argv[2])
process.stdout.write('locked\\n')
let done = false
const release = why => {
  if (done) return
  done = true
  db.exec('COMMIT')
  db.close()
  process.stdout.write('released ' + why + '\\n')
  process.exit(0)
}
process.stdin.on('data', () => release('when told'))
setTimeout(() => release('by itself'), 4000)
`

async function chat (base: string, i: number): Promise<{ status: number, trace: string }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 20, messages: [{ role: 'user', content: `call ${i}` }] }),
  })
  await res.text()
  return { status: res.status, trace: res.headers.get('x-gw-trace-id') ?? '' }
}

t.test('the write lock held by another process: /healthz and calls answered while it is held, charges land after', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-lock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const dbPath = join(dir, 'gw.db')
  const ledger = new SqliteLedger(dbPath)
  await ledger.migrate()
  await ledger.createOrganization(ORG)
  await ledger.topUp(ORG, 1_000_000_000)
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance' }],
    doc: { stores: { ledger: { spool: { path: join(dir, 'spool', 'charges.jsonl'), retryMs: 50 } } } },
  })
  t.teardown(async () => { await app.close(); await ledger.close() })
  const base = await listen(app)
  const served: string[] = []
  const first = await chat(base, 0) // the model's price cached: the charge path is the synchronous one
  t.equal(first.status, 200)
  served.push(first.trace)
  t.ok(await until(async () => (await ledger.listUsage({})).length === 1))

  const child = spawn(process.execPath, ['-e', HOLDER, dbPath, ORG], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const lines = createInterface({ input: child.stdout })
  const events: string[] = []
  const released = new Promise<string>(resolve => lines.on('line', l => {
    events.push(l)
    if (l.startsWith('released')) resolve(l)
  }))
  t.ok(await until(() => events.includes('locked'), 10_000), 'the other process holds the write lock')

  // Calls settle (their charges try to write and meet the lock), and /healthz, several times over.
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => chat(base, round * 4 + i + 1)))
    t.strictSame(answers.map(a => a.status), [200, 200, 200, 200], `round ${round}: calls answered while the lock is held`)
    served.push(...answers.map(a => a.trace))
    await new Promise(resolve => setTimeout(resolve, 30)) // their charge batch is being written now
    const h = await fetch(`${base}/healthz`)
    t.equal(h.status, 200, `round ${round}: /healthz answered while the lock is held`)
    events.push(`healthz ${round}`)
  }
  t.notOk(events.some(e => e.startsWith('released')), 'every answer came before the lock was let go')
  child.stdin.write('go\n')
  t.equal(await released, 'released when told', 'the lock was let go when the test said so, not when it gave up')

  t.ok(await until(async () => (await ledger.listUsage({})).length === served.length, 15_000), 'the charges land once the lock goes')
  const records = await ledger.listUsage({})
  t.strictSame(records.map(r => r.traceId).sort(), [...served].sort(), 'each call billed once')
  t.strictSame(await ledger.getBalance(ORG), { balance: 1_000_000_000 - records.reduce((s, r) => s + r.cost, 0), reserved: 0 })
})
