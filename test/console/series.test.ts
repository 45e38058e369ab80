/** @module test/console/series – chart data from the summaries: every bucket of the range, one aligned series per group, rates with gaps. */
import t from 'tap'
import { align, bucketStarts, rates } from '../../console/series.js'

const names = { none: '(none)', other: 'other' }
const M = 60_000
const iso = (ms: number): string => new Date(ms).toISOString()

t.test('the last n buckets up to now, the running one last', async t => {
  const now = Date.UTC(2025, 0, 1, 10, 30, 15)
  t.strictSame(bucketStarts(now, M, 3), [now - 15_000 - 2 * M, now - 15_000 - M, now - 15_000])
  t.equal(bucketStarts(now, 86_400_000, 30).length, 30)
  t.equal(bucketStarts(now, 86_400_000, 30).at(-1), Date.UTC(2025, 0, 1))
})

t.test('entries land in their bucket; missing buckets are 0; ranked order, other last, outside the range dropped', async t => {
  const starts = [0, M, 2 * M]
  const entries = [
    { time: iso(M), key: 'b', other: false, requests: 2 },
    { time: iso(0), key: null, other: true, requests: 5 },
    { time: iso(0), key: 'a', other: false, requests: 1 },
    { time: iso(2 * M), key: 'a', other: false, requests: 3 },
    { time: iso(9 * M), key: 'a', other: false, requests: 99 },
    { time: iso(2 * M), key: null, other: false, requests: 4 },
  ]
  const r = align(starts, entries, e => e.requests, names, ['a', 'b', null])
  t.strictSame(r.names, ['a', 'b', '(none)', 'other'])
  t.strictSame(r.values, [[1, 0, 3], [0, 2, 0], [0, 0, 4], [5, 0, 0]])
})

t.test('rates: numerator over requests, null (a gap) where there were no calls', async t => {
  const r = rates([0, M], [{ time: iso(0), key: 'a', other: false, requests: 4, serverErrors: 1 }], 'serverErrors', names, ['a'])
  t.strictSame(r, { names: ['a'], values: [[0.25, null]] })
})
