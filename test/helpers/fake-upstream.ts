/** @module test/helpers/fake-upstream – the kit's loopback fake upstream, plus this repo's fixture files and config pieces. */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { ServerResponse } from 'node:http'
import { randomBytes } from 'node:crypto'
import * as kit from '../../testing/fake-upstream.ts'
import { readPrompt } from '../../providers/echo/prompt.ts'
import { answer } from '../../providers/echo/answer.ts'
import { messagesJson, messagesStream } from '../../providers/echo/render.ts'

export * from '../../testing/fake-upstream.ts'

/**
 * This repo's tests read what the upstream received as the JSON they built the fixture for
 * (`req.body.messages[0].content`), and a wrong guess fails the test's own assertion. The kit's
 * `Recorded.body` is `unknown` (what an outside author narrows); here it is read loosely, in test
 * code only.
 */
export type Recorded = Omit<kit.Recorded, 'body'> & { body: any }
export type Handler = (req: Recorded, res: ServerResponse) => void | Promise<void>
export type FakeUpstream = Omit<kit.FakeUpstream, 'requests' | 'handle'> & { requests: Recorded[], handle (fn: Handler): void }

/** The kit's loopback upstream, its recorded bodies read loosely (see Recorded). */
export const startFakeUpstream = kit.startFakeUpstream as (handler?: Handler) => Promise<FakeUpstream>

/** A fixture file of test/fixtures/upstream split into events (blank-line separated, framing kept). */
export function fixtureEvents (name: string): string[] {
  const text = readFileSync(resolve('test/fixtures/upstream', name), 'utf8')
  return text.split(/(?<=\n\n)/).filter(s => s.trim() !== '')
}

/** Config doc pieces: providers and models pointing at fake upstreams. */
export function upstreamDoc (chatOrigin: string, messagesOrigin: string, extraModels: unknown[] = []): Record<string, unknown> {
  return {
    providers: [
      { name: 'up-chat', adapter: 'openai-compatible', config: { baseUrl: `${chatOrigin}/v1`, apiKey: 'sk-upstream-secret' } },
      { name: 'up-msg', adapter: 'anthropic-compatible', config: { baseUrl: messagesOrigin, apiKey: 'sk-ant-upstream-secret' } },
    ],
    models: [
      { id: 'vendor/chat-model', input_modalities: ['text', 'image'], price: { input: 1, cachedInput: 0.5, output: 2 }, deployments: [{ provider: 'up-chat', model: 'up-model' }] },
      { id: 'msgvendor/msg-model', input_modalities: ['text', 'image'], price: { input: 1, cachedInput: 0.5, output: 2 }, supported_parameters: ['temperature', 'top_p', 'max_tokens', 'stop', 'tools', 'tool_choice', 'stream', 'stop_sequences', 'thinking', 'metadata'], deployments: [{ provider: 'up-msg', model: 'up-model' }] },
      { id: 'vendor/text-only', input_modalities: ['text'], deployments: [{ provider: 'up-chat', model: 'up-text' }] },
      { id: 'vendor/video-model', input_modalities: ['text', 'image', 'video'], deployments: [{ provider: 'up-chat', model: 'up-video' }] },
      ...extraModels,
    ],
  }
}

/**
 * A handler for a messages upstream that checks requests as Anthropic's API does (the kit's
 * checkMessagesRequest: versions, betas, roles) and answers like the echo model (its text, tool
 * calls built from the tool's schema, usage; streamed when asked; count_tokens too).
 */
export function anthropicLike (opts: kit.MessagesCheckOptions = {}): Handler {
  return (req, res) => {
    const refused = kit.checkMessagesRequest(req, opts)
    if (refused) return kit.json(res, refused.status, refused.body, { 'request-id': 'req_fake' })
    const prompt = readPrompt(req.body, 'messages')
    if (req.path.split('?')[0].endsWith('/count_tokens')) return kit.json(res, 200, { input_tokens: answer(prompt, 'count').inputTokens })
    const a = answer(prompt, randomBytes(6).toString('hex'))
    const id = `msg_fake${randomBytes(6).toString('hex')}`
    if (req.body.stream === true) return kit.sse(res, [...messagesStream(a, id, req.body.model)])
    kit.json(res, 200, messagesJson(a, id, req.body.model), { 'request-id': 'req_fake' })
  }
}
