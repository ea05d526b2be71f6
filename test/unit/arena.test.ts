// The arena that keeps current objects' JSON in slabs (src/cache/arena.ts), on its own and inside a Store: live
// bytes are counted, empty slabs are let go, and once dead bytes pass the live ones plus the slack the sparsest
// slabs are evacuated without a change anyone can see (same objects, same versions, same bytes, no events).

import { describe, expect, it } from 'vitest';
import { Arena } from '../../src/cache/arena.js';
import { heldUncountedBytes } from '../../src/api/offheap.js';
import { newRvClock, objectOf, Store, type StoredObject } from '../../src/cache/store.js';
import type { KubeObject } from '../../src/api/meta.js';
import { until } from '../support/until.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// gc() for the test that waits for slabs to be collected.
setFlagsFromString('--expose-gc');

const KiB = 1024;

describe('Arena', () => {
  it('hands out views of one slab until it is full, and counts what is live', () => {
    const arena = new Arena(() => {}, { slabBytes: 64 * KiB, slackBytes: 1024 * KiB });
    const a = arena.alloc(1000);
    const b = arena.alloc(2000);
    expect(a.buffer).toBe(b.buffer);
    expect(a.byteOffset + a.length).toBe(b.byteOffset);
    expect(arena.stats()).toMatchObject({ slabs: 1, slabBytes: 64 * KiB, liveBytes: 3000, evacuating: false });
    arena.free(a);
    expect(arena.stats().liveBytes).toBe(2000);
    // Past the slab's end: a new slab.
    const views = [arena.alloc(8 * KiB)];
    while (views[views.length - 1].buffer === a.buffer) views.push(arena.alloc(8 * KiB));
    expect(arena.stats().slabs).toBe(2);
  });

  it('grows its slabs with what it holds, to an eighth of it, up to the maximum', () => {
    const arena = new Arena(() => {}, { slabBytes: 16 * KiB, maxSlabBytes: 64 * KiB, slackBytes: 1024 * KiB });
    const sizes = new Map<ArrayBufferLike, number>();
    for (let i = 0; i < 2000; i++) {
      const v = arena.alloc(1 * KiB);
      sizes.set(v.buffer, v.buffer.byteLength);
    }
    const seen = [...sizes.values()];
    // 16 KiB until the arena holds 256 KiB (eight slabs of 16), then 32, 48 and 64 KiB, never more.
    expect(seen.slice(0, 8)).toEqual(Array(8).fill(16 * KiB));
    expect(seen).toContain(32 * KiB);
    expect(seen).toContain(48 * KiB);
    expect(Math.max(...seen)).toBe(64 * KiB);
    expect(seen.every((n) => n % (16 * KiB) === 0)).toBe(true);
    expect(arena.stats().slabBytes).toBe(seen.reduce((a, n) => a + n, 0));
    // Without a maximum, a given slab size is also the largest.
    const fixed = new Arena(() => {}, { slabBytes: 16 * KiB, slackBytes: 1024 * KiB });
    for (let i = 0; i < 2000; i++) expect(fixed.alloc(1 * KiB).buffer.byteLength).toBe(16 * KiB);
  });

  it('lets a slab go once its last object is freed, but not the slab being filled', () => {
    const arena = new Arena(() => {}, { slabBytes: 16 * KiB, slackBytes: 1024 * KiB });
    const first = [arena.alloc(1 * KiB), arena.alloc(1 * KiB)];
    for (const v of first) arena.free(v);
    // Still the current slab: kept for the next allocations.
    expect(arena.stats().slabs).toBe(1);
    const more: Buffer[] = [];
    for (let i = 0; i < 16; i++) more.push(arena.alloc(1 * KiB));
    expect(arena.stats().slabs).toBe(2);
    // The first slab's objects all gone, and it is no longer current.
    for (const v of more.filter((v) => v.buffer === first[0].buffer)) arena.free(v);
    expect(arena.stats().slabs).toBe(1);
    expect(arena.stats().liveBytes).toBe(more.filter((v) => v.buffer !== first[0].buffer).length * KiB);
  });

  it('gives objects over an eighth of a slab a buffer of their own, which it does not count', () => {
    const arena = new Arena(() => {}, { slabBytes: 64 * KiB, slackBytes: 1024 * KiB });
    const big = arena.alloc(9 * KiB);
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(9 * KiB);
    expect(arena.stats()).toMatchObject({ slabs: 0, slabBytes: 0, liveBytes: 0, evacuating: false });
    arena.free(big);
    expect(arena.stats().liveBytes).toBe(0);
  });

  it('keeps objects in SharedArrayBuffers, and in counted ArrayBuffers while slabs let go wait past the slack for a collection', async () => {
    const gc = runInNewContext('gc') as () => void;
    // Slabs the other tests' arenas hold raise the process's slack (an eighth of them) until they are collected.
    await until(() => {
      gc();
      return heldUncountedBytes() === 0;
    }, 5_000, "the other tests' slabs to be collected");
    const arena = new Arena(() => {}, { slabBytes: 16 * KiB, slackBytes: 32 * KiB });
    // V8 starts full marks for memory outside its heap that it counts; SharedArrayBuffers it does not count.
    expect(arena.alloc(1 * KiB).buffer).toBeInstanceOf(SharedArrayBuffer);
    const fill = () => {
      const views: Buffer[] = [];
      for (let i = 0; i < 16 * 4; i++) views.push(arena.alloc(1 * KiB));
      return views;
    };
    // Slabs filled and emptied: let go (not the one being filled), and nothing has collected them.
    for (const v of fill()) arena.free(v);
    expect(arena.stats().awaitingCollectionBytes).toBeGreaterThan(32 * KiB);
    const newSlab = () => {
      const first = arena.alloc(1 * KiB);
      let v = first;
      while (v.buffer === first.buffer) v = arena.alloc(1 * KiB);
      return v;
    };
    const counted = newSlab();
    expect(counted.buffer).toBeInstanceOf(ArrayBuffer);
    // Once collected, SharedArrayBuffers again.
    await until(() => {
      gc();
      return arena.stats().awaitingCollectionBytes <= 32 * KiB;
    }, 5_000, 'the slabs let go to be collected');
    expect(newSlab().buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('asks for the sparsest slabs to be evacuated once dead bytes pass live ones plus the slack', () => {
    const asked: Array<ReadonlySet<ArrayBufferLike>> = [];
    let finish = (): void => {};
    const arena = new Arena((from, done) => {
      asked.push(from);
      finish = done;
    }, { slabBytes: 16 * KiB, slackBytes: 32 * KiB });
    const views: Buffer[] = [];
    for (let i = 0; i < 160; i++) views.push(arena.alloc(1 * KiB)); // 10 slabs
    // Keep one object in each of the first 9 slabs: 9 KiB live, ~135 KiB dead.
    const kept = new Set<Buffer>();
    const seen = new Set<ArrayBufferLike>();
    for (const v of views) if (!seen.has(v.buffer)) (seen.add(v.buffer), kept.add(v));
    for (const v of views) if (!kept.has(v)) arena.free(v);
    expect(asked.length).toBe(1);
    const from = asked[0];
    // The current slab is never among them; every one asked for is at most half live.
    expect(from.has(views[views.length - 1].buffer)).toBe(false);
    expect(from.size).toBeGreaterThan(0);
    // Frees of views in slabs it gave up are no-ops; no second evacuation until the first is done.
    const before = arena.stats().liveBytes;
    for (const v of kept) if (from.has(v.buffer)) arena.free(v);
    expect(arena.stats().liveBytes).toBe(before);
    expect(asked.length).toBe(1);
    finish();
  });
});

function pod(name: string, pad: number, gen = 0): KubeObject {
  return { kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'ns', labels: { gen: String(gen) } }, spec: { pad: 'x'.repeat(pad) } } as unknown as KubeObject;
}

describe('Store evacuation', () => {
  it('moves current objects out of sparse slabs with the same versions and bytes, and no events', async () => {
    const s = new Store({ clock: newRvClock(), windowSize: 100_000, arena: { slabBytes: 64 * KiB, slackBytes: 64 * KiB } });
    for (let i = 0; i < 2000; i++) s.put(pod(`p${i}`, 900));
    const rvAfterFill = s.clock.current();
    // Delete three of every four: the slabs are a quarter live, more dead than live plus the slack.
    for (let i = 0; i < 2000; i++) if (i % 4 !== 0) s.remove(`ns/p${i}`);
    const rvAfterDeletes = s.clock.current();
    const events: string[] = [];
    s.subscribe((ev) => events.push(ev.type));
    const bytesOf = (o: StoredObject) => o.json.toString('utf8');
    const before = new Map([...s.values()].map((o) => [o.key, { rv: o.rv, json: bytesOf(o), buffer: o.json.buffer }]));
    expect(before.size).toBe(500);
    // Evacuation runs in turns of the event loop.
    expect(s.arena.stats().evacuating).toBe(true);
    await until(() => !s.arena.stats().evacuating, 5000, 'the evacuation to end');
    expect([...s.values()].filter((o) => o.json.buffer !== before.get(o.key)!.buffer).length).toBeGreaterThan(0);
    const stats = s.arena.stats();
    const live = [...s.values()].reduce((n, o) => n + o.json.length, 0);
    // Every current object is counted, and the slabs now hold at most the live bytes plus the slack.
    expect(stats.liveBytes).toBe(live);
    expect(stats.slabBytes - stats.liveBytes).toBeLessThanOrEqual(stats.liveBytes + 64 * KiB);
    for (const o of s.values()) {
      const was = before.get(o.key)!;
      expect(o.rv).toBe(was.rv);
      expect(bytesOf(o)).toBe(was.json);
      expect(objectOf(o).metadata.resourceVersion).toBe(String(o.rv));
    }
    expect(events).toEqual([]);
    expect(s.clock.current()).toBe(rvAfterDeletes);
    // The window still answers from before the deletes, with the bytes it had (old slabs kept by its events).
    const replay = s.eventsSince(rvAfterFill);
    expect(replay.length).toBe(1500);
    expect(replay.every((ev) => ev.type === 'DELETED' && objectOf(ev.object).metadata.name === ev.object.name)).toBe(true);
    // Later writes replace moved objects as any other (the moved bytes are freed from their new slab).
    const moved = s.get('ns/p0')!;
    s.put(pod('p0', 900, 1));
    expect(s.get('ns/p0')!.rv).toBeGreaterThan(moved.rv);
    expect(s.arena.stats().liveBytes).toBe([...s.values()].reduce((n, o) => n + o.json.length, 0));
  });

  it('counts replaced versions as dead: a store updated in place stays within live plus slack', () => {
    const s = new Store({ clock: newRvClock(), windowSize: 10, arena: { slabBytes: 64 * KiB, slackBytes: 128 * KiB } });
    for (let round = 0; round < 20; round++) for (let i = 0; i < 200; i++) s.put(pod(`p${i}`, 900, round));
    const stats = s.arena.stats();
    const live = [...s.values()].reduce((n, o) => n + o.json.length, 0);
    expect(stats.liveBytes).toBe(live);
    // Slabs emptied by updates are let go as they empty (the writes move on to new slabs in order).
    expect(stats.slabBytes).toBeLessThanOrEqual(live + 128 * KiB + 64 * KiB);
  });
});
