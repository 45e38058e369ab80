// Providers: each configured provider (adapter, protocol, base URL) and per deployment its circuit
// on this replica, with a reset. The API never sends a secret (GET /admin/providers).
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { ErrorBox, Loading, Status, Table } from '../ui.js'

export function Providers () {
  const [s, reload] = useLoad(() => api('GET', '/admin/providers'), [])
  useReady('providers', !!s.data)
  const [err, setErr] = useState(); const [msg, setMsg] = useState()
  const reset = async key => {
    setErr(undefined); setMsg(undefined)
    try { await api('POST', '/admin/circuits/reset', { key }); setMsg(t('done')); reload() } catch (e) { setErr(e.message) }
  }
  return h(Fragment, null, h('h1', null, t('providers')), h(Loading, { s }), h(ErrorBox, { error: err }), h(Status, { msg }),
    s.data?.data.map((p, i) => h('section', { class: 'provider', 'aria-labelledby': `provider-${i}` },
      h('h2', { id: `provider-${i}` }, p.name),
      h('dl', { class: 'facts' },
        h('div', null, h('dt', null, t('adapter')), h('dd', null, p.module ? `${p.adapter} (${p.module})` : p.adapter)),
        h('div', null, h('dt', null, t('protocol')), h('dd', null, p.protocol)),
        h('div', null, h('dt', null, t('baseUrl')), h('dd', null, p.baseUrl || '—'))),
      h(Table, { label: `${t('deployments')}: ${p.name}`, testid: `deployments-${p.name}`, rows: p.deployments.map(d => ({ ...d, id: d.key })), cols: [
        { label: t('key'), key: 'key' }, { label: t('models'), render: c => c.models.join(', ') },
        { label: t('state'), key: 'state', id: 'state' }, { label: t('failures'), key: 'failures', num: true },
        { label: t('openedAt'), render: c => fmtDateTime(c.openedAt) },
        { label: t('actions'), render: c => c.state === 'closed' && c.failures === 0 ? '—' : h('button', { type: 'button', onClick: () => reset(c.key), 'aria-label': `${t('reset')} ${c.key}` },
          t('reset')) },
      ] }))))
}
