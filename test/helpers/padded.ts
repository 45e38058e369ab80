/**
 * @module test/helpers/padded – a value as a same-protocol splice writes it over the client's
 * bytes: `to` followed by the spaces that keep it as long as `from` in UTF-8.
 */
export const padded = (from: string, to: string): string => to + ' '.repeat(Buffer.byteLength(from) - Buffer.byteLength(to))
