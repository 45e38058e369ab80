// Overview: requests, tokens and spend (the ledger's sums, GET /admin/usage/summary) and the error
// rate (this replica's ended calls, GET /admin/calls/summary) over the last hour (per minute), day
// (per hour) or 30 days (per day), per model or per organization, as charts and tables; spend per
// key and per project as tables.
import { h, Fragment } from 'preact'
import { useMemo, useState } from 'preact/hooks'
import { api, qs, useLoad, useReady } from '../api.js'
import { fmtDateTime, fmtInt, t } from '../i18n.js'
import { formatMoney, toMicros } from '../money.js'
import { align, bucketStarts, rates } from '../series.js'
import { COLOURS, LineChart, OTHER_COLOUR } from '../chart.js'
import { Loading, Table, Toggle } from '../ui.js'

/** [name, bucket, bucket ms, buckets, per-bucket label] */
const RANGES = [['lastHour', 'minute', 60_000, 60, 'perMinute'], ['lastDay', 'hour', 3_600_000, 24, 'perHour'], ['last30', 'day', 86_400_000, 30, 'perDay']]
/** Groups with a line of their own; the rest are one "other" line. */
const TOP = 6

const pct = v => v === null || v === undefined ? '—' : `${(v * 100).toFixed(v > 0 && v < 0.001 ? 3 : 1)}%`
const rateOf = (n, d) => d ? n / d : null
const money = v => formatMoney(BigInt(Math.round(v * 1e6)))

async function load (range) {
  const [, bucket, ms, n] = RANGES[range]
  const starts = bucketStarts(Date.now(), ms, n)
  const from = new Date(starts[0]).toISOString()
  const get = (what, groupBy) => api('GET', `/admin/${what}/summary?${qs({ from, bucket, groupBy, top: TOP })}`)
  const [um, uo, cm, co, uk, up] = await Promise.all([get('usage', 'model'), get('usage', 'organization'), get('calls', 'model'), get('calls', 'organization'), get('usage', 'key'), get('usage',
    'project')])
  return { starts, model: { usage: um, calls: cm }, organization: { usage: uo, calls: co }, key: uk, project: up }
}

/** Usage and calls of each group, side by side. */
function groupRows (usage, calls) {
  const rows = new Map()
  const row = key => {
    const k = key === null ? '\u0000' : key
    if (!rows.has(k)) rows.set(k, { id: key === null ? '' : key, name: key === null ? t('none') : key, requests: 0, input: 0, output: 0, spend: '0', calls: 0, refused: 0, errors: 0 })
    return rows.get(k)
  }
  for (const g of usage.groups) Object.assign(row(g.key), { requests: g.requests, input: g.inputTokens, output: g.outputTokens, spend: g.cost })
  for (const g of calls.groups) Object.assign(row(g.key), { calls: g.requests, refused: g.clientErrors, errors: g.serverErrors })
  return [...rows.values()]
}

/** Usage of each group of a summary (per key or project: spend, requests, tokens). */
const spendRows = usage => usage.groups.map(g => ({ id: g.key === null ? '' : g.key, name: g.key === null ? t('none') : g.key, requests: g.requests, input: g.inputTokens, output: g.outputTokens,
  spend: g.cost }))

export function Overview () {
  const [range, setRange] = useState(0)
  const [by, setBy] = useState('model')
  const [s] = useLoad(() => load(range), [range])
  useReady('overview', !!s.data)
  const d = s.data
  const names = { none: t('none'), other: t('other') }
  const charts = useMemo(() => {
    if (!d) return undefined
    const { usage, calls } = d[by]
    const order = usage.groups.map(g => g.key)
    // One colour per group in every chart: the usage ranking first, then groups with calls only.
    const colours = new Map()
    for (const k of [...order, ...calls.groups.map(g => g.key)]) {
      const name = k === null ? names.none : k
      if (!colours.has(name)) colours.set(name, COLOURS[colours.size % COLOURS.length])
    }
    return {
      colour: name => name === names.other ? OTHER_COLOUR : colours.get(name) || OTHER_COLOUR,
      requests: align(d.starts, usage.series, e => e.requests, names, order),
      tokens: align(d.starts, usage.series, e => e.inputTokens + e.outputTokens, names, order),
      spend: align(d.starts, usage.series, e => Number(toMicros(e.cost)) / 1e6, names, order),
      errors: rates(d.starts, calls.series, 'serverErrors', names, calls.groups.map(g => g.key)),
    }
  }, [d, by])
  const per = t(RANGES[range][4])
  const bucketMs = RANGES[range][2]
  const grouping = by === 'model' ? t('perModel') : t('perOrganization')
  const cols = [
    { label: t('name'), key: 'name' },
    { label: t('requests'), num: true, render: r => fmtInt(r.requests) },
    { label: t('inputTokens'), num: true, render: r => fmtInt(r.input) },
    { label: t('outputTokens'), num: true, render: r => fmtInt(r.output) },
    { label: t('spend'), num: true, id: 'spend', render: r => formatMoney(toMicros(r.spend)) },
    { label: t('calls'), num: true, render: r => fmtInt(r.calls) },
    { label: t('refused'), num: true, render: r => pct(rateOf(r.refused, r.calls)) },
    { label: t('errorRate'), num: true, render: r => pct(rateOf(r.errors, r.calls)) },
  ]
  const spendCols = cols.slice(0, 5)
  const total = d?.model.usage.total
  const callTotal = d?.model.calls.total
  return h(Fragment, null,
    h('h1', null, t('overview')),
    h(Toggle, { label: t('range'), items: RANGES.map(([k], i) => [i, t(k)]), value: range, onChange: setRange }),
    h(Loading, { s }),
    d && h(Fragment, null,
      h('dl', { class: 'cards' },
        h('div', null, h('dt', null, t('requests')), h('dd', { 'data-testid': 'total-requests' }, fmtInt(total.requests))),
        h('div', null, h('dt', null, t('tokens')), h('dd', { 'data-testid': 'total-tokens' }, fmtInt(total.inputTokens + total.outputTokens))),
        h('div', null, h('dt', null, t('spend')), h('dd', { 'data-testid': 'total-spend' }, formatMoney(toMicros(total.cost)))),
        h('div', null, h('dt', null, t('errorRate')), h('dd', { 'data-testid': 'error-rate' }, pct(rateOf(callTotal.serverErrors, callTotal.requests)))),
        h('div', null, h('dt', null, t('refusedRate')), h('dd', { 'data-testid': 'refused-rate' }, pct(rateOf(callTotal.clientErrors, callTotal.requests))))),
      h('p', { class: 'note' }, t('callsNote', { since: fmtDateTime(d.model.calls.since) })),
      h(Toggle, { label: t('groupBy'), items: [['model', t('perModel')], ['organization', t('perOrganization')]], value: by, onChange: setBy }),
      h('div', { class: 'charts' },
        h(LineChart, { testid: 'chart-requests', title: `${t('requests')} (${per})`, label: `${t('requests')}, ${grouping}`, starts: d.starts, bucketMs, series: charts.requests,
          colour: charts.colour, format: fmtInt }),
        h(LineChart, { testid: 'chart-tokens', title: `${t('tokens')} (${per})`, label: `${t('tokens')}, ${grouping}`, starts: d.starts, bucketMs, series: charts.tokens, colour: charts.colour,
          format: fmtInt }),
        h(LineChart, { testid: 'chart-spend', title: `${t('spend')} (${per})`, label: `${t('spend')}, ${grouping}`, starts: d.starts, bucketMs, series: charts.spend, colour: charts.colour,
          format: money }),
        h(LineChart, { testid: 'chart-errors', title: `${t('errorRate')} (${per})`, label: `${t('errorRate')}, ${grouping}`, starts: d.starts, bucketMs, series: charts.errors, colour: charts.colour,
          format: pct, points: true, rate: true })),
      h('h2', { id: 'per-model' }, t('perModel')),
      h(Table, { labelledBy: 'per-model', testid: 'per-model', cols, rows: groupRows(d.model.usage, d.model.calls) }),
      h('h2', { id: 'per-organization' }, t('perOrganization')),
      h(Table, { labelledBy: 'per-organization', testid: 'per-organization', cols, rows: groupRows(d.organization.usage, d.organization.calls) }),
      // Spend per key and per project: billed usage only (the calls recorder counts per model and organization).
      h('h2', { id: 'per-key' }, t('perKey')),
      h(Table, { labelledBy: 'per-key', testid: 'per-key', cols: spendCols, rows: spendRows(d.key) }),
      h('h2', { id: 'per-project' }, t('perProject')),
      h(Table, { labelledBy: 'per-project', testid: 'per-project', cols: spendCols, rows: spendRows(d.project) })))
}
