/**
 * The pool of large-body buffers: a buffer is used again only when nothing can read or send its
 * bytes any more (its call settled, and every upstream request that carried them seen written to
 * an HTTP/1.1 socket that has since handed all its bytes to the kernel); otherwise it is left to
 * the garbage collector.
 */
import t from 'tap'
import { channel } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { emptyPool, HEADROOM, leaseBody, pooledFree, SLOT_BYTES } from '../../core/dispatch/body-pool.ts'

const sendHeaders = channel('undici:client:sendHeaders')
/** What undici publishes as it writes a request's head: the request (its body) and the socket. */
const written = (body: unknown, socket: Partial<Socket> & { alpnProtocol?: string | false }): void => {
  sendHeaders.publish({ request: { body }, headers: '', socket })
}

/** Empties the pool, so each test starts from a pool with nothing unused. */
const drain = emptyPool

t.test('a lease with nothing sent goes back at its end, once, and its memory is used again', async t => {
  drain()
  const a = leaseBody(100_000)!
  t.equal(a.bytes.length, 100_000, 'a view of exactly the body\'s size')
  t.equal(a.bytes.buffer.byteLength, 128 * 1024, 'in the smallest pooled size that holds it')
  t.equal(leaseBody(128 * 1024 + 1)!.bytes.buffer.byteLength, 256 * 1024, 'sizes go by powers of two')
  t.equal(leaseBody(SLOT_BYTES)!.bytes.buffer.byteLength, SLOT_BYTES)
  a.end()
  t.equal(pooledFree(), 1)
  a.end()
  t.equal(pooledFree(), 1, 'a second end does not give it back twice')
  t.equal(leaseBody(200_000)!.bytes.buffer.byteLength, 256 * 1024, 'another size is not served from it')
  t.equal(pooledFree(), 1)
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

t.test('a lease\'s second buffer (an edited copy of the body) follows the same rules, and returns with the first', async t => {
  drain()
  const flushed = { writableLength: 0 }
  const a = leaseBody(1000)!
  const copy = a.spare(1040)!
  t.equal(copy.length, 1040)
  t.not(copy.buffer, a.bytes.buffer, 'memory of its own')
  t.equal(a.spare(900)!.buffer, copy.buffer, 'the same memory for a later copy')
  t.equal(a.spare(SLOT_BYTES + 1), undefined, 'larger than a slot: none')
  a.sending(copy, false)
  written(copy, flushed)
  a.end()
  t.equal(pooledFree(), 2, 'both buffers back: the copy was seen written and flushed')
  t.equal(a.spare(10), undefined, 'none after the end')
  drain()

  const b = leaseBody(1000)!
  const bCopy = b.spare(1000)!
  b.sending(bCopy, false)
  b.end()
  t.equal(pooledFree(), 0, 'the copy sent on an unseen socket: neither buffer is reused')

  const c = leaseBody(1000)!
  const cCopy = c.spare(1000)!
  c.sending(c.bytes, false)
  written(c.bytes, flushed)
  c.sending(cCopy, false)
  written(cCopy, { writableLength: 1 })
  c.end()
  t.equal(pooledFree(), 0, 'one attempt in place, the next a copy still queued: neither is reused')
})

t.test('unused buffers are kept up to 16 MiB together; the rest are left to the garbage collector', async t => {
  drain()
  const leases = Array.from({ length: 10 }, () => leaseBody(SLOT_BYTES)!)
  for (const l of leases) l.end()
  t.equal(pooledFree(), 8, 'eight 2 MiB buffers kept, two dropped')
  const small = leaseBody(1000)!
  small.end()
  t.equal(pooledFree(), 8, 'the budget is full: not even a small one more')
  leaseBody(SLOT_BYTES)
  const again = leaseBody(1000)!
  again.end()
  t.equal(pooledFree(), 8, 'one large taken out (7 left) makes room for a small one')
  drain()
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

t.test('an insertion goes into the headroom before the body, and is undone exactly', async t => {
  drain()
  const body = '{"stream":true,"model":"m","messages":[]}'
  const lease = leaseBody(body.length)!
  lease.bytes.write(body)
  const at = body.indexOf('"model"')
  const add = '"stream_options":{"include_usage":true},'
  const out = lease.insertAt(at, add, Buffer.byteLength(add))!
  t.equal(out.toString(), body.slice(0, at) + add + body.slice(at), 'the text before the model key, the insertion, the rest')
  t.equal(out.buffer, lease.bytes.buffer, 'in the same memory: no copy')
  t.equal(out.byteOffset + out.length, lease.bytes.byteOffset + lease.bytes.length, 'ending where the body ends')
  t.equal(lease.insertAt(at, add, Buffer.byteLength(add)), undefined, 'one insertion at a time')
  lease.restore()
  t.equal(lease.bytes.toString(), body, 'restored: the body\'s own bytes again')
  lease.restore()
  t.equal(lease.bytes.toString(), body, 'a second restore changes nothing')
  const two = '"é":1,'
  t.equal(lease.insertAt(1, two, Buffer.byteLength(two))!.toString(), '{"é":1,"stream":true,"model":"m","messages":[]}', 'another insertion after the restore, its length in bytes')
  lease.restore()
  t.equal(lease.bytes.toString(), body)

  t.notOk(lease.canInsert(at, HEADROOM + 1), 'no more than the headroom')
  t.ok(lease.canInsert(at, HEADROOM))
  t.notOk(lease.canInsert(body.length + 1, 1), 'not past the body')
  const long = leaseBody(10_000)!
  t.ok(long.canInsert(1024, 10))
  t.notOk(long.canInsert(1025, 10), 'more than 1024 bytes to move: the caller copies instead')
  const full = leaseBody(SLOT_BYTES)!
  t.equal(full.bytes.byteOffset, 0, 'a body filling its buffer has no headroom')
  t.notOk(full.canInsert(1, 1))
  t.equal(leaseBody(SLOT_BYTES - HEADROOM)!.bytes.byteOffset, HEADROOM, 'one that leaves room for it has')
  lease.end()
  t.notOk(lease.canInsert(at, 1), 'none after the end')
  t.equal(lease.insertAt(at, 'x', 1), undefined)
  drain()
})
