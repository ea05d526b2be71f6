// Fresh memory made resident ahead of need, on a thread of its own (touchworker.ts).
//
// The first write to each 4 KiB page of fresh memory is a page fault. The cache writes each object's JSON into
// fresh slabs (~5 GB at a million pods), and on the benchmark's VM a fault cost ~2 us for the machine's first few
// GiB in use and 8-12 us past them (the host backs the page too): the copy of each pod into its slab was 24 s of
// the event loop's 66 s in a cold sync of a million pods (scenario 5). The same copy into memory a helper thread has
// written first costs ~0.03-0.2 us a page.
//
// Sizes asked for ahead (touchAhead: the arena's next slab) are made by the thread: it allocates a
// SharedArrayBuffer, writes one byte of each page, hands it over and collects its own heap, so that the memory is
// the taker's alone. uncountedBuffer (offheap.ts) takes a ready one of the size it needs, or of a size near it (within
// a factor of 2: a slab's size is a choice, not a need), or a smaller one where the caller can use it (takeTouched),
// or makes one as before.
//
// Bounded: per size at most AHEAD buffers ready or being made, and maxBytes in all; past that nothing more is asked
// for. Nothing made is let go unused: a growing arena asks for a slightly larger size with each slab, and ready
// buffers let go would wait for V8's next full collection as memory awaiting it (offheap.ts), which past the slack
// turns new slabs into buffers V8 counts (at 1M pods that made the sync slower than none: 18 let go, ~0.5 GB
// awaiting). What is ready and not yet taken is resident memory held ahead: up to maxBytes.

import type { Worker } from 'node:worker_threads';
import { spawnModuleWorker } from './workers.js';

export interface TouchAheadOptions {
  /** Bytes ready or being made, at most. */
  maxBytes: number;
  /** The thread failed: buffers are made on demand from then on. */
  onError?: (err: Error) => void;
}

export interface TouchAheadStats {
  /** Buffers handed out ready. */
  taken: number;
  /** Buffers of a size asked for ahead that were needed before one was ready. */
  missed: number;
  readyBytes: number;
  pendingBytes: number;
  /**
   * Bytes of the thread's buffers the process still holds (handed out and not yet collected, or ready). The thread
   * allocated them, so process.memoryUsage().arrayBuffers, which counts what the main thread allocated, leaves them out.
   */
  heldBytes: number;
}

/** Buffers of one size ready or on their way. */
const AHEAD = 2;

interface Running {
  worker: Worker;
  maxBytes: number;
  ready: Map<number, SharedArrayBuffer[]>;
  pending: Map<number, number>;
  readyBytes: number;
  pendingBytes: number;
}

let running: Running | undefined;
const counts = { taken: 0, missed: 0 };
/** Bytes handed out whose buffers have not been collected yet. */
let handedOut = 0;
const collected = new FinalizationRegistry<number>((bytes) => {
  handedOut -= bytes;
});

export interface TouchAhead {
  /** Done with it; the thread stops when every user of the process has stopped. */
  stop(): Promise<void>;
}

let users = 0;

/** Starts the thread for this process, or joins the one running (the first user's options stand). */
export function startTouchAhead(o: TouchAheadOptions): TouchAhead {
  if (o.maxBytes <= 0) return { stop: async () => {} };
  users++;
  if (!running) run(o);
  let stopped = false;
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      if (--users > 0) return;
      const r = running;
      running = undefined;
      if (r) await r.worker.terminate();
    },
  };
}

function run(o: TouchAheadOptions): void {
  const worker = spawnModuleWorker('touchworker', import.meta.url);
  const r: Running = { worker, maxBytes: o.maxBytes, ready: new Map(), pending: new Map(), readyBytes: 0, pendingBytes: 0 };
  running = r;
  // Never what keeps the process alive.
  worker.unref();
  worker.on('message', (m: { size: number; buffer: SharedArrayBuffer }) => {
    if (running !== r) return;
    r.pending.set(m.size, (r.pending.get(m.size) ?? 1) - 1);
    r.pendingBytes -= m.size;
    let list = r.ready.get(m.size);
    if (!list) r.ready.set(m.size, (list = []));
    list.push(m.buffer);
    r.readyBytes += m.size;
  });
  let failed = false;
  const fail = (why: string) => {
    if (failed || running !== r) return;
    failed = true;
    running = undefined;
    o.onError?.(new Error(`touch-ahead thread: ${why}`));
  };
  worker.on('error', (e) => fail(e.message));
  worker.on('exit', (code) => fail(`exited with code ${code}`));
}

/** A buffer of size bytes will be wanted: have some made ready, within the bounds. */
export function touchAhead(size: number): void {
  const r = running;
  if (!r) return;
  const have = (r.ready.get(size)?.length ?? 0) + (r.pending.get(size) ?? 0);
  if (have >= AHEAD || r.readyBytes + r.pendingBytes + size > r.maxBytes) return;
  r.pending.set(size, (r.pending.get(size) ?? 0) + 1);
  r.pendingBytes += size;
  r.worker.postMessage(size);
}

/**
 * A ready buffer of size bytes; else of the ready size nearest it within a factor of 2; else, if smallest < size,
 * the largest ready one of at least smallest bytes (a caller that can use a smaller buffer, as a slab can, would
 * rather take one already resident than fault a new one in). That last also spends buffers of sizes no longer asked
 * for: a growing arena's early sizes, which would otherwise hold the bytes ahead (maxBytes) for good. At a million
 * pods, 56 of the 128 MiB stayed in 8, 12 and 16 MiB buffers while the arena asked for 64 MiB, so only one of those
 * could be on its way at a time, and a slab in three missed it.
 */
export function takeTouched(size: number, smallest = size): SharedArrayBuffer | undefined {
  const r = running;
  if (!r) return undefined;
  let from = r.ready.get(size)?.length ? size : 0;
  if (from === 0) {
    for (const [other, list] of r.ready) {
      if (list.length > 0 && other * 2 >= size && other <= size * 2 && (from === 0 || Math.abs(other - size) < Math.abs(from - size))) from = other;
    }
  }
  if (from === 0) {
    for (const [other, list] of r.ready) if (list.length > 0 && other >= smallest && other < size && other > from) from = other;
  }
  if (from === 0) {
    if (r.pending.get(size)) counts.missed++;
    return undefined;
  }
  const b = r.ready.get(from)!.shift()!;
  r.readyBytes -= from;
  counts.taken++;
  handedOut += from;
  collected.register(b, from);
  return b;
}

/** Whether a buffer of size bytes was asked for ahead and is still being made (none of that size is ready). */
export function touchPending(size: number): boolean {
  const r = running;
  return r !== undefined && (r.pending.get(size) ?? 0) > 0 && !r.ready.get(size)?.length;
}

export function touchAheadStats(): TouchAheadStats {
  const r = running;
  const readyBytes = r?.readyBytes ?? 0;
  return { ...counts, readyBytes, pendingBytes: r?.pendingBytes ?? 0, heldBytes: handedOut + readyBytes };
}
