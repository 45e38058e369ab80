// The operator console: a Preact page over the admin HTTP API only. The admin key is kept in this
// page's memory (no cookie, no storage), and every call sends it as "Authorization: Bearer": with
// no cookie there is no ambient credential, so no CSRF surface. Hash routing (#/keys, ...).
import { h, render, Fragment } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import './style.css'
import { translate } from './i18n.js'
import { formatMoney, toMicros } from './money.js'

let adminKey = ''
let lang = 'en'
const t = (k, v) => translate(lang, k, v)

class ApiError extends Error {
  constructor (status, message) { super(message); this.status = status }
}
async function api (method, path, body) {
  const headers = { authorization: `Bearer ${adminKey}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const r = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
  const text = await r.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  if (!r.ok) throw new ApiError(r.status, `${r.status}: ${(json && json.error && json.error.message) || text}`)
  return json
}
const qs = o => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')).toString()

function useLoad (fn, deps) {
  const [state, set] = useState({ loading: true })
  const [n, reload] = useState(0)
  useEffect(() => {
    let live = true
    set(s => ({ ...s, loading: true }))
    fn().then(data => live && set({ data }), err => live && set({ error: err.message }))
    return () => { live = false }
  }, [...deps, n])
  return [state, () => reload(x => x + 1)]
}

const ErrorBox = ({ error }) => error ? h('p', { class: 'error', role: 'alert' }, `${t('error')}: ${error}`) : null
const Loading = ({ s }) => s.error ? h(ErrorBox, { error: s.error }) : s.loading && !s.data ? h('p', null, t('loading')) : null

function Table ({ cols, rows, caption }) {
  if (!rows.length) return h('p', null, t('noRows'))
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', null, h('caption', null, caption),
      h('thead', null, h('tr', null, cols.map(c => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.label)))),
      h('tbody', null, rows.map((r, i) => h('tr', { key: i }, cols.map(c => h('td', { class: c.num ? 'num' : '' }, c.render ? c.render(r) : String(r[c.key] ?? '')))))))
  )
}

function Field ({ label, id, ...rest }) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, ...rest }))
}

/** A modal confirmation (native <dialog>: focus is trapped and Escape cancels). */
function Confirm ({ message, onConfirm, onCancel }) {
  const ref = useRef()
  useEffect(() => { ref.current.showModal(); return () => ref.current && ref.current.open && ref.current.close() }, [])
  return h('dialog', { ref, 'aria-labelledby': 'confirm-msg', onCancel: e => { e.preventDefault(); onCancel() } },
    h('p', { id: 'confirm-msg' }, message),
    h('div', { class: 'row' },
      h('button', { type: 'button', onClick: onConfirm, class: 'primary' }, t('confirm')),
      h('button', { type: 'button', onClick: onCancel }, t('cancel'))))
}

// ── Overview ──
const RANGES = [['lastHour', 3600e3], ['lastDay', 86400e3], ['last30', 30 * 86400e3]]
const MAX_PAGES = 20
async function readUsage (from) {
  const rows = []
  let cursor
  for (let i = 0; i < MAX_PAGES; i++) {
    const p = await api('GET', `/admin/usage?${qs({ from: new Date(from).toISOString(), limit: 1000, cursor })}`)
    rows.push(...p.data)
    if (!p.nextCursor) return { rows, truncated: false }
    cursor = p.nextCursor
  }
  return { rows, truncated: true }
}
function aggregate (rows, by) {
  const m = new Map()
  for (const r of rows) {
    const k = by(r) ?? '—'
    const a = m.get(k) ?? { name: k, requests: 0, input: 0, output: 0, spend: 0n }
    a.requests++; a.input += r.inputTokens; a.output += r.outputTokens; a.spend += toMicros(r.cost)
    m.set(k, a)
  }
  return [...m.values()].sort((a, b) => (b.spend > a.spend ? 1 : b.spend < a.spend ? -1 : b.requests - a.requests))
}
function Chart ({ rows, span }) {
  const ref = useRef()
  useEffect(() => {
    const bucket = span <= 86400e3 ? 3600e3 : 86400e3
    const now = Date.now()
    const n = Math.ceil(span / bucket)
    const xs = []; const ys = []
    for (let i = 0; i < n; i++) { xs.push(Math.floor((now - span + i * bucket) / 1000)); ys.push(0) }
    for (const r of rows) {
      const i = Math.floor((Date.parse(r.time) - (now - span)) / bucket)
      if (i >= 0 && i < n) ys[i]++
    }
    const width = Math.max(260, Math.min(ref.current.clientWidth || 600, 900))
    const plot = new uPlot({ width, height: 200, series: [{}, { label: t('requests'), stroke: '#2557a7', fill: 'rgba(37,87,167,0.15)' }], axes: [{}, {}] }, [xs, ys], ref.current)
    return () => plot.destroy()
  }, [rows, span])
  return h('figure', null, h('figcaption', null, span <= 86400e3 ? t('requestsPerHour') : t('requests')), h('div', { ref, role: 'img', 'aria-label': t('requests') }))
}
function Overview () {
  const [range, setRange] = useState(1)
  const span = RANGES[range][1]
  const [s] = useLoad(() => readUsage(Date.now() - span), [range])
  const d = s.data
  const totals = d && aggregate(d.rows, () => 'all')[0]
  const groupCols = [
    { label: t('name'), key: 'name' },
    { label: t('requests'), key: 'requests', num: true },
    { label: t('inputTokens'), key: 'input', num: true },
    { label: t('outputTokens'), key: 'output', num: true },
    { label: t('spend'), num: true, render: r => formatMoney(r.spend) },
  ]
  return h(Fragment, null,
    h('h1', null, t('overview')),
    h('div', { class: 'row', role: 'group', 'aria-label': t('time') }, RANGES.map(([k], i) => h('button', { type: 'button', 'aria-pressed': String(i === range), onClick: () => setRange(i) }, t(k)))),
    h(Loading, { s }),
    d && h(Fragment, null,
      d.truncated && h('p', null, t('truncated')),
      h('dl', { class: 'cards' },
        h('div', null, h('dt', null, t('requests')), h('dd', { 'data-testid': 'total-requests' }, String(totals ? totals.requests : 0))),
        h('div', null, h('dt', null, t('tokens')), h('dd', { 'data-testid': 'total-tokens' }, String(totals ? totals.input + totals.output : 0))),
        h('div', null, h('dt', null, t('spend')), h('dd', { 'data-testid': 'total-spend' }, formatMoney(totals ? totals.spend : 0n))),
        h('div', null, h('dt', null, t('errorRate')), h('dd', null, '—'))),
      h('p', { class: 'note' }, t('errorRateNote')),
      h(Chart, { rows: d.rows, span }),
      h('h2', null, t('perModel')), h(Table, { caption: t('perModel'), cols: groupCols, rows: aggregate(d.rows, r => r.model) }),
      h('h2', null, t('perOrganization')), h(Table, { caption: t('perOrganization'), cols: groupCols, rows: aggregate(d.rows, r => r.organization) })))
}

// ── Organizations and projects ──
function Organizations () {
  const [s, reload] = useLoad(async () => {
    const orgs = (await api('GET', '/admin/organizations')).data
    const details = await Promise.all(orgs.map(o => api('GET', `/admin/organizations/${encodeURIComponent(o.id)}`)))
    const projects = (await api('GET', '/admin/projects')).data
    return { orgs: details, projects }
  }, [])
  const [msg, setMsg] = useState(); const [err, setErr] = useState()
  const [confirm, setConfirm] = useState()
  const run = async (fn) => { setErr(undefined); setMsg(undefined); try { await fn(); setMsg(t('done')); reload() } catch (e) { setErr(e.message) } }
  const createOrg = e => { e.preventDefault(); const f = new FormData(e.target); run(() => api('POST', '/admin/organizations', { id: f.get('org-id'), ...(f.get('org-name') ? { name: f.get('org-name') } : {}) })) }
  const createProject = e => { e.preventDefault(); const f = new FormData(e.target); run(() => api('POST', '/admin/projects', { id: f.get('project-id'), organization: f.get('project-org'), ...(f.get('project-name') ? { name: f.get('project-name') } : {}) })) }
  const orgs = s.data ? s.data.orgs : []
  return h(Fragment, null,
    h('h1', null, t('organizations')),
    h(Loading, { s }), h(ErrorBox, { error: err }), msg && h('p', { role: 'status' }, msg),
    s.data && h(Table, { caption: t('organizations'), rows: orgs, cols: [
      { label: t('id'), key: 'id' }, { label: t('name'), key: 'name' },
      { label: t('balance'), num: true, render: o => formatMoney(toMicros(o.balance)) },
      { label: t('reserved'), num: true, render: o => formatMoney(toMicros(o.reserved)) },
      { label: t('available'), num: true, render: o => formatMoney(toMicros(o.available)) },
      { label: t('topUp'), render: o => h('form', { class: 'inline', onSubmit: e => { e.preventDefault(); const amount = new FormData(e.target).get('amount'); setConfirm({ org: o.id, amount }) } },
        h('label', { for: `topup-${o.id}`, class: 'sr-only' }, `${t('amount')} (${o.id})`),
        h('input', { id: `topup-${o.id}`, name: 'amount', required: true, inputmode: 'decimal', pattern: '\\d{1,12}(\\.\\d{1,6})?', size: 8 }),
        h('button', { type: 'submit' }, t('topUp'))) },
    ] }),
    confirm && h(Confirm, { message: t('confirmTopUp', { org: confirm.org, amount: confirm.amount }), onCancel: () => setConfirm(undefined), onConfirm: () => { const c = confirm; setConfirm(undefined); run(() => api('POST', `/admin/organizations/${encodeURIComponent(c.org)}/topup`, { amount: c.amount })) } }),
    h('h2', null, t('createOrganization')),
    h('form', { class: 'row', onSubmit: createOrg }, h(Field, { label: t('id'), id: 'org-id', required: true }), h(Field, { label: t('name'), id: 'org-name' }), h('button', { type: 'submit' }, t('create'))),
    h('h2', null, t('projects')),
    s.data && h(Table, { caption: t('projects'), rows: s.data.projects, cols: [{ label: t('id'), key: 'id' }, { label: t('organization'), key: 'organization' }, { label: t('name'), key: 'name' }, { label: t('created'), key: 'createdAt' }] }),
    h('form', { class: 'row', onSubmit: createProject },
      h(Field, { label: t('id'), id: 'project-id', required: true }),
      h('div', { class: 'field' }, h('label', { for: 'project-org' }, t('organization')), h('select', { id: 'project-org', name: 'project-org', required: true }, orgs.map(o => h('option', { value: o.id }, o.id)))),
      h(Field, { label: t('name'), id: 'project-name' }), h('button', { type: 'submit' }, t('createProject'))))
}

// ── Keys ──
function Keys () {
  const [s, reload] = useLoad(async () => ({ keys: (await api('GET', '/admin/keys')).data, orgs: (await api('GET', '/admin/organizations')).data }), [])
  const [filter, setFilter] = useState('')
  const [secret, setSecret] = useState(); const [copied, setCopied] = useState(false)
  const [err, setErr] = useState(); const [confirm, setConfirm] = useState()
  const create = async e => {
    e.preventDefault(); setErr(undefined)
    const f = new FormData(e.target)
    const models = String(f.get('key-models') || '').split(',').map(x => x.trim()).filter(Boolean)
    try {
      const k = await api('POST', '/admin/keys', { organization: f.get('key-org'), ...(f.get('key-name') ? { name: f.get('key-name') } : {}), ...(f.get('key-project') ? { project: f.get('key-project') } : {}), ...(models.length ? { models } : {}) })
      setSecret(k); setCopied(false); reload()
    } catch (e) { setErr(e.message) }
  }
  const revoke = async id => { setErr(undefined); try { await api('POST', `/admin/keys/${encodeURIComponent(id)}/revoke`); reload() } catch (e) { setErr(e.message) } }
  const copy = async () => { try { await navigator.clipboard.writeText(secret.secret); setCopied(true) } catch { setCopied(false) } }
  const orgs = s.data ? s.data.orgs : []
  const keys = s.data ? s.data.keys.filter(k => !filter || k.organization === filter) : []
  return h(Fragment, null,
    h('h1', null, t('keys')),
    h(Loading, { s }), h(ErrorBox, { error: err }),
    secret && h('section', { class: 'secret', 'aria-labelledby': 'secret-title' },
      h('p', { id: 'secret-title' }, t('secretOnce')),
      h('code', { 'data-testid': 'secret' }, secret.secret),
      h('div', { class: 'row' }, h('button', { type: 'button', onClick: copy }, copied ? t('copied') : t('copy')), h('button', { type: 'button', onClick: () => setSecret(undefined) }, t('dismiss')))),
    h('h2', null, t('createKey')),
    h('form', { class: 'row', onSubmit: create },
      h('div', { class: 'field' }, h('label', { for: 'key-org' }, t('organization')), h('select', { id: 'key-org', name: 'key-org', required: true }, orgs.map(o => h('option', { value: o.id }, o.id)))),
      h(Field, { label: t('project'), id: 'key-project' }),
      h(Field, { label: t('name'), id: 'key-name' }),
      h(Field, { label: t('models'), id: 'key-models', placeholder: 'echo/echo-1, …' }),
      h('button', { type: 'submit' }, t('createKey'))),
    h('div', { class: 'field' }, h('label', { for: 'key-filter' }, t('filterByOrganization')),
      h('select', { id: 'key-filter', value: filter, onChange: e => setFilter(e.target.value) }, h('option', { value: '' }, t('all')), orgs.map(o => h('option', { value: o.id }, o.id)))),
    confirm && h(Confirm, { message: t('confirmRevoke', { id: confirm }), onCancel: () => setConfirm(undefined), onConfirm: () => { const id = confirm; setConfirm(undefined); revoke(id) } }),
    s.data && h(Table, { caption: t('keys'), rows: keys, cols: [
      { label: t('id'), key: 'id' }, { label: t('prefix'), key: 'prefix' }, { label: t('name'), key: 'name' },
      { label: t('organization'), key: 'organization' }, { label: t('project'), key: 'project' },
      { label: t('models'), render: k => (k.models || []).join(', ') },
      { label: t('status'), render: k => k.revokedAt ? `${t('revoked')} ${k.revokedAt}` : t('active') },
      { label: t('actions'), render: k => k.revokedAt ? '' : h('button', { type: 'button', onClick: () => setConfirm(k.id), 'aria-label': `${t('revoke')} ${k.id}` }, t('revoke')) },
    ] }))
}

// ── Prices ──
const rate = v => v === undefined || v === null ? '—' : String(v)
function Prices () {
  const [s] = useLoad(() => api('GET', '/admin/prices'), [])
  return h(Fragment, null, h('h1', null, t('prices')), h(Loading, { s }),
    s.data && h(Table, { caption: t('prices'), rows: s.data.data, cols: [
      { label: t('model'), key: 'model' }, { label: t('source'), key: 'source' },
      { label: t('input'), num: true, render: p => rate(p.price.input) },
      { label: t('cachedInput'), num: true, render: p => rate(p.price.cachedInput) },
      { label: t('output'), num: true, render: p => rate(p.price.output) },
    ] }))
}

// ── Usage explorer ──
function Usage () {
  const [filters, setFilters] = useState({})
  const [cursors, setCursors] = useState([undefined])
  const cursor = cursors[cursors.length - 1]
  const [s] = useLoad(() => api('GET', `/admin/usage?${qs({ ...filters, limit: 50, cursor })}`), [filters, cursor])
  const [err, setErr] = useState()
  const apply = e => {
    e.preventDefault()
    const f = new FormData(e.target)
    const iso = v => v ? new Date(v).toISOString() : undefined
    setFilters({ from: iso(f.get('u-from')), to: iso(f.get('u-to')), organization: f.get('u-org') || undefined, key: f.get('u-key') || undefined, model: f.get('u-model') || undefined })
    setCursors([undefined])
  }
  // The export needs the admin key in a header, so it is fetched and handed to the browser as a Blob.
  const download = async () => {
    setErr(undefined)
    try {
      const r = await fetch(`/admin/usage/export?${qs({ ...filters, format: 'csv' })}`, { headers: { authorization: `Bearer ${adminKey}` } })
      if (!r.ok) throw new Error(`${r.status}: ${await r.text()}`)
      const url = URL.createObjectURL(await r.blob())
      const a = document.createElement('a'); a.href = url; a.download = 'usage.csv'; document.body.appendChild(a); a.click(); a.remove()
      setTimeout(() => URL.revokeObjectURL(url), 1000)
    } catch (e) { setErr(e.message) }
  }
  return h(Fragment, null, h('h1', null, t('usage')),
    h('form', { class: 'row', onSubmit: apply },
      h(Field, { label: t('from'), id: 'u-from', type: 'datetime-local' }), h(Field, { label: t('to'), id: 'u-to', type: 'datetime-local' }),
      h(Field, { label: t('organization'), id: 'u-org' }), h(Field, { label: t('key'), id: 'u-key' }), h(Field, { label: t('model'), id: 'u-model' }),
      h('button', { type: 'submit' }, t('apply'))),
    h('div', { class: 'row' },
      h('button', { type: 'button', onClick: download }, t('downloadCsv')),
      h('button', { type: 'button', disabled: cursors.length < 2, onClick: () => setCursors([undefined]) }, t('first')),
      h('button', { type: 'button', disabled: !(s.data && s.data.nextCursor), onClick: () => setCursors([...cursors, s.data.nextCursor]) }, t('next'))),
    h(ErrorBox, { error: err }), h(Loading, { s }),
    s.data && h(Table, { caption: t('usage'), rows: s.data.data, cols: [
      { label: t('time'), key: 'time' }, { label: t('key'), key: 'keyId' }, { label: t('organization'), key: 'organization' },
      { label: t('model'), key: 'model' }, { label: t('inputTokens'), key: 'inputTokens', num: true },
      { label: t('outputTokens'), key: 'outputTokens', num: true }, { label: t('cost'), num: true, render: r => formatMoney(toMicros(r.cost)) },
      { label: t('trace'), key: 'traceId' },
    ] }))
}

// ── Circuits ──
function CircuitsPage () {
  const [s, reload] = useLoad(() => api('GET', '/admin/circuits'), [])
  const [err, setErr] = useState()
  const reset = async key => { setErr(undefined); try { await api('POST', '/admin/circuits/reset', { key }); reload() } catch (e) { setErr(e.message) } }
  return h(Fragment, null, h('h1', null, t('circuits')), h(Loading, { s }), h(ErrorBox, { error: err }),
    s.data && h(Table, { caption: t('circuits'), rows: s.data.data, cols: [
      { label: t('key'), key: 'key' }, { label: t('models'), render: c => c.models.join(', ') }, { label: t('state'), key: 'state' },
      { label: t('failures'), key: 'failures', num: true }, { label: t('openedAt'), key: 'openedAt' },
      { label: t('actions'), render: c => h('button', { type: 'button', onClick: () => reset(c.key), 'aria-label': `${t('reset')} ${c.key}` }, t('reset')) },
    ] }))
}

// ── Config ──
function Config () {
  const [s] = useLoad(() => api('GET', '/admin/config'), [])
  return h(Fragment, null, h('h1', null, t('config')), h(Loading, { s }),
    s.data && h(Fragment, null,
      h('dl', { class: 'cards' }, h('div', null, h('dt', null, t('version')), h('dd', null, s.data.version)), h('div', null, h('dt', null, t('node')), h('dd', null, s.data.node)), h('div', null, h('dt', null, t('source')), h('dd', null, s.data.source))),
      h('pre', { tabindex: 0, 'aria-label': t('config') }, JSON.stringify(s.data.config, null, 2))))
}

// ── Shell ──
const PAGES = [['overview', Overview], ['organizations', Organizations], ['keys', Keys], ['prices', Prices], ['usage', Usage], ['circuits', CircuitsPage], ['config', Config]]
const route = () => { const r = location.hash.replace(/^#\/?/, ''); return PAGES.some(([p]) => p === r) ? r : 'overview' }

function SignIn ({ onSignedIn }) {
  const [err, setErr] = useState()
  const submit = async e => {
    e.preventDefault()
    adminKey = String(new FormData(e.target).get('admin-key') || '')
    try { await api('GET', '/admin/config'); onSignedIn() } catch (e) { adminKey = ''; setErr(e.message) }
  }
  return h('main', { class: 'signin' }, h('h1', null, t('title')),
    h('form', { onSubmit: submit },
      h(Field, { label: t('adminKey'), id: 'admin-key', type: 'password', required: true, autocomplete: 'off' }),
      h('p', { class: 'note' }, t('signInHelp')),
      h('button', { type: 'submit', class: 'primary' }, t('signIn'))),
    h(ErrorBox, { error: err }))
}

function App () {
  const [, rerender] = useState(0)
  const [signedIn, setSignedIn] = useState(false)
  const [page, setPage] = useState(route())
  useEffect(() => { const f = () => setPage(route()); addEventListener('hashchange', f); return () => removeEventListener('hashchange', f) }, [])
  useEffect(() => { document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en'; document.title = t('title') })
  const langSwitch = h('div', { class: 'lang' }, h('label', { for: 'lang' }, t('language')),
    h('select', { id: 'lang', value: lang, onChange: e => { lang = e.target.value; rerender(x => x + 1) } }, h('option', { value: 'en' }, 'English'), h('option', { value: 'zh' }, '简体中文')))
  if (!signedIn) return h(Fragment, null, h('header', null, langSwitch), h(SignIn, { onSignedIn: () => setSignedIn(true) }))
  const Page = PAGES.find(([p]) => p === page)[1]
  return h(Fragment, null,
    h('header', null,
      h('nav', { 'aria-label': t('title') }, h('ul', null, PAGES.map(([p]) => h('li', null, h('a', { href: `#/${p}`, 'aria-current': p === page ? 'page' : undefined }, t(p)))))),
      langSwitch,
      h('button', { type: 'button', onClick: () => { adminKey = ''; setSignedIn(false) } }, t('signOut'))),
    h('main', null, h(Page, { key: `${page}-${lang}` })))
}

render(h(App), document.getElementById('app'))
