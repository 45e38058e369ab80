/** @module plugins/media-validation/schema – config of media checks. */
import { Type, type Static } from '../../index.ts'

export const MediaValidationConfig = Type.Object({
  imageMediaTypes: Type.Array(Type.String(), {
    default: ['image/png', 'image/jpeg', 'image/jpg', 'image/gif', 'image/webp'],
    description: 'Media types accepted in image data URIs and base64 image blocks.',
  }),
  allowHosts: Type.Array(Type.String({ minLength: 1 }), {
    default: [],
    description: 'Host names (exact, e.g. images.internal) or literal addresses that media URLs may name even when they are not public; these are not resolved.',
  }),
  allowRanges: Type.Array(Type.String({ minLength: 1 }), {
    default: [],
    description: 'Address ranges (CIDR, e.g. 10.1.0.0/16, or one address) accepted in media URLs besides public addresses, literal or resolved.',
  }),
  maxHostsPerRequest: Type.Integer({
    minimum: 1, default: 8,
    description: 'Most distinct host names one request may use in media URLs (each costs a DNS lookup); more gets 400.',
  }),
  resolveTimeoutMs: Type.Integer({
    minimum: 1, default: 2000,
    description: 'How long the DNS lookups of one request may take together (ms); a name not resolved in time is refused.',
  }),
  dnsCacheMs: Type.Integer({
    minimum: 0, default: 10000,
    description: 'How long a lookup result (addresses, or "does not exist") is reused (ms); 0 disables the cache.',
  }),
  dnsCacheMaxHosts: Type.Integer({
    minimum: 1, default: 10000,
    description: 'Most host names kept in the lookup cache (least recently used evicted).',
  }),
}, { additionalProperties: false })

export type MediaValidationConfigT = Static<typeof MediaValidationConfig>
