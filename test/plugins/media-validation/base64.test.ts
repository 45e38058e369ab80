/**
 * The base64 check reads the client's string as it is (no whitespace-stripped copy of a payload
 * that can be megabytes) and accepts exactly what the previous rule accepted: the string with its
 * whitespace removed is made of the standard or URL-safe alphabet and ends in at most two `=`.
 */
import t from 'tap'
import { isBase64 } from '../../../plugins/media-validation/parts.ts'

const previous = (s: string): boolean => /^[A-Za-z0-9+/_-]*={0,2}$/.test(s.replace(/\s+/g, ''))

t.test('the same verdict as stripping whitespace first, on generated strings', async t => {
  let seed = 7
  const r = (): number => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff }
  const alphabet = 'AZaz09+/_-====  \n\r\t\u00a0\u2028.!*é😀'
  let accepted = 0
  for (let i = 0; i < 20_000; i++) {
    const n = Math.floor(r() * 24)
    let s = ''
    for (let j = 0; j < n; j++) s += alphabet[Math.floor(r() * alphabet.length)]
    if (isBase64(s) !== previous(s)) t.fail(`${JSON.stringify(s)}: ${isBase64(s)} vs ${previous(s)}`)
    if (previous(s)) accepted++
  }
  t.ok(accepted > 500, `both verdicts seen (${accepted} accepted)`)
  for (const s of ['QUJD', 'QUJD\nRA==', 'QU JD RA = =\n', 'QUJD=A', 'QUJD===', 'QU*JD', ' ', 'a-b_c']) t.equal(isBase64(s), previous(s), JSON.stringify(s))
})

t.test('a megabyte payload is checked in one pass', async t => {
  const big = Buffer.alloc(1 << 20, 7).toString('base64').replace(/(.{76})/g, '$1\n')
  t.equal(isBase64(big), true)
  t.equal(isBase64(big + '!'), false)
})
