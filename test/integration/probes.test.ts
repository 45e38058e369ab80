import t from 'tap'
import { buildTestApp, auth } from '../helpers/build-test-app.ts'
import { openStore } from '../../core/stores/index.ts'

t.test('probes', async t => {
  const store = await openStore({ backend: 'memory', prefix: 'gw:', maxKeys: 1000 })
  let storeUp = true
  const flaky = Object.create(store, { ping: { value: async () => storeUp } })
  const app = await buildTestApp({ store: flaky })
  t.teardown(() => app.close())

  t.test('/healthz needs no key', async t => {
    const res = await app.inject({ url: '/healthz' })
    t.equal(res.statusCode, 200)
    t.same(res.json(), { status: 'ok', service: 'model-gateway' })
    t.ok(res.headers['x-gw-trace-id'])
  })

  t.test('/readyz 200 while dependencies answer, 503 while one is down, 200 again after', async t => {
    t.same((await app.inject({ url: '/readyz' })).json(), { status: 'ready', service: 'model-gateway' })
    storeUp = false
    const down = await app.inject({ url: '/readyz' })
    t.equal(down.statusCode, 503)
    t.same(down.json(), { status: 'unavailable', error: 'key-value store unreachable' })
    storeUp = true
    t.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
  })

  t.test('reserved routes answer 501 after auth', async t => {
    for (const url of ['/v1/embeddings', '/v1/images/generations']) {
      const res = await app.inject({ method: 'POST', url, headers: auth(), payload: { model: 'x', input: 'y' } })
      t.equal(res.statusCode, 501, url)
      t.same(res.json(), { error: { code: 501, message: 'This endpoint is not available yet.' } })
      t.equal((await app.inject({ method: 'POST', url, payload: {} })).statusCode, 401)
    }
  })

  t.test('unknown routes: 404 in the route family\'s body shape', async t => {
    const res = await app.inject({ url: '/v1/nothing', headers: auth() })
    t.equal(res.statusCode, 404)
    t.equal(res.json().error.code, 404)
    const msg = await app.inject({ method: 'POST', url: '/v1/messages/batches', headers: auth(), payload: {} })
    t.equal(msg.statusCode, 404)
    t.equal(msg.json().type, 'error')
    t.equal(msg.json().error.type, 'not_found_error')
  })
})
