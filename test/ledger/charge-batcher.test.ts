/** ChargeBatcher on its own (a fake writer): batching, item-by-item retry, unknown outcomes, flush. */
import t from 'tap'
import { ChargeBatcher, ChargeOutcomeUnknown, type ChargeItem } from '../../core/ledger/batch.ts'
import type { UsageRecord } from '../../core/ledger/ledger.ts'

const record = (traceId: string): UsageRecord => ({
  time: 1, keyId: 'k', model: 'm', provider: 'p', traceId, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, cost: 1, estimated: false,
})
const ids = (items: readonly ChargeItem[]): string[] => items.map(i => i.record.traceId)

t.test('charges queued in one tick are written together; those arriving during a write form the next batch', async t => {
  const batches: string[][] = []
  let release!: () => void
  let gate: Promise<void> | undefined = new Promise<void>(resolve => { release = resolve })
  const b = new ChargeBatcher(async items => {
    batches.push(ids(items))
    if (gate) { const g = gate; gate = undefined; await g }
  })
  const first = ['a', 'b', 'c'].map(id => b.charge(undefined, record(id)))
  await new Promise(resolve => setImmediate(resolve))
  t.strictSame(batches, [['a', 'b', 'c']])
  const second = ['d', 'e'].map(id => b.charge(undefined, record(id)))
  t.equal(b.pending, 2, 'queued while the first batch is written')
  release()
  await Promise.all([...first, ...second])
  t.strictSame(batches, [['a', 'b', 'c'], ['d', 'e']])
})

t.test('maxBatch splits a long queue', async t => {
  const batches: string[][] = []
  const b = new ChargeBatcher(items => { batches.push(ids(items)) }, { maxBatch: 2 })
  await Promise.all(['a', 'b', 'c', 'd', 'e'].map(id => b.charge(undefined, record(id))))
  t.strictSame(batches, [['a', 'b'], ['c', 'd'], ['e']])
})

t.test('a failed batch is retried item by item: only the bad item rejects', async t => {
  const written: string[] = []
  const b = new ChargeBatcher(items => {
    if (items.some(i => i.record.traceId === 'bad')) throw new Error('bad record')
    written.push(...ids(items))
  })
  const results = await Promise.allSettled(['a', 'bad', 'c'].map(id => b.charge(undefined, record(id))))
  t.strictSame(results.map(r => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.strictSame(written, ['a', 'c'])
})

t.test('retryItems false (outcome unknown): every item rejects, nothing is written again', async t => {
  const calls: string[][] = []
  const lost = new Error('connection lost')
  const b = new ChargeBatcher(items => { calls.push(ids(items)); throw lost }, { retryItems: err => err !== lost })
  const results = await Promise.allSettled(['a', 'b', 'c'].map(id => b.charge(undefined, record(id))))
  t.strictSame(results.map(r => r.status), ['rejected', 'rejected', 'rejected'])
  t.ok(results.every(r => (r as PromiseRejectedResult).reason instanceof ChargeOutcomeUnknown), 'marked: the outcome is unknown')
  t.ok(results.every(r => (r as PromiseRejectedResult).reason.cause === lost), 'with the original error as its cause')
  t.ok(results.every(r => (r as PromiseRejectedResult).reason.outcomeUnknown === true))
  t.strictSame(calls, [['a', 'b', 'c']], 'one attempt only')
  // a throwing classifier counts as "unknown" too
  let writes = 0
  const d = new ChargeBatcher(() => { writes++; throw new Error('x') }, { retryItems: () => { throw new Error('classifier') } })
  await Promise.allSettled([d.charge(undefined, record('a')), d.charge(undefined, record('b'))])
  t.equal(writes, 1)
})

t.test('flush waits for queued and running batches', async t => {
  const written: string[] = []
  const b = new ChargeBatcher(async items => {
    await new Promise(resolve => setTimeout(resolve, 20))
    written.push(...ids(items))
  })
  void b.charge(undefined, record('a'))
  await new Promise(resolve => setImmediate(resolve))
  void b.charge(undefined, record('b')) // queued behind the running batch
  await b.flush()
  t.strictSame(written, ['a', 'b'])
  t.equal(b.pending, 0)
  await b.flush() // nothing to do
})

t.test('delayMs: charges that arrive within the window share one batch; flush() does not wait it out', async t => {
  const batches: string[][] = []
  const b = new ChargeBatcher(items => { batches.push(ids(items)) }, { delayMs: 60_000 })
  const a = b.charge(undefined, record('a'))
  await new Promise(resolve => setImmediate(resolve))
  await new Promise(resolve => setTimeout(resolve, 5))
  const c = b.charge(undefined, record('b'))
  t.strictSame(batches, [], 'nothing written while the window is open')
  t.equal(b.pending, 2)
  const started = Date.now()
  await b.flush()
  t.ok(Date.now() - started < 30_000, 'flush started the waiting batch at once')
  await Promise.all([a, c])
  t.strictSame(batches, [['a', 'b']])
  // A new charge after the flush opens a new window (a short one here), and is written when it ends.
  const short = new ChargeBatcher(items => { batches.push(ids(items)) }, { delayMs: 5 })
  await Promise.all(['c', 'd'].map(id => short.charge(undefined, record(id))))
  t.strictSame(batches, [['a', 'b'], ['c', 'd']])
})

t.test('batch listeners belong to one batcher: another batcher\'s batches are not told', async t => {
  const a = new ChargeBatcher(() => {})
  const b = new ChargeBatcher(items => { if (items.some(i => i.record.traceId === 'bad')) throw new Error('bad') })
  const seenA: Array<[number, boolean]> = []
  const seenB: Array<[number, boolean]> = []
  const stopA = a.onBatch((size, ms, ok) => { t.ok(ms >= 0); seenA.push([size, ok]) })
  b.onBatch((size, _ms, ok) => { seenB.push([size, ok]) })
  await Promise.all(['x', 'y'].map(id => a.charge(undefined, record(id))))
  await b.charge(undefined, record('z'))
  await t.rejects(b.charge(undefined, record('bad')))
  t.strictSame(seenA, [[2, true]], 'a is told of its own batch only')
  t.strictSame(seenB, [[1, true], [1, false]], 'b of its own, committed or not')
  stopA()
  await a.charge(undefined, record('w'))
  t.strictSame(seenA, [[2, true]], 'a stopped listener is told no more')
})

t.test('failWhole: a batch that failed for a reason no item caused fails every item with it, none written alone', async t => {
  const batches: string[][] = []
  const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
  const b = new ChargeBatcher(items => { batches.push(ids(items)); throw busy }, { failWhole: err => (err as { code?: string }).code === 'SQLITE_BUSY' })
  const results = await Promise.allSettled(['a', 'b', 'c'].map(id => b.charge(undefined, record(id))))
  t.strictSame(batches, [['a', 'b', 'c']], 'one write, no item-by-item retry')
  t.ok(results.every(r => r.status === 'rejected' && r.reason === busy), 'each item rejects with the error as it is (not an unknown outcome)')
})
