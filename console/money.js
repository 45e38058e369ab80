// Money in the console is exact: the API gives decimal strings of integer micro-units ("12.500000");
// they are parsed to BigInt micro-units, summed as integers and formatted from the integer, never
// through a float.
/** @param {string} s @returns {bigint} */
export function toMicros (s) {
  const m = /^(-)?(\d+)(?:\.(\d{1,6}))?$/.exec(String(s).trim())
  if (!m) return 0n
  const v = BigInt(m[2]) * 1000000n + BigInt((m[3] || '').padEnd(6, '0'))
  return m[1] ? -v : v
}
/** Micro-units → "1234.56" (trailing zeros past 2 decimals dropped, never rounded). */
/** @param {bigint} micros @returns {string} */
export function formatMoney (micros) {
  const neg = micros < 0n
  const a = neg ? -micros : micros
  let frac = String(a % 1000000n).padStart(6, '0').replace(/0+$/, '')
  if (frac.length < 2) frac = frac.padEnd(2, '0')
  const int = String(a / 1000000n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `${neg ? '-' : ''}${int}.${frac}`
}
