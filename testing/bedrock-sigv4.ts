/**
 * @module testing/bedrock-sigv4 – the fake Bedrock's authentication: a request's SigV4 signature
 * recomputed with @smithy/signature-v4 (service `bedrock`) over exactly the method, path, query,
 * signed headers and body received, with the key id, session token, scope and date checked as
 * AWS checks them.
 */
import { createHash } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { Hash } from '@smithy/hash-node'
import { SignatureV4 } from '@smithy/signature-v4'

/** AWS credentials the fake verifies signatures with. */
export interface AwsTestCredentials { accessKeyId: string, secretAccessKey: string, sessionToken?: string }

/** The credentials a fake Bedrock accepts unless told otherwise (AWS's documented example key pair). */
export const BEDROCK_TEST_CREDENTIALS: Readonly<AwsTestCredentials> = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
}

/** A request of either transport, as the fake reads it. */
export interface Req { method?: string, url?: string, headers: IncomingHttpHeaders }

export const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name]
  return Array.isArray(v) ? v.join(',') : v
}

const isoBasic = (ms: number): string => new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')

function amzDate (s: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s)
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : undefined
}

export interface AuthFailure { type: string, message: string }

const SIGNATURE_MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service ' +
  'documentation for details.'

/**
 * Verifies a request's SigV4 signature as AWS does, for the signing service `service` (`bedrock`
 * for Bedrock Runtime and its OpenAI-compatible endpoint, `bedrock-mantle` for Bedrock Mantle):
 * undefined when it holds, else the error AWS would answer.
 */
export async function verifySigV4 (req: Req, body: Buffer, creds: AwsTestCredentials, region: string, service = 'bedrock'): Promise<AuthFailure | undefined> {
  const auth = header(req.headers, 'authorization') ?? ''
  const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(auth)
  if (!m) return { type: 'IncompleteSignatureException', message: `Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization=${auth.split(' ')[0]}` }
  const [akid, day, scopeRegion, scopeService, term] = m[1].split('/')
  const invalidToken = { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }
  if (akid !== creds.accessKeyId) return invalidToken
  const token = header(req.headers, 'x-amz-security-token')
  if (token !== creds.sessionToken) return invalidToken
  if (term !== 'aws4_request') return { type: 'InvalidSignatureException', message: "Credential should be scoped with a valid terminator: 'aws4_request'." }
  if (scopeService !== service) return { type: 'InvalidSignatureException', message: `Credential should be scoped to correct service: '${service}'.` }
  if (scopeRegion !== region) return { type: 'InvalidSignatureException', message: 'Credential should be scoped to a valid region. ' }
  const dateText = header(req.headers, 'x-amz-date') ?? ''
  const date = amzDate(dateText)
  if (!date) return { type: 'IncompleteSignatureException', message: 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.' }
  if (dateText.slice(0, 8) !== day) return { type: 'InvalidSignatureException',
    message: `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${dateText.slice(0, 8)}', from '${dateText}'.` }
  // AWS accepts a request signed up to 15 minutes before or after its clock.
  const skew = Date.now() - date.getTime()
  if (skew > 15 * 60_000) return { type: 'InvalidSignatureException',
    message: `Signature expired: ${dateText} is now earlier than ${isoBasic(Date.now() - 15 * 60_000)} (${isoBasic(Date.now())} - 15 min.)` }
  if (skew < -15 * 60_000) return { type: 'InvalidSignatureException',
    message: `Signature not yet current: ${dateText} is still later than ${isoBasic(Date.now() + 15 * 60_000)} (${isoBasic(Date.now())} + 15 min.)` }
  const declared = header(req.headers, 'x-amz-content-sha256')
  if (declared !== undefined && declared !== 'UNSIGNED-PAYLOAD' && declared !== createHash('sha256').update(body).digest('hex')) {
    return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  }
  const signed = m[2].split(';')
  if (!signed.includes('host') && !signed.includes(':authority')) return { type: 'InvalidSignatureException', message: "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization." }
  const headers: Record<string, string> = {}
  for (const name of signed) {
    // HTTP/2 carries the host as :authority
    const v = header(req.headers, name) ?? (name === 'host' ? header(req.headers, ':authority') : undefined)
    if (v === undefined) return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
    headers[name] = v
  }
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  const query: Record<string, string | string[]> = {}
  if (q >= 0) {
    for (const [k, v] of new URLSearchParams(url.slice(q + 1))) {
      const prev = query[k]
      query[k] = prev === undefined ? v : [...(Array.isArray(prev) ? prev : [prev]), v]
    }
  }
  const signer = new SignatureV4({ credentials: creds, region, service, sha256: Hash.bind(null, 'sha256'), applyChecksum: false })
  const host = headers.host ?? ''
  const again = await signer.sign({
    method: req.method ?? 'POST', protocol: 'http:', hostname: host.split(':')[0], path: q >= 0 ? url.slice(0, q) : url, query, headers, body,
  }, { signingDate: date, signableHeaders: new Set(signed) })
  const mine = /SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(String(again.headers.authorization ?? again.headers.Authorization))
  if (!mine || mine[1] !== m[2] || mine[2] !== m[3]) return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  return undefined
}

/** The request as a fake upstream recorded it (see `Recorded`): what `checkAwsSignature` reads. */
export interface SignedRecord { method: string, path: string, headers: IncomingHttpHeaders, text: string }

/**
 * A fake upstream's check of an AWS-signed request (an `aws` block on `openai-compatible` or
 * `anthropic-compatible`): the SigV4 signature recomputed over the method, raw path, signed headers
 * and body as received. Undefined when it holds, else AWS's error type and message.
 * @example
 * const up = await startFakeUpstream(async (req, res) => {
 *   const bad = await checkAwsSignature(req, { region: 'us-west-2', service: 'bedrock-mantle' })
 *   if (bad) return json(res, 403, { message: bad })
 *   json(res, 200, chatCompletion('hi'))
 * })
 */
export async function checkAwsSignature (req: SignedRecord, opts: { region?: string, service?: string, credentials?: AwsTestCredentials } = {}): Promise<string | undefined> {
  const failure = await verifySigV4({ method: req.method, url: req.path, headers: req.headers }, Buffer.from(req.text), opts.credentials ?? BEDROCK_TEST_CREDENTIALS, opts.region ?? 'us-east-1',
    opts.service ?? 'bedrock')
  return failure === undefined ? undefined : `${failure.type}: ${failure.message}`
}
