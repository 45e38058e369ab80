/**
 * @module test/core/prepared-batch – the hook runner's batches (core/call/hook-runner.ts) through a
 * listening gateway, with plugins written against the public entry: consecutive plugins' prepared
 * steps run as one batch; a refused step undoes every plugin's steps and produces its plugin's own
 * refusal (status, body, Retry-After); a plugin without `prepare` ends the batch and runs in its
 * place; `prepare` returning undefined runs `onRequest`; settle steps batch too; `onSettle` runs for
 * every plugin whose `prepare` ran; work deferred from the connect phase rides ahead of the admit
 * batch, is not undone by its refusals, and answers first when the call fails before admit.
 */
import t, { type Test } from 'tap'
import { definePlugin, gwError, Type, type KvStore, type PreparedWork, type StoreStep } from '../../index.ts'
import { runPrepared, memoryStore, pluginDeps, fakeContext } from '../../testing.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'

interface Seen { batches: string[][], events: string[], stores: Map<string, KvStore> }

/** A counter plugin: counts each call in `<name>:n` up to `limit`, finishes with `<name>:done` at settle. */
function counter (name: string, seen: Seen, opts: { limit: number, prepareUndefined?: boolean, connect?: boolean }) {
  return definePlugin({
    name,
    // `connect`: counts before authentication, its work deferred to the admit batch (as ip-limit's).
    phase: opts.connect === true ? 'connect' : 'admit',
    storePurpose: 'windows',
    configSchema: Type.Object({}),
    errors: { [`${name.toUpperCase().replaceAll('-', '_')}_FULL`]: { status: 429, type: 'rate_limit_error', message: { en: `${name} is full.`, 'zh-CN': `${name} 已满。` } } },
    create (_config, deps) {
      seen.stores.set(name, deps.store)
      const code = `${name.toUpperCase().replaceAll('-', '_')}_FULL`
      // Records each batch's steps as it runs: the runner calls `run` once per batch.
      const steps = deps.store.steps!
      const original = steps.run
      if (!(steps as { wrapped?: boolean }).wrapped) {
        Object.assign(steps, { wrapped: true, run: (s: readonly StoreStep[], committed?: number) => { seen.batches.push(s.map(x => x.key)); return original(s, committed) } })
      }
      return {
        prepare () {
          seen.events.push(`${name}.prepare`)
          if (opts.prepareUndefined) return undefined
          return {
            store: deps.store,
            steps: [{ op: 'incr', key: 'n', by: 1, ttlMs: 60_000, max: opts.limit }],
            defer: opts.connect,
            done (o) {
              seen.events.push(`${name}.done${o.refused !== undefined ? ':refused' : ''}`)
              if (o.refused !== undefined) throw deps.error(code as never, [], { headers: { 'retry-after': '7' } })
            },
          }
        },
        async onRequest () {
          seen.events.push(`${name}.onRequest`)
          await deps.store.incr('n', 1, 60_000)
        },
        prepareSettle () {
          seen.events.push(`${name}.prepareSettle`)
          return { store: deps.store, steps: [{ op: 'set', key: 'done', value: 'yes', ttlMs: 60_000 }] }
        },
        onSettle () { seen.events.push(`${name}.onSettle`) },
      }
    },
  })
}

/** A plugin without prepare: it runs where it stands. */
function plain (seen: Seen) {
  return definePlugin({
    name: 'plain',
    phase: 'admit',
    configSchema: Type.Object({}),
    create () {
      return {
        onRequest () { seen.events.push('plain.onRequest') },
        onSettle () { seen.events.push('plain.onSettle') },
      }
    },
  })
}

async function gateway (t: Test, names: string[], plugins: ReturnType<typeof definePlugin>[]): Promise<string> {
  const app = await buildTestApp({ plugins, pipeline: [AUTH_ENTRY, ...names.map(plugin => ({ plugin }))] })
  t.teardown(() => app.close())
  return listen(app)
}

const chat = (url: string) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST',
  headers: { ...auth(), 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'echo/echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
})

const settled = () => new Promise(resolve => setTimeout(resolve, 50))

t.test('consecutive plugins share one batch; settle too', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['a', 'b'], [counter('a', seen, { limit: 5 }), counter('b', seen, { limit: 5 })])
  const res = await chat(url)
  t.equal(res.status, 200)
  await res.text()
  await settled()
  t.same(seen.batches, [['a:n', 'b:n'], ['b:done', 'a:done']], 'one batch at admit (a then b), one at settle (reverse order)')
  t.same(seen.events, ['a.prepare', 'b.prepare', 'a.done', 'b.done', 'b.prepareSettle', 'a.prepareSettle'], 'onRequest and onSettle replaced by the prepared work')
})

t.test('a refused step: that plugin\'s refusal, every step undone, onSettle for each prepared plugin', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['a', 'b'], [counter('a', seen, { limit: 5 }), counter('b', seen, { limit: 0 })])
  const res = await chat(url)
  t.equal(res.status, 429)
  t.equal(res.headers.get('retry-after'), '7', 'the refusing plugin\'s header')
  t.match((await res.json() as { error: { message: string } }).error.message, /b is full/, 'its own error body')
  await settled()
  t.equal(await seen.stores.get('a')!.get('n'), '0', 'a\'s count undone by b\'s refusal')
  t.equal(await seen.stores.get('b')!.get('n'), '0', 'b\'s own count undone')
  t.same(seen.events, ['a.prepare', 'b.prepare', 'b.done:refused', 'b.prepareSettle', 'a.prepareSettle'], 'only b\'s done ran; both settle (their prepareSettle, or onSettle)')
})

t.test('a plugin without prepare ends the batch and runs in its place; prepare undefined runs onRequest', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['a', 'plain', 'b', 'c'], [counter('a', seen, { limit: 5 }), plain(seen), counter('b', seen, { limit: 5, prepareUndefined: true }), counter('c', seen, { limit: 5 })])
  const res = await chat(url)
  t.equal(res.status, 200)
  await res.text()
  await settled()
  t.same(seen.events.slice(0, 8), ['a.prepare', 'a.done', 'plain.onRequest', 'b.prepare', 'b.onRequest', 'c.prepare', 'c.done', 'c.prepareSettle'], 'the pipeline\'s order holds')
  t.same(seen.batches[0], ['a:n'], 'a alone: plain ended its batch')
  t.equal(await seen.stores.get('b')!.get('n'), '1', 'b counted by its onRequest')
})

t.test('runPrepared: a plugin\'s prepared work in a unit test', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const plugin = counter('solo', seen, { limit: 1 })
  const store = memoryStore('windows')
  const hooks = await plugin.create({}, pluginDeps(plugin, { store }))
  const ctx = fakeContext({})
  t.same((await runPrepared(hooks.prepare!(ctx, undefined)))?.results.map(r => r.value), [1])
  await t.rejects(runPrepared(hooks.prepare!(ctx, undefined)), { code: 'SOLO_FULL' } as never, 'past the limit: its refusal')
  t.equal(await store.get('n'), '1', 'the refused count undone')
})

t.test('a refused step\'s plugin may try again with new work: the whole batch runs again', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const shrinking = definePlugin({
    name: 'shrinking',
    phase: 'admit',
    storePurpose: 'windows',
    configSchema: Type.Object({}),
    create (_config, deps) {
      seen.stores.set('shrinking', deps.store)
      // A cheap bound first (5), refused by the cap of 3; then the exact amount (2).
      const work = (by: number, retry: boolean): PreparedWork => ({
        store: deps.store,
        steps: [{ op: 'incr', key: 'held', by, ttlMs: 60_000, max: 3 }],
        done (o) {
          seen.events.push(`shrinking.done(${by})${o.refused !== undefined ? ':refused' : ''}`)
          if (o.refused === undefined) return
          if (retry) return work(2, false)
          throw gwError('GW_ERR_QUOTA_EXCEEDED', ['3 held'])
        },
      })
      return { prepare: () => work(5, true) }
    },
  })
  const url = await gateway(t, ['ip', 'a', 'shrinking'], [counter('ip', seen, { limit: 5, connect: true }), counter('a', seen, { limit: 5 }), shrinking])
  const res = await chat(url)
  t.equal(res.status, 200, 'admitted with the smaller amount')
  await res.text()
  await settled()
  t.same(seen.events.filter(e => e.includes('done')), ['ip.done', 'shrinking.done(5):refused', 'a.done', 'shrinking.done(2)'], 'a\'s done ran once, after the batch that applied; the deferred plugin\'s once, in the first run')
  t.same(seen.batches.slice(0, 2), [['ip:n', 'a:n', 'shrinking:held'], ['a:n', 'shrinking:held']], 'the admit batch ran twice, the deferred work (applied in the first run) once')
  t.equal(await seen.stores.get('ip')!.get('n'), '1', 'the deferred count applied once')
  t.equal(await seen.stores.get('a')!.get('n'), '1', 'a counted once: the refused run was undone')
  t.equal(await seen.stores.get('shrinking')!.get('held'), '2', 'the new work applied')
  const again = await chat(url)
  t.equal(again.status, 429, 'then the cap: bound and exact amount refused')
})

const chatWith = (url: string, headers: Record<string, string>, body: string) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body,
})
const GOOD_BODY = JSON.stringify({ model: 'echo/echo-1', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })

t.test('deferred work: rides ahead of the admit batch in its round trip, and a refusal after it keeps it', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['ip', 'a', 'b'], [counter('ip', seen, { limit: 5, connect: true }), counter('a', seen, { limit: 5 }), counter('b', seen, { limit: 1 })])
  const ok = await chat(url)
  t.equal(ok.status, 200)
  await ok.text()
  await settled()
  t.same(seen.batches[0], ['ip:n', 'a:n', 'b:n'], 'one batch: the connect plugin\'s step first')
  t.same(seen.events.slice(0, 6), ['ip.prepare', 'a.prepare', 'b.prepare', 'ip.done', 'a.done', 'b.done'], 'prepared in phase order, done in batch order')

  seen.events.length = 0
  const refused = await chat(url)
  t.equal(refused.status, 429, 'b refuses (its limit is 1)')
  t.match((await refused.json() as { error: { message: string } }).error.message, /b is full/)
  await settled()
  t.equal(await seen.stores.get('ip')!.get('n'), '2', 'the deferred count stays: b\'s refusal undid only the admit steps')
  t.equal(await seen.stores.get('a')!.get('n'), '1', 'a\'s count undone by b\'s refusal')
  t.same(seen.events.filter(e => e.includes('done')), ['ip.done', 'b.done:refused'], 'the deferred plugin got its outcome, then the refusing plugin')
})

t.test('deferred work refused: its answer comes first, before a bad key, a bad body or the admit steps', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['ip', 'a'], [counter('ip', seen, { limit: 1, connect: true }), counter('a', seen, { limit: 5 })])
  t.equal((await chat(url)).status, 200, 'the first call passes')
  await settled()
  const cases: Array<[string, Record<string, string>, string]> = [
    ['a good call', auth(), GOOD_BODY],
    ['a bad key (401 otherwise)', auth('sk-gw-wrong'), GOOD_BODY],
    ['no key', {}, GOOD_BODY],
    ['a body that is not JSON (400 otherwise)', auth(), '{"model":'],
    ['an unknown model (404 otherwise)', auth(), JSON.stringify({ model: 'nope/none', messages: [{ role: 'user', content: 'x' }] })],
  ]
  for (const [what, headers, body] of cases) {
    const res = await chatWith(url, headers, body)
    t.equal(res.status, 429, `${what}: 429`)
    t.equal(res.headers.get('retry-after'), '7', `${what}: the deferred plugin's own header`)
    t.match((await res.json() as { error: { message: string } }).error.message, /ip is full/, `${what}: its own body`)
  }
  await settled()
  t.equal(await seen.stores.get('ip')!.get('n'), '1', 'refused counts undone')
  t.equal(await seen.stores.get('a')!.get('n'), '1', 'the admit steps never applied for a refused call')
})

t.test('deferred work with no admit batch to join runs alone before the call goes on; a failed call still counts', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = await gateway(t, ['ip', 'plain'], [counter('ip', seen, { limit: 2, connect: true }), plain(seen)])
  const ok = await chat(url)
  t.equal(ok.status, 200)
  await ok.text()
  t.same(seen.batches[0], ['ip:n'], 'alone: nothing at admit to join')
  t.ok(seen.events.indexOf('ip.done') < seen.events.indexOf('plain.onRequest'), 'it ran before the admit phase\'s plugin without prepare')
  const bad = await chatWith(url, auth('sk-gw-wrong'), GOOD_BODY)
  t.equal(bad.status, 401, 'under the limit: the call\'s own failure')
  await bad.text()
  t.equal(await seen.stores.get('ip')!.get('n'), '2', 'the failed call was counted')
  const past = await chatWith(url, auth('sk-gw-wrong'), GOOD_BODY)
  t.equal(past.status, 429, 'past the limit: the refusal, not the 401')
})

t.test('deferred work of a call whose client went away before admit is still counted', async t => {
  const seen: Seen = { batches: [], events: [], stores: new Map() }
  const url = new URL(await gateway(t, ['ip', 'a'], [counter('ip', seen, { limit: 5, connect: true }), counter('a', seen, { limit: 5 })]))
  const { connect } = await import('node:net')
  const sock = connect(Number(url.port), url.hostname)
  await new Promise<void>(resolve => sock.once('connect', () => resolve()))
  // Headers and half the body, then gone: the call never reaches its admit phase.
  sock.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: ${auth().authorization}\r\ncontent-type: application/json\r\ncontent-length: ${GOOD_BODY.length}\r\n\r\n${GOOD_BODY.slice(0, 10)}`)
  await new Promise(resolve => setTimeout(resolve, 100))
  sock.destroy()
  let n: string | undefined
  for (let i = 0; i < 50 && n !== '1'; i++) {
    await new Promise(resolve => setTimeout(resolve, 20))
    n = await seen.stores.get('ip')!.get('n')
  }
  t.equal(n, '1', 'counted at settle')
  t.equal(await seen.stores.get('a')!.get('n'), undefined, 'the admit steps never ran')
})
