// Keys: a key's settings as the key page shows and creates them: budget (spent of amount per
// window, lifetime), rates, expiry, tags, last use, and spend per tag (summed from the key list:
// no request of its own). Money exactly (integer micro-units), dates in the chosen language.
import { h, Fragment } from 'preact'
import { toMicros, formatMoney } from '../money.js'
import { fmtDateTime, t } from '../i18n.js'
import { Field, Select } from '../ui.js'

const windowName = w => w === 'day' ? t('perDayBudget') : w === 'month' ? t('perMonthBudget') : t('perSeconds', { n: w })

/** The budget cell: spent / amount per window, and the lifetime budget. */
export function budgetText (k) {
  const parts = []
  if (k.budget) parts.push(`${formatMoney(toMicros(k.budget.spent))} / ${formatMoney(toMicros(k.budget.amount))} ${windowName(k.budget.window)}`)
  if (k.lifetimeBudget) parts.push(`${t('lifetime')} ${formatMoney(toMicros(k.spent))} / ${formatMoney(toMicros(k.lifetimeBudget))}`)
  return parts.length ? parts.join('; ') : '—'
}

export const limitsText = k => [k.rpm ? `${k.rpm} ${t('rpm')}` : '', k.tpm ? `${k.tpm} ${t('tpm')}` : ''].filter(Boolean).join(', ') || '—'

/** The key table's extra columns. */
export const settingColumns = () => [
  { label: t('budget'), id: 'budget', render: budgetText },
  { label: t('spent'), id: 'spent', num: true, render: k => formatMoney(toMicros(k.spent)) },
  { label: t('limits'), id: 'limits', render: limitsText },
  { label: t('expires'), id: 'expires', render: k => k.expiresAt ? fmtDateTime(k.expiresAt) : '—' },
  { label: t('tags'), id: 'tags', render: k => k.tags.join(', ') || '—' },
  { label: t('lastUsed'), id: 'last-used', render: k => fmtDateTime(k.lastUsedAt) },
]

/** Lifetime spend per tag of the listed keys (a key with two tags counts in both), largest first. */
export function spendPerTag (keys) {
  const sums = new Map()
  for (const k of keys) for (const tag of k.tags) sums.set(tag, (sums.get(tag) ?? 0n) + toMicros(k.spent))
  return [...sums].sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : 0)).map(([tag, m]) => ({ id: tag, tag, spent: formatMoney(m) }))
}

/** The create form's settings fields. */
export const SettingFields = () => h(Fragment, null,
  h('div', { class: 'row' },
    h(Field, { label: t('budgetAmount'), id: 'key-budget', inputmode: 'decimal', placeholder: t('optional') }),
    h(Select, { label: t('budgetWindow'), id: 'key-window', options: [['day', t('perDayBudget')], ['month', t('perMonthBudget')]] }),
    h(Field, { label: t('lifetimeBudget'), id: 'key-lifetime', inputmode: 'decimal', placeholder: t('optional') })),
  h('div', { class: 'row' },
    h(Field, { label: t('rpm'), id: 'key-rpm', type: 'number', min: 1, placeholder: t('optional') }),
    h(Field, { label: t('tpm'), id: 'key-tpm', type: 'number', min: 1, placeholder: t('optional') }),
    h(Field, { label: t('expires'), id: 'key-expires', type: 'date' }),
    h(Field, { label: t('tagsComma'), id: 'key-tags', placeholder: 'team:web, prod' })))

/** The settings of a create form's data, in the admin API's shape. */
export function settingsOf (f) {
  const s = {}
  const v = name => String(f.get(name) ?? '').trim()
  if (v('key-budget')) s.budget = { amount: v('key-budget'), window: v('key-window') || 'month' }
  if (v('key-lifetime')) s.lifetimeBudget = v('key-lifetime')
  if (v('key-rpm')) s.rpm = Number(v('key-rpm'))
  if (v('key-tpm')) s.tpm = Number(v('key-tpm'))
  if (v('key-expires')) s.expiresAt = v('key-expires')
  const tags = v('key-tags').split(',').map(x => x.trim()).filter(Boolean)
  if (tags.length) s.tags = tags
  return s
}
