/**
 * @module test/core/routes – the route table: every route declares itself in its own module
 * (routes/route.ts), the table names each method and path once, its route names are the config's
 * vocabulary (ROUTE_NAMES), and every inference and count route carries its own prepare step.
 */
import t from 'tap'
import { GATEWAY_ROUTES } from '../../core/http/routes/index.ts'
import { ROUTE_NAMES } from '../../core/types/context.ts'

t.test('routes – each method and path is declared once', async t => {
  const keys = GATEWAY_ROUTES.map(r => `${r.method} ${r.url}`)
  t.same(keys.filter((k, i) => keys.indexOf(k) !== i), [])
  t.ok(keys.includes('POST /v1/chat/completions') && keys.includes('GET /healthz') && keys.includes('POST /v1/messages/count_tokens'))
})

t.test('routes – route names are ROUTE_NAMES, and every name but "other" (no route) is served', async t => {
  const names = new Set(GATEWAY_ROUTES.map(r => r.name))
  t.same([...names].filter(n => !(ROUTE_NAMES as readonly string[]).includes(n)), [], 'no route name outside ROUTE_NAMES')
  t.same(ROUTE_NAMES.filter(n => n !== 'other' && !names.has(n)), [], 'no ROUTE_NAMES entry without a route')
})

t.test('routes – the routes with a body to check declare their prepare step; the others none', async t => {
  for (const r of GATEWAY_ROUTES) {
    const wants = r.name === 'chat' || r.name === 'messages' || r.name === 'responses' || r.name === 'count_tokens'
    t.equal(typeof r.prepare === 'function', wants, `${r.method} ${r.url}`)
    if (wants) t.equal(r.protocol === 'none', false, `${r.url} answers errors in its client protocol`)
  }
})
