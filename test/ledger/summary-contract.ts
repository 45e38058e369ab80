/**
 * The Ledger contract's usage summary (summarizeUsage), run against every backend through
 * ledgerContract (contract.ts). Not a test file itself (tap excludes *contract.ts: see package.json).
 */
import type { Test } from 'tap'
import { SUMMARY_BUCKETS, type Ledger, type UsageRecord, type UsageSummaryQuery, type UsageSummaryRow } from '../../core/ledger/ledger.ts'

/**
 * The expected summary, computed here from the records (the reference the database must match);
 * grouped by tag, `tagsOf` gives a key's tags (undefined: not a ledger key), a record counting in each.
 */
export function referenceSummary (records: readonly UsageRecord[], q: UsageSummaryQuery, tagsOf?: (keyId: string) => readonly string[] | undefined): UsageSummaryRow[] {
  const m = new Map<string, UsageSummaryRow>()
  for (const r of records) {
    if (r.time < q.from || r.time >= q.to) continue
    if ((q.organization !== undefined && r.organization !== q.organization) || (q.model !== undefined && r.model !== q.model) ||
      (q.keyId !== undefined && r.keyId !== q.keyId) || (q.project !== undefined && r.project !== q.project)) continue
    const bucket = Math.floor(r.time / q.bucketMs) * q.bucketMs
    const groups = q.groupBy === 'tag' ? (tagsOf?.(r.keyId) ?? [null]) : [q.groupBy === 'model' ? r.model : q.groupBy === 'organization' ? (r.organization ?? null) : null]
    for (const group of groups.length === 0 ? [null] : groups) add(m, bucket, group, r)
  }
  return [...m.values()].sort((a, b) => a.bucket - b.bucket || (a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1))
}

/** One record's sums added to its bucket and group. */
function add (m: Map<string, UsageSummaryRow>, bucket: number, group: string | null, r: UsageRecord): void {
  const k = `${bucket}\u0000${group ?? '\u0001'}`
  const a = m.get(k) ?? { bucket, group, requests: 0, inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, outputTokens: 0, cost: 0 }
  a.requests++
  a.inputTokens += r.inputTokens
  a.cachedInputTokens += r.cachedInputTokens
  // A record from before cache writes were kept adds none.
  a.cacheWriteTokens += r.cacheWriteTokens ?? 0
  a.cacheWrite1hTokens += r.cacheWrite1hTokens ?? 0
  a.outputTokens += r.outputTokens
  a.cost += r.cost
  m.set(k, a)
}

const DAY = 86_400_000
const BASE = Date.UTC(2025, 2, 1) // a UTC midnight: every bucket width starts there

export function summaryContract (t: Test, open: (t: Test) => Promise<Ledger>): void {
  t.test('summarizeUsage – per minute, hour and day, per model and organization: exact sums from GROUP BY', async t => {
    const l = await open(t)
    await l.createOrganization('org-a')
    await l.createOrganization('org-b')
    await l.topUp('org-a', 1e15)
    await l.topUp('org-b', 1e15)
    // 120 records over 3 days, charged 40 at a time in flight; some costs beyond 2^32 micro-units.
    const records: UsageRecord[] = Array.from({ length: 120 }, (_, i) => ({
      time: BASE + (i % 3) * DAY + (i % 5) * 3_600_000 + (i % 7) * 60_000 + i,
      keyId: `key-${i % 4}`,
      ...(i % 6 === 5 ? {} : { organization: i % 2 === 0 ? 'org-a' : 'org-b' }),
      project: `proj-${i % 2}`,
      model: i % 3 === 0 ? 'acme/big' : 'acme/small',
      provider: 'acme',
      traceId: `summary-${i}`,
      inputTokens: 1000 + i,
      cachedInputTokens: i % 10,
      // Every fourth record as written before cache writes were kept (no counts: null columns).
      ...(i % 4 === 3 ? {} : { cacheWriteTokens: 3 * i, cacheWrite1hTokens: i % 3 === 0 ? i : 0 }),
      outputTokens: 10 * i,
      cost: i % 11 === 0 ? 5_000_000_000 + i : 1 + i * 1234,
      estimated: false,
    }))
    for (let i = 0; i < records.length; i += 40) await Promise.all(records.slice(i, i + 40).map(r => l.charge(undefined, r)))

    const whole = { from: BASE, to: BASE + 3 * DAY }
    for (const bucketMs of SUMMARY_BUCKETS) {
      for (const groupBy of [undefined, 'model', 'organization'] as const) {
        const q: UsageSummaryQuery = { ...whole, bucketMs, ...(groupBy ? { groupBy } : {}) }
        t.strictSame(await l.summarizeUsage(q), referenceSummary(records, q), `bucket ${bucketMs} ms, ${groupBy ?? 'no'} grouping`)
      }
    }
    const days = await l.summarizeUsage({ ...whole, bucketMs: DAY })
    t.equal(days.length, 3, 'one row per day')
    t.equal(days.reduce((a, r) => a + r.cost, 0), records.reduce((a, r) => a + r.cost, 0), 'the day sums add up to every cost, to the micro-unit')
    t.ok(days.every(r => r.bucket % DAY === 0), 'buckets start at UTC midnights')

    // Filters and the [from, to) range: the same rules as queryUsage.
    const filtered: UsageSummaryQuery[] = [
      { from: BASE + DAY, to: BASE + 2 * DAY, bucketMs: 3_600_000, groupBy: 'model' },
      { ...whole, bucketMs: DAY, organization: 'org-a' },
      { ...whole, bucketMs: 3_600_000, model: 'acme/big', groupBy: 'organization' },
      { ...whole, bucketMs: 60_000, keyId: 'key-1', project: 'proj-1' },
      { from: records[10]!.time, to: records[20]!.time, bucketMs: 60_000 },
    ]
    for (const q of filtered) t.strictSame(await l.summarizeUsage(q), referenceSummary(records, q), JSON.stringify(q))
    t.strictSame(await l.summarizeUsage({ from: BASE - DAY, to: BASE, bucketMs: DAY }), [], 'no records: no rows')
    await t.rejects(l.summarizeUsage({ ...whole, bucketMs: 1000 }), /bucketMs/, 'only the fixed bucket widths')

    // Per tag of the record's key: in each of its tags; a key without tags, or not in the ledger, is the null group.
    const TAGS: Record<string, string[]> = { 'key-0': ['team-a', 'prod'], 'key-1': ['team-b'], 'key-2': [] }
    for (const [id, tags] of Object.entries(TAGS)) {
      await l.createKey({ id, hash: id.padEnd(64, '0'), prefix: 'sk-gw-test', organization: 'org-a', ...(tags.length ? { tags } : {}) })
    }
    const tagsOf = (keyId: string) => TAGS[keyId]
    for (const q of [{ ...whole, bucketMs: DAY, groupBy: 'tag' }, { ...whole, bucketMs: 3_600_000, groupBy: 'tag', model: 'acme/big' },
      { ...whole, bucketMs: DAY, groupBy: 'tag', organization: 'org-b', project: 'proj-1' }] as UsageSummaryQuery[]) {
      t.strictSame(await l.summarizeUsage(q), referenceSummary(records, q, tagsOf), JSON.stringify(q))
    }
    const byTag = await l.summarizeUsage({ ...whole, bucketMs: DAY, groupBy: 'tag' })
    t.same([...new Set(byTag.map(r => r.group))].sort(), [null, 'prod', 'team-a', 'team-b'].sort(), 'every tag, and none')
  })
}
