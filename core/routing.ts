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

/**
 * Circuit breakers keyed by `<provider>/<upstreamModel>`, held in this process. A circuit opens
 * after `failureThreshold` consecutive failures, lets one trial call through after `coolDownMs`
 * (half-open), and closes on the trial's success or re-opens on its failure.
 */
export class Circuits {
  readonly #state = new Map<string, CircuitState>()
  constructor (readonly opts: CircuitOptions = DEFAULT_CIRCUIT, readonly now: () => number = Date.now) {}

  static key (d: Deployment): string { return `${d.provider}/${d.upstreamModel}` }

  /** May a call go to this deployment now? Half-open admits exactly one trial. */
  allow (d: Deployment): boolean {
    const s = this.#state.get(Circuits.key(d))
    if (!s || s.failures < this.opts.failureThreshold) return true
    if (this.now() - s.openedAt < this.opts.coolDownMs) return false
    if (s.trial) return false
    s.trial = true
    return true
  }

  success (d: Deployment): void { this.#state.delete(Circuits.key(d)) }

  failure (d: Deployment): void {
    const k = Circuits.key(d)
    const s = this.#state.get(k) ?? { failures: 0, openedAt: 0, trial: false }
    s.failures++
    if (s.failures >= this.opts.failureThreshold) { s.openedAt = this.now(); s.trial = false }
    this.#state.set(k, s)
  }

  isOpen (d: Deployment): boolean {
    const s = this.#state.get(Circuits.key(d))
    return !!s && s.failures >= this.opts.failureThreshold && this.now() - s.openedAt < this.opts.coolDownMs
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
