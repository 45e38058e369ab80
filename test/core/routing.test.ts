import t from 'tap'
import { Circuits } from '../../core/dispatch/circuits.ts'
import { orderDeployments } from '../../core/dispatch/routing.ts'

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

t.test('CircuitTicket – settled once; how each way a half-open trial ends moves the circuit', async t => {
  const opts = { failureThreshold: 2, coolDownMs: 1000, trialTimeoutMs: 5000 }
  const open = () => {
    const clock = { now: 0 }
    const c = new Circuits(opts, () => clock.now)
    const dep = d('a')
    c.failure(dep); c.failure(dep)
    clock.now = 1000
    const trial = c.allow(dep)!
    t.equal(trial.trial, true, 'the cool-down is over: this call is the trial')
    t.notOk(c.allow(dep), 'and the only one')
    return { c, dep, trial, clock }
  }

  t.test('success closes the circuit; later settlements of the same ticket do nothing', async t => {
    const { c, dep, trial } = open()
    trial.success()
    trial.failure()
    trial.release()
    t.notOk(c.isOpen(dep))
    t.equal(c.allow(dep)?.trial, false, 'closed: every call is admitted, none is a trial')
  })

  t.test('failure re-opens it for another cool-down', async t => {
    const { c, dep, trial, clock } = open()
    trial.failure()
    t.ok(c.isOpen(dep))
    t.notOk(c.allow(dep))
    clock.now = 2000
    t.equal(c.allow(dep)?.trial, true, 'a new trial after the new cool-down')
  })

  t.test('release frees the trial for the next call at once', async t => {
    const { c, dep, trial } = open()
    trial.release()
    t.equal(c.allow(dep)?.trial, true)
  })

  t.test('disposed unsettled: released, whatever ended the call', async t => {
    const { c, dep, trial } = open()
    trial[Symbol.dispose]()
    const next = c.allow(dep)!
    t.equal(next.trial, true, 'released by disposal')
    next[Symbol.dispose]()
    t.notOk(c.isOpen(dep), 'a trial cut without a verdict (a deadline, the client gone) does not re-open the circuit')
    t.equal(c.allow(dep)?.trial, true, 'the next call is the new trial')
  })

  t.test('disposal after a settlement changes nothing', async t => {
    const { c, dep, trial } = open()
    trial.success()
    c.failure(dep)
    trial[Symbol.dispose]()
    t.equal(c.allow(dep)?.trial, false, 'one failure after the success: still closed')
  })

  t.test('a trial that never reports is released after trialTimeoutMs', async t => {
    const { c, dep, trial, clock } = open()
    clock.now = 1000 + 4999
    t.notOk(c.allow(dep), 'still held just before its deadline')
    clock.now = 1000 + 5000
    const next = c.allow(dep)!
    t.equal(next.trial, true, 'another call may try')
    t.notOk(c.allow(dep), 'one trial at a time still')
    trial.release()
    t.notOk(c.allow(dep), 'releasing the stale trial does not free the new one')
    next.success()
    t.notOk(c.isOpen(dep))
  })
})

t.test('Circuits – a deployment\'s own thresholds override the defaults', async t => {
  let now = 0
  const c = new Circuits({ failureThreshold: 5, coolDownMs: 1000, trialTimeoutMs: 1000 }, () => now)
  const strict = { ...d('strict'), circuit: { failureThreshold: 1, coolDownMs: 50 } }
  const lax = d('lax')
  c.failure(strict)
  c.failure(lax)
  t.ok(c.isOpen(strict), 'one failure opens the strict deployment')
  t.notOk(c.isOpen(lax))
  now = 50
  t.equal(c.allow(strict)?.trial, true, 'its own cool-down applies')
  t.same(c.options(strict), { failureThreshold: 1, coolDownMs: 50, trialTimeoutMs: 1000, ttfbMs: 60000 }, 'unset keys keep the defaults')
})

t.test('Circuits – no response headers within ttfbMs is a failure of its own; headers in time disarm it; a late answer still closes', async t => {
  const { until } = await import('../helpers/until.ts')
  const c = new Circuits({ failureThreshold: 1, coolDownMs: 1000, trialTimeoutMs: 1000, ttfbMs: 20 }, () => 0)
  const dep = d('ttfb')
  const answered = c.allow(dep)!
  answered.headers()
  const hung = c.allow(dep)!
  t.ok(await until(() => c.isOpen(dep)), 'the call still waiting for headers opened the circuit')
  answered.success()
  t.notOk(c.isOpen(dep), 'the answered call closes it')
  hung.success()
  t.notOk(c.isOpen(dep), 'a late answer of the hung call counts as a success too')
  hung[Symbol.dispose]()
  answered[Symbol.dispose]()
  const released = c.allow(dep)!
  released[Symbol.dispose]()
  t.notOk(c.isOpen(dep), 'an attempt ended before ttfbMs (its deadline, the client gone) counts nothing')
})
