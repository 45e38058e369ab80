// The operator console: a Preact page over the admin HTTP API only (console/api.js holds the admin
// key in memory). Hash routing (#/keys, ...); one module per page under pages/.
import { h, render, Fragment } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import './style.css'
import { api, markNav, setAdminKey } from './api.js'
import { getLang, setLang, t } from './i18n.js'
import { Field, ErrorBox } from './ui.js'
import { Overview } from './pages/overview.js'
import { Organizations } from './pages/organizations.js'
import { Keys } from './pages/keys.js'
import { Prices } from './pages/prices.js'
import { Usage } from './pages/usage.js'
import { Latency } from './pages/latency.js'
import { Providers } from './pages/providers.js'
import { Config } from './pages/config.js'
import { Organization } from './pages/organization.js'
import { Audit } from './pages/audit.js'

const PAGES = [['overview', Overview], ['organizations', Organizations], ['keys', Keys], ['prices', Prices], ['usage', Usage], ['latency', Latency], ['providers', Providers],
  ['audit', Audit], ['config', Config]]
/** Old names of pages. */
const ALIASES = { circuits: 'providers' }
/** The page of the hash (#/keys; #/organizations/<id>: one organization) and its argument. */
const where = () => {
  const r = location.hash.replace(/^#\/?/, '')
  const org = /^organizations\/(.+)$/.exec(r)
  if (org) return { name: 'organization', arg: decodeURIComponent(org[1]) }
  const name = ALIASES[r] || r
  return { name: PAGES.some(([p]) => p === name) ? name : 'overview', arg: '' }
}
const route = () => where().name

function SignIn ({ onSignedIn }) {
  const [err, setErr] = useState()
  const submit = async e => {
    e.preventDefault()
    setAdminKey(String(new FormData(e.target).get('admin-key') || ''))
    markNav(route())
    try { await api('GET', '/admin/config'); onSignedIn() } catch (e) { setAdminKey(''); setErr(e.message) }
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
  const [{ name: page, arg }, setPage] = useState(where())
  useEffect(() => {
    const f = () => { const w = where(); markNav(w.name); setPage(w) }
    addEventListener('hashchange', f)
    performance.mark('console-boot')
    return () => removeEventListener('hashchange', f)
  }, [])
  useEffect(() => { document.documentElement.lang = getLang(); document.title = t('title') })
  const langSwitch = h('div', { class: 'lang' }, h('label', { for: 'lang' }, t('language')),
    h('select', { id: 'lang', value: getLang(), onChange: e => { setLang(e.target.value); markNav(page); rerender(x => x + 1) } }, h('option', { value: 'en' }, 'English'), h('option',
      { value: 'zh-CN' }, '简体中文')))
  if (!signedIn) return h(Fragment, null, h('header', null, langSwitch), h(SignIn, { onSignedIn: () => setSignedIn(true) }))
  const Page = page === 'organization' ? Organization : PAGES.find(([p]) => p === page)[1]
  // An organization's page is under Organizations in the navigation.
  const current = page === 'organization' ? 'organizations' : page
  return h(Fragment, null,
    h('header', null,
      h('nav', { 'aria-label': t('title') }, h('ul', null, PAGES.map(([p]) => h('li', null, h('a', { href: `#/${p}`, 'aria-current': p === current ? 'page' : undefined }, t(p)))))),
      langSwitch,
      h('button', { type: 'button', onClick: () => { setAdminKey(''); setSignedIn(false) } }, t('signOut'))),
    h('main', null, h(Page, { key: `${page}-${arg}-${getLang()}`, id: arg })))
}

render(h(App), document.getElementById('app'))
