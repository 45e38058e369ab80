// Prices per model (input, cached input, cache write, one-hour cache write, output per million tokens) and where each comes from;
// setting one (PUT /admin/prices, the ledger's price over the config's) after a confirmation.
import { h, Fragment } from 'preact'
import { useRef, useState } from 'preact/hooks'
import { api, useLoad, useReady } from '../api.js'
import { t } from '../i18n.js'
import { Confirm, ErrorBox, Field, Loading, Status, Table } from '../ui.js'

const rate = v => v === undefined || v === null ? '—' : String(v)
const RATE = { type: 'number', min: 0, step: 'any', inputmode: 'decimal' }
const EMPTY = { model: '', input: '', cachedInput: '', cacheWrite: '', cacheWrite1h: '', output: '' }
const opt = v => v === undefined ? '' : String(v)

export function Prices () {
  const [s, reload] = useLoad(() => api('GET', '/admin/prices'), [])
  useReady('prices', !!s.data)
  const [form, setForm] = useState(EMPTY)
  const [confirm, setConfirm] = useState()
  const [err, setErr] = useState(); const [msg, setMsg] = useState()
  const first = useRef()
  const edit = p => {
    setForm({ model: p.model, input: String(p.price.input), cachedInput: opt(p.price.cachedInput), cacheWrite: opt(p.price.cacheWrite),
      cacheWrite1h: opt(p.price.cacheWrite1h), output: String(p.price.output) })
    setMsg(undefined)
    if (first.current) first.current.focus()
  }
  const set = k => e => setForm({ ...form, [k]: e.target.value })
  const submit = e => {
    e.preventDefault()
    const body = { model: form.model.trim(), input: Number(form.input), output: Number(form.output), ...(form.cachedInput !== '' ? { cachedInput: Number(form.cachedInput) } : {}),
      ...(form.cacheWrite !== '' ? { cacheWrite: Number(form.cacheWrite) } : {}), ...(form.cacheWrite1h !== '' ? { cacheWrite1h: Number(form.cacheWrite1h) } : {}) }
    setConfirm(body)
  }
  const save = async body => {
    setConfirm(undefined); setErr(undefined); setMsg(undefined)
    try { await api('PUT', '/admin/prices', body); setMsg(t('done')); setForm(EMPTY); reload() } catch (e) { setErr(e.message) }
  }
  const rows = s.data ? s.data.data.map(p => ({ ...p, id: p.model })) : []
  return h(Fragment, null, h('h1', null, t('prices')), h(Loading, { s }),
    s.data && h(Table, { label: t('prices'), testid: 'prices', rows, cols: [
      { label: t('model'), key: 'model' }, { label: t('source'), key: 'source', id: 'source' },
      { label: t('input'), num: true, id: 'input', render: p => rate(p.price.input) },
      { label: t('cachedInput'), num: true, id: 'cachedInput', render: p => rate(p.price.cachedInput) },
      { label: t('cacheWrite'), num: true, id: 'cacheWrite', render: p => rate(p.price.cacheWrite) },
      { label: t('cacheWrite1h'), num: true, id: 'cacheWrite1h', render: p => rate(p.price.cacheWrite1h) },
      { label: t('output'), num: true, id: 'output', render: p => rate(p.price.output) },
      { label: t('actions'), render: p => h('button', { type: 'button', onClick: () => edit(p), 'aria-label': `${t('edit')} ${p.model}` }, t('edit')) },
    ] }),
    h('h2', { id: 'set-price' }, t('setPrice')),
    h(ErrorBox, { error: err }), h(Status, { msg }),
    h('form', { class: 'row', onSubmit: submit, 'aria-labelledby': 'set-price' },
      h('div', { class: 'field' }, h('label', { for: 'price-model' }, t('model')),
        h('input', { id: 'price-model', ref: first, required: true, list: 'price-models', value: form.model, onInput: set('model') }),
        h('datalist', { id: 'price-models' }, rows.map(p => h('option', { value: p.model })))),
      h(Field, { label: t('input'), id: 'price-input', required: true, ...RATE, value: form.input, onInput: set('input') }),
      h(Field, { label: `${t('cachedInput')} (${t('optional')})`, id: 'price-cached', ...RATE, value: form.cachedInput, onInput: set('cachedInput') }),
      h(Field, { label: `${t('cacheWrite')} (${t('optional')})`, id: 'price-cache-write', ...RATE, value: form.cacheWrite, onInput: set('cacheWrite') }),
      h(Field, { label: `${t('cacheWrite1h')} (${t('optional')})`, id: 'price-cache-write-1h', ...RATE, value: form.cacheWrite1h, onInput: set('cacheWrite1h') }),
      h(Field, { label: t('output'), id: 'price-output', required: true, ...RATE, value: form.output, onInput: set('output') }),
      h('button', { type: 'submit', class: 'primary' }, t('save'))),
    confirm && h(Confirm, {
      message: t('confirmPrice', { model: confirm.model, input: String(confirm.input), cached: confirm.cachedInput === undefined ? '—' : String(confirm.cachedInput),
        write: confirm.cacheWrite === undefined ? '—' : String(confirm.cacheWrite), write1h: confirm.cacheWrite1h === undefined ? '—' : String(confirm.cacheWrite1h),
        output: String(confirm.output) }),
      onCancel: () => setConfirm(undefined), onConfirm: () => save(confirm),
    }))
}
