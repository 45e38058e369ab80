/**
 * Session affinity (cache-friendly routing) through a listening gateway and the official clients.
 * Each fake deployment keeps its own prompt cache: it reports as cached the longest prompt it has
 * already seen that begins the current one, so only a deployment that served a session's earlier
 * turns reports a hit. Routing among equals is drawn from a seeded random, so the runs are exact.
 */
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY, NO_ORG_KEY, auth } from '../helpers/build-test-app.ts'
import { startFakeUpstream, json, sse, chatCompletion, messagesResponse, messagesTextStream, type FakeUpstream } from '../helpers/fake-upstream.ts'
import { RedisStore } from '../../core/stores/redis.ts'
import { redisUrl } from '../helpers/backends.ts'
import { mulberry32 as seeded } from '../helpers/rng.ts'
import pino from 'pino'

/** Tokens each system prompt or message counts for, in the fake upstream's usage. */
const PER_PART = 100
const N = 3

/** A deployment with its own prompt cache (chat and messages on one origin). */
async function cachingUpstream (): Promise<FakeUpstream & { fail: boolean }> {
  const seen = new Set<string>()
  const up = Object.assign(await startFakeUpstream(), { fail: false })
  up.handle((req, res) => {
    if (up.fail) return json(res, 500, { error: { message: 'deployment down' } })
    const messages = req.path.startsWith('/v1/messages')
    const parts: unknown[] = messages ? [req.body.system ?? null, ...req.body.messages] : [...req.body.messages]
    let hit = 0
    for (let k = parts.length - 1; k >= 1; k--) {
      if (seen.has(JSON.stringify(parts.slice(0, k)))) { hit = k; break }
    }
    seen.add(JSON.stringify(parts))
    const input = parts.length * PER_PART
    const cached = hit * PER_PART
    const text = `answer to ${parts.length} parts`
    if (!messages) return json(res, 200, chatCompletion(text, { prompt: input, completion: 3, cached }))
    const usage = { input: input - cached, output: 3, cacheRead: cached, cacheWrite: 0 }
    return req.body.stream ? sse(res, messagesTextStream([text.slice(0, 6), text.slice(6)], usage)) : json(res, 200, messagesResponse(text, usage))
  })
  return up
}

function poolDoc (ups: readonly FakeUpstream[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    providers: ups.flatMap((u, i) => [
      { name: `msg-${i}`, adapter: 'anthropic-compatible', config: { baseUrl: u.origin, apiKey: 'sk-ant-upstream' } },
      { name: `chat-${i}`, adapter: 'openai-compatible', config: { baseUrl: `${u.origin}/v1`, apiKey: 'sk-upstream' } },
    ]),
    models: [
      { id: 'pool/msg', supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata'], deployments: ups.map((_, i) => ({ provider: `msg-${i}`, model: 'up-msg' })) },
      { id: 'pool/chat', deployments: ups.map((_, i) => ({ provider: `chat-${i}`, model: 'up-chat' })) },
    ],
    ...extra,
  }
}

interface Turn { input: number, cached: number, provider: string | null }

/** One conversation through an official client: each call sends the whole history so far. */
type Session = (turn: number) => Promise<Turn>

function sessions (base: string, tag: string): Array<[string, Session]> {
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  const system = 'You are a careful coding agent. '.repeat(20)

  const messagesSession = (name: string, opts: { header?: string, userId?: string, stream?: boolean }): [string, Session] => {
    const history: Anthropic.MessageParam[] = []
    return [name, async turn => {
      history.push({ role: 'user', content: `${tag} ${name}: turn ${turn}` })
      const body = { model: 'pool/msg', max_tokens: 32, system, messages: history, ...(opts.userId ? { metadata: { user_id: opts.userId } } : {}) }
      const headers = opts.header ? { 'x-claude-code-session-id': opts.header } : {}
      let msg: Anthropic.Message
      let provider: string | null
      if (opts.stream) {
        const s = anthropic.messages.stream(body, { headers })
        msg = await s.finalMessage()
        provider = (await s.withResponse()).response.headers.get('x-gw-provider')
      } else {
        const r = await anthropic.messages.create(body, { headers }).withResponse()
        msg = r.data
        provider = r.response.headers.get('x-gw-provider')
      }
      const text = msg.content.map(b => b.type === 'text' ? b.text : '').join('')
      history.push({ role: 'assistant', content: text })
      const cached = msg.usage.cache_read_input_tokens ?? 0
      return { input: msg.usage.input_tokens + cached + (msg.usage.cache_creation_input_tokens ?? 0), cached, provider }
    }]
  }

  const chatSession = (name: string, opts: { promptCacheKey?: string }): [string, Session] => {
    const history: OpenAI.ChatCompletionMessageParam[] = []
    return [name, async turn => {
      history.push({ role: 'user', content: `${tag} ${name}: turn ${turn}` })
      const r = await openai.chat.completions.create({ model: 'pool/chat', messages: history, ...(opts.promptCacheKey ? { prompt_cache_key: opts.promptCacheKey } : {}) }).withResponse()
      history.push({ role: 'assistant', content: r.data.choices[0].message.content ?? '' })
      return { input: r.data.usage!.prompt_tokens, cached: r.data.usage!.prompt_tokens_details?.cached_tokens ?? 0, provider: r.response.headers.get('x-gw-provider') }
    }]
  }

  const responsesSession = (name: string, sessionId: string): [string, Session] => {
    const input: OpenAI.Responses.ResponseInputItem[] = []
    return [name, async turn => {
      input.push({ role: 'user', content: `${tag} ${name}: turn ${turn}` })
      // Codex's headers: session-id (and thread-id) name its conversation.
      const r = await openai.responses.create({ model: 'pool/chat', input }, { headers: { 'session-id': sessionId, 'thread-id': sessionId } }).withResponse()
      input.push({ role: 'assistant', content: r.data.output_text })
      return { input: r.data.usage!.input_tokens, cached: r.data.usage!.input_tokens_details.cached_tokens, provider: r.response.headers.get('x-gw-provider') }
    }]
  }

  return [
    messagesSession('claude-code-like', { header: `cc-${tag}`, stream: true }),
    messagesSession('metadata-user-id', { userId: `user_${tag}_session_1` }),
    messagesSession('anonymous-messages', {}),
    chatSession('prompt-cache-key', { promptCacheKey: `pck-${tag}` }),
    responsesSession('codex-like', `codex-${tag}`),
    chatSession('anonymous-chat', {}),
  ]
}

/** One chat call of session `sessionId` (Codex's session-id header) through the gateway at `base`: the provider that answered. */
async function sessionCall (base: string, sessionId: string, model = 'pool/chat'): Promise<string | null> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth(), 'content-type': 'application/json', 'session-id': sessionId },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  })
  await res.text()
  return res.headers.get('x-gw-provider')
}

const TURNS = 5

/** Runs every session TURNS turns, interleaved (turn 1 of each, then turn 2...), on fresh deployments. */
async function conversation (t: Test, affinity: boolean, seed: number): Promise<Map<string, Turn[]>> {
  const ups = await Promise.all(Array.from({ length: N }, () => cachingUpstream()))
  const app = await buildTestApp({ doc: poolDoc(ups, { routing: { affinity: { enabled: affinity } } }), pipeline: [AUTH_ENTRY], random: seeded(seed) })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await Promise.all(ups.map(u => u.close())) })
  const all = sessions(base, `s${seed}`)
  const turns = new Map<string, Turn[]>(all.map(([name]) => [name, []]))
  for (let turn = 1; turn <= TURNS; turn++) {
    for (const [name, run] of all) turns.get(name)!.push(await run(turn))
  }
  return turns
}

const share = (turns: Map<string, Turn[]>): { cached: number, input: number } => {
  let cached = 0
  let input = 0
  for (const list of turns.values()) for (const x of list) { cached += x.cached; input += x.input }
  return { cached, input }
}

t.test('with affinity every turn after the first reads the whole previous prompt from its deployment\'s cache; without, fewer do', async t => {
  const on = await conversation(t, true, 7)
  for (const [name, list] of on) {
    t.equal(list[0].cached, 0, `${name}: the first turn finds nothing cached`)
    for (let i = 1; i < list.length; i++) {
      t.equal(list[i].cached, list[i - 1].input, `${name}: turn ${i + 1} reads the whole previous prompt from the cache`)
      t.equal(list[i].provider, list[0].provider, `${name}: turn ${i + 1} on the session's deployment`)
    }
  }
  const used = new Set([...on.values()].map(list => list[0].provider))
  t.ok(used.size > 1, `sessions still spread over the deployments (${[...used].join(', ')})`)

  const off = await conversation(t, false, 7)
  const misses = [...off.values()].flatMap(list => list.slice(1).filter((x, i) => x.cached < list[i].input)).length
  t.ok(misses > 0, `without affinity ${misses} turns missed (part of) the previous prompt's cache`)
  const a = share(on)
  const b = share(off)
  t.comment(`cached share of input: with affinity ${(a.cached / a.input * 100).toFixed(1)}%, without ${(b.cached / b.input * 100).toFixed(1)}%`)
  t.equal(a.input, b.input, 'the same prompts in both runs')
  t.ok(a.cached > b.cached, 'more input read from caches with affinity')
})

t.test('a session whose deployment\'s circuit opens moves to another deployment and stays there', async t => {
  const ups = await Promise.all(Array.from({ length: 2 }, () => cachingUpstream()))
  let clock = 1_000_000
  const app = await buildTestApp({
    doc: poolDoc(ups, { circuit: { failureThreshold: 1, coolDownMs: 60_000, trialTimeoutMs: 60_000 } }),
    pipeline: [AUTH_ENTRY], random: seeded(3), now: () => clock,
  })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await Promise.all(ups.map(u => u.close())) })
  const [[, run]] = sessions(base, 'circuit')
  const first = await run(1)
  const pinned = Number(first.provider!.slice(-1))
  const other = 1 - pinned
  t.equal((await run(2)).provider, `msg-${pinned}`, 'pinned')

  ups[pinned].fail = true
  const moved = await run(3)
  t.equal(moved.provider, `msg-${other}`, 'the pinned deployment failed (its circuit opened): the call went to the other one')
  t.equal(moved.cached, 0, 'whose cache is cold')
  ups[pinned].fail = false
  const next = await run(4)
  t.equal(next.provider, `msg-${other}`, 'the session stays on the deployment that served it')
  t.equal(next.cached, moved.input, 'and reads its cache from then on')
  clock += 120_000 // the old deployment's circuit may let calls through again
  const after = await run(5)
  t.equal(after.provider, `msg-${other}`, 're-pinned: the session does not go back when the old circuit closes')
  t.equal(after.cached, next.input)
  t.equal(ups[pinned].requests.length, 3, 'the failed deployment saw turns 1, 2 and the failed 3 only')
})

t.test('sessions of different keys (tenants) are pinned independently', async t => {
  const ups = await Promise.all(Array.from({ length: N }, () => cachingUpstream()))
  let draw = 0
  const app = await buildTestApp({ doc: poolDoc(ups), pipeline: [AUTH_ENTRY], random: () => draw })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await Promise.all(ups.map(u => u.close())) })
  const call = async (key: string): Promise<string | undefined> => {
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth(key), 'content-type': 'application/json', 'x-claude-code-session-id': 'the-same-session-id' },
      body: JSON.stringify({ model: 'pool/chat', messages: [{ role: 'user', content: 'hi' }] }),
    })
    await res.text()
    return res.headers.get('x-gw-provider') ?? undefined
  }
  draw = 0 // the weighted draw would pick the first deployment
  t.equal(await call(TEST_KEY), 'chat-0', 'organization org-test: first call on chat-0')
  draw = 0.999 // ... and now the last
  t.equal(await call(NO_ORG_KEY), 'chat-2', 'another tenant with the same session id is not sent after the first one\'s pin')
  draw = 0.5 // the middle one, for any call not pinned
  t.equal(await call(TEST_KEY), 'chat-0', 'each keeps its own pin')
  t.equal(await call(NO_ORG_KEY), 'chat-2')
})

t.test('two replicas sharing Redis send one session to the same deployment', async t => {
  const url = await redisUrl(t)
  if (!url) return
  const prefix = `test:affinity:${randomBytes(6).toString('hex')}:`
  const ups = await Promise.all(Array.from({ length: N }, () => cachingUpstream()))
  const storeA = await RedisStore.open({ url, prefix })
  const storeB = await RedisStore.open({ url, prefix })
  // Left alone, replica A would draw the first deployment and replica B the last.
  const a = await buildTestApp({ doc: poolDoc(ups), pipeline: [AUTH_ENTRY], store: storeA, random: () => 0 })
  const b = await buildTestApp({ doc: poolDoc(ups), pipeline: [AUTH_ENTRY], store: storeB, random: () => 0.999 })
  const baseA = await listen(a)
  const baseB = await listen(b)
  t.teardown(async () => {
    await a.close(); await b.close(); await storeA.close(); await storeB.close()
    await Promise.all(ups.map(u => u.close()))
  })
  const call = async (base: string, session: string, turn: number): Promise<{ provider: string | null, cached: number }> => {
    const messages = Array.from({ length: turn }, (_, i) => [{ role: 'user', content: `${session} ${i}` }, { role: 'assistant', content: `answer to ${2 * i + 1} parts` }]).flat().slice(0, 2 * turn - 1)
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json', 'session-id': session },
      body: JSON.stringify({ model: 'pool/chat', messages }),
    })
    const body = await res.json() as { usage: { prompt_tokens_details: { cached_tokens: number } } }
    return { provider: res.headers.get('x-gw-provider'), cached: body.usage.prompt_tokens_details.cached_tokens }
  }
  const one = await call(baseA, 'session-one', 1)
  t.equal(one.provider, 'chat-0', 'A drew chat-0 for session one')
  const oneOnB = await call(baseB, 'session-one', 2)
  t.equal(oneOnB.provider, 'chat-0', 'B sends session one to the deployment A pinned')
  t.ok(oneOnB.cached > 0, 'where the first turn is cached')
  const two = await call(baseB, 'session-two', 1)
  t.equal(two.provider, 'chat-2', 'B drew chat-2 for session two')
  t.equal((await call(baseA, 'session-two', 2)).provider, 'chat-2', 'A follows B\'s pin')
  t.equal((await call(baseA, 'session-one', 3)).provider, 'chat-0', 'and keeps session one where it was')
})

t.test('a pin lasts ttlMs after the session\'s last call, each call extending it; a model may turn affinity off', async t => {
  const ups = await Promise.all(Array.from({ length: 2 }, () => cachingUpstream()))
  let clock = 5_000_000
  let draw = 0
  const doc = poolDoc(ups, { routing: { affinity: { ttlMs: 60_000 } } })
  ;(doc.models as unknown[]).push({ id: 'pool/no-affinity', affinity: { enabled: false }, deployments: ups.map((_, i) => ({ provider: `chat-${i}`, model: 'up-chat' })) })
  const app = await buildTestApp({ doc, pipeline: [AUTH_ENTRY], random: () => draw, now: () => clock })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await Promise.all(ups.map(u => u.close())) })
  const call = (model?: string) => sessionCall(base, 'ttl-session', model)
  draw = 0
  t.equal(await call(), 'chat-0', 'pinned to chat-0')
  draw = 0.999 // any call not pinned now goes to chat-1
  for (let i = 0; i < 4; i++) {
    clock += 50_000 // under ttlMs since the previous call, 200 s after the first by the end
    t.equal(await call(), 'chat-0', `${(i + 1) * 50} s later: still pinned (each call extends the pin)`)
  }
  clock += 76_000 // past 1.25 × ttlMs since the last call
  t.equal(await call(), 'chat-1', 'after ttlMs without a call the pin is gone: a new draw')
  t.equal(await call('pool/no-affinity'), 'chat-1')
  draw = 0
  t.equal(await call('pool/no-affinity'), 'chat-0', 'a model with affinity off draws on every call')
})

t.test('the access log says how the deployment that answered stood to the session\'s pin', async t => {
  const ups = await Promise.all(Array.from({ length: 2 }, () => cachingUpstream()))
  const lines: Array<{ msg?: string, model?: string, provider?: string, affinity?: string }> = []
  const logger = pino({ level: 'info' }, { write (s: string) { lines.push(JSON.parse(s)) } })
  const doc = poolDoc(ups, { logging: { level: 'info' }, circuit: { failureThreshold: 1, coolDownMs: 60_000, trialTimeoutMs: 60_000 } })
  ;(doc.models as unknown[]).push({ id: 'solo/chat', deployments: [{ provider: 'chat-0', model: 'up-chat' }] })
  const app = await buildTestApp({ doc, logger, pipeline: [AUTH_ENTRY], random: seeded(11) })
  const base = await listen(app)
  t.teardown(async () => { await app.close(); await Promise.all(ups.map(u => u.close())) })
  const call = (model?: string) => sessionCall(base, 'logged-session', model)
  // The line is written at settle, just after the answer: wait for it.
  const lastAccess = async (n: number) => {
    for (let i = 0; i < 200 && lines.filter(l => l.msg === 'access').length < n; i++) await new Promise(resolve => setTimeout(resolve, 5))
    return lines.filter(l => l.msg === 'access')[n - 1]
  }
  const first = await call()
  t.match(await lastAccess(1), { provider: first, affinity: 'new' }, 'the session\'s first call: no pin yet')
  const second = await call()
  t.match(await lastAccess(2), { provider: second, affinity: 'pinned' })
  const pinned = Number(first!.slice(-1))
  ups[pinned].fail = true
  const moved = await call()
  t.not(moved, first)
  t.match(await lastAccess(3), { provider: moved, affinity: 'moved' }, 'the pinned deployment failed: another answered')
  ups[pinned].fail = false
  const fourth = await call()
  t.equal(fourth, moved)
  t.match(await lastAccess(4), { provider: fourth, affinity: 'pinned' }, 'pinned to the one that answered')
  await call('solo/chat')
  const solo = await lastAccess(5)
  t.equal(solo.model, 'solo/chat')
  t.notOk('affinity' in solo, 'a model affinity cannot matter for (one deployment) has no affinity field')
})
