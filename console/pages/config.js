// The running config: its version (the first 12 hex digits of its settings' SHA-256, as the
// gateway's log names it) and when it was loaded, then the package version, Node and the source;
// its settings below, secrets masked by the API.
import { h, Fragment } from 'preact'
import { api, useLoad, useReady } from '../api.js'
import { fmtDateTime, t } from '../i18n.js'
import { Loading } from '../ui.js'

export function Config () {
  const [s] = useLoad(() => api('GET', '/admin/config'), [])
  useReady('config', !!s.data)
  const fact = (label, value, testid) => h('div', null, h('dt', null, label), h('dd', testid ? { 'data-testid': testid } : null, value))
  return h(Fragment, null, h('h1', null, t('config')), h(Loading, { s }),
    s.data && h(Fragment, null,
      h('dl', { class: 'cards' },
        fact(t('configVersion'), s.data.configVersion, 'config-version'),
        fact(t('loadedAt'), h('time', { datetime: s.data.loadedAt }, fmtDateTime(s.data.loadedAt)), 'config-loaded')),
      h('dl', { class: 'facts' },
        fact(t('packageVersion'), s.data.version, 'package-version'), fact(t('node'), s.data.node), fact(t('source'), s.data.source)),
      h('pre', { tabindex: 0, 'aria-label': t('config') }, JSON.stringify(s.data.config, null, 2))))
}
