// Usage explorer: filters (time range, organization, key, model: the selects list what the API
// knows), 50 records a page newest first, forward and back by cursor, times in the browser's time
// zone, the totals of everything the filter matches, and the CSV export.
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, authHeader, qs, useLoad, useReady } from '../api.js'
import { fmtDateTime, fmtInt, t } from '../i18n.js'
import { formatMoney, toMicros } from '../money.js'
import { ErrorBox, Field, Loading, Select, Table } from '../ui.js'

export const PAGE = 50

export function Usage () {
  const [lists] = useLoad(async () => {
    const [orgs, keys, prices] = await Promise.all([api('GET', '/admin/organizations'), api('GET', '/admin/keys'), api('GET', '/admin/prices')])
    return { orgs: orgs.data, keys: keys.data, models: prices.data.map(p => p.model) }
  }, [])
  const [filters, setFilters] = useState({})
  // The cursors of the pages read so far: the last is this page's; Previous drops it.
  const [cursors, setCursors] = useState([undefined])
  const cursor = cursors[cursors.length - 1]
  const [s] = useLoad(() => api('GET', `/admin/usage?${qs({ ...filters, limit: PAGE, order: 'desc', cursor })}`), [filters, cursor])
  const [total] = useLoad(() => api('GET', `/admin/usage/total?${qs(filters)}`), [filters])
  useReady('usage', !!s.data && !!lists.data && !!total.data)
  const [err, setErr] = useState()
  const apply = e => {
    e.preventDefault()
    const f = new FormData(e.target)
    const iso = v => v ? new Date(String(v)).toISOString() : undefined
    const str = v => v ? String(v) : undefined
    setFilters({ from: iso(f.get('u-from')), to: iso(f.get('u-to')), organization: str(f.get('u-org')), key: str(f.get('u-key')), model: str(f.get('u-model')) })
    setCursors([undefined])
  }
  // The export needs the admin key in a header, so it is fetched and handed to the browser as a Blob.
  const download = async () => {
    setErr(undefined)
    try {
      const r = await fetch(`/admin/usage/export?${qs({ ...filters, format: 'csv' })}`, { headers: authHeader() })
      if (!r.ok) throw new Error(`${r.status}: ${await r.text()}`)
      const url = URL.createObjectURL(await r.blob())
      const a = document.createElement('a'); a.href = url; a.download = 'usage.csv'; document.body.appendChild(a); a.click(); a.remove()
      setTimeout(() => URL.revokeObjectURL(url), 1000)
    } catch (e) { setErr(e.message) }
  }
  const l = lists.data || { orgs: [], keys: [], models: [] }
  const page = cursors.length
  return h(Fragment, null, h('h1', null, t('usage')),
    h(Loading, { s: lists }),
    h('form', { class: 'row', onSubmit: apply },
      h(Field, { label: t('from'), id: 'u-from', type: 'datetime-local' }), h(Field, { label: t('to'), id: 'u-to', type: 'datetime-local' }),
      h(Select, { label: t('organization'), id: 'u-org', empty: t('all'), options: l.orgs.map(o => [o.id, o.id]) }),
      h(Select, { label: t('key'), id: 'u-key', empty: t('all'), options: l.keys.map(k => [k.id, k.name ? `${k.id} (${k.name})` : k.id]) }),
      h(Select, { label: t('model'), id: 'u-model', empty: t('all'), options: l.models.map(m => [m, m]) }),
      h('button', { type: 'submit' }, t('apply'))),
    h('div', { class: 'row' },
      h('button', { type: 'button', onClick: download }, t('downloadCsv')),
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors([undefined]) }, t('first')),
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors(cursors.slice(0, -1)) }, t('previous')),
      h('button', { type: 'button', disabled: !(s.data?.nextCursor), onClick: () => setCursors([...cursors, s.data.nextCursor]) }, t('next')),
      h('span', { 'data-testid': 'usage-page', 'aria-live': 'polite' }, t('page', { n: String(page) }))),
    h(ErrorBox, { error: err }), h(Loading, { s }), h(Loading, { s: total }),
    total.data && h('dl', { class: 'cards', 'aria-label': t('totalsNote') },
      h('div', null, h('dt', null, t('requests')), h('dd', { 'data-testid': 'usage-total-requests' }, fmtInt(total.data.requests))),
      h('div', null, h('dt', null, t('inputTokens')), h('dd', { 'data-testid': 'usage-total-input' }, fmtInt(total.data.inputTokens))),
      h('div', null, h('dt', null, t('outputTokens')), h('dd', { 'data-testid': 'usage-total-output' }, fmtInt(total.data.outputTokens))),
      h('div', null, h('dt', null, t('cost')), h('dd', { 'data-testid': 'usage-total-cost' }, formatMoney(toMicros(total.data.cost))))),
    total.data && h('p', { class: 'note' }, t('totalsNote')),
    s.data && h(Table, { label: t('usage'), testid: 'usage', rows: s.data.data.map(r => ({ ...r, id: r.traceId })), cols: [
      { label: t('time'), id: 'time', render: r => h('time', { datetime: r.time }, fmtDateTime(r.time)) }, { label: t('key'), key: 'keyId' }, { label: t('organization'), key: 'organization' },
      { label: t('model'), key: 'model' }, { label: t('inputTokens'), key: 'inputTokens', num: true },
      { label: t('outputTokens'), key: 'outputTokens', num: true }, { label: t('cost'), num: true, id: 'cost', render: r => formatMoney(toMicros(r.cost)) },
      { label: t('trace'), key: 'traceId' },
    ] }))
}
