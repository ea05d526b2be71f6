// Where a store keeps its objects' JSON: slabs of a few MiB, each object's bytes a span of one. A buffer per
// object costs the JS heap ~175 bytes (an ArrayBuffer and its view) and V8 a backing store to track, and at a
// million objects every full collection marks and sweeps them all; a view into a slab costs the view only (~100
// bytes), and a stored object that holds the slab and where its bytes lie, nothing (store.ts).
//
// A slab is freed when nothing holds it or a view into it any more. The store reports when one of its objects stops
// being current (replaced or deleted: free), so the arena knows each slab's live bytes; once the slabs hold more
// dead bytes than live ones, the sparsest are evacuated: the store copies their current objects into the current
// slab (rehome), and the old slab goes once the event window and the responses in flight let go of it.

import { awaitCollection, awaitingCollectionBytes, copyBytes, holdUncounted, releaseUncounted, uncountedBuffer } from '../api/offheap.js';
import { touchAhead, touchPending } from '../api/touchahead.js';

export interface ArenaOptions {
  /** Bytes per slab (4 MiB: a page of members' pods fills a few). Objects over an eighth of it get their own. */
  slabBytes?: number;
  /**
   * Slabs grow with the arena, to an eighth of what it holds, up to this (64 MiB; default slabBytes when slabBytes
   * is given): fewer, larger mappings, which the kernel backs with huge pages more often where malloc asks for them
   * (glibc.malloc.hugetlb=1; measured here, 4 MiB mappings were half huge pages, 64 MiB ones nearly all). Every
   * first write to a page is a fault, and at a million pods the slabs are ~5 GB.
   */
  maxSlabBytes?: number;
  /** Dead bytes tolerated before evacuating, besides as many as are live (64 MiB). */
  slackBytes?: number;
}

interface Slab {
  readonly buf: Buffer;
  /** Bytes handed out. */
  used: number;
  /** Bytes of current objects. */
  live: number;
}

export interface ArenaStats {
  slabs: number;
  slabBytes: number;
  liveBytes: number;
  /** Sparse slabs are being emptied. */
  evacuating: boolean;
  /** Bytes of slabs let go, by any arena of the process, that the JS engine has not collected yet. */
  awaitingCollectionBytes: number;
}

export class Arena {
  private readonly slabs = new Map<ArrayBufferLike, Slab>();
  private current: Slab | undefined;
  private slabBytes = 0;
  private liveBytes = 0;
  private evacuating = false;
  private readonly slabSize: number;
  private readonly maxSlabSize: number;
  private readonly slack: number;
  /**
   * Whether the next slabs are asked for ahead (src/api/touchahead.ts): while lists fill the store (a cold sync, a
   * relist), when a new slab is wanted every fraction of a second. Under churn a slab lasts seconds, and its faults
   * cost little; asked ahead all the time (in a first form, which let ready slabs of sizes no longer wanted go), the
   * thread cost the 2 cores more than it saved (benchmark scenario 6 at quick scale, 4 pairs: 16-29 us of the
   * gateway's CPU per event against 15-18 us, 2-9 watchers dropped against 0-3).
   */
  asksAhead = false;

  /**
   * evacuate(from, done): move every current object whose bytes are in a slab of from into new bytes from alloc,
   * then call done. The arena has forgotten those slabs already: frees of their views are no-ops.
   */
  constructor(
    private readonly evacuate: (from: ReadonlySet<ArrayBufferLike>, done: () => void) => void,
    opts: ArenaOptions = {},
  ) {
    this.slabSize = opts.slabBytes ?? 4 * 1024 * 1024;
    this.maxSlabSize = Math.max(this.slabSize, opts.maxSlabBytes ?? (opts.slabBytes !== undefined ? opts.slabBytes : 64 * 1024 * 1024));
    this.slack = opts.slackBytes ?? 64 * 1024 * 1024;
  }

  /** len bytes for a current object's JSON, to be filled by the caller. */
  alloc(len: number): Buffer {
    if (len > this.slabSize / 8) return Buffer.allocUnsafeSlow(len);
    let s = this.current;
    if (!s || s.used + len > s.buf.length) {
      s = { buf: this.newSlab(), used: 0, live: 0 };
      this.slabs.set(s.buf.buffer, s);
      this.slabBytes += s.buf.length;
      // The slab before it keeps its objects; it is freed once they are all gone.
      if (this.current && this.current.live === 0) this.drop(this.current);
      this.current = s;
      if (this.asksAhead) {
        // The two after it, made resident by another thread meanwhile (src/api/touchahead.ts).
        const next = this.nextSlabSize();
        touchAhead(next);
        touchAhead(this.nextSlabSize(this.slabBytes + next));
      }
    }
    const view = s.buf.subarray(s.used, s.used + len);
    s.used += len;
    s.live += len;
    this.liveBytes += len;
    return view;
  }

  /**
   * Slabs are SharedArrayBuffers, which V8 does not count as external memory: for about every 64 MiB of counted
   * memory allocated since its last full collection V8 starts another full mark of the whole heap, so gigabytes of
   * slabs made it mark an ever larger heap again and again (quadratic in the objects: at a million pods, most of a
   * cold sync). process.memoryUsage().arrayBuffers still counts them, and no other thread ever sees them.
   * The price: V8 no longer collects because of them. Slabs let go (emptied, or evacuated) go only with a full
   * collection that something else started; once more bytes than the slack wait for one (from any arena of the
   * process, watch frames included), new slabs are ordinary ArrayBuffers again, which V8 counts, until it has
   * collected. The slack is this arena's or an eighth of the slabs the process holds, whichever is more (offheap.ts).
   */
  private newSlab(): Buffer {
    const size = this.nextSlabSize();
    // Any size from the base up serves as a slab: a smaller one made resident ahead beats faulting one in. And while
    // the one asked for ahead is still being made (the thread is behind: it shares the cores), a slab of the base size
    // serves until it is ready, so that the event loop faults in a sixteenth of a 64 MiB slab rather than all of it
    // (each first write to a page cost the benchmark VM ~10 us: up to ~0.2 s a slab).
    const fresh = this.asksAhead && touchPending(size) ? this.slabSize : size;
    const b = uncountedBuffer(size, this.slack, this.slabSize, fresh);
    holdUncounted(b);
    return b;
  }

  /**
   * The size of the next slab while the arena holds slabBytes: whole multiples of the base size, so sizes repeat
   * (malloc reuses what a slab let go gave back).
   */
  private nextSlabSize(slabBytes = this.slabBytes): number {
    return Math.min(this.maxSlabSize, Math.max(1, Math.floor(slabBytes / 8 / this.slabSize)) * this.slabSize);
  }

  /** A copy of bytes in the arena. */
  copy(bytes: Buffer): Buffer {
    const b = this.alloc(bytes.length);
    copyBytes(bytes, b, 0);
    return b;
  }

  /** The slab view (a view of alloc's, or its slab) lies in, if it is one of this arena's. */
  slabOf(view: Buffer): Buffer | undefined {
    const c = this.current;
    return c !== undefined && c.buf.buffer === view.buffer ? c.buf : this.slabs.get(view.buffer)?.buf;
  }

  /**
   * The object whose bytes these are is no longer current: bytes, the view alloc gave or the slab it is in, and
   * how many (a buffer from elsewhere is ignored).
   */
  free(bytes: Buffer, length = bytes.length): void {
    const s = this.slabs.get(bytes.buffer);
    if (!s) return;
    s.live -= length;
    this.liveBytes -= length;
    if (s.live === 0 && s !== this.current) this.drop(s);
    else if (!this.evacuating && this.overSlack()) this.startEvacuation();
  }

  private overSlack(): boolean {
    return this.slabBytes - this.liveBytes > this.liveBytes + this.slack;
  }

  stats(): ArenaStats {
    return { slabs: this.slabs.size, slabBytes: this.slabBytes, liveBytes: this.liveBytes, evacuating: this.evacuating, awaitingCollectionBytes: awaitingCollectionBytes() };
  }

  private drop(s: Slab): void {
    this.slabs.delete(s.buf.buffer);
    releaseUncounted(s.buf);
    awaitCollection(s.buf.buffer, s.buf.length);
    this.slabBytes -= s.buf.length;
    this.liveBytes -= s.live;
  }

  /** The slabs at most half live, emptiest first, until the dead bytes left are within half the slack. */
  private startEvacuation(): void {
    const sparse = [...this.slabs.values()].filter((s) => s !== this.current && s.live * 2 <= s.used).sort((a, b) => a.live - b.live);
    if (sparse.length === 0) return;
    const from = new Set<ArrayBufferLike>();
    for (const s of sparse) {
      from.add(s.buf.buffer);
      this.drop(s);
      if (this.slabBytes - this.liveBytes <= this.slack / 2) break;
    }
    this.evacuating = true;
    this.evacuate(from, () => {
      this.evacuating = false;
      // Frees during the move may have left more to do.
      if (this.overSlack()) this.startEvacuation();
    });
  }
}
