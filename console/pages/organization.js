// One organization: balance, reserved and available; top-up, adjustment (either sign, with a
// reason) and refund (with a reason, maybe for one call's trace id), each after a confirmation;
// its balance history (the journal: every change with its actor), newest first, 50 rows a page.
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, qs, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { formatMoney, toMicros } from '../money.js'
import { Confirm, ErrorBox, Field, Loading, Status, Table } from '../ui.js'

export const PAGE = 50
const money = v => formatMoney(toMicros(v))

/** The three changes the page offers: their route, fields and confirmation. */
const ACTIONS = [
  { name: 'topUp', route: 'topup', reason: false, trace: false, confirm: 'confirmTopUp', pattern: '\\d{1,12}(\\.\\d{1,6})?' },
  { name: 'adjust', route: 'adjustments', reason: true, trace: false, confirm: 'confirmAdjust', help: 'adjustHelp' },
  { name: 'refund', route: 'refunds', reason: true, trace: true, confirm: 'confirmRefund', help: 'refundHelp', pattern: '\\d{1,12}(\\.\\d{1,6})?' },
]

export function Organization ({ id }) {
  const enc = encodeURIComponent(id)
  const [s, reload] = useLoad(() => api('GET', `/admin/organizations/${enc}`), [id])
  // The cursors of the history pages read so far: the last is this page's.
  const [cursors, setCursors] = useState([undefined])
  const cursor = cursors[cursors.length - 1]
  const [n, setN] = useState(0)
  const [hist] = useLoad(() => api('GET', `/admin/organizations/${enc}/journal?${qs({ limit: PAGE, cursor })}`), [id, cursor, n])
  useReady('organization', !!s.data && !!hist.data)
  const [msg, setMsg] = useState(); const [err, setErr] = useState()
  const [confirm, setConfirm] = useState()
  const ask = a => e => {
    e.preventDefault()
    const f = new FormData(e.target)
    const get = k => String(f.get(`${a.name}-${k}`) ?? '')
    const body = { amount: get('amount').trim(), ...(get('reason') !== '' ? { reason: get('reason') } : {}), ...(a.trace && get('trace').trim() ? { traceId: get('trace').trim() } : {}) }
    setConfirm({ a, body, form: e.target })
  }
  const send = async c => {
    setErr(undefined); setMsg(undefined)
    try {
      await api('POST', `/admin/organizations/${enc}/${c.a.route}`, c.body)
      // Cleared once done: a second Enter cannot repeat it by mistake.
      c.form.reset()
      setMsg(t('done')); reload(); setCursors([undefined]); setN(x => x + 1)
    } catch (e) { setErr(e.message) }
  }
  const o = s.data
  const page = cursors.length
  return h(Fragment, null,
    h('p', null, h('a', { href: '#/organizations' }, t('allOrganizations'))),
    h('h1', null, t('organizationTitle', { id })),
    h(Loading, { s }),
    o && h('dl', { class: 'cards' },
      h('div', null, h('dt', null, t('balance')), h('dd', { 'data-testid': 'org-balance' }, money(o.balance))),
      h('div', null, h('dt', null, t('reserved')), h('dd', null, money(o.reserved))),
      h('div', null, h('dt', null, t('available')), h('dd', null, money(o.available)))),
    h(ErrorBox, { error: err }), h(Status, { msg }),
    h('div', { class: 'actions' }, ACTIONS.map(a => h('form', { class: 'stack action', onSubmit: ask(a), 'aria-labelledby': `${a.name}-title` },
      h('h2', { id: `${a.name}-title` }, t(a.name)),
      a.help && h('p', { class: 'note' }, t(a.help)),
      h(Field, { label: t('amount'), id: `${a.name}-amount`, required: true, inputmode: 'decimal', autocomplete: 'off', ...(a.pattern ? { pattern: a.pattern } : {}) }),
      h(Field, { label: a.reason ? t('reason') : `${t('reason')} (${t('optional')})`, id: `${a.name}-reason`, required: a.reason, maxlength: 500, autocomplete: 'off' }),
      a.trace && h(Field, { label: `${t('trace')} (${t('optional')})`, id: `${a.name}-trace`, autocomplete: 'off' }),
      h('button', { type: 'submit' }, t(a.name))))),
    confirm && h(Confirm, {
      message: t(confirm.a.confirm, { org: id, amount: confirm.body.amount, reason: confirm.body.reason ?? '—' }),
      onCancel: () => setConfirm(undefined),
      onConfirm: () => { const c = confirm; setConfirm(undefined); void send(c) },
    }),
    h('h2', { id: 'history' }, t('history')),
    h('p', { class: 'note' }, t('historyNote')),
    h('div', { class: 'row' },
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors([undefined]) }, t('first')),
      h('button', { type: 'button', disabled: page < 2, onClick: () => setCursors(cursors.slice(0, -1)) }, t('previous')),
      h('button', { type: 'button', disabled: !(hist.data?.nextCursor), onClick: () => setCursors([...cursors, hist.data.nextCursor]) }, t('next')),
      h('span', { 'aria-live': 'polite', 'data-testid': 'history-page' }, t('page', { n: String(page) }))),
    h(Loading, { s: hist }),
    hist.data && h(Table, { labelledBy: 'history', testid: 'history', rows: hist.data.data.map(e => ({ ...e, id: String(e.id) })), cols: [
      { label: t('time'), id: 'time', render: e => h('time', { datetime: e.time }, fmtDateTime(e.time)) },
      { label: t('kind'), id: 'kind', render: e => t(`kind_${e.kind}`) },
      { label: t('amount'), id: 'amount', num: true, render: e => money(e.amount) },
      { label: t('balanceAfter'), id: 'balance', num: true, render: e => money(e.balance) },
      { label: t('actor'), id: 'actor', key: 'actor' },
      { label: t('reason'), id: 'reason', render: e => e.reason ?? '—' },
      { label: t('trace'), id: 'trace', render: e => e.traceId ?? '—' },
    ] }))
}
