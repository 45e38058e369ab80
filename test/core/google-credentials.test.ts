/**
 * @module test/core/google-credentials – the Google credential providers on their own: the forms a
 * key is read in (object, JSON text, file; service account, authorized_user, a fixed token) and
 * what is refused; a service account's tokens from the fake Vertex token endpoint (which verifies
 * the assertion): cached, refreshed ahead of expiry (at half a short lifetime), one exchange for
 * many calls in flight, renewed once after a refusal and shared by every caller refused the same
 * token, a failed exchange not kept; an authorized_user's refresh token exchanged; the Bearer signer.
 */
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  readGoogleCredentials, serviceAccountTokens, authorizedUserTokens, staticAccessToken, googleTokens, bearerSigning, refreshing,
  type GoogleServiceAccount,
} from '../../index.ts'
import { startFakeVertex, startFakeUpstream, json } from '../../testing.ts'

t.test('readGoogleCredentials: object, JSON text, file; the three kinds; what is refused', async t => {
  const sa = { type: 'service_account', client_email: 'a@p.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n', private_key_id: 'k1', project_id: 'p' }
  const want = { ...sa, token_uri: 'https://oauth2.googleapis.com/token' }
  t.same(readGoogleCredentials(sa), want, 'object; the default token_uri')
  t.same(readGoogleCredentials(JSON.stringify(sa)), want, 'JSON text')
  t.same(readGoogleCredentials(`  \n${JSON.stringify(sa)}`), want, 'JSON text after blanks')
  const dir = mkdtempSync(join(tmpdir(), 'gcreds-'))
  writeFileSync(join(dir, 'k.json'), JSON.stringify({ ...sa, token_uri: 'http://127.0.0.1:1/token' }))
  t.equal(readGoogleCredentials(join(dir, 'k.json')).type, 'service_account', 'file path')
  t.same(readGoogleCredentials({ type: 'authorized_user', client_id: 'c', client_secret: 's', refresh_token: 'r' }), { type: 'authorized_user', client_id: 'c', client_secret: 's', refresh_token: 'r', token_uri: 'https://oauth2.googleapis.com/token' })
  t.same(readGoogleCredentials({ access_token: 'ya29.x' }), { type: 'access_token', access_token: 'ya29.x' })
  t.throws(() => readGoogleCredentials({ type: 'service_account', client_email: 'a@b' }), /client_email and private_key are required/)
  t.throws(() => readGoogleCredentials({ type: 'external_account' }), /type "external_account" is not supported/)
  t.throws(() => readGoogleCredentials({ type: 'authorized_user', client_id: 'c' }), /client_id, client_secret and refresh_token are required/)
  t.throws(() => readGoogleCredentials('{oops'), /not valid JSON/)
  t.throws(() => readGoogleCredentials(join(dir, 'missing.json')), /cannot read the file .*missing\.json \(ENOENT\)/)
  t.throws(() => readGoogleCredentials('[1]'), /cannot read the file|expected a JSON object/)
  const err = (() => { try { readGoogleCredentials({ ...sa, client_email: '' }) } catch (e) { return String(e) } return '' })()
  t.notMatch(err, /PRIVATE KEY/, 'an error never shows the key')
})

t.test('service account tokens: one exchange for many calls in flight, cached, refreshed at half a short lifetime', async t => {
  const fake = await startFakeVertex({ tokenTtlS: 60, tokenDelayMs: 50 })
  t.teardown(() => fake.close())
  let now = Date.now()
  const tokens = serviceAccountTokens(fake.serviceAccount as GoogleServiceAccount, { now: () => now })
  const all = await Promise.all(Array.from({ length: 50 }, () => tokens()))
  t.equal(fake.issued.length, 1, 'one exchange for 50 concurrent calls')
  t.ok(all.every(a => a.token === fake.issued[0]))
  t.ok(all[0].expiration instanceof Date)
  now += 29_000
  t.equal((await tokens()).token, fake.issued[0], 'kept before half its lifetime (60 s token, 5 min refresh margin)')
  now += 2_000
  t.equal((await tokens()).token, fake.issued[1], 'refreshed past half its lifetime')
  t.equal(fake.refusedAssertions.length, 0)
})

t.test('renew: shared by every caller refused the same token, not for a newer one nor one just fetched; failures not kept', async t => {
  const fake = await startFakeVertex({ tokenDelayMs: 50 })
  t.teardown(() => fake.close())
  let now = Date.now()
  const tokens = serviceAccountTokens(fake.serviceAccount as GoogleServiceAccount, { now: () => now })
  const first = (await tokens()).token
  t.equal(await tokens.renew(first), undefined, 'a token fetched moments ago is not renewed')
  now += 2_000
  const renewed = await Promise.all(Array.from({ length: 20 }, () => tokens.renew(first)))
  t.equal(fake.issued.length, 2, 'one exchange for 20 refused callers')
  t.ok(renewed.every(r => r?.token === fake.issued[1]))
  t.equal((await tokens.renew(first))?.token, fake.issued[1], 'a refusal of an older token: the newer one, no exchange')
  t.equal(fake.issued.length, 2)

  now += 2_000
  fake.refuseTokens(true)
  await t.rejects(tokens.renew(fake.issued[1]), /Google token exchange for .* refused \(400\): invalid_grant: Invalid JWT Signature\./)
  await t.rejects(tokens(), /invalid_grant/, 'the failed exchange was not kept: the next call tries again')
  fake.refuseTokens(false)
  t.equal((await tokens()).token, fake.issued[2])
})

t.test('refreshing(): renew drops only what isStale says', async t => {
  let n = 0
  const r = refreshing<{ v: number, expiration?: Date }>(async () => ({ v: ++n }))
  t.equal((await r()).v, 1)
  t.equal((await r.renew(h => h.v === 99)).v, 1, 'not stale: kept')
  t.equal((await r.renew(h => h.v === 1)).v, 2, 'stale: fetched again')
  t.equal((await r()).v, 2)
})

t.test('authorized_user: the refresh token exchanged; a fixed token never renewed; the Bearer signer', async t => {
  const up = await startFakeUpstream((req, res) => {
    const form = new URLSearchParams(req.text)
    if (form.get('grant_type') === 'refresh_token' && form.get('refresh_token') === 'r1' && form.get('client_id') === 'c' && form.get('client_secret') === 's') json(res, 200, { access_token: `ya29.user-${up.requests.length}`, expires_in: 3599 })
    else json(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' })
  })
  t.teardown(() => up.close())
  const user = authorizedUserTokens({ type: 'authorized_user', client_id: 'c', client_secret: 's', refresh_token: 'r1', token_uri: `${up.origin}/token` })
  t.equal((await user()).token, 'ya29.user-1')
  const bad = googleTokens({ type: 'authorized_user', client_id: 'c', client_secret: 's', refresh_token: 'nope', token_uri: `${up.origin}/token` })
  await t.rejects(bad(), /refused \(400\): invalid_grant: Bad Request/)

  const fixed = staticAccessToken('ya29.fixed')
  t.equal((await fixed()).token, 'ya29.fixed')
  t.equal(await fixed.renew('ya29.fixed'), undefined)
  const signing = bearerSigning(fixed)
  const req = { origin: 'http://x', path: '/p', headers: { 'content-type': 'application/json' }, body: '{}' }
  const signed = await signing.sign(req)
  t.same(signed.headers, { 'content-type': 'application/json', authorization: 'Bearer ya29.fixed' })
  t.same(req.headers, { 'content-type': 'application/json' }, 'the unsigned request is left as it was')
  t.equal(await signing.renewAuth(signed), false, 'a fixed token: the 401 stands')
  t.equal(await bearerSigning(user).renewAuth(req), false, 'a request without a bearer: nothing to renew')
})
