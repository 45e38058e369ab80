/**
 * @module test/helpers/life – a listening gateway for the call-lifecycle tests: fake upstreams of
 * the three protocols, a spy that records each call's onAnswered and onSettle, plugins that stall
 * or refuse in a phase on request, and a guard whose response hooks refuse an answer.
 */
import type { Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import { definePlugin, type GatewayPlugin, type Outcome, type Phase } from '../../index.ts'
import { AUTH_ENTRY, auth, buildTestApp, listen } from './build-test-app.ts'
import { startFakeUpstream, upstreamDoc, json } from './fake-upstream.ts'
import { until } from './until.ts'

export interface Seen { settles: number, answered: number, outcome?: Outcome }

/** Records onAnswered and onSettle per call; in `connect`, first, so it runs for every call. */
export function lifeSpy () {
  const calls = new Map<string, Seen>()
  const order: string[] = []
  const plugin = definePlugin({
    name: 'life-spy',
    phase: 'connect',
    configSchema: Type.Object({}),
    create: () => ({
      onRequest (ctx) { calls.set(ctx.requestId, { settles: 0, answered: 0 }) },
      onAnswered (ctx) { calls.get(ctx.requestId)!.answered++ },
      onSettle (ctx, outcome) {
        const c = calls.get(ctx.requestId)!
        c.settles++
        c.outcome = structuredClone({ ...outcome, error: outcome.error ? { code: outcome.error.code } : undefined }) as Outcome
        order.push(ctx.requestId)
      },
    }),
  })
  return { plugin, calls, order }
}

/** Sleeps in its phase when the request's `x-stall` header names it (a slow plugin). */
const stall = (phase: Phase) => definePlugin({
  name: `stall-${phase}`,
  phase,
  configSchema: Type.Object({}),
  create: () => ({ async onRequest (ctx) { if (ctx.headers['x-stall'] === phase) await sleep(300) } }),
})

/** Refuses the call (403, code REFUSED_<PHASE>) in its phase when the request's `x-refuse` header names it. */
const refuse = (phase: Phase) => {
  const code = `REFUSED_${phase.toUpperCase()}`
  return definePlugin({
    name: `refuse-${phase}`,
    phase,
    configSchema: Type.Object({}),
    errors: { [code]: { status: 403, type: 'permission_error', message: { en: 'Refused.', 'zh-CN': '已拒绝。' } } },
    create: (_config, deps) => ({ onRequest (ctx) { if (ctx.headers['x-refuse'] === phase) throw deps.error(code) } }),
  })
}

/** Refuses an answer or a stream event that contains FORBIDDEN. */
const guard = definePlugin({
  name: 'guard',
  phase: 'admit',
  configSchema: Type.Object({}),
  errors: { OUTPUT_BLOCKED: { status: 422, type: 'invalid_request_error', message: { en: 'Blocked.', 'zh-CN': '已拦截。' } } },
  create: (_config, deps) => ({
    onResponse (_ctx, answer) { if (JSON.stringify(answer.body).includes('FORBIDDEN')) throw deps.error('OUTPUT_BLOCKED') },
    onStreamEvent (_ctx, event) { if (JSON.stringify(event.data ?? '').includes('FORBIDDEN')) throw deps.error('OUTPUT_BLOCKED') },
  }),
})

const PHASES = ['connect', 'authenticate', 'inspect', 'admit'] as const
const TEST_PLUGINS = [guard, ...PHASES.map(stall), ...PHASES.map(refuse)]
/**
 * The timeout plugin's bound: to the first byte, then between stream chunks. Generous, so that a
 * loaded machine does not turn an answer into a 408; the deadline tests wait for it once each.
 */
export const TIMEOUT_MS = 1500

/** The default test pipeline: every phase has a stall and a refuser, the timeout plugin on `timeoutRoutes`. */
export function lifePipeline (timeoutRoutes: string[] = ['chat', 'messages', 'responses']): unknown[] {
  return [
    { plugin: 'life-spy' },
    { plugin: 'size-limit', config: { maxBytes: 2000 } },
    { plugin: 'timeout', config: { timeoutMs: TIMEOUT_MS }, routes: timeoutRoutes },
    { plugin: 'stall-connect' },
    { plugin: 'refuse-connect' },
    AUTH_ENTRY,
    { plugin: 'stall-authenticate' },
    { plugin: 'refuse-authenticate' },
    { plugin: 'media-validation' },
    { plugin: 'stall-inspect' },
    { plugin: 'refuse-inspect' },
    { plugin: 'stall-admit' },
    { plugin: 'refuse-admit' },
    { plugin: 'guard' },
  ]
}

export interface LifeOptions {
  pipeline?: unknown[]
  server?: Record<string, unknown>
  /** The gateway's clock (default Date.now). */
  now?: () => number
  /** Plugins a test adds to the registry (its pipeline names them). */
  plugins?: GatewayPlugin[]
}

/** Model ids of the test config: one per upstream protocol. */
export const MODELS = { chat: 'vendor/chat-model', messages: 'msgvendor/msg-model', responses: 'oai/resp-model' } as const

export async function setup (t: Test, opts: LifeOptions = {}) {
  const spy = lifeSpy()
  const chatUp = await startFakeUpstream()
  const msgUp = await startFakeUpstream()
  const respUp = await startFakeUpstream()
  const flaky = await startFakeUpstream((_req, res) => json(res, 500, { error: { message: 'down' } }))
  const doc = upstreamDoc(chatUp.origin, msgUp.origin, [
    { id: 'vendor/flaky', deployments: [{ provider: 'flaky-a', model: 'm' }, { provider: 'flaky-b', model: 'm' }] },
    { id: MODELS.responses, input_modalities: ['text', 'image'], price: { input: 1, cachedInput: 0.5, output: 2 }, deployments: [{ provider: 'up-resp', model: 'up-model' }] },
  ]) as { providers: Record<string, unknown>[], models: unknown[], server?: Record<string, unknown> }
  if (opts.server) doc.server = opts.server
  doc.providers.push({ name: 'up-resp', adapter: 'openai-responses', config: { baseUrl: `${respUp.origin}/v1`, apiKey: 'sk-upstream-secret' } })
  // The shared upstreams' circuits never open here (each test's faults are its own); the flaky
  // ones open on their first failure.
  for (const p of doc.providers) p.circuit = { failureThreshold: 1000 }
  doc.providers.push(
    { name: 'flaky-a', adapter: 'openai-compatible', config: { baseUrl: `${flaky.origin}/v1`, apiKey: 'k' }, circuit: { failureThreshold: 1 } },
    { name: 'flaky-b', adapter: 'openai-compatible', config: { baseUrl: `${flaky.origin}/v1`, apiKey: 'k' }, circuit: { failureThreshold: 1 } },
  )
  const app = await buildTestApp({ plugins: [spy.plugin, ...TEST_PLUGINS, ...(opts.plugins ?? [])], doc, pipeline: opts.pipeline ?? lifePipeline(), now: opts.now })
  let closed = false
  t.teardown(async () => {
    if (!closed) await app.close()
    await Promise.all([chatUp.close(), msgUp.close(), respUp.close(), flaky.close()])
  })
  const url = await listen(app)
  return { app, url, spy, chatUp, msgUp, respUp, flaky, close: async () => { closed = true; await app.close() } }
}

export type Env = Awaited<ReturnType<typeof setup>>

/** Waits for the next call's settle, then a little longer: a second settle would show. */
export async function nextSettle (t: Test, env: Env, before: number): Promise<Seen> {
  t.ok(await until(() => env.spy.order.length > before, 10_000), 'the call settled')
  await sleep(150)
  t.equal(env.spy.order.length, before + 1, 'one call settled, once')
  const seen = env.spy.calls.get(env.spy.order[before])!
  t.equal(seen.settles, 1, 'onSettle ran exactly once')
  return seen
}

export const chatBody = (extra: Record<string, unknown> = {}) => ({ model: MODELS.chat, messages: [{ role: 'user', content: 'Hello' }], ...extra })
export const msgBody = (extra: Record<string, unknown> = {}) => ({ model: MODELS.messages, max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }], ...extra })
export const respBody = (extra: Record<string, unknown> = {}) => ({ model: MODELS.responses, input: 'Hello', ...extra })
export const countBody = (extra: Record<string, unknown> = {}) => ({ model: MODELS.messages, messages: [{ role: 'user', content: 'Hello' }], ...extra })

export async function post (url: string, path: string, body: unknown, headers: Record<string, string> = auth()): Promise<{ status: number, text: string }> {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) })
  return { status: res.status, text: await res.text() }
}

/** Sends a call and hangs up after `ms`, before any answer. */
export function hangUp (url: string, path: string, body: unknown, headers: Record<string, string>, ms: number): Promise<void> {
  return new Promise(resolve => {
    const req = httpRequest(url + path, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json', ...headers } })
    req.on('error', () => resolve())
    req.on('response', () => { req.destroy(); resolve() })
    req.end(JSON.stringify(body))
    setTimeout(() => { req.destroy(); resolve() }, ms)
  })
}

export const pieces = (n: number) => Array.from({ length: n }, () => 'abcd')
