import t from 'tap'
import { Circuits, orderDeployments } from '../../core/routing.ts'

const d = (provider: string, priority = 0, weight = 1) => ({ provider, upstreamModel: 'm', priority, weight })

t.test('orderDeployments – priority first, weighted among equals', async t => {
  const list = [d('a', 0, 1), d('b', 0, 3), d('c', 1)]
  const counts: Record<string, number> = { a: 0, b: 0 }
  let seed = 1
  const random = () => { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
  let lowPriorityLast = true
  for (let i = 0; i < 4000; i++) {
    const order = orderDeployments(list, random)
    if (order[2].provider !== 'c') lowPriorityLast = false
    counts[order[0].provider]++
  }
  t.ok(lowPriorityLast, 'the priority-1 deployment always comes last')
  t.ok(counts.b / 4000 > 0.7 && counts.b / 4000 < 0.8, `b first about 75% of the time (${counts.b})`)
})

t.test('Circuits – opens after the threshold, half-opens after the cool-down, closes on success', async t => {
  let now = 0
  const c = new Circuits({ failureThreshold: 3, coolDownMs: 1000 }, () => now)
  const dep = d('a')
  c.failure(dep); c.failure(dep)
  t.ok(c.allow(dep), 'still closed below the threshold')
  c.failure(dep)
  t.ok(c.isOpen(dep))
  t.notOk(c.allow(dep), 'open')
  now = 1000
  t.ok(c.allow(dep), 'one trial when half-open')
  t.notOk(c.allow(dep), 'only one trial')
  c.failure(dep)
  t.notOk(c.allow(dep), 're-opened by a failed trial')
  now = 2000
  t.ok(c.allow(dep))
  c.success(dep)
  t.ok(c.allow(dep))
  t.notOk(c.isOpen(dep))
})
