/** CallAbort as undici's request signal: aborts before the answer and while the body streams. */
import t from 'tap'
import { createServer, type ServerResponse } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { CallAbort } from '../../core/dispatch/abort.ts'
import { UpstreamClient } from '../../core/dispatch/upstream.ts'

t.test('CallAbort drives undici: abort before headers, abort mid-body, listener cleanup', async t => {
  const held: ServerResponse[] = []
  let closedByClient = 0
  const server = createServer((req, res) => {
    res.on('close', () => { if (!res.writableFinished) closedByClient++ })
    if (req.url === '/slow') { held.push(res); return } // never answers
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first chunk')
    held.push(res) // the body never ends
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const client = new UpstreamClient()
  t.teardown(async () => {
    for (const r of held) r.destroy()
    await client.close()
    server.close()
  })
  const req = (path: string) => ({ origin, path, headers: { 'content-type': 'application/json' }, body: '{}' })

  const early = new CallAbort()
  const pending = client.send(req('/slow'), early)
  await new Promise(r => setTimeout(r, 50))
  const reason = new Error('client went away')
  early.abort(reason)
  await t.rejects(pending, reason, 'abort before headers rejects with the abort reason')

  const late = new CallAbort()
  const res = await client.send(req('/body'), late)
  t.equal(res.status, 200)
  const it = res.body[Symbol.asyncIterator]()
  t.equal(String((await it.next()).value), 'first chunk')
  late.abort(new Error('stream over'))
  await t.rejects(it.next(), 'abort mid-body destroys the body')
  while (closedByClient < 2) await new Promise(r => setTimeout(r, 10))
  t.equal(closedByClient, 2, 'both upstream connections were closed by the abort')
  t.equal(late.listenerCount('abort'), 0, 'undici removed its abort listener')

  const already = new CallAbort()
  already.abort(new Error('aborted first'))
  await t.rejects(client.send(req('/body'), already), { message: 'aborted first' }, 'an aborted handle never sends')
})
