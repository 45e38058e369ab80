// Latency and failed calls of this replica (GET /admin/calls/latency, GET /admin/calls/failed):
// per model p50 / p95 of duration and of time to first byte over its latest served calls, and the
// latest failed calls (server errors or refusals) with their trace ids.
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, qs, useLoad, useReady } from '../api.js'
import { fmtDateTime, fmtInt, t } from '../i18n.js'
import { Loading, Table, Toggle } from '../ui.js'

/** Milliseconds, one decimal below 10 ms, whole above. */
const ms = v => t('ms', { n: (v < 10 ? v.toFixed(1) : Math.round(v)).toLocaleString() })

export function Latency () {
  const [kind, setKind] = useState('server')
  const [lat] = useLoad(() => api('GET', '/admin/calls/latency'), [])
  const [failed] = useLoad(() => api('GET', `/admin/calls/failed?${qs({ kind, limit: 50 })}`), [kind])
  useReady('latency', !!lat.data && !!failed.data)
  return h(Fragment, null, h('h1', null, t('latency')), h(Loading, { s: lat }),
    lat.data && h('p', { class: 'note' }, t('latencyNote', { since: fmtDateTime(lat.data.since) })),
    lat.data && h(Table, { label: t('latency'), testid: 'latency', rows: lat.data.data.map(r => ({ ...r, id: r.model })), cols: [
      { label: t('model'), key: 'model' }, { label: t('calls'), num: true, id: 'calls', render: r => fmtInt(r.calls) },
      { label: t('p50'), num: true, id: 'p50', render: r => ms(r.p50Ms) }, { label: t('p95'), num: true, id: 'p95', render: r => ms(r.p95Ms) },
      { label: t('ttfbP50'), num: true, id: 'ttfb50', render: r => ms(r.ttfbP50Ms) }, { label: t('ttfbP95'), num: true, id: 'ttfb95', render: r => ms(r.ttfbP95Ms) },
    ] }),
    h('h2', { id: 'failed' }, t('failedCalls')),
    h('p', { class: 'note' }, t('failedNote')),
    h(Toggle, { label: t('failedCalls'), items: [['server', t('serverErrors')], ['client', t('clientErrors')]], value: kind, onChange: setKind }),
    h(Loading, { s: failed }),
    failed.data && h(Table, { labelledBy: 'failed', testid: 'failed', rows: failed.data.data.map(c => ({ ...c, id: c.traceId })), cols: [
      { label: t('time'), id: 'time', render: c => h('time', { datetime: c.time }, fmtDateTime(c.time)) },
      { label: t('status'), num: true, id: 'status', key: 'status' }, { label: t('code'), id: 'code', render: c => c.code || '—' },
      { label: t('model'), id: 'model', render: c => c.model || '—' }, { label: t('organization'), render: c => c.organization || '—' },
      { label: t('key'), render: c => c.keyId || '—' }, { label: t('duration'), num: true, render: c => ms(c.durationMs) },
      { label: t('message'), id: 'message', render: c => c.message || '—' }, { label: t('trace'), key: 'traceId' },
    ] }))
}
