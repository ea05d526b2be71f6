// Memory outside the JS heap that V8 does not count: SharedArrayBuffers. V8 counts an ordinary buffer's bytes as
// external memory and starts a full mark of the whole heap for about every 64 MiB of it allocated; with a million
// cached pods the heap is most of a gigabyte, and buffers made by the gigabyte (the cache's slabs) or by the megabyte per second
// (watch frames) kept it marking. A SharedArrayBuffer is freed only when V8 collects its object, which V8 then has
// no reason of its own to hurry: so what has been let go and not yet collected is counted here, process-wide, and
// past a slack the callers make ordinary buffers again, which V8 counts, until it has collected.
//
// The slack grows with what the process holds in such buffers (an eighth of it), as V8 lets its own heap grow by a
// factor of what survived before it marks again: a full mark costs in proportion to the heap, and the heap grows
// with the cache. With a fixed 64 MiB, watch frames at 2,000 pod changes/s (~14 MB/s) used it up every ~5 s; new
// slabs were then ordinary buffers, V8 marked the gateway's whole ~1 GB heap at a million cached pods, and every
// such mark held the members' changes back for up to a second (scenario 6 at full scale).

import { takeTouched } from './touchahead.js';

/** Of the bytes held in uncounted buffers, the share that may await collection before callers fall back. */
const SLACK_SHARE = 1 / 8;

let awaiting = 0;
let held = 0;
const collected = new FinalizationRegistry<number>((bytes) => {
  awaiting -= bytes;
});

/** Bytes of uncounted buffers let go in this process (slabs, frame chunks) that V8 has not collected yet. */
export function awaitingCollectionBytes(): number {
  return awaiting;
}

/** Bytes of uncounted buffers the process holds for long (the cache's slabs in use). */
export function heldUncountedBytes(): number {
  return held;
}

/** buffer is let go: its bytes wait for a collection. */
export function awaitCollection(buffer: ArrayBufferLike, bytes: number): void {
  awaiting += bytes;
  collected.register(buffer, bytes);
}

/**
 * size bytes in a SharedArrayBuffer, or an ordinary buffer once more than the slack awaits collection: slack, or
 * an eighth of what is held (holdUncounted), whichever is more. One made resident ahead (touchahead.ts takeTouched)
 * may be of a size near size, from half to twice it, for any caller; a caller that can use less (smallest < size)
 * may also get one smaller than that, down to smallest. When none is ready, one of fresh bytes is made here (a caller
 * that can use less may ask for less while the one on its way is not ready).
 */
export function uncountedBuffer(size: number, slack: number, smallest = size, fresh = size): Buffer {
  if (awaiting > Math.max(slack, held * SLACK_SHARE)) return Buffer.allocUnsafeSlow(fresh);
  // Made resident ahead by another thread when it was asked for (touchahead.ts touchAhead): no page faults here. Its size
  // may be near size rather than size.
  return Buffer.from(takeTouched(size, smallest) ?? new SharedArrayBuffer(fresh));
}

// A held buffer whose holder is dropped without releasing it (a store nobody uses any more) stops counting when
// it is collected.
const heldCollected = new FinalizationRegistry<number>((bytes) => {
  held -= bytes;
});

/** An uncounted buffer that the caller keeps (a slab): it raises the slack until released or collected. */
export function holdUncounted(b: Buffer): void {
  if (!(b.buffer instanceof SharedArrayBuffer)) return;
  held += b.buffer.byteLength;
  heldCollected.register(b.buffer, b.buffer.byteLength, b.buffer);
}

/** A buffer passed to holdUncounted is no longer kept (the caller then lets it await collection: awaitCollection). */
export function releaseUncounted(b: Buffer): void {
  if (b.buffer instanceof SharedArrayBuffer && heldCollected.unregister(b.buffer)) held -= b.buffer.byteLength;
}

/** From this many bytes on, copyBytes to or from a SharedArrayBuffer goes through Node's C++ (its call costs ~0.2 µs). */
const NATIVE_COPY_BYTES = 512;

/**
 * src[start, end) copied into dst at `at`, as src.copy(dst, at, start, end) does; the bytes copied. To or from a
 * SharedArrayBuffer, V8's copy (Buffer.copy, TypedArray.set) goes through relaxed atomics, byte by byte when the
 * two sides are not aligned alike: ~2.4-2.9 µs for a 5 KB pod where memcpy takes ~0.6-0.8 µs. Every pod the cache
 * stores and every watch frame is copied into one, and every object a list serves is copied out of one (its slab).
 * Buffer.fill with a buffer for its value is one memcpy in Node's C++, whatever the memory is.
 */
export function copyBytes(src: Buffer, dst: Buffer, at: number, start = 0, end = src.length): number {
  // As Buffer.copy clamps: fill would repeat a value shorter than its range.
  const n = Math.min(Math.min(end, src.length) - start, dst.length - at);
  // memcpy takes ranges that do not overlap: a deleted pod's last state is copied within the slab it lives in.
  if (n >= NATIVE_COPY_BYTES && (dst.buffer instanceof SharedArrayBuffer || src.buffer instanceof SharedArrayBuffer) && apart(src, start, dst, at, n)) {
    dst.fill(src.subarray(start, start + n), at, at + n);
    return n;
  }
  return src.copy(dst, at, start, end);
}

/**
 * The parts joined, as Buffer.concat(parts, total) joins them, each copied with copyBytes: Buffer.concat reads a part
 * in a SharedArrayBuffer (an object's slab, a watch frame's chunk) through relaxed atomics.
 */
export function concatBytes(parts: readonly Buffer[], total = parts.reduce((n, p) => n + p.length, 0)): Buffer {
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const p of parts) {
    if (at >= total) break;
    at += copyBytes(p, out, at);
  }
  return at < total ? out.fill(0, at) : out;
}

function apart(src: Buffer, start: number, dst: Buffer, at: number, n: number): boolean {
  if (src.buffer !== dst.buffer) return true;
  const from = src.byteOffset + start;
  const to = dst.byteOffset + at;
  return from + n <= to || to + n <= from;
}
