import t from 'tap'
import { buildTestApp, auth, LIMITED_KEY } from '../helpers/build-test-app.ts'

t.test('GET /v1/models', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())

  t.test('lists the models the key may use, in the spec shape', async t => {
    const res = await app.inject({ url: '/v1/models', headers: auth() })
    t.equal(res.statusCode, 200)
    t.ok(res.headers['x-gw-trace-id'])
    const body = res.json()
    t.equal(body.object, 'list')
    t.same(body.data.map((m: { id: string }) => m.id), ['echo/echo-1', 'echo/echo-text', 'msgvendor/echo-1'])
    const m = body.data[0]
    t.same(Object.keys(m).sort(), ['architecture', 'context_length', 'created', 'default_parameters', 'id', 'name', 'object', 'owned_by', 'supported_parameters'])
    t.equal(m.object, 'model')
    t.same(m.architecture, { input_modalities: ['text', 'image'], output_modalities: ['text'] })
    t.notOk('price' in m, 'prices are never returned')
  })

  t.test('a key with an allow-list sees only its models', async t => {
    const res = await app.inject({ url: '/v1/models', headers: auth(LIMITED_KEY) })
    t.same(res.json().data.map((m: { id: string }) => m.id), ['echo/echo-text'])
  })

  t.test('limit: 1 to 1000, default 500; outside the range or not an integer: 400', async t => {
    t.equal((await app.inject({ url: '/v1/models?limit=1', headers: auth() })).json().data.length, 1)
    t.equal((await app.inject({ url: '/v1/models?limit=1000', headers: auth() })).json().data.length, 3)
    for (const bad of ['0', '1001', '-1', 'abc', '1.5', '']) {
      const res = await app.inject({ url: `/v1/models?limit=${bad}`, headers: auth() })
      t.equal(res.statusCode, 400, `limit=${bad}`)
      t.same(res.json(), { error: { code: 400, message: 'Query parameter "limit" must be an integer from 1 to 1000.' } })
    }
  })

  t.test('401 without or with a bad key, numeric body', async t => {
    const none = await app.inject({ url: '/v1/models' })
    t.equal(none.statusCode, 401)
    t.equal(none.json().error.code, 401)
    const bad = await app.inject({ url: '/v1/models', headers: { authorization: 'Bearer sk-gw-nope' } })
    t.equal(bad.statusCode, 401)
    const notOurs = await app.inject({ url: '/v1/models', headers: { authorization: 'Bearer sk-proj-123' } })
    t.equal(notOurs.statusCode, 401)
  })
})

t.test('GET /v1/models/{id}', async t => {
  const app = await buildTestApp()
  t.teardown(() => app.close())

  t.test('retrieves an id with a slash', async t => {
    const res = await app.inject({ url: '/v1/models/msgvendor/echo-1', headers: auth() })
    t.equal(res.statusCode, 200)
    t.equal(res.json().id, 'msgvendor/echo-1')
    const enc = await app.inject({ url: '/v1/models/msgvendor%2Fecho-1', headers: auth() })
    t.equal(enc.json().id, 'msgvendor/echo-1')
  })

  t.test('404 model_not_found for unknown models and models outside the key\'s list', async t => {
    const res = await app.inject({ url: '/v1/models/nope/nothing', headers: auth() })
    t.equal(res.statusCode, 404)
    t.equal(res.json().error.code, 'model_not_found')
    const hidden = await app.inject({ url: '/v1/models/echo/echo-1', headers: auth(LIMITED_KEY) })
    t.equal(hidden.statusCode, 404)
    t.equal(hidden.json().error.code, 'model_not_found')
  })

  t.test('400 when the id is missing', async t => {
    const res = await app.inject({ url: '/v1/models/', headers: auth() })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error.code, 400)
  })
})
