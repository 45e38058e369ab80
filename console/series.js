// Chart data from the admin API's summaries: every bucket of the range (empty ones as 0, or null
// for a rate with no calls), one series per group. Pure functions (unit-tested).

/** @typedef {{ time: string, key: string | null, other: boolean } & Record<string, any>} SeriesEntry */

/**
 * The bucket starts (ms) of the last `n` buckets of `bucketMs` up to `now` (the last one is the
 * one running now).
 * @param {number} now @param {number} bucketMs @param {number} n @returns {number[]}
 */
export function bucketStarts (now, bucketMs, n) {
  const last = Math.floor(now / bucketMs) * bucketMs
  return Array.from({ length: n }, (_, i) => last - (n - 1 - i) * bucketMs)
}

/** A series' name: the group's key, "(none)" for null, `other` for the fold. @param {SeriesEntry} e @param {{ none: string, other: string }} names */
export const seriesName = (e, names) => e.other ? names.other : e.key === null ? names.none : e.key

/**
 * One array of values per series, aligned on `starts`; `value(entry)` gives a bucket's value.
 * Buckets without an entry are 0. Series are ordered as their groups first appear in `order`
 * (the API's ranking), the fold last.
 * @param {number[]} starts @param {SeriesEntry[]} entries @param {(e: SeriesEntry) => number} value
 * @param {{ none: string, other: string }} names @param {Array<string | null>} order
 * @returns {{ names: string[], values: number[][] }}
 */
export function align (starts, entries, value, names, order) {
  const index = new Map(starts.map((s, i) => [s, i]))
  /** @type {Map<string, number[]>} */
  const byName = new Map()
  const rank = (/** @type {string} */ n) => {
    const i = order.findIndex(k => (k === null ? names.none : k) === n)
    return n === names.other ? Number.MAX_SAFE_INTEGER : i < 0 ? Number.MAX_SAFE_INTEGER - 1 : i
  }
  for (const e of entries) {
    const i = index.get(Date.parse(e.time))
    if (i === undefined) continue
    const name = seriesName(e, names)
    let vs = byName.get(name)
    if (!vs) byName.set(name, vs = starts.map(() => 0))
    vs[i] += value(e)
  }
  const sorted = [...byName.keys()].sort((a, b) => rank(a) - rank(b))
  return { names: sorted, values: sorted.map(n => /** @type {number[]} */ (byName.get(n))) }
}

/**
 * A rate per bucket and series: numerator / requests, null where there were no requests (a gap,
 * not a zero).
 * @param {number[]} starts @param {SeriesEntry[]} entries @param {string} numerator
 * @param {{ none: string, other: string }} names @param {Array<string | null>} order
 * @returns {{ names: string[], values: Array<Array<number | null>> }}
 */
export function rates (starts, entries, numerator, names, order) {
  const num = align(starts, entries, e => e[numerator], names, order)
  const den = align(starts, entries, e => e.requests, names, order)
  return { names: num.names, values: num.values.map((vs, s) => vs.map((v, i) => den.values[s][i] ? v / den.values[s][i] : null)) }
}
