// The running config version and its settings, secrets masked by the API.
import { h, Fragment } from 'preact'
import { api, useLoad, useReady } from '../api.js'
import { t } from '../i18n.js'
import { Loading } from '../ui.js'

export function Config () {
  const [s] = useLoad(() => api('GET', '/admin/config'), [])
  useReady('config', !!s.data)
  return h(Fragment, null, h('h1', null, t('config')), h(Loading, { s }),
    s.data && h(Fragment, null,
      h('dl', { class: 'cards' }, h('div', null, h('dt', null, t('version')), h('dd', null, s.data.version)), h('div', null, h('dt', null, t('node')), h('dd', null, s.data.node)),
        h('div', null, h('dt', null, t('source')), h('dd', null, s.data.source))),
      h('pre', { tabindex: 0, 'aria-label': t('config') }, JSON.stringify(s.data.config, null, 2))))
}
