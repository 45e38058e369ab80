/** @module test/helpers/admin – a listening gateway with its admin listener, and the admin keys its config holds. */
import type { Test } from 'tap'
import { startAdmin } from '../../admin/app.ts'
import type { Ledger } from '../../core/ledger/ledger.ts'
import { hashKey } from '../../core/ledger/keys.ts'
import { buildTestApp, listen } from './build-test-app.ts'

export const ADMIN_KEY = 'adm-test-0123456789abcdef'
export const REVOKED_ADMIN_KEY = 'adm-revoked-0123456789abcdef'

export interface Running { gateway: string, admin: string, ledger: Ledger, app: Awaited<ReturnType<typeof buildTestApp>> }

/** A listening gateway with its admin listener on a free port, over `ledger`; closed with the test. */
export async function running (t: Test, ledger: Ledger): Promise<Running> {
  const app = await buildTestApp({
    ledger,
    doc: { admin: { host: '127.0.0.1', port: 0, keys: [{ id: 'ops', key: '${ADMIN_KEY}' }, { id: 'old', hash: hashKey(REVOKED_ADMIN_KEY), revoked: true }] } },
    env: { ADMIN_KEY },
  })
  const admin = await startAdmin(app)
  t.ok(admin, 'the admin listener starts when admin is configured')
  const gateway = await listen(app)
  t.teardown(() => app.close())
  return { gateway, admin: admin!.address, ledger, app }
}

export const adminAuth = (key = ADMIN_KEY): Record<string, string> => ({ authorization: `Bearer ${key}` })


export interface AdminRes { status: number, body: any, text: string, headers: Headers }

/** One admin API call with the admin key (or `headers`): status, parsed JSON body, raw text. */
export async function adminCall (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = adminAuth()): Promise<AdminRes> {
  const r = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  })
  const text = await r.text()
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch { parsed = undefined }
  return { status: r.status, body: parsed, text, headers: r.headers }
}
