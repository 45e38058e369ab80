/** @module cli/remote – the admin CLI over a running gateway's admin API (--url): the same commands, mapped to requests. */
import { gwError } from '../core/errors/errors.ts'
import type { ModelPrice } from '../core/types/model.ts'
import type { HoldView, KeyView } from '../admin/views.ts'
import type { BalanceView } from '../admin/service.ts'
import { holdFilterArgs, priceArg, usageError, type Parsed } from './args.ts'
import { priceText, releasedText, writeBalance, writeHolds, writeKeys, writeOrganizations, writeProjects, writeUsageSummary, type OrganizationRow, type ProjectRow, type UsageSummaryView,
  type Writer } from './print.ts'
import type { UsageSummaryQueryT } from '../admin/summary-schemas.ts'
import { planJournalRemote } from './journal.ts'
import { graceArg, keySettingsOf } from './key-flags.ts'

/**
 * A running gateway's admin API (--url): every request carries the admin key; an error answer
 * becomes GW_ERR_ADMIN_ANSWER with the API's status and message (exit code 1).
 */
export class AdminClient {
  readonly base: string
  readonly key: string
  constructor (base: string, key: string) {
    this.base = base
    this.key = key
  }

  async #fetch (method: string, path: string, body?: unknown): Promise<Response> {
    let r: Response
    try {
      r = await fetch(this.base + path, {
        method,
        headers: { authorization: `Bearer ${this.key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      })
    } catch (e) {
      throw gwError('GW_ERR_ADMIN_UNREACHABLE', [this.base, (e as Error & { cause?: Error }).cause?.message ?? (e as Error).message])
    }
    if (!r.ok) {
      const text = await r.text()
      let message = text
      try { message = JSON.parse(text).error.message } catch { /* not the error body: the raw text */ }
      throw gwError('GW_ERR_ADMIN_ANSWER', [r.status, message])
    }
    return r
  }

  /** The admin API's JSON answer, as `T`: the shape its route documents (the CLI and the API ship together). */
  async json<T = unknown> (method: string, path: string, body?: unknown): Promise<T> {
    return await (await this.#fetch(method, path, body)).json() as T
  }

  /** Copies a (streamed) answer to `out` chunk by chunk. */
  async pipe (path: string, out: Writer): Promise<void> {
    const r = await this.#fetch('GET', path)
    const decoder = new TextDecoder()
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) out.write(decoder.decode(chunk, { stream: true }))
    const rest = decoder.decode()
    if (rest) out.write(rest)
  }
}

export type Remote = (c: AdminClient, out: Writer, err: Writer) => Promise<void>

const enc = encodeURIComponent

/**
 * The same commands over the admin API (--url). Arguments were checked by plan() already; this
 * only maps them to requests and prints what the ledger mode prints.
 */
export function planRemote (p: Parsed, summary?: UsageSummaryQueryT): Remote {
  const [group, sub, ...rest] = p.positionals
  const cmd = `${group} ${sub ?? ''}`.trim()
  const get = (name: string): string | undefined => { const v = p.flags.get(name); return v === true ? undefined : v }
  const json = p.flags.has('json')
  switch (cmd) {
    case 'org create': return async (c, out) => {
      await c.json('POST', '/admin/organizations', { id: rest[0], ...(get('name') !== undefined ? { name: get('name') } : {}) })
      out.write(`created organization ${rest[0]}\n`)
    }
    case 'project create': return async (c, out) => {
      await c.json('POST', '/admin/projects', { id: rest[0], organization: get('org'), ...(get('name') !== undefined ? { name: get('name') } : {}) })
      out.write(`created project ${rest[0]} in organization ${get('org')}\n`)
    }
    case 'org list': return async (c, out) => { writeOrganizations((await c.json<{ data: OrganizationRow[] }>('GET', '/admin/organizations')).data, json, out) }
    case 'project list': return async (c, out) => {
      const org = get('org')
      writeProjects((await c.json<{ data: ProjectRow[] }>('GET', `/admin/projects${org !== undefined ? `?organization=${enc(org)}` : ''}`)).data, json, out)
    }
    case 'usage summary': return async (c, out) => {
      const q = new URLSearchParams(Object.entries(summary ?? {}).map(([k, v]) => [k, String(v)]))
      writeUsageSummary(await c.json<UsageSummaryView>('GET', `/admin/usage/summary?${q}`), json, out)
    }
    case 'balance topup': return async (c, out) => {
      const r = await c.json<{ balance: string }>('POST', `/admin/organizations/${enc(rest[0]!)}/topup`,
        { amount: rest[1]!.trim(), ...(get('reason') !== undefined ? { reason: get('reason') } : {}) })
      out.write(`${rest[0]} balance ${r.balance}\n`)
    }
    case 'balance show': return async (c, out) => {
      writeBalance(await c.json<BalanceView>('GET', `/admin/organizations/${enc(rest[0]!)}/balance`), json, out)
    }
    case 'key create': return async (c, out, err) => {
      const body: Record<string, unknown> = { organization: get('org'), ...keySettingsOf(get, false) }
      for (const f of ['project', 'id']) if (get(f) !== undefined) body[f] = get(f)
      const k = await c.json<{ id: string, secret: string }>('POST', '/admin/keys', body)
      out.write(`id      ${k.id}\nsecret  ${k.secret}\n`)
      err.write('The secret is shown only now (the ledger keeps its sha256): store it safely.\n')
    }
    case 'key update': return async (c, out) => {
      await c.json('PATCH', `/admin/keys/${enc(rest[0]!)}`, keySettingsOf(get, true))
      out.write(`updated key ${rest[0]}\n`)
    }
    case 'key rotate': return async (c, out, err) => {
      const grace = graceArg(get('grace'))
      const k = await c.json<{ id: string, secret: string }>('POST', `/admin/keys/${enc(rest[0]!)}/rotate`, { graceSeconds: grace })
      out.write(`id      ${k.id}\nsecret  ${k.secret}\n`)
      err.write(`The secret is shown only now; the previous one works for ${grace} s more.\n`)
    }
    case 'key revoke': return async (c, out) => {
      await c.json('POST', `/admin/keys/${enc(rest[0]!)}/revoke`)
      out.write(`revoked key ${rest[0]}\n`)
    }
    case 'key list': return async (c, out) => { writeKeys((await c.json<{ data: KeyView[] }>('GET', '/admin/keys')).data, json, out) }
    case 'price set': return async (c, out) => {
      const price: ModelPrice = { input: priceArg(get('input')!, 'input'), output: priceArg(get('output')!, 'output') }
      if (get('cached') !== undefined) price.cachedInput = priceArg(get('cached')!, 'cached')
      if (get('cache-write') !== undefined) price.cacheWrite = priceArg(get('cache-write')!, 'cache-write')
      if (get('cache-write-1h') !== undefined) price.cacheWrite1h = priceArg(get('cache-write-1h')!, 'cache-write-1h')
      await c.json('PUT', '/admin/prices', { model: rest[0], ...price })
      out.write(`price of ${rest[0]} set\n${priceText(price)}`)
    }
    case 'price show': return async (c, out) => {
      const { data } = await c.json<{ data: Array<{ model: string, ledgerPrice?: ModelPrice | null }> }>('GET', '/admin/prices')
      const price = data.find(r => r.model === rest[0])?.ledgerPrice
      if (!price) throw gwError('GW_ERR_PRICE_UNKNOWN', [rest[0]])
      out.write(json ? JSON.stringify({ model: rest[0], ...price }) + '\n' : `model   ${rest[0]}\n${priceText(price)}`)
    }
    case 'holds list': return async (c, out) => {
      const q = new URLSearchParams(Object.entries(holdFilterArgs(get)))
      const r = await c.json<{ stored: boolean, data: HoldView[] }>('GET', `/admin/reservations${q.size > 0 ? `?${q}` : ''}`)
      if (!r.stored) throw gwError('GW_ERR_HOLDS_NOT_STORED')
      writeHolds(r.data, json, out)
    }
    case 'holds release': return async (c, out) => {
      const r = await c.json<{ released: string, kind: HoldView['kind'] }>('DELETE', `/admin/reservations/${enc(rest[0]!)}`)
      out.write(releasedText(rest[0]!, r.kind))
    }
    case 'usage export': return async (c, out) => {
      const q = new URLSearchParams({ format: get('format') ?? 'csv' })
      for (const f of ['from', 'to']) if (get(f) !== undefined) q.set(f, get(f)!)
      await c.pipe(`/admin/usage/export?${q}`, out)
    }
    default: {
      const journal = planJournalRemote(p)
      if (journal) return journal
      throw usageError(`"${cmd}" works on the ledger only, not over --url`)
    }
  }
}
