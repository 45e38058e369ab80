/**
 * @module test/providers/bedrock-conformance – the provider conformance suite run on the native
 * Bedrock adapter through Bedrock's own wire (`bedrockWire`): the golden chat, messages and
 * Responses cases for a messages upstream, answered as Converse JSON and ConverseStream frames by a
 * fake that verifies each request's SigV4 signature and checks its body as Bedrock does.
 */
import t from 'tap'
import { runProviderConformance, bedrockWire, BEDROCK_TEST_CREDENTIALS } from '../../testing.ts'
import bedrock from '../../providers/bedrock/index.ts'

/** Golden cases the adapter cannot pass by design: Converse lacks the feature, or the adapter refuses the request with 400 (documented in README). */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  'chat → messages: tool_choice "none" becomes {"type":"none"}': 'Converse has no tool choice "none": the tools are left out of the request',
  'chat → messages: parallel_tool_calls false becomes disable_parallel_tool_use': 'Converse has no switch for parallel tool calls',
  'messages → messages: tool_choice and stop_sequences pass': 'Converse has no switch for parallel tool calls (disable_parallel_tool_use); tool_choice and stop_sequences are checked by the cases without it',
  'messages → messages: image blocks (URL and base64) and a PDF document pass': 'an image by URL is refused with 400 (Converse takes bytes)',
  'responses → messages: input_image by URL and by data URI become image blocks (image/jpg read as what the bytes are), an input_file PDF a document block': 'an image by URL is refused with 400 (Converse takes bytes)',
}

t.test('bedrock (SigV4)', async t => {
  await runProviderConformance(t, {
    adapter: bedrock,
    wire: bedrockWire({ region: 'us-east-1' }),
    config: baseUrl => ({ region: 'us-east-1', baseUrl, credentials: { ...BEDROCK_TEST_CREDENTIALS } }),
    unsupported: UNSUPPORTED,
    checkRequest (req) {
      if (!/^\/model\/up-conformance\/converse(-stream)?$/.test(req.path)) throw new Error(`path ${req.path}`)
      if (!String(req.headers.authorization).startsWith('AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/')) throw new Error('not signed')
    },
  })
})

t.test('bedrock (Bedrock API key)', async t => {
  await runProviderConformance(t, {
    adapter: bedrock,
    wire: bedrockWire({ region: 'us-east-1', credentials: null, apiKey: 'bedrock-api-key-conformance' }),
    config: baseUrl => ({ region: 'us-east-1', baseUrl, apiKey: 'bedrock-api-key-conformance' }),
    unsupported: UNSUPPORTED,
    checkRequest (req) {
      if (req.headers.authorization !== 'Bearer bedrock-api-key-conformance') throw new Error('no Bearer key')
      if (req.headers['x-amz-date'] !== undefined) throw new Error('signed as well')
    },
  })
})
