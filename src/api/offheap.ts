// Memory outside the JS heap that V8 does not count: SharedArrayBuffers. V8 counts an ordinary buffer's bytes as
// external memory and starts a full mark of the whole heap for about every 64 MiB of it allocated; with a million
// cached pods the heap is ~1 GB, and buffers made by the gigabyte (the cache's slabs) or by the megabyte per second
// (watch frames) kept it marking. A SharedArrayBuffer is freed only when V8 collects its object, which V8 then has
// no reason of its own to hurry: so what has been let go and not yet collected is counted here, process-wide, and
// past a slack the callers make ordinary buffers again, which V8 counts, until it has collected.

let awaiting = 0;
const collected = new FinalizationRegistry<number>((bytes) => {
  awaiting -= bytes;
});

/** Bytes of uncounted buffers let go in this process (slabs, frame chunks) that V8 has not collected yet. */
export function awaitingCollectionBytes(): number {
  return awaiting;
}

/** buffer is let go: its bytes wait for a collection. */
export function awaitCollection(buffer: ArrayBufferLike, bytes: number): void {
  awaiting += bytes;
  collected.register(buffer, bytes);
}

/** size bytes in a SharedArrayBuffer, or an ordinary buffer once more than slack bytes await collection. */
export function uncountedBuffer(size: number, slack: number): Buffer {
  return awaiting > slack ? Buffer.allocUnsafeSlow(size) : Buffer.from(new SharedArrayBuffer(size));
}
