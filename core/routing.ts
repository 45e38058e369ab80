/** @module routing – deployment order (priority, weighted among equals) and per-deployment circuits. */
import type { Deployment } from './types/model.ts'

export interface CircuitOptions {
  /** Consecutive failures (connect error, timeout, 5xx) that open a circuit. */
  failureThreshold: number
  /** How long an open circuit stays open before one trial call is let through (half-open). */
  coolDownMs: number
}

export const DEFAULT_CIRCUIT: CircuitOptions = { failureThreshold: 5, coolDownMs: 30_000 }

interface CircuitState { failures: number, openedAt: number, trial: boolean }

/** The part of the key-value store contract circuits use to share state across replicas. */
export interface CircuitStore {
  get (key: string): Promise<string | undefined>
  set (key: string, value: string, ttlMs: number): Promise<void>
  del (key: string): Promise<void>
}

/**
 * Circuit breakers keyed by `<provider>/<upstreamModel>`. A circuit opens after
 * `failureThreshold` consecutive failures, lets one trial call through after `coolDownMs`
 * (half-open), and closes on the trial's success or re-opens on its failure.
 *
 * Decisions are taken on this process's state, never waiting on the network. With a shared store
 * (Redis, many replicas) an opening is published as a key that lives for the cool-down, a success
 * deletes it, and each replica re-reads a circuit's key in the background at most every
 * `syncMs` while it routes to that deployment: a replica learns that another one opened a circuit
 * within about `syncMs` of traffic, and a store outage only turns sharing off.
 */
export class Circuits {
  readonly #state = new Map<string, CircuitState>()
  /** key → when the shared key was last read (ms), for the background refresh. */
  readonly #synced = new Map<string, number>()
  readonly #store?: CircuitStore
  readonly #syncMs: number

  constructor (readonly opts: CircuitOptions = DEFAULT_CIRCUIT, readonly now: () => number = Date.now, shared?: { store: CircuitStore, syncMs?: number }) {
    this.#store = shared?.store
    this.#syncMs = shared?.syncMs ?? 1000
  }

  static key (d: Deployment): string { return `${d.provider}/${d.upstreamModel}` }

  /** May a call go to this deployment now? Half-open admits exactly one trial. */
  allow (d: Deployment): boolean {
    const k = Circuits.key(d)
    if (this.#store) this.#refresh(k)
    const s = this.#state.get(k)
    if (!s || s.failures < this.opts.failureThreshold) return true
    if (this.now() - s.openedAt < this.opts.coolDownMs) return false
    if (s.trial) return false
    s.trial = true
    return true
  }

  success (d: Deployment): void {
    const k = Circuits.key(d)
    const s = this.#state.get(k)
    this.#state.delete(k)
    if (this.#store && s && s.failures >= this.opts.failureThreshold) this.#store.del(k).catch(() => {})
  }

  failure (d: Deployment): void {
    const k = Circuits.key(d)
    const s = this.#state.get(k) ?? { failures: 0, openedAt: 0, trial: false }
    s.failures++
    if (s.failures >= this.opts.failureThreshold) {
      s.openedAt = this.now()
      s.trial = false
      this.#store?.set(k, String(s.openedAt), this.opts.coolDownMs).catch(() => {})
    }
    this.#state.set(k, s)
  }

  isOpen (d: Deployment): boolean {
    const s = this.#state.get(Circuits.key(d))
    return !!s && s.failures >= this.opts.failureThreshold && this.now() - s.openedAt < this.opts.coolDownMs
  }

  /** Background read of the shared key (at most every syncMs per circuit); never awaited by routing. */
  #refresh (k: string): void {
    const t = this.now()
    const last = this.#synced.get(k)
    if (last !== undefined && t - last < this.#syncMs) return
    this.#synced.set(k, t)
    this.#store!.get(k).then(v => {
      if (v === undefined) return
      const openedAt = Number(v)
      const s = this.#state.get(k)
      if (!Number.isFinite(openedAt) || (s && s.failures >= this.opts.failureThreshold && s.openedAt >= openedAt)) return
      this.#state.set(k, { failures: this.opts.failureThreshold, openedAt, trial: false })
    }, () => {})
  }
}

/**
 * Deployments in the order to try: ascending priority; among equal priorities a weighted random
 * order (each pick proportional to weight among those left).
 */
export function orderDeployments (deployments: readonly Deployment[], random: () => number = Math.random): Deployment[] {
  if (deployments.length <= 1) return deployments as Deployment[]
  const out: Deployment[] = []
  let i = 0
  while (i < deployments.length) {
    let j = i
    while (j < deployments.length && deployments[j].priority === deployments[i].priority) j++
    const group = deployments.slice(i, j)
    while (group.length > 1) {
      const total = group.reduce((s, d) => s + d.weight, 0)
      let r = random() * total
      let k = 0
      while (k < group.length - 1 && (r -= group[k].weight) >= 0) k++
      out.push(group.splice(k, 1)[0])
    }
    out.push(group[0])
    i = j
  }
  return out
}
