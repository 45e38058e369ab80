// Organizations and projects: balance, reserved, available; top up after a confirmation; create.
// Each organization's id leads to its page (its balance history, adjustments and refunds).
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { formatMoney, toMicros } from '../money.js'
import { Confirm, ErrorBox, Field, Loading, Select, Status, Table } from '../ui.js'

export function Organizations () {
  const [s, reload] = useLoad(async () => {
    const [orgs, projects] = await Promise.all([api('GET', '/admin/organizations'), api('GET', '/admin/projects')])
    const details = await Promise.all(orgs.data.map(o => api('GET', `/admin/organizations/${encodeURIComponent(o.id)}`)))
    return { orgs: details, projects: projects.data }
  }, [])
  useReady('organizations', !!s.data)
  const [msg, setMsg] = useState(); const [err, setErr] = useState()
  const [confirm, setConfirm] = useState()
  const run = async (fn) => { setErr(undefined); setMsg(undefined); try { await fn(); setMsg(t('done')); reload() } catch (e) { setErr(e.message) } }
  const createOrg = e => {
    e.preventDefault(); const form = e.target; const f = new FormData(form)
    void run(async () => { await api('POST', '/admin/organizations', { id: f.get('org-id'), ...(f.get('org-name') ? { name: f.get('org-name') } : {}) }); form.reset() })
  }
  const createProject = e => {
    e.preventDefault(); const form = e.target; const f = new FormData(form)
    void run(async () => { await api('POST', '/admin/projects',
      { id: f.get('project-id'), organization: f.get('project-org'), ...(f.get('project-name') ? { name: f.get('project-name') } : {}) }); form.reset() })
  }
  const orgs = s.data ? s.data.orgs : []
  const money = key => o => formatMoney(toMicros(o[key]))
  return h(Fragment, null,
    h('h1', null, t('organizations')),
    h(Loading, { s }), h(ErrorBox, { error: err }), h(Status, { msg }),
    s.data && h(Table, { label: t('organizations'), testid: 'organizations', rows: orgs, cols: [
      { label: t('id'), id: 'id', render: o => h('a', { href: `#/organizations/${encodeURIComponent(o.id)}` }, o.id) }, { label: t('name'), key: 'name' },
      { label: t('balance'), num: true, id: 'balance', render: money('balance') },
      { label: t('reserved'), num: true, id: 'reserved', render: money('reserved') },
      { label: t('available'), num: true, id: 'available', render: money('available') },
      { label: t('topUp'), render: o => h('form',
        { class: 'inline', onSubmit: e => { e.preventDefault(); const amount = String(new FormData(e.target).get('amount')); setConfirm({ org: o.id, amount, form: e.target }) } },
        h('label', { for: `topup-${o.id}`, class: 'sr-only' }, `${t('amount')} (${o.id})`),
        h('input', { id: `topup-${o.id}`, name: 'amount', required: true, inputmode: 'decimal', pattern: '\\d{1,12}(\\.\\d{1,6})?', size: 8 }),
        h('button', { type: 'submit' }, t('topUp'))) },
    ] }),
    confirm && h(Confirm, {
      message: t('confirmTopUp', { org: confirm.org, amount: confirm.amount }),
      onCancel: () => setConfirm(undefined),
      onConfirm: () => {
        const c = confirm
        setConfirm(undefined)
        // The amount is cleared once confirmed: a second Enter cannot top up twice by mistake.
        c.form.reset()
        void run(() => api('POST', `/admin/organizations/${encodeURIComponent(c.org)}/topup`, { amount: c.amount }))
      },
    }),
    h('h2', null, t('createOrganization')),
    h('form', { class: 'row', onSubmit: createOrg }, h(Field, { label: t('id'), id: 'org-id', required: true }), h(Field, { label: t('name'), id: 'org-name' }),
      h('button', { type: 'submit' }, t('create'))),
    h('h2', { id: 'projects' }, t('projects')),
    s.data && h(Table, { labelledBy: 'projects', testid: 'projects', rows: s.data.projects, cols: [{ label: t('id'), key: 'id' }, { label: t('organization'), key: 'organization' },
      { label: t('name'), key: 'name' }, { label: t('created'), render: p => fmtDateTime(p.createdAt) }] }),
    h('h3', null, t('createProject')),
    h('form', { class: 'row', onSubmit: createProject },
      h(Field, { label: t('id'), id: 'project-id', required: true }),
      h(Select, { label: t('organization'), id: 'project-org', required: true, options: orgs.map(o => [o.id, o.id]) }),
      h(Field, { label: t('name'), id: 'project-name' }), h('button', { type: 'submit' }, t('createProject'))))
}
