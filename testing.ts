/**
 * @module model-gateway/testing – the test kit (`exports["./testing"]`): a fake request context for
 * calling plugin hooks directly, a loopback fake upstream for every wire protocol (chat completions,
 * messages, the Responses API), a fake Amazon Bedrock Runtime (SigV4-verifying, event-stream framed), a fake Gemini API (thought-signature checking), a fake Vertex AI (a token endpoint that
 * verifies service-account JWTs, Claude's rawPredict paths), an outcome spy, and the provider conformance suite that the built-in
 * adapters pass.
 */
export { fakeContext, fakeOutcome, pluginDeps } from './testing/fake-context.ts'
export type { FakeContext, FakeContextInit } from './testing/fake-context.ts'
export {
  startFakeUpstream, json, sse, chatChunk, chatUsageChunk, chatTextStream, chatCompletion, msgEvent,
  messagesTextStream, messagesResponse, DONE, responsesResponse, responsesTextStream, responsesUsage, respEvent,
  checkMessagesRequest, MESSAGES_API_VERSIONS, KNOWN_BETAS, MID_CONVERSATION_SYSTEM_BETA,
} from './testing/fake-upstream.ts'
export type { FakeUpstream, Recorded, Handler, SseOptions, ResponsesUsageCounts, MessagesUsageCounts, MessagesCheckOptions, MessagesRefusal } from './testing/fake-upstream.ts'
export {
  startFakeBedrock, BEDROCK_TEST_CREDENTIALS, BEDROCK_ERROR_STATUS, UNKNOWN_OPERATION_BODY, bedrockError, bedrockEventFrame, bedrockExceptionFrame,
  decodeBedrockStream, bedrockUsage, converseResponse, converseStreamEvents, converseStreamFrames, checkConverseRequest,
} from './testing/fake-bedrock.ts'
export type {
  FakeBedrock, FakeBedrockOptions, BedrockRecorded, BedrockOperation, BedrockScript, BedrockReply, BedrockAnswer, BedrockBlock,
  BedrockUsage, BedrockStopReason, BedrockErrorReply, BedrockCountScript, BedrockStreamException, BedrockStreamExceptionType,
  AwsTestCredentials, DecodedFrame, BedrockResponse,
} from './testing/fake-bedrock.ts'
export { bedrockWire, messagesFromConverse, converseUsage } from './testing/bedrock-conformance.ts'
export { checkAwsSignature } from './testing/bedrock-sigv4.ts'
export type { SignedRecord } from './testing/bedrock-sigv4.ts'
export type { BedrockWireOptions } from './testing/bedrock-conformance.ts'
export { vertexClaudeWire } from './testing/vertex-conformance.ts'
export type { VertexClaudeWireOptions } from './testing/vertex-conformance.ts'
export { geminiWire, vertexGeminiWire, messagesFromGemini } from './testing/gemini-conformance.ts'
export type { GeminiWireOptions, VertexGeminiWireOptions } from './testing/gemini-conformance.ts'
export {
  startFakeVertex, checkVertexClaudeBody, vertexClaudeResponse, vertexClaudeEvents, VERTEX_ANTHROPIC_VERSION, CLOUD_PLATFORM_SCOPE,
} from './testing/fake-vertex.ts'
export type {
  FakeVertex, FakeVertexOptions, VertexRecorded, VertexOperation, VertexScript, VertexReply, VertexClaudeAnswer, VertexClaudeBlock,
  VertexErrorReply, TestServiceAccount,
} from './testing/fake-vertex.ts'
export { startFakeGemini, checkGeminiRequest, geminiError, geminiUsage, GEMINI_TEST_KEY } from './testing/fake-gemini.ts'
export type {
  FakeGemini, FakeGeminiOptions, GeminiRecorded, GeminiAnswer, GeminiScriptPart, GeminiUsage, GeminiErrorReply, GeminiReply,
  GeminiRecordedScript, GeminiCountScript, GeminiMethodName, GeminiCheckOptions,
} from './testing/fake-gemini.ts'
export { memoryStore, memoryLedger, runPrepared } from './testing/backends.ts'
export type { MemoryStoreOptions } from './testing/backends.ts'
export { outcomeSpy } from './testing/outcome-spy.ts'
export type { SpyRecord } from './testing/outcome-spy.ts'
export { translateFixture, parseSse, emitted } from './testing/translate-fixture.ts'
export { runProviderConformance } from './testing/conformance.ts'
export type { ConformanceOptions, ConformanceWire, WireReply, SuiteTest } from './testing/conformance.ts'
export {
  GOLDEN_CASES, GOLDEN_ANSWERS, GOLDEN_STREAMS, GOLDEN_USAGE, GOLDEN_PARAMS,
  STOP_REASON_TO_FINISH, FINISH_TO_STOP_REASON, MESSAGES_TOOL_CHOICE_TO_CHAT, CHAT_TOOL_CHOICE_TO_MESSAGES,
  goldenBody, matches, standardUsage, clientUsage, upstreamAnswerBody, upstreamStreamEvents, frameUpstream, streamShape,
} from './testing/golden.ts'
export type { GoldenCase, GoldenAnswer, GoldenStream, GoldenUpstreamAnswer, GoldenUpstreamStream, SseFraming } from './testing/golden.ts'
export {
  RESPONSES_UPSTREAM_CASES, RESPONSES_UPSTREAM_ANSWERS, RESPONSES_UPSTREAM_STREAMS, responsesUpstreamUsage, responsesAnswerBody, responsesUpstreamEvents,
} from './testing/conformance-responses.ts'
export type { ResponsesOutputItem, ResponsesUpstreamCase, ResponsesUpstreamAnswer, ResponsesUpstreamStream } from './testing/conformance-responses.ts'
export { RESPONSES_GOLDEN_CASES, RESPONSES_GOLDEN_ANSWERS, RESPONSES_GOLDEN_STREAMS, responsesGoldenBody, responsesStreamShape } from './testing/golden-responses.ts'
export type { ResponsesGoldenCase, ResponsesGoldenAnswer, ResponsesGoldenStream } from './testing/golden-responses.ts'
