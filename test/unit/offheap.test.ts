// Buffers V8 does not count (src/api/offheap.ts): watch frames and the cache's slabs are SharedArrayBuffers while
// little of that memory awaits collection, and ordinary buffers past the slack, until V8 has collected.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { awaitCollection, awaitingCollectionBytes, concatBytes, copyBytes, heldUncountedBytes, holdUncounted, releaseUncounted, uncountedBuffer } from '../../src/api/offheap.js';
import { encodeWatchEvent } from '../../src/api/watch.js';

setFlagsFromString('--expose-gc');
const gc: () => void = runInNewContext('gc');

async function collectedUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !cond(); i++) {
    gc();
    // FinalizationRegistry callbacks run in a later task.
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('uncounted buffers', () => {
  it('are SharedArrayBuffers until more than the slack awaits collection, then ordinary until collected', async () => {
    await collectedUntil(() => awaitingCollectionBytes() === 0);
    const base = awaitingCollectionBytes();
    expect(uncountedBuffer(4096, 1 << 20).buffer).toBeInstanceOf(SharedArrayBuffer);
    (() => {
      for (let i = 0; i < 3; i++) {
        const b = uncountedBuffer(512 * 1024, 1 << 20);
        awaitCollection(b.buffer, b.length);
      }
    })();
    expect(awaitingCollectionBytes()).toBe(base + 3 * 512 * 1024);
    expect(uncountedBuffer(4096, 1 << 20).buffer).toBeInstanceOf(ArrayBuffer);
    await collectedUntil(() => awaitingCollectionBytes() <= base);
    expect(awaitingCollectionBytes()).toBe(base);
    expect(uncountedBuffer(4096, 1 << 20).buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('allow an eighth of what is held to await collection, past a smaller slack', async () => {
    await collectedUntil(() => awaitingCollectionBytes() === 0);
    const held0 = heldUncountedBytes();
    // 8 MiB held: up to 1 MiB may await collection, though the slack asked is 64 KiB.
    const slab = uncountedBuffer(8 << 20, 64 << 10);
    holdUncounted(slab);
    expect(heldUncountedBytes()).toBe(held0 + (8 << 20));
    (() => {
      for (let i = 0; i < 3; i++) awaitCollection(uncountedBuffer(256 << 10, 64 << 10).buffer, 256 << 10);
    })();
    expect(uncountedBuffer(4096, 64 << 10).buffer).toBeInstanceOf(SharedArrayBuffer);
    (() => {
      for (let i = 0; i < 2; i++) awaitCollection(uncountedBuffer(256 << 10, 64 << 10).buffer, 256 << 10);
    })();
    expect(uncountedBuffer(4096, 64 << 10).buffer).toBeInstanceOf(ArrayBuffer);
    // Released, the slab no longer raises the slack (and releasing twice changes nothing).
    releaseUncounted(slab);
    releaseUncounted(slab);
    expect(heldUncountedBytes()).toBe(held0);
    await collectedUntil(() => awaitingCollectionBytes() === 0);
    expect(awaitingCollectionBytes()).toBe(0);
  });

  it('stop counting a held buffer nobody released once it is collected', async () => {
    const held0 = heldUncountedBytes();
    (() => holdUncounted(uncountedBuffer(1 << 20, 1 << 20)))();
    expect(heldUncountedBytes()).toBe(held0 + (1 << 20));
    await collectedUntil(() => heldUncountedBytes() === held0);
    expect(heldUncountedBytes()).toBe(held0);
  });

  it('hold watch frames: a pod-sized frame is a view into a shared chunk, with its bytes as framed', () => {
    const pod = Buffer.from(JSON.stringify({ kind: 'Pod', metadata: { name: 'p' }, pad: 'x'.repeat(5000) }));
    const frame = encodeWatchEvent('MODIFIED', pod);
    expect(frame.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(frame.buffer.byteLength).toBe(1024 * 1024);
    expect(JSON.parse(frame.toString())).toEqual({ type: 'MODIFIED', object: JSON.parse(pod.toString()) });
    expect(frame[frame.length - 1]).toBe(10);
  });
});

describe('copyBytes', () => {
  const source = Buffer.from(Array.from({ length: 8192 }, (_, i) => (i * 131 + 7) & 0xff));
  const targets = {
    SharedArrayBuffer: () => Buffer.from(new SharedArrayBuffer(8192)),
    ArrayBuffer: () => Buffer.alloc(8192),
  };

  for (const [kind, make] of Object.entries(targets)) {
    it(`into a ${kind}: the bytes Buffer.copy writes, and its count, at any size and alignment`, () => {
      for (const [at, start, len] of [[0, 0, 0], [1, 3, 100], [5, 0, 511], [3, 1, 512], [7, 5, 513], [0, 0, 5133], [1001, 17, 4000], [8000, 0, 1000], [4, 8100, 500], [9, 7000, 3000]]) {
        const want = make().fill(0xee);
        const got = make().fill(0xee);
        const end = start + len; // past the source's end in the last case, which both clamp
        expect(copyBytes(source, got, at, start, end)).toBe(source.copy(want, at, start, end));
        expect(got.equals(want)).toBe(true);
      }
    });
  }

  it('out of a SharedArrayBuffer (a slab, as a list serves its objects): the bytes Buffer.copy writes, and its count', () => {
    const shared = Buffer.from(new SharedArrayBuffer(8192));
    source.copy(shared);
    for (const [at, start, len] of [[0, 0, 0], [1, 3, 100], [3, 1, 512], [7, 5, 513], [0, 0, 5133], [1001, 17, 4000], [8000, 0, 1000], [9, 7000, 3000]]) {
      const want = Buffer.alloc(8192, 0xee);
      const got = Buffer.alloc(8192, 0xee);
      expect(copyBytes(shared, got, at, start, start + len)).toBe(source.copy(want, at, start, start + len));
      expect(got.equals(want)).toBe(true);
    }
  });

  it('concatBytes joins parts in SharedArrayBuffers and ordinary buffers as Buffer.concat does, with or without a total', () => {
    const shared = Buffer.from(new SharedArrayBuffer(8192));
    source.copy(shared);
    const parts = [shared.subarray(10, 5143), Buffer.from('\n'), source.subarray(0, 300), shared.subarray(7000, 7600), Buffer.alloc(0)];
    expect(concatBytes(parts).equals(Buffer.concat(parts))).toBe(true);
    for (const total of [0, 5133, 5200, 6034, 7000]) expect(concatBytes(parts, total).equals(Buffer.concat(parts, total))).toBe(true);
  });

  it('within one SharedArrayBuffer, ranges apart are copied as Buffer.copy copies them', () => {
    const got = Buffer.from(new SharedArrayBuffer(8192));
    const want = Buffer.alloc(8192);
    source.copy(got, 0, 0, 3000);
    source.copy(want, 0, 0, 3000);
    expect(copyBytes(got.subarray(100, 3000), got.subarray(4000), 1, 0, 2900)).toBe(want.subarray(100, 3000).copy(want.subarray(4000), 1, 0, 2900));
    expect(got.equals(want)).toBe(true);
  });

  it('within one SharedArrayBuffer, overlapping ranges move as Buffer.copy moves them', () => {
    const sab = new SharedArrayBuffer(4096);
    const got = Buffer.from(sab);
    const want = Buffer.alloc(4096);
    source.copy(got, 0, 0, 4096);
    source.copy(want, 0, 0, 4096);
    expect(copyBytes(got.subarray(0, 3000), got, 100)).toBe(want.subarray(0, 3000).copy(want, 100));
    expect(got.equals(want)).toBe(true);
  });
});
