/** @module test/console/static – the console's static serving on the admin listener: caching headers, ETag, 404s, no path traversal, no admin key needed. */
import t from 'tap'
import { readdirSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { openLedger } from '../../core/ledger/index.ts'
import { consoleDir } from '../../admin/console.ts'
import { running } from '../helpers/admin.ts'
import { getRaw } from '../helpers/raw-get.ts'

// The routes serve what `npm run build` bundled: build the console first.
execFileSync(process.execPath, ['scripts/build-console.mjs'], { stdio: 'inherit' })

t.test('the HTML is no-cache, hashed assets immutable with an ETag, unknown names 404', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  const dir = consoleDir()
  t.ok(dir, 'dist/console is found')
  const assets = readdirSync(`${dir}/assets`)
  const js = assets.find(a => a.endsWith('.js'))!
  const css = assets.find(a => a.endsWith('.css'))!
  t.match(js, /^app-[A-Z0-9]+\.js$/, 'the JS name carries a content hash')

  let r = await fetch(`${admin}/console`)
  t.equal(r.status, 200, 'the page needs no admin key')
  t.match(r.headers.get('content-type'), /^text\/html/)
  t.equal(r.headers.get('cache-control'), 'no-cache')
  t.match(r.headers.get('content-security-policy'), /script-src 'self'/)
  const html = await r.text()
  t.ok(html.includes(`/console/assets/${js}`) && html.includes(`/console/assets/${css}`), 'the page links the hashed assets')
  t.notMatch(html, /https?:\/\//, 'no CDN or remote URL in the page')

  r = await fetch(`${admin}/console/assets/${js}`)
  t.equal(r.status, 200)
  t.match(r.headers.get('content-type'), /^text\/javascript/)
  t.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable')
  const etag = r.headers.get('etag')
  t.match(etag, /^"[\w-]+"$/)
  t.ok((await r.text()).length > 1000)
  r = await fetch(`${admin}/console/assets/${js}`, { headers: { 'if-none-match': etag! } })
  t.equal(r.status, 304, 'a matching ETag revalidates with 304')
  await r.arrayBuffer()
  r = await fetch(`${admin}/console/assets/${css}`)
  t.match(r.headers.get('content-type'), /^text\/css/)
  await r.arrayBuffer()

  r = await fetch(`${admin}/console/assets/app-NOPE.js`)
  t.equal(r.status, 404)
  t.match(await r.json(), { error: { code: 404 } })

  // Only the admin API's own data routes need the key; the console paths do not open them.
  r = await fetch(`${admin}/admin/organizations`)
  t.equal(r.status, 401, 'the API still needs the admin key')
  await r.arrayBuffer()
})

t.test('no path traversal: encoded or raw dot segments never reach the file system', async t => {
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  t.teardown(() => ledger.close())
  const { admin } = await running(t, ledger)
  const url = new URL(admin)
  for (const path of [
    '/console/assets/..%2F..%2Fpackage.json', '/console/assets/%2e%2e%2findex.html', '/console/assets/..%5c..%5cpackage.json',
    '/console/assets/../index.html', '/console/assets/../../../package.json', '/console/assets/', '/console/assets/%00',
  ]) {
    const r = await getRaw(url.hostname, Number(url.port), path)
    t.not(r.status, 200, `${path} is not served (${r.status})`)
    t.notMatch(r.body, /"name": "model-gateway"|<!doctype/i, `${path} leaks no file`)
    t.ok(r.status === 404 || r.status === 400 || r.status === 401, `${path}: 404, 400 or 401 (${r.status})`)
  }
})
