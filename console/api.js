// The admin API as the console calls it, and the page timing marks. The admin key is kept in this
// module's memory only (no cookie, no storage) and sent as "Authorization: Bearer" on every call:
// with no cookie there is no ambient credential, so no CSRF surface.
import { useEffect, useRef, useState } from 'preact/hooks'
import { plainMessage } from './errors.js'

let adminKey = ''
/** @param {string} key */
export function setAdminKey (key) { adminKey = key }
export const authHeader = () => ({ authorization: `Bearer ${adminKey}` })

export class ApiError extends Error {
  /** @param {number} status @param {string} message */
  constructor (status, message) { super(message); this.status = status }
}

/** @param {string} method @param {string} path @param {unknown} [body] */
export async function api (method, path, body) {
  /** @type {Record<string, string>} */
  const headers = authHeader()
  if (body !== undefined) headers['content-type'] = 'application/json'
  const r = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
  const text = await r.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  // Validation messages are said in plain words (console/errors.js), never as a schema rule.
  if (!r.ok) throw new ApiError(r.status, `${r.status}: ${plainMessage((json?.error?.message) || text)}`)
  return json
}

/** A query string of the defined, non-empty values. @param {Record<string, unknown>} o */
export const qs = o => new URLSearchParams(/** @type {Array<[string, string]>} */ (Object.entries(o).filter(([, v]) => v !== undefined && v !== '' && v !== null)
  .map(([k, v]) => [k, String(v)]))).toString()

/**
 * Loads `fn()` when `deps` change; returns [{ loading, data, error }, reload].
 * @param {() => Promise<any>} fn @param {unknown[]} deps
 */
export function useLoad (fn, deps) {
  const [state, set] = useState(/** @type {{ loading: boolean, data?: any, error?: string }} */ ({ loading: true }))
  const [n, reload] = useState(0)
  useEffect(() => {
    let live = true
    set(s => ({ ...s, loading: true }))
    fn().then(data => { if (live) set({ loading: false, data }) }, err => { if (live) set({ loading: false, error: err.message }) })
    return () => { live = false }
  }, [...deps, n])
  return /** @type {const} */ ([state, () => reload(x => x + 1)])
}

// ── Time to interactive: a mark when a page is asked for (sign-in, link, language), a measure
// `console:<page>` when its data is on the screen. The browser test reads them. ──
/** @param {string} page */
export function markNav (page) { performance.mark(`console-nav:${page}`) }

/**
 * Measures the page once its first data has rendered (effects run after the DOM is updated).
 * @param {string} page @param {boolean} ready
 */
export function useReady (page, ready) {
  const done = useRef(false)
  useEffect(() => {
    if (!ready || done.current) return
    done.current = true
    const start = `console-nav:${page}`
    if (performance.getEntriesByName(start, 'mark').length === 0) return
    performance.measure(`console:${page}`, start)
    performance.clearMarks(start)
  }, [ready])
}
