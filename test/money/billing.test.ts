import t from 'tap'
import { ceilMicros, costMicros, formatMicros, parseAmount, reserveMicros } from '../../money/billing.ts'
import type { Usage } from '../../core/types/usage.ts'

const u = (inputTokens: number, outputTokens: number, cachedInputTokens = 0, cacheWriteTokens = 0): Usage =>
  ({ inputTokens, cachedInputTokens, cacheWriteTokens, outputTokens })

t.test('costMicros – without a cached rate all input bills at the input rate', async t => {
  // P units per million tokens = P micro-units per token
  t.equal(costMicros(u(1000, 500), { input: 3, output: 15 }), 1000 * 3 + 500 * 15)
  t.equal(costMicros(u(1000, 500, 200), { input: 3, output: 15 }), 10_500, 'cached tokens at the input rate')
  t.equal(costMicros(u(0, 0), { input: 3, output: 15 }), 0)
  t.equal(costMicros(u(1000, 500), { input: 0, output: 0 }), 0, 'free model')
})

t.test('costMicros – with a cached rate', async t => {
  t.equal(costMicros(u(1000, 500, 200), { input: 3, cachedInput: 0.3, output: 15 }), 800 * 3 + 200 * 0.3 + 500 * 15)
  t.equal(costMicros(u(1000, 0, 1000), { input: 3, cachedInput: 0, output: 15 }), 0, 'a zero cached rate is a rate, not "absent"')
  t.equal(costMicros(u(100, 0, 0, 60), { input: 2, cachedInput: 1, output: 0 }), 200, 'cache writes are part of input, billed once at the input rate')
})

t.test('costMicros – cache writes at the cacheWrite rate', async t => {
  const price = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }
  t.equal(costMicros(u(1000, 500, 200, 300), price), 500 * 3 + 200 * 0.3 + 300 * 3.75 + 500 * 15, 'uncached, read and written input each at its rate')
  t.equal(costMicros(u(1000, 0, 0, 1000), { input: 3, cacheWrite: 6, output: 15 }), 6000, 'a 1-hour cache write at 2× input')
  t.equal(costMicros(u(1000, 0, 0, 1000), { input: 3, cacheWrite: 0, output: 15 }), 0, 'a zero cache-write rate is a rate, not "absent"')
  t.equal(costMicros(u(100, 0, 80, 50), { input: 2, cachedInput: 1, cacheWrite: 4, output: 0 }), 80 + 20 * 4, 'writes beyond the uncached input are clamped')
  t.equal(costMicros(u(1, 0, 0, 1), { input: 1, cacheWrite: 1.25, output: 0 }), 2, '1.25 → 2: rounded up')
})

t.test('costMicros – one-hour cache writes at the cacheWrite1h rate', async t => {
  const price = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, output: 15 }
  const hour = (inputTokens: number, cached: number, writes: number, oneHour: number): Usage =>
    ({ inputTokens, cachedInputTokens: cached, cacheWriteTokens: writes, cacheWrite1hTokens: oneHour, outputTokens: 0 })
  t.equal(costMicros(hour(1000, 200, 500, 300), price), 300 * 3 + 200 * 0.3 + 200 * 3.75 + 300 * 6, 'the one-hour part of the writes at 6, the rest at 3.75')
  t.equal(costMicros(hour(1000, 0, 500, 300), { input: 3, cacheWrite: 3.75, output: 15 }), 500 * 3 + 500 * 3.75, 'no one-hour rate: the cache-write rate')
  t.equal(costMicros(hour(1000, 0, 500, 300), { input: 3, output: 15 }), 3000, 'neither rate: the input rate')
  t.equal(costMicros(hour(1000, 0, 100, 900), price), 900 * 3 + 100 * 6, 'one-hour writes beyond the writes are clamped to them')
  t.equal(costMicros(hour(1000, 0, 100, -5), price), 900 * 3 + 100 * 3.75, 'a negative one-hour count is none')
})

t.test('costMicros – cached > input is clamped to input', async t => {
  t.equal(costMicros(u(100, 0, 500), { input: 2, cachedInput: 1, output: 0 }), 100, 'never negative uncached input')
  t.equal(costMicros(u(100, 10, 500), { input: 2, output: 4 }), 240)
})

t.test('costMicros – rounds up to whole micro-units, ignoring float noise', async t => {
  t.equal(costMicros(u(1, 0), { input: 0.15, output: 0 }), 1, '0.15 → 1')
  t.equal(costMicros(u(3, 0), { input: 0.1, output: 0 }), 1, '3 × 0.1 = 0.30000000000000004 → 1')
  t.equal(costMicros(u(3, 7), { input: 0.1, output: 0.1 }), 1, '0.3 + 0.7 = 1.0000000000000002 is 1, not 2')
  t.equal(costMicros(u(30, 0), { input: 0.1, output: 0 }), 3)
  t.equal(costMicros(u(100_000_000, 0), { input: 1.1, output: 0 }), 110_000_000, '110000000.00000001 → 110000000')
  t.equal(costMicros(u(11, 0), { input: 0.1, output: 0 }), 2, '1.1 → 2: a real fraction rounds up')
  t.equal(costMicros(u(1, 1, 1), { input: 5, cachedInput: 0.25, output: 0.6 }), 1, '0.85 → 1')
  for (let n = 1; n <= 2000; n++) {
    const c = costMicros(u(n, n), { input: 0.1, output: 0.2 })
    if (c !== Math.ceil((n * 3) / 10)) { t.fail(`n=${n}: ${c}`); break }
  }
  t.pass('0.3 µ per token pair rounds exactly for 1..2000')
})

t.test('ceilMicros', async t => {
  t.equal(ceilMicros(0), 0)
  t.equal(ceilMicros(-5), 0, 'never negative')
  t.equal(ceilMicros(1.5), 2)
  t.equal(ceilMicros(2.0000000000000004), 2)
  t.equal(ceilMicros(1e-9), 0, 'noise-sized amounts are nothing')
  t.equal(ceilMicros(7), 7)
  t.equal(ceilMicros(Number.MAX_SAFE_INTEGER - 1), Number.MAX_SAFE_INTEGER - 1)
  t.equal(ceilMicros(1e19), Number.MAX_SAFE_INTEGER, 'at most the largest exact amount')
  t.equal(ceilMicros(Infinity), Number.MAX_SAFE_INTEGER)
  t.ok(Number.isSafeInteger(costMicros({ inputTokens: 1e9, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 1e9 }, { input: 1e12, output: 1e12 })), 'a cost is always an exact amount')
})

t.test('reserveMicros – input estimate + output cap at list rates, rounded up', async t => {
  t.equal(reserveMicros(1000, 500, { input: 3, output: 15 }), 10_500)
  t.equal(reserveMicros(1000, 500, { input: 3, cachedInput: 0.3, output: 15 }), 10_500, 'no cache discount assumed')
  t.equal(reserveMicros(1, 0, { input: 0.1, output: 0 }), 1)
  t.equal(reserveMicros(3, 7, { input: 0.1, output: 0.1 }), 1)
  t.equal(reserveMicros(0, 0, { input: 3, output: 15 }), 0)
  t.ok(reserveMicros(800, 300, { input: 2, output: 8 }) >= costMicros(u(800, 300, 100), { input: 2, cachedInput: 1, output: 8 }), 'covers the real cost')
})

t.test('reserveMicros – the input estimate at the highest input-side rate', async t => {
  const price = { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }
  t.equal(reserveMicros(1000, 500, price), 1000 * 3.75 + 500 * 15, 'max(input, cacheWrite)')
  t.equal(reserveMicros(1000, 500, { input: 3, cacheWrite: 1, output: 15 }), 10_500, 'a cache-write rate below input changes nothing')
  t.ok(reserveMicros(1000, 500, price) >= costMicros(u(1000, 500, 0, 1000), price), 'covers a call whose whole input is a cache write')
  t.equal(reserveMicros(1000, 500, price), costMicros(u(1000, 500, 0, 1000), price), 'exactly, the worst case')
  const hourly = { ...price, cacheWrite1h: 6 }
  t.equal(reserveMicros(1000, 500, hourly), 1000 * 6 + 500 * 15, 'max(input, cacheWrite, cacheWrite1h)')
  t.equal(reserveMicros(1000, 500, hourly), costMicros({ inputTokens: 1000, cachedInputTokens: 0, cacheWriteTokens: 1000, cacheWrite1hTokens: 1000, outputTokens: 500 }, hourly),
    'exactly the cost of a call whose whole input is a one-hour write')
  t.equal(reserveMicros(1000, 0, { input: 3, cacheWrite1h: 4, output: 15 }), 4000, 'a one-hour rate without a cache-write rate counts too')
})

t.test('formatMicros', async t => {
  t.equal(formatMicros(0), '0.000000')
  t.equal(formatMicros(1), '0.000001')
  t.equal(formatMicros(1_500_000), '1.500000')
  t.equal(formatMicros(123_456_789), '123.456789')
  t.equal(formatMicros(-2_500_001), '-2.500001')
  t.equal(formatMicros(-1), '-0.000001')
  t.equal(formatMicros(9_000_000_000_000_001), '9000000000.000001')
})

t.test('parseAmount', async t => {
  t.equal(parseAmount('1.5'), 1_500_000)
  t.equal(parseAmount('0.000001'), 1)
  t.equal(parseAmount('7'), 7_000_000)
  t.equal(parseAmount('  10.25 '), 10_250_000, 'surrounding space is trimmed')
  t.equal(parseAmount('-2.5'), -2_500_000)
  t.equal(parseAmount('0.1'), 100_000, 'exact, no float error')
  t.equal(parseAmount('123.456789'), 123_456_789)
  for (const bad of ['', ' ', 'abc', '1.2345678', '1e6', '1.', '.5', '+1', '1,5', '--1', '- 1', 'NaN', 'Infinity', '0x10', '1.5x', '١']) {
    t.throws(() => parseAmount(bad), { message: /not an amount/ }, JSON.stringify(bad))
  }
})

t.test('formatMicros ⇄ parseAmount round trip', async t => {
  for (const m of [0, 1, 999_999, 1_000_000, 1_000_001, 42_123_456, -1, -999_999, -1_000_000, -73_000_007, 4_503_599_627_370_495]) {
    t.equal(parseAmount(formatMicros(m)), m, String(m))
  }
  for (const s of ['0.000000', '1.000000', '0.100000', '12.345678', '-3.000001']) {
    t.equal(formatMicros(parseAmount(s)), s, s)
  }
  t.equal(formatMicros(parseAmount('2.5')), '2.500000', 'normalized to 6 decimals')
})

t.test('per-use terms: tier multiplier on the tokens, server-tool uses per 1000 at their price', async t => {
  const price = { input: 1, output: 2, perUse: { web_search: 10, web_fetch: 0 }, serviceTiers: { priority: 2, flex: 0.5 } }
  const u = { inputTokens: 100, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 50 }
  t.equal(costMicros(u, price), 200, 'no uses, no tier: tokens only')
  t.equal(costMicros({ ...u, serverToolUses: { web_search: 3, web_fetch: 4, unpriced: 9 } }, price), 200 + 30_000, 'reported uses at their price; unpriced features 0')
  t.equal(costMicros(u, price, { tier: 'priority' }), 400)
  t.equal(costMicros(u, price, { tier: 'flex' }), 100)
  t.equal(costMicros(u, price, { tier: 'unknown' }), 200, 'a tier without a multiplier bills at 1')
  t.equal(costMicros(u, price, { uses: { web_search: 1 } }), 10_200, 'fallback uses when none reported')
  t.equal(costMicros({ ...u, serverToolUses: { web_search: 2 } }, price, { uses: { web_search: 1 } }), 20_200, 'reported uses win over the fallback')
  t.equal(reserveMicros(100, 50, price, { tier: 'priority', uses: { web_search: 5 } }), 400 + 50_000)
  t.equal(reserveMicros(100, 50, price, { tier: 'flex' }), 200, 'a cheaper tier never reserves below the token prices')
})
