/** @module affinity – session affinity: a conversation keeps to one deployment among equals, where its prompt cache lives. */
import { createHash } from 'node:crypto'
import type { Deployment, ModelEntry } from '../types/model.ts'
import type { Headers } from '../types/context.ts'
import type { Principal } from '../types/principal.ts'
import type { KvStore } from '../stores/kv.ts'
import { Circuits } from './circuits.ts'

/** Whether pins are kept, and how long one lasts after its session's last call. */
export interface AffinitySettings {
  enabled: boolean
  ttlMs: number
}

/**
 * Five minutes: the lifetime of Anthropic's default prompt cache, refreshed on each use, and the
 * short end of OpenAI's (5–10 minutes of inactivity). A pin that outlives its cache costs nothing
 * (any deployment is then as good as another); one that dies before it loses the cache.
 */
export const DEFAULT_AFFINITY: AffinitySettings = Object.freeze({ enabled: true, ttlMs: 300_000 })

/**
 * Request headers in which clients name their session, read in this order: Claude Code's
 * `X-Claude-Code-Session-Id`; Codex's `session-id` (its current releases; older ones sent
 * `session_id` and `conversation_id`); `x-session-id` for any other client.
 */
export const SESSION_HEADERS: readonly string[] = Object.freeze(['x-claude-code-session-id', 'session-id', 'session_id', 'conversation_id', 'x-session-id'])

/** Characters of each part of the stable prefix (system, tools, first message) that go into its hash. */
export const PREFIX_CHARS = 8192

/** A session id longer than this is hashed by its first this many characters. */
const MAX_ID_CHARS = 512

type Body = Record<string, unknown>

/**
 * How the deployment that answered a call stood to its session's pin: `new` (the session had no
 * pin), `pinned` (it was the pinned one), `moved` (another one answered: the pin failed or its
 * circuit was open, and the session now moves to the one that answered).
 */
export type AffinityOutcome = 'new' | 'pinned' | 'moved'

/** One call's session: its key in the store and the pin found there, if any. */
export interface Session {
  readonly key: string
  readonly ttlMs: number
  /** `<provider>/<upstreamModel>` of the pinned deployment. */
  readonly pinned: string | undefined
  /** When the pin was last written (ms). */
  readonly writtenAt: number
}

/** A priority group with at least two deployments: the only place where a pin changes the order. */
function hasEquals (deployments: readonly Deployment[]): boolean {
  for (let i = 1; i < deployments.length; i++) if (deployments[i].priority === deployments[i - 1].priority) return true
  return false
}

function inGroupOfEquals (deployments: readonly Deployment[], d: Deployment): boolean {
  let n = 0
  for (const x of deployments) if (x.priority === d.priority) n++
  return n > 1
}

/**
 * What names the session: the client's own id when it sends one (a `prompt_cache_key`, a session
 * header, Anthropic's `metadata.user_id`, which Claude Code fills with its session), else the
 * stable prefix of the prompt. The kind is part of the key, so an id never equals a prefix.
 */
export function sessionMaterial (protocol: string, body: Body, headers: Headers): string {
  const pck = body.prompt_cache_key
  if (typeof pck === 'string' && pck !== '') return 'c:' + pck.slice(0, MAX_ID_CHARS)
  for (const h of SESSION_HEADERS) {
    const v = headers[h]
    if (typeof v === 'string' && v !== '') return 'h:' + v.slice(0, MAX_ID_CHARS)
  }
  const meta = body.metadata
  if (meta !== null && typeof meta === 'object') {
    const user = (meta as Body).user_id
    if (typeof user === 'string' && user !== '') return 'u:' + user.slice(0, MAX_ID_CHARS)
  }
  return 'p:' + stablePrefix(protocol, body)
}

/**
 * The text of the prompt's stable prefix, each part bounded to PREFIX_CHARS: what every turn of a
 * conversation repeats, and what a prompt cache keys on. Messages: `system`, `tools`, the first
 * message. Chat: `tools`, then the messages up to the first that is not a system or developer
 * message. Responses: `instructions`, `tools`, then the input up to its first user item (a string
 * input is itself the first message). Strings are taken as they are, in the parsed body's order;
 * nothing is serialized, and a long part stops at its bound.
 */
export function stablePrefix (protocol: string, body: Body): string {
  const out: string[] = []
  if (protocol === 'messages') {
    collect(body.system, out)
    collect(body.tools, out)
    collect(Array.isArray(body.messages) ? body.messages[0] : undefined, out)
  } else if (protocol === 'chat') {
    collect(body.tools, out)
    collect(leading(body.messages), out)
  } else {
    collect(body.instructions, out)
    collect(body.tools, out)
    collect(typeof body.input === 'string' ? body.input : leading(body.input), out)
  }
  return out.join('\u0001')
}

/** The items of a conversation up to and including its first that is not a system or developer turn. */
function leading (items: unknown): unknown[] | undefined {
  if (!Array.isArray(items)) return undefined
  const out: unknown[] = []
  for (const m of items) {
    out.push(m)
    const role = m !== null && typeof m === 'object' ? (m as Body).role : undefined
    if (role !== 'system' && role !== 'developer') break
  }
  return out
}

/** Appends the strings (and scalars) found in `v`, depth first, at most about PREFIX_CHARS characters and values in all. */
function collect (v: unknown, out: string[]): void {
  const budget = { left: PREFIX_CHARS }
  walk(v, out, budget)
  out.push('\u0002')
}

function walk (v: unknown, out: string[], budget: { left: number }): void {
  if (budget.left <= 0) return
  // Every value visited counts, so a part made of empty objects or nulls is bounded too.
  budget.left--
  if (v === undefined || v === null) return
  if (typeof v === 'string') {
    const s = v.length > budget.left ? v.slice(0, budget.left) : v
    budget.left -= s.length + 1
    out.push(s)
  } else if (typeof v === 'number' || typeof v === 'boolean') {
    out.push(String(v))
    budget.left -= 8
  } else if (Array.isArray(v)) {
    for (const x of v) { if (budget.left <= 0) return; walk(x, out, budget) }
  } else if (typeof v === 'object') {
    for (const k in v as Body) { if (budget.left <= 0) return; walk((v as Body)[k], out, budget) }
  }
}

/** A session from its stored pin (`<writtenAt> <deployment>`), or without a pin. */
function sessionOf (key: string, ttlMs: number, v: string | undefined): Session {
  if (v !== undefined) {
    const sp = v.indexOf(' ')
    const at = Number(v.slice(0, sp))
    if (sp > 0 && Number.isFinite(at)) return { key, ttlMs, pinned: v.slice(sp + 1), writtenAt: at }
  }
  return { key, ttlMs, pinned: undefined, writtenAt: 0 }
}

/**
 * Pins sessions to deployments. A model with two or more deployments of equal priority (where
 * routing would otherwise pick at random by weight) looks its session's pin up once per call; the
 * pinned deployment goes first among its equals, so a pin never overrides priorities, and a pinned
 * deployment whose circuit is open is skipped like any other. The deployment that answers is
 * pinned (again): a session whose deployment failed moves to the one that served it and stays
 * there. Sessions are scoped by the caller's organization (else its key), so tenants never share
 * pins, and by model.
 *
 * A pin lives from `ttlMs` to 1.25 × `ttlMs` after its session's last call: it is rewritten, with
 * that longer lifetime, when missing, when another deployment served, or once a quarter of `ttlMs`
 * has passed since it was written (not on every call: with Redis that saves a round trip per call;
 * the write is awaited, so it costs one round trip on a session's first call and about every
 * `ttlMs` / 4 after).
 * The store is the app's key-value store: memory in one process, Redis shared by replicas. A
 * store that fails only turns affinity off for the calls it fails.
 */
export class Affinity {
  /** Per catalog entry: the settings that apply to it, or undefined when affinity cannot matter. */
  readonly #models = new WeakMap<ModelEntry, AffinitySettings | null>()

  readonly store: KvStore
  readonly now: () => number
  constructor (store: KvStore, now: () => number = Date.now) {
    this.store = store
    this.now = now
  }

  /** The model's settings when affinity applies to it (on, and a group of equals), else undefined. */
  settings (model: ModelEntry, routing: AffinitySettings): AffinitySettings | undefined {
    let s = this.#models.get(model)
    if (s === undefined) {
      const own = model.affinity
      const merged = { enabled: own?.enabled ?? routing.enabled, ttlMs: own?.ttlMs ?? routing.ttlMs }
      s = merged.enabled && hasEquals(model.deployments) ? merged : null
      this.#models.set(model, s)
    }
    return s ?? undefined
  }

  /** The store key of a call's session: caller scope, model and session material, hashed. */
  static keyOf (principal: Principal | undefined, modelId: string, material: string): string {
    const scope = principal === undefined ? '' : principal.organization !== undefined ? 'o:' + principal.organization : 'k:' + principal.keyId
    return createHash('sha256').update(scope).update('\0').update(modelId).update('\0').update(material).digest('base64url').slice(0, 32)
  }

  /**
   * Reads the session's pin: at once from an in-process store (no promise), else a promise. A store
   * error reads as no pin.
   */
  lookup (key: string, ttlMs: number): Session | Promise<Session> {
    const now = this.store.inProcess
    if (now !== undefined) {
      let v: string | undefined
      try { v = now.get(key) } catch { v = undefined }
      return sessionOf(key, ttlMs, v)
    }
    return this.store.get(key).then(v => sessionOf(key, ttlMs, v), () => sessionOf(key, ttlMs, undefined))
  }

  /** `order` with the pinned deployment moved to the front of its priority group. */
  static pinFirst (order: readonly Deployment[], pinned: string | undefined): readonly Deployment[] {
    if (pinned === undefined) return order
    const i = order.findIndex(d => Circuits.key(d) === pinned)
    if (i <= 0) return order
    const p = order[i].priority
    let g = i
    while (g > 0 && order[g - 1].priority === p) g--
    if (g === i) return order
    const out = order.slice()
    out.splice(i, 1)
    out.splice(g, 0, order[i])
    return out
  }

  /** How `d`, which answered, stands to the session's pin. */
  static outcome (session: Session, d: Deployment): AffinityOutcome {
    return session.pinned === undefined ? 'new' : session.pinned === Circuits.key(d) ? 'pinned' : 'moved'
  }

  /**
   * Deployment `d` (of `deployments`) answered this session's call: pin it, unless the pin already
   * names it and is fresh. Only a deployment among equals is pinned (elsewhere the order is fixed).
   * A write is awaited by the call (a promise; undefined when there is nothing to write or the
   * store wrote at once), so the session's next call, on any replica, finds it: a client that
   * sends its next turn the moment it has this answer must not race the write. A store error is
   * ignored.
   */
  served (session: Session, d: Deployment, deployments: readonly Deployment[]): Promise<void> | undefined {
    const key = Circuits.key(d)
    const t = this.now()
    if (session.pinned === key && t - session.writtenAt < session.ttlMs / 4) return undefined
    if (!inGroupOfEquals(deployments, d)) return undefined
    const value = `${t} ${key}`
    const ttl = session.ttlMs + session.ttlMs / 4
    const now = this.store.inProcess
    if (now !== undefined) {
      try { now.set(session.key, value, ttl) } catch { /* a full store: no pin */ }
      return undefined
    }
    return this.store.set(session.key, value, ttl).catch(() => {})
  }
}
