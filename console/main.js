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

const PAGES = [['overview', Overview], ['organizations', Organizations], ['keys', Keys], ['prices', Prices], ['usage', Usage], ['latency', Latency], ['providers', Providers], ['config', Config]]
/** Old names of pages. */
const ALIASES = { circuits: 'providers' }
const route = () => {
  const r = location.hash.replace(/^#\/?/, '')
  const name = ALIASES[r] || r
  return PAGES.some(([p]) => p === name) ? name : 'overview'
}

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
  const [page, setPage] = useState(route())
  useEffect(() => {
    const f = () => { const p = route(); markNav(p); setPage(p) }
    addEventListener('hashchange', f)
    performance.mark('console-boot')
    return () => removeEventListener('hashchange', f)
  }, [])
  useEffect(() => { document.documentElement.lang = getLang(); document.title = t('title') })
  const langSwitch = h('div', { class: 'lang' }, h('label', { for: 'lang' }, t('language')),
    h('select', { id: 'lang', value: getLang(), onChange: e => { setLang(e.target.value); markNav(page); rerender(x => x + 1) } }, h('option', { value: 'en' }, 'English'), h('option',
      { value: 'zh-CN' }, '简体中文')))
  if (!signedIn) return h(Fragment, null, h('header', null, langSwitch), h(SignIn, { onSignedIn: () => setSignedIn(true) }))
  const Page = PAGES.find(([p]) => p === page)[1]
  return h(Fragment, null,
    h('header', null,
      h('nav', { 'aria-label': t('title') }, h('ul', null, PAGES.map(([p]) => h('li', null, h('a', { href: `#/${p}`, 'aria-current': p === page ? 'page' : undefined }, t(p)))))),
      langSwitch,
      h('button', { type: 'button', onClick: () => { setAdminKey(''); setSignedIn(false) } }, t('signOut'))),
    h('main', null, h(Page, { key: `${page}-${getLang()}` })))
}

render(h(App), document.getElementById('app'))
