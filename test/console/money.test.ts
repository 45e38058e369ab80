/** @module test/console/money – the console formats money from integer micro-units, never through a float. */
import t from 'tap'
import { formatMoney, toMicros } from '../../console/money.js'

t.test('API amounts parse to exact BigInt micro-units', async t => {
  t.equal(toMicros('12.345678'), 12_345_678n)
  t.equal(toMicros('0.000001'), 1n)
  t.equal(toMicros('-3.5'), -3_500_000n)
  t.equal(toMicros('900719925474.099199'), 900_719_925_474_099_199n, 'beyond 2^53 micro-units stays exact')
  t.equal(toMicros('not money'), 0n)
})

t.test('sums of many small amounts do not drift, and format from the integer', async t => {
  let sum = 0n
  let float = 0
  for (let i = 0; i < 1000; i++) { sum += toMicros('0.100001'); float += 0.100001 }
  t.equal(formatMoney(sum), '100.001', 'exact: 1000 × 0.100001')
  t.not(String(float), '100.001', 'a float sum would have drifted')
  t.equal(formatMoney(0n), '0.00')
  t.equal(formatMoney(12_345_678n), '12.345678')
  t.equal(formatMoney(1_234_567_500_000n), '1,234,567.50')
  t.equal(formatMoney(-1n), '-0.000001')
  t.equal(formatMoney(900_719_925_474_099_199n), '900,719,925,474.099199')
})
