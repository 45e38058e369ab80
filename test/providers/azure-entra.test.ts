/**
 * @module test/providers/azure-entra – the Entra ID token cache on a fake clock: kept while fresh,
 * replaced `refreshBeforeMs` ahead of expiry (or halfway through a short life), one request for
 * concurrent callers, a failure not kept, an invalidated token asked for again.
 */
import t from 'tap'
import { entraTokens, defaultTokenUrl, type AccessToken } from '../../providers/azure-openai/entra.ts'

const CONFIG = { tenantId: 't', clientId: 'c', clientSecret: 's', scope: 'x/.default', refreshBeforeMs: 300_000 }

function source (lifeMs: number, clock: { now: number }) {
  let n = 0
  let fail = false
  const fn = async (): Promise<AccessToken> => {
    await new Promise(resolve => setImmediate(resolve))
    n++
    if (fail) { fail = false; throw new Error('token endpoint down') }
    return { token: `tok-${n}`, expiration: new Date(clock.now + lifeMs) }
  }
  return { fn, get count () { return n }, failNext () { fail = true } }
}

t.test('entra tokens – cached until refreshBeforeMs before expiry, one request for concurrent callers', async t => {
  const clock = { now: 1_000_000 }
  const src = source(3_600_000, clock)
  const tokens = entraTokens(CONFIG, () => clock.now, src.fn)
  const got = await Promise.all([tokens(), tokens(), tokens()])
  t.same(got.map(g => g.token), ['tok-1', 'tok-1', 'tok-1'])
  t.equal(src.count, 1)
  clock.now += 3_600_000 - 300_001
  t.equal((await tokens()).token, 'tok-1', 'still fresh just before the margin')
  clock.now += 2
  const again = await Promise.all([tokens(), tokens()])
  t.same(again.map(g => g.token), ['tok-2', 'tok-2'], 'replaced inside the margin, once')
  t.equal(src.count, 2)
})

t.test('entra tokens – a short-lived token is reused for half its life', async t => {
  const clock = { now: 0 }
  const src = source(60_000, clock)
  const tokens = entraTokens(CONFIG, () => clock.now, src.fn)
  await tokens()
  clock.now = 29_000
  t.equal((await tokens()).token, 'tok-1')
  clock.now = 30_001
  t.equal((await tokens()).token, 'tok-2')
})

t.test('entra tokens – a failure is not kept; invalidate asks again', async t => {
  const clock = { now: 0 }
  const src = source(3_600_000, clock)
  const tokens = entraTokens(CONFIG, () => clock.now, src.fn)
  src.failNext()
  await t.rejects(tokens(), /token endpoint down/)
  t.equal((await tokens()).token, 'tok-2')
  t.equal((await tokens()).token, 'tok-2')
  tokens.invalidate()
  t.equal((await tokens()).token, 'tok-3')
})

t.test('entra tokens – the default token endpoint of a tenant', async t => {
  t.equal(defaultTokenUrl('contoso.onmicrosoft.com'), 'https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token')
})
