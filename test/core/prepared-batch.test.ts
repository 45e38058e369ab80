/**
 * @module test/core/prepared-batch – the hook runner's batches (core/call/hook-runner.ts) through a
 * listening gateway, with plugins written against the public entry: consecutive plugins' prepared
 * steps run as one batch; a refused step undoes every plugin's steps and produces its plugin's own
 * refusal (status, body, Retry-After); a plugin without `prepare` ends the batch and runs in its
 * place; `prepare` returning undefined runs `onRequest`; settle steps batch too; `onSettle` runs for
 * every plugin whose `prepare` ran.
 */
import t, { type Test } from 'tap'
import { definePlugin, gwError, Type, type KvStore, type PreparedWork, type StoreStep } from '../../index.ts'
import { runPrepared, memoryStore, pluginDeps, fakeContext } from '../../testing.ts'
import { buildTestApp, listen, auth, AUTH_ENTRY } from '../helpers/build-test-app.ts'

interface Seen { batches: string[][], events: string[], stores: Map<string, KvStore> }

/** A counter plugin: counts each call in `<name>:n` up to `limit`, finishes with `<name>:done` at settle. */
function counter (name: string, seen: Seen, opts: { limit: number, prepareUndefined?: boolean }) {
  return definePlugin({
    name,
    phase: 'admit',
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
        Object.assign(steps, { wrapped: true, run: (s: readonly StoreStep[]) => { seen.batches.push(s.map(x => x.key)); return original(s) } })
      }
      return {
        prepare () {
          seen.events.push(`${name}.prepare`)
          if (opts.prepareUndefined) return undefined
          return {
            store: deps.store,
            steps: [{ op: 'incr', key: 'n', by: 1, ttlMs: 60_000, max: opts.limit }],
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
  const url = await gateway(t, ['a', 'shrinking'], [counter('a', seen, { limit: 5 }), shrinking])
  const res = await chat(url)
  t.equal(res.status, 200, 'admitted with the smaller amount')
  await res.text()
  await settled()
  t.same(seen.events.filter(e => e.includes('done')), ['shrinking.done(5):refused', 'a.done', 'shrinking.done(2)'], 'a\'s done ran once, after the batch that applied')
  t.same(seen.batches.slice(0, 2), [['a:n', 'shrinking:held'], ['a:n', 'shrinking:held']], 'the whole batch ran twice')
  t.equal(await seen.stores.get('a')!.get('n'), '1', 'a counted once: the refused run was undone')
  t.equal(await seen.stores.get('shrinking')!.get('held'), '2', 'the new work applied')
  const again = await chat(url)
  t.equal(again.status, 429, 'then the cap: bound and exact amount refused')
})
