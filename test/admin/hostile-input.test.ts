/**
 * @module test/admin/hostile-input – what the admin API fuzzer (test/fuzz/admin-api.test.ts) found,
 * pinned: a NUL character in a path id, a query value or a body field is refused with 400 naming
 * the field and changes nothing, and its refusal is audited (PostgreSQL text cannot hold a NUL: it
 * was a 500 there, with the audit row lost); a URL the router cannot read, or bytes the HTTP parser
 * refuses, get the admin error body (they got fastify's own); and an id of 101 to 128 characters,
 * which POST accepts, can be read back through its path (the router refused it as too long).
 * On SQLite and PostgreSQL.
 */
import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { SqliteLedger } from '../../core/ledger/sqlite.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { adminCall, running } from '../helpers/admin.ts'
import { databaseUrl } from '../helpers/backends.ts'
import { pgLedgers } from '../helpers/pg-ledgers.ts'
import { parseResponse } from '../helpers/raw-http.ts'

/** Writes `head` on a fresh connection and reads the answer until the server closes. */
function raw (base: string, head: Buffer): Promise<{ status: number, headers: Record<string, string>, body: string }> {
  const { port } = new URL(base)
  return new Promise(resolve => {
    const sock = connect(Number(port), '127.0.0.1')
    let text = ''
    sock.setEncoding('latin1')
    sock.on('data', (d: string) => { text += d })
    sock.on('error', () => {})
    sock.on('close', () => {
      const p = parseResponse(text)
      resolve({ status: p?.status ?? 0, headers: p?.headers ?? {}, body: p?.body ?? '' })
    })
    sock.on('connect', () => { sock.write(head) })
  })
}

async function suite (t: Test, ledger: Ledger): Promise<void> {
  const { admin } = await running(t, ledger)
  await ledger.createOrganization('acme')
  await ledger.topUp('acme', 5_000_000)

  t.test('a NUL character anywhere is a 400 naming its field, changes nothing, and is audited', async t => {
    const before = await ledger.verify()
    for (const [method, path, body, field] of [
      ['GET', '/admin/organizations/acme%00', undefined, '/params/id'],
      ['GET', '/admin/usage?project=%00', undefined, '/querystring/project'],
      ['POST', '/admin/keys/%00/revoke', undefined, '/params/id'],
      ['POST', '/admin/organizations/acme/topup', { amount: '1', reason: 'a\u0000b' }, '/body/reason'],
      ['POST', '/admin/organizations/acme%00/adjustments', { amount: '-1', reason: 'x' }, '/params/id'],
    ] as const) {
      const r = await adminCall(admin, method, path, body)
      t.equal(r.status, 400, `${method} ${path}: 400`)
      t.same(r.body, { error: { code: 400, message: `Invalid request: ${field} must not contain a NUL character`, metadata: { path: field } } }, `${method} ${path}: names ${field}`)
    }
    t.same(await ledger.verify(), before, 'no balance or journal changed')
    const [last] = await ledger.listAudit({ limit: 1 })
    t.match(last, { action: 'balance.adjust', target: 'acme\uFFFD', result: 'GW_ERR_BAD_REQUEST', status: 400 }, 'the refused write is audited, its target\'s NUL shown as U+FFFD')
  })

  t.test('a URL the router cannot read, or bytes the parser refuses: 400 in the admin error body', async t => {
    for (const line of ['GET /admin/organizations/%FF HTTP/1.1', 'GET /admin/organizations/%C0%AF/balance HTTP/1.1', `GET /admin/keys/${'x'.repeat(5000)} HTTP/1.1`]) {
      const r = await raw(admin, Buffer.from(`${line}\r\nhost: x\r\nconnection: close\r\n\r\n`))
      t.equal(r.status, 400, line.slice(0, 60))
      t.same(JSON.parse(r.body), { error: { code: 400, message: 'The request URL is malformed.' } }, 'the admin error body')
      t.ok(r.headers['x-gw-trace-id'], 'with a trace id')
    }
    const r = await raw(admin, Buffer.concat([Buffer.from('GET /admin/organizations/'), Buffer.from([0xc3, 0xbc]), Buffer.from(' HTTP/1.1\r\nhost: x\r\n\r\n')]))
    t.equal(r.status, 400, 'a raw non-ASCII byte in the request line')
    t.same(JSON.parse(r.body), { error: { code: 400, message: 'The request is not valid HTTP.' } }, 'the admin error body')
  })

  t.test('an id of 128 characters, percent-encoded, reaches its route', async t => {
    const id = `long-${'@:.'.repeat(41)}`.slice(0, 128)
    t.equal((await adminCall(admin, 'POST', '/admin/organizations', { id })).status, 201, 'created')
    const r = await adminCall(admin, 'GET', `/admin/organizations/${encodeURIComponent(id)}`)
    t.equal(r.status, 200, 'read back through its path')
    t.equal(r.body?.id, id)
    t.equal((await adminCall(admin, 'POST', `/admin/organizations/${encodeURIComponent(id)}/topup`, { amount: '2.5' })).status, 200, 'topped up through its path')
  })
}

const url = await databaseUrl(t)

t.test('SQLite', async t => {
  const ledger = new SqliteLedger(':memory:')
  await ledger.migrate()
  t.teardown(() => ledger.close())
  await suite(t, ledger)
})

if (url !== undefined) {
  const fresh = pgLedgers(t, url, 'admin_hostile')
  t.test('PostgreSQL', async t => { await suite(t, await fresh(t)) })
}
