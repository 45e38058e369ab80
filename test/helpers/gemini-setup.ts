/**
 * @module test/helpers/gemini-setup – a listening gateway in front of the fake Gemini API
 * (`adapter: gemini`), with the official openai and @anthropic-ai/sdk clients and a ledger for
 * usage records.
 */
import type { Test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { buildTestApp, listen, AUTH_ENTRY, TEST_KEY } from './build-test-app.ts'
import { startFakeGemini, GEMINI_TEST_KEY, type FakeGemini, type FakeGeminiOptions, type GeminiRecorded } from '../../testing.ts'
import { openLedger } from '../../core/ledger/index.ts'
import type { Ledger, UsageRecord } from '../../core/ledger/ledger.ts'
import { until } from './until.ts'

/** Gateway model ids and the upstream models behind them. */
export const GEMINI_MODELS = { flash: 'gemini-2.5-flash', pro3: 'gemini-3-pro-preview' } as const

export async function geminiSetup (t: Test, fakeOpts: FakeGeminiOptions = {}, providerConfig: Record<string, unknown> = {}) {
  const fake = await startFakeGemini(fakeOpts)
  const ledger = await openLedger({ backend: 'sqlite', path: ':memory:' })
  await ledger.migrate()
  const config = { apiKey: GEMINI_TEST_KEY, baseUrl: fake.origin, ...providerConfig }
  const price = { input: 1, cachedInput: 0.25, output: 4 }
  const supported = ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'reasoning_effort', 'response_format', 'metadata']
  const app = await buildTestApp({
    ledger,
    pipeline: [AUTH_ENTRY, { plugin: 'balance', config: { enforce: false } }],
    doc: {
      providers: [{ name: 'google', adapter: 'gemini', config }],
      models: [
        { id: 'google/flash', input_modalities: ['text', 'image'], price, supported_parameters: supported, deployments: [{ provider: 'google', model: GEMINI_MODELS.flash }] },
        { id: 'google/pro3', input_modalities: ['text', 'image'], price, supported_parameters: supported, deployments: [{ provider: 'google', model: GEMINI_MODELS.pro3 }] },
      ],
    },
  })
  t.teardown(async () => { await app.close(); await fake.close(); await ledger.close() })
  const base = await listen(app)
  const anthropic = new Anthropic({ baseURL: base, apiKey: TEST_KEY, maxRetries: 0 })
  const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: TEST_KEY, maxRetries: 0 })
  return { fake, ledger, base, anthropic, openai }
}

export async function recordsOf (ledger: Ledger, n: number): Promise<UsageRecord[]> {
  await until(async () => (await ledger.listUsage({})).length >= n)
  return ledger.listUsage({})
}

/** The last generate request the fake received, its body as an object. */
export function lastGenerate (fake: FakeGemini): GeminiRecorded & { body: Record<string, unknown> } {
  const r = [...fake.requests].reverse().find(q => q.operation === 'generateContent' || q.operation === 'streamGenerateContent')
  if (r === undefined) throw new Error('no generate request')
  return { ...r, body: r.body as Record<string, unknown> }
}

export const WEATHER_SCHEMA = { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] }
