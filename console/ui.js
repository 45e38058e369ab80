// Shared pieces of the console's pages: tables, fields, selects, the confirmation dialog.
import { h } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import { t } from './i18n.js'

export const ErrorBox = ({ error }) => error ? h('p', { class: 'error', role: 'alert' }, `${t('error')}: ${error}`) : null
export const Loading = ({ s }) => s.error ? h(ErrorBox, { error: s.error }) : s.loading && !s.data ? h('p', null, t('loading')) : null
export const Status = ({ msg }) => h('p', { role: 'status', class: 'status' }, msg || '')

/**
 * A table in a scrollable region; at phone width (style.css) each row is a card of label: value
 * lines (the labels from data-label), so every cell, actions included, is on the screen. `label` names it: as its caption, or, with `labelledBy`, by the
 * heading of that id already on the page (no second, visible name).
 */
export function Table ({ cols, rows, label, labelledBy, testid }) {
  if (!rows.length) return h('p', null, t('noRows'))
  const name = labelledBy ? { 'aria-labelledby': labelledBy } : { 'aria-label': label }
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', ...name },
    h('table', { ...(labelledBy ? { 'aria-labelledby': labelledBy } : {}), ...(testid ? { 'data-testid': testid } : {}) },
      labelledBy ? null : h('caption', null, label),
      h('thead', null, h('tr', null, cols.map(c => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.label)))),
      h('tbody', null, rows.map((r, i) => h('tr', { key: r.id ?? i, 'data-row': r.id ?? undefined }, cols.map(c => h('td', { class: c.num ? 'num' : '', 'data-col': c.id ?? undefined,
        'data-label': typeof c.label === 'string' ? c.label : undefined }, c.render ? c.render(r) : String(r[c.key] ?? ''))))))))
}

export function Field ({ label, id, ...rest }) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, name: id, ...rest }))
}

/** A labelled select; `options` are [value, text] pairs, `empty` an optional first option's text (value ''). */
export function Select ({ label, id, options, empty, ...rest }) {
  return h('div', { class: 'field' }, h('label', { for: id }, label),
    h('select', { id, name: id, ...rest },
      empty !== undefined ? h('option', { value: '' }, empty) : null,
      options.map(([v, text]) => h('option', { value: v }, text))))
}

/** A modal confirmation (native <dialog>: focus is trapped and Escape cancels). */
export function Confirm ({ message, onConfirm, onCancel }) {
  const ref = useRef()
  useEffect(() => { ref.current.showModal(); return () => ref.current?.open && ref.current.close() }, [])
  return h('dialog', { ref, 'aria-labelledby': 'confirm-msg', onCancel: e => { e.preventDefault(); onCancel() } },
    h('p', { id: 'confirm-msg' }, message),
    h('div', { class: 'row' },
      h('button', { type: 'button', onClick: onConfirm, class: 'primary' }, t('confirm')),
      h('button', { type: 'button', onClick: onCancel }, t('cancel'))))
}

/** A toggle group of aria-pressed buttons. */
export function Toggle ({ label, items, value, onChange }) {
  return h('div', { class: 'row', role: 'group', 'aria-label': label },
    items.map(([v, text]) => h('button', { type: 'button', 'aria-pressed': String(v === value), onClick: () => onChange(v) }, text)))
}
