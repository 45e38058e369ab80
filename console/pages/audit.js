// The audit log: every admin write (admin API and admin CLI), newest first, 50 a page: who, what,
// on which record, the result, and the record before and after (shown on demand). Filters: actor,
// action, target, time range.
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, qs, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { Field, Loading, Table } from '../ui.js'

export const PAGE = 50
const json = v => v === null || v === undefined ? '—' : JSON.stringify(v, null, 1)

export function Audit () {
  const [filters, setFilters] = useState({})
  const [cursors, setCursors] = useState([undefined])
  const cursor = cursors[cursors.length - 1]
  const [s] = useLoad(() => api('GET', `/admin/audit?${qs({ ...filters, limit: PAGE, cursor })}`), [filters, cursor])
  useReady('audit', !!s.data)
  const apply = e => {
    e.preventDefault()
    const f = new FormData(e.target)
    const str = k => String(f.get(k) ?? '').trim() || undefined
    const iso = k => str(k) ? new Date(String(f.get(k))).toISOString() : undefined
    setFilters({ actor: str('a-actor'), action: str('a-action'), target: str('a-target'), from: iso('a-from'), to: iso('a-to') })
    setCursors([undefined])
  }
  const page = cursors.length
  return h(Fragment, null, h('h1', null, t('audit')),
    h('p', { class: 'note' }, t('auditNote')),
    h('form', { class: 'row', onSubmit: apply },
      h(Field, { label: t('actor'), id: 'a-actor', placeholder: 'admin:ops' }), h(Field, { label: t('action'), id: 'a-action', placeholder: 'balance.adjust' }),
      h(Field, { label: t('target'), id: 'a-target' }),
      h(Field, { label: t('from'), id: 'a-from', type: 'datetime-local' }), h(Field, { label: t('to'), id: 'a-to', type: 'datetime-local' }),
      h('button', { type: 'submit' }, t('apply'))),
    h('div', { class: 'row' },
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors([undefined]) }, t('first')),
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors(cursors.slice(0, -1)) }, t('previous')),
      h('button', { type: 'button', disabled: !(s.data?.nextCursor), onClick: () => setCursors([...cursors, s.data.nextCursor]) }, t('next')),
      h('span', { 'aria-live': 'polite', 'data-testid': 'audit-page' }, t('page', { n: String(page) }))),
    h(Loading, { s }),
    s.data && h(Table, { label: t('audit'), testid: 'audit', rows: s.data.data.map(e => ({ ...e, id: String(e.id) })), cols: [
      { label: t('time'), id: 'time', render: e => h('time', { datetime: e.time }, fmtDateTime(e.time)) },
      { label: t('actor'), id: 'actor', key: 'actor' },
      { label: t('action'), id: 'action', key: 'action' },
      { label: t('target'), id: 'target', render: e => e.target || '—' },
      { label: t('result'), id: 'result', render: e => e.result === 'ok' ? t('ok') : `${e.result} (${e.status})` },
      { label: t('changes'), id: 'changes', render: e => h('details', null, h('summary', null, t('show')),
        h('div', { class: 'change' }, h('p', null, t('before')), h('pre', null, json(e.before)), h('p', null, t('after')), h('pre', null, json(e.after)))) },
    ] }))
}
