/**
 * @module test/helpers/balance-bound – the call the balance plugin's bound tests admit (exact and
 * lease mode): a body whose bound (its text's bytes) is well above its tokenizer count, and what
 * each of the two holds in micro-units.
 */
import { translateFixture } from '../../testing.ts'
import type { Principal } from '../../index.ts'
import { reservationBoundTokens, reservationInputTokens } from '../../index.ts'

export const ACME: Principal = { keyId: 'key-1', organization: 'acme', project: 'web' }
const FIXTURE = translateFixture().model
/** 1 micro-unit per input token, 2 per output token. */
export const MODEL = { ...FIXTURE, public: { ...FIXTURE.public, context_length: 1_000_000 }, price: { input: 1, output: 2 } }
/** English text: its UTF-8 bytes (the bound) are about four times its tokens. */
export const BODY = { model: 'm/x', max_tokens: 10, messages: [{ role: 'user', content: 'the quick brown fox jumps over the lazy dog '.repeat(200) }] }
export const BYTES = Buffer.byteLength(JSON.stringify(BODY))
const OUTPUT = 2 * 10

/** What a call holds at the bound: the input's bound + the output cap, in micro-units. */
export const bound = reservationBoundTokens(structuredClone(BODY), BYTES, MODEL.public.context_length) + OUTPUT
/** What it holds at the tokenizer's count. */
export const counted = async (): Promise<number> => await reservationInputTokens(structuredClone(BODY), BYTES, MODEL.public.context_length, 'm/x', 8192) + OUTPUT
