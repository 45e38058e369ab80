/**
 * @module providers/azure-openai/errors – Azure OpenAI's error answers → gateway errors.
 *
 * A prompt Azure's content filter blocked is a 400 with `error.code: "content_filter"` and the
 * categories under `innererror.content_filter_result`: the client gets a 400 that says so in
 * words of the gateway's own (Azure's text carries links), with `error.metadata` `{reason:
 * "content_filter", categories}`. Every other answer maps as for any OpenAI-style upstream.
 * A finish reason `content_filter` on a 200 answer is no error and passes through as it is.
 */
import { defaultMapError, gwError, type GatewayError, type UpstreamResponse } from '../../index.ts'

/** The shape of an Azure error body, as far as it is read here. */
interface AzureErrorBody {
  error?: {
    code?: unknown
    innererror?: { code?: unknown, content_filter_result?: unknown }
  }
}

/** The categories the filter result marks `filtered: true`, sorted. */
export function filteredCategories (result: unknown): string[] {
  if (result === null || typeof result !== 'object') return []
  return Object.entries(result as Record<string, unknown>)
    .filter(([, v]) => v !== null && typeof v === 'object' && (v as { filtered?: unknown }).filtered === true)
    .map(([k]) => k)
    .sort()
}

/** A content-filter refusal as the client's 400, or undefined for any other answer. */
export function contentFilterError (status: number, text: string): GatewayError | undefined {
  if (status !== 400) return undefined
  let body: AzureErrorBody | undefined
  try { body = JSON.parse(text) as AzureErrorBody } catch { return undefined }
  const e = body?.error
  if (e?.code !== 'content_filter' && e?.innererror?.code !== 'ResponsibleAIPolicyViolation') return undefined
  const categories = filteredCategories(e?.innererror?.content_filter_result)
  const which = categories.length > 0 ? ` (${categories.join(', ')})` : ''
  return gwError('GW_ERR_UPSTREAM_BAD_REQUEST', [`content_filter: the provider's content filter blocked the prompt${which}`], {
    metadata: { reason: 'content_filter', categories },
  })
}

/** Azure's error answer → the gateway error: a content-filter refusal, else core's mapping. */
export function mapAzureError (status: number, headers: UpstreamResponse['headers'], text: string): GatewayError {
  return contentFilterError(status, text) ?? defaultMapError(status, headers, text)
}
