/** @module routing – the order in which a call tries a model's deployments (priority, weighted among equals). */
import type { Deployment } from '../types/model.ts'

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
