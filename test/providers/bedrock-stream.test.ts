/**
 * @module test/providers/bedrock-stream – the ConverseStream decoder on its own (frames split at
 * every byte, corrupt and truncated frames, exception frames) and the refreshing credential
 * provider (one fetch shared, refreshed ahead of expiry, a failure not kept).
 */
import t from 'tap'
import { converseStreamFrames, bedrockExceptionFrame } from '../../testing.ts'
import { ConverseStreamDecoder } from '../../providers/bedrock/converse-stream.ts'
import { refreshingCredentials, type Credentials } from '../../index.ts'

const ANSWER = { content: [{ reasoning: ['a', 'b'], signature: 's' }, { text: ['Hel', 'lo'] }, { toolUse: { toolUseId: 't1', name: 'f', input: { x: 1 } } }], usage: { input: 3, output: 4, cacheRead: 5 } }

/** Events as `name data` lines, the message id (random) left out. */
function names (evs: Array<{ event?: string, data: string }>): string[] {
  return evs.map(e => `${e.event} ${e.data.replace(/"id":"msg_bdrk_[0-9a-f]+"/, '"id":"-"')}`)
}

t.test('frames split at every byte decode as frames sent whole', async t => {
  const bytes = Buffer.concat(converseStreamFrames(ANSWER))
  const whole = new ConverseStreamDecoder('m', 7)
  const expected = names([...whole.push(bytes), ...whole.end()])
  const split = new ConverseStreamDecoder('m', 7)
  const got = []
  for (let i = 0; i < bytes.length; i++) got.push(...split.push(bytes.subarray(i, i + 1)))
  got.push(...split.end())
  t.same(names(got), expected)
  t.same(expected.map(e => e.split(' ')[0]), [
    'message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'message_delta', 'message_stop',
  ])
  const delta = JSON.parse(expected[15].slice('message_delta '.length))
  t.same(delta, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 3, cache_read_input_tokens: 5, cache_creation_input_tokens: 0, output_tokens: 4 } })
})

t.test('the stop waits for the usage; without it the stream still stops at its end', async t => {
  const frames = converseStreamFrames({ content: [{ text: 'x' }] })
  const d = new ConverseStreamDecoder('m', 1)
  const beforeMeta = Buffer.concat(frames.slice(0, -1))
  t.notOk(names(d.push(beforeMeta)).some(e => e.startsWith('message_stop')), 'messageStop alone stops nothing')
  t.same(names(d.push(Buffer.from(frames[frames.length - 1]))).map(e => e.split(' ')[0]), ['message_delta', 'message_stop'])
  const noMeta = new ConverseStreamDecoder('m', 1)
  noMeta.push(Buffer.concat(converseStreamFrames({ content: [{ text: 'x' }], noMetadata: true })))
  t.same(names(noMeta.end()).map(e => e.split(' ')[0]), ['message_delta', 'message_stop'])
})

t.test('a corrupt or truncated frame fails the stream', async t => {
  const frame = Buffer.from(converseStreamFrames({ content: [{ text: 'x' }] })[1])
  frame[frame.length - 6] ^= 0xff
  t.throws(() => new ConverseStreamDecoder('m', 1).push(frame), 'a CRC mismatch')
  const d = new ConverseStreamDecoder('m', 1)
  d.push(Buffer.from(converseStreamFrames({})[0]).subarray(0, 20))
  t.throws(() => d.end(), { name: 'BedrockStreamException' }, 'the body ended inside a frame')
})

t.test('an exception frame: the events before it first, then the failure', async t => {
  const frames = converseStreamFrames({ content: [{ text: ['a', 'b'] }] })
  const bytes = Buffer.concat([frames[0], frames[1], bedrockExceptionFrame('modelStreamErrorException', 'broke'), frames[2]])
  const d = new ConverseStreamDecoder('m', 1)
  t.same(names(d.push(bytes)).map(e => e.split(' ')[0]), ['message_start', 'content_block_start', 'content_block_delta'])
  t.throws(() => d.end(), { name: 'BedrockStreamException', message: /modelStreamErrorException: broke/ })
  const busy = new ConverseStreamDecoder('m', 1)
  t.throws(() => busy.push(Buffer.from(bedrockExceptionFrame('throttlingException', 'slow down'))), { code: 'GW_ERR_UPSTREAM_UNAVAILABLE' }, 'throttling: the gateway\'s 503')
})

t.test('refreshingCredentials: one fetch for concurrent calls, refreshed ahead of expiry, failures not kept', async t => {
  let now = 1_000_000
  let fetches = 0
  let fail = false
  const source = async (): Promise<Credentials> => {
    fetches++
    if (fail) throw new Error('sts down')
    return { accessKeyId: `AK${fetches}`, secretAccessKey: 's', expiration: new Date(now + 60 * 60_000) }
  }
  const creds = refreshingCredentials(source, { refreshBeforeMs: 5 * 60_000, now: () => now })
  const [a, b] = await Promise.all([creds(), creds()])
  t.equal(fetches, 1, 'one fetch shared')
  t.equal(a.accessKeyId, 'AK1')
  t.equal(b.accessKeyId, 'AK1')
  now += 50 * 60_000
  t.equal((await creds()).accessKeyId, 'AK1', 'kept while more than refreshBeforeMs is left')
  now += 6 * 60_000
  fail = true
  await t.rejects(creds(), /sts down/)
  fail = false
  t.equal((await creds()).accessKeyId, 'AK3', 'refreshed after a failed fetch')
  t.equal(fetches, 3)
})
