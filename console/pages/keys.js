// Keys: create (the secret shown once, with a copy button; project and model allow-list from the
// API; budget, rates, expiry, tags), rotate and revoke after a confirmation (a rotation's secret
// shown once too), filter by organization; spend per tag.
import { h, Fragment } from 'preact'
import { useState } from 'preact/hooks'
import { api, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { Confirm, ErrorBox, Field, Loading, Select, Table } from '../ui.js'
import { SettingFields, settingColumns, settingsOf, spendPerTag } from './key-settings.js'

export function Keys () {
  const [s, reload] = useLoad(async () => {
    const [keys, orgs, projects, prices] = await Promise.all([api('GET', '/admin/keys'), api('GET', '/admin/organizations'), api('GET', '/admin/projects'), api('GET', '/admin/prices')])
    return { keys: keys.data, orgs: orgs.data, projects: projects.data, models: prices.data.filter(p => p.inCatalog).map(p => p.model) }
  }, [])
  useReady('keys', !!s.data)
  const [filter, setFilter] = useState('')
  const [org, setOrg] = useState('')
  const [secret, setSecret] = useState(); const [copied, setCopied] = useState()
  const [err, setErr] = useState(); const [confirm, setConfirm] = useState()
  const d = s.data
  const orgs = d ? d.orgs : []
  const keyOrg = org || (orgs[0]?.id) || ''
  const create = async e => {
    e.preventDefault(); setErr(undefined)
    const form = e.target
    const f = new FormData(form)
    const models = f.getAll('key-models').map(String)
    try {
      const k = await api('POST', '/admin/keys', {
        organization: keyOrg,
        ...(f.get('key-name') ? { name: f.get('key-name') } : {}), ...(f.get('key-project') ? { project: f.get('key-project') } : {}), ...(models.length ? { models } : {}),
        ...settingsOf(f),
      })
      setSecret(k); setCopied(undefined); form.reset(); reload()
    } catch (e) { setErr(e.message) }
  }
  const rotate = async id => {
    setErr(undefined)
    try { setSecret(await api('POST', `/admin/keys/${encodeURIComponent(id)}/rotate`, {})); setCopied(undefined); reload() } catch (e) { setErr(e.message) }
  }
  const revoke = async id => { setErr(undefined); try { await api('POST', `/admin/keys/${encodeURIComponent(id)}/revoke`); reload() } catch (e) { setErr(e.message) } }
  const copy = async () => { try { await navigator.clipboard.writeText(secret.secret); setCopied('copied') } catch { setCopied('copyFailed') } }
  const keys = d ? d.keys.filter(k => !filter || k.organization === filter) : []
  const orgOptions = orgs.map(o => [o.id, o.name ? `${o.id} (${o.name})` : o.id])
  return h(Fragment, null,
    h('h1', null, t('keys')),
    h(Loading, { s }), h(ErrorBox, { error: err }),
    secret && h('section', { class: 'secret', 'aria-labelledby': 'secret-title' },
      h('p', { id: 'secret-title' }, t('secretOnce')),
      h('code', { 'data-testid': 'secret' }, secret.secret),
      h('div', { class: 'row' },
        h('button', { type: 'button', onClick: copy }, t('copy')),
        h('button', { type: 'button', onClick: () => setSecret(undefined) }, t('dismiss')),
        h('span', { role: 'status' }, copied ? t(copied) : ''))),
    h('h2', null, t('createKey')),
    d && h('form', { class: 'stack', onSubmit: create },
      h('div', { class: 'row' },
        h(Select, { label: t('organization'), id: 'key-org', required: true, value: keyOrg, onChange: e => setOrg(e.target.value), options: orgOptions }),
        h(Select, { label: t('project'), id: 'key-project', empty: '—', options: d.projects.filter(p => p.organization === keyOrg).map(p => [p.id, p.id]) }),
        h(Field, { label: t('name'), id: 'key-name' })),
      h('fieldset', { class: 'models' }, h('legend', null, t('allowedModels')),
        d.models.map((m, i) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'key-models', value: m, id: `key-model-${i}` }), m))),
      h(SettingFields),
      h('button', { type: 'submit', class: 'primary' }, t('createKey'))),
    h('h2', { id: 'key-list' }, t('keys')),
    h('div', { class: 'row' },
      h(Select, { label: t('filterByOrganization'), id: 'key-filter', value: filter, onChange: e => setFilter(e.target.value), empty: t('all'), options: orgOptions })),
    confirm && h(Confirm, {
      message: confirm.rotate ? t('confirmRotate', { id: confirm.id }) : t('confirmRevoke', { id: confirm.id }), onCancel: () => setConfirm(undefined),
      onConfirm: () => { const c = confirm; setConfirm(undefined); void (c.rotate ? rotate(c.id) : revoke(c.id)) },
    }),
    d && h(Table, { labelledBy: 'key-list', testid: 'keys', rows: keys, cols: [
      // Actions next to the id: with every setting shown the table scrolls sideways, and they stay in view.
      { label: t('id'), key: 'id' },
      { label: t('actions'), render: k => k.revokedAt ? '' : h('div', { class: 'row' },
        h('button', { type: 'button', onClick: () => setConfirm({ id: k.id, rotate: true }), 'aria-label': `${t('rotate')} ${k.id}` }, t('rotate')),
        h('button', { type: 'button', onClick: () => setConfirm({ id: k.id }), 'aria-label': `${t('revoke')} ${k.id}` }, t('revoke'))) },
      { label: t('prefix'), key: 'prefix' }, { label: t('name'), key: 'name' },
      { label: t('organization'), key: 'organization' }, { label: t('project'), key: 'project' },
      { label: t('models'), id: 'models', render: k => (k.models || []).join(', ') },
      ...settingColumns(),
      { label: t('status'), render: k => k.revokedAt ? `${t('revoked')} ${fmtDateTime(k.revokedAt)}` : t('active') },
    ] }),
    h('h2', { id: 'tag-spend' }, t('spendPerTag')),
    d && h(Table, { labelledBy: 'tag-spend', testid: 'tag-spend', rows: spendPerTag(keys), cols: [
      { label: t('tag'), key: 'tag' }, { label: t('spent'), key: 'spent', num: true },
    ] }))
}
