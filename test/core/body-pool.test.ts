/**
 * The pool of large-body buffers: a buffer is used again only when nothing can read or send its
 * bytes any more (its call settled, and every upstream request that carried them seen written to
 * an HTTP/1.1 socket that has since handed all its bytes to the kernel); otherwise it is left to
 * the garbage collector.
 */
import t from 'tap'
import { channel } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { leaseBody, pooledFree, SLOT_BYTES, type BodyLease } from '../../core/dispatch/body-pool.ts'

const sendHeaders = channel('undici:client:sendHeaders')
/** What undici publishes as it writes a request's head: the request (its body) and the socket. */
const written = (body: unknown, socket: Partial<Socket> & { alpnProtocol?: string | false }): void => {
  sendHeaders.publish({ request: { body }, headers: '', socket })
}

/** Takes every free buffer out of the pool (leases it), so each test starts from an empty pool. */
function drain (): BodyLease[] {
  const out: BodyLease[] = []
  while (pooledFree() > 0) out.push(leaseBody(10)!)
  return out
}

t.test('a lease with nothing sent goes back at its end, once, and its memory is used again', async t => {
  drain()
  const a = leaseBody(100_000)!
  t.equal(a.bytes.length, 100_000, 'a view of exactly the body\'s size')
  t.equal(a.bytes.buffer.byteLength, SLOT_BYTES)
  a.end()
  t.equal(pooledFree(), 1)
  a.end()
  t.equal(pooledFree(), 1, 'a second end does not give it back twice')
  const b = leaseBody(5)!
  t.equal(b.bytes.buffer, a.bytes.buffer, 'the same memory, reused')
  t.equal(pooledFree(), 0)
  t.equal(leaseBody(SLOT_BYTES + 1), undefined, 'a body larger than a slot is not pooled')
})

t.test('bytes sent upstream: reused only when every send was seen on a socket that has written everything', async t => {
  drain()
  const flushed = { writableLength: 0 }
  const queued = { writableLength: 4096 }

  const seen = leaseBody(1000)!
  seen.sending(seen.bytes, false)
  written(seen.bytes, flushed)
  seen.end()
  t.equal(pooledFree(), 1, 'sent on a socket with nothing left to write: reused')
  drain()

  const stuck = leaseBody(1000)!
  stuck.sending(stuck.bytes, false)
  written(stuck.bytes, queued)
  stuck.end()
  t.equal(pooledFree(), 0, 'bytes may still be queued on the socket: never reused')

  const unseen = leaseBody(1000)!
  unseen.sending(unseen.bytes, false)
  unseen.end()
  t.equal(pooledFree(), 0, 'a send whose socket was not seen: never reused')

  const twice = leaseBody(1000)!
  twice.sending(twice.bytes, false)
  written(twice.bytes, flushed)
  twice.sending(twice.bytes, false)
  twice.end()
  t.equal(pooledFree(), 0, 'two sends, one seen: never reused')

  const h2 = leaseBody(1000)!
  h2.sending(h2.bytes, false)
  written(h2.bytes, { writableLength: 0, alpnProtocol: 'h2' })
  h2.end()
  t.equal(pooledFree(), 0, 'HTTP/2 writes from its own queue: its socket does not count')

  const inProcess = leaseBody(1000)!
  inProcess.sending(inProcess.bytes.subarray(10, 20), true)
  inProcess.end()
  t.equal(pooledFree(), 0, 'any view of the bytes given to an in-process adapter: never reused')

  const other = leaseBody(1000)!
  other.sending(Buffer.from(other.bytes), false)
  other.sending('{"model":"x"}', false)
  other.sending(undefined, true)
  written(Buffer.from('unrelated'), queued)
  other.end()
  t.equal(pooledFree(), 1, 'copies, text and other requests\' bodies are not its bytes: reused')
  drain()

  const late = leaseBody(1000)!
  late.end()
  t.equal(pooledFree(), 1)
  late.sending(late.bytes, false)
  written(late.bytes, queued)
  t.equal(pooledFree(), 1, 'after its end, a lease follows nothing')
})

t.test('the index entry the lease was given is forgotten at its end', async t => {
  const index = new WeakMap<object, unknown>()
  const owner = {}
  const lease = leaseBody(10)!
  index.set(owner, lease.bytes)
  lease.own(owner, index)
  t.ok(index.has(owner))
  lease.end()
  t.notOk(index.has(owner), 'nothing reaches the bytes through it any more')
})
