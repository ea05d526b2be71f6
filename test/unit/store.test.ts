import { describe, expect, it } from 'vitest';
import { metadataOf, newRvClock, objectOf, ResourceVersionTooOld, Store, topLevelValue, type StoredObject } from '../../src/cache/store.js';
import { SortedKeys } from '../../src/cache/sortedkeys.js';

const pod = (ns: string, name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { namespace: ns, name, labels: { app: name.split('-')[0] } },
  ...extra,
});

const keysOf = (it: Iterable<{ key: string }>) => [...it].map((o) => o.key);

describe('SortedKeys', () => {
  it('keeps keys ordered across chunk splits and deletes', () => {
    const s = new SortedKeys();
    const keys = Array.from({ length: 5000 }, (_, i) => `ns-${i % 7}/pod-${(i * 7919) % 5000}`);
    for (const k of keys) s.add(k);
    const expected = [...new Set(keys)].sort();
    expect([...s.from()]).toEqual(expected);
    expect(s.size).toBe(expected.length);
    for (const k of expected.filter((_, i) => i % 3 === 0)) s.delete(k);
    const left = expected.filter((_, i) => i % 3 !== 0);
    expect([...s.from()]).toEqual(left);
    expect([...s.from(left[100])][0]).toBe(left[100]);
    expect(s.countFrom(left[100])).toBe(left.length - 100);
    expect([...s.withPrefix('ns-3/')]).toEqual(left.filter((k) => k.startsWith('ns-3/')));
  });

  it('an iterator suspended across inserts and deletes skips and repeats nothing that stayed', () => {
    const s = new SortedKeys();
    for (let i = 0; i < 3000; i += 2) s.add(`k${String(i).padStart(5, '0')}`);
    const it = s.from();
    const seen: string[] = [];
    let n = 0;
    for (const k of it) {
      seen.push(k);
      // Inserts before and after the cursor, splitting chunks, and deletes of keys already given.
      if (n++ % 7 === 0) {
        for (let j = 0; j < 40; j++) s.add(`k${String(Math.floor(Math.random() * 3000) * 2 + 1).padStart(5, '0')}x`);
        s.delete(seen[Math.floor(seen.length / 2)]!);
      }
    }
    const stayed = Array.from({ length: 1500 }, (_, i) => `k${String(i * 2).padStart(5, '0')}`);
    for (const k of stayed) expect(seen.filter((x) => x === k).length, k).toBe(1);
    expect([...seen]).toEqual([...seen].sort());
  });

  it('sorts like etcd keys: "a-b/x" before "a/x"', () => {
    const s = new SortedKeys();
    for (const k of ['a/x', 'a-b/x', 'a.b/x', 'b/a']) s.add(k);
    expect([...s.from()]).toEqual(['a-b/x', 'a.b/x', 'a/x', 'b/a']);
  });
});

describe('Store', () => {
  it('assigns increasing resourceVersions from the shared clock and serializes them', () => {
    const clock = newRvClock(100);
    const a = new Store({ clock });
    const b = new Store({ clock });
    const x = a.put(pod('ns', 'web-1'));
    const y = b.put(pod('ns', 'web-2'));
    expect([x.rv, y.rv]).toEqual([101, 102]);
    expect(JSON.parse(x.json.toString()).metadata.resourceVersion).toBe('101');
    expect(x.labels).toEqual({ app: 'web' });
  });

  it('keeps resourceVersions up to 2^53 exactly (the merged cache starts past 2^40)', () => {
    for (const start of [2 ** 30 - 2, 2 ** 40 + 12345, 2 ** 52 + 2 ** 31 + 7, Number.MAX_SAFE_INTEGER - 3]) {
      const s = new Store({ clock: newRvClock(start) });
      const x = s.put(pod('ns', 'web-1'));
      const y = s.put(pod('ns', 'web-1'));
      expect([x.rv, y.rv]).toEqual([start + 1, start + 2]);
      expect(JSON.parse(y.json.toString()).metadata.resourceVersion).toBe(String(start + 2));
      expect(s.remove(y.key)!.rv).toBe(start + 3);
    }
  });

  it("a new version keeps the old one's labels and fields objects while they are equal, and takes new ones when not", () => {
    const s = new Store({ clock: newRvClock(), fieldsOf: (o) => ({ 'metadata.name': o.metadata.name ?? '', 'spec.nodeName': (o as any).spec?.nodeName ?? '' }), index: { fields: ['spec.nodeName'], labels: true } });
    const a = s.put(pod('ns', 'web-1', { spec: { nodeName: 'n1' } }));
    const b = s.put(pod('ns', 'web-1', { spec: { nodeName: 'n1' }, status: { phase: 'Running' } }));
    expect(b.labels).toBe(a.labels);
    expect(b.fields).toBe(a.fields);
    const c = s.put({ ...pod('ns', 'web-1', { spec: { nodeName: 'n2' } }), metadata: { namespace: 'ns', name: 'web-1', labels: { app: 'web', tier: 'db' } } });
    expect(c.labels).not.toBe(a.labels);
    expect(c.labels).toEqual({ app: 'web', tier: 'db' });
    expect(c.fields).toEqual({ 'metadata.name': 'web-1', 'spec.nodeName': 'n2' });
    // One label fewer, or one more, is a change too.
    const d = s.put({ ...pod('ns', 'web-1', { spec: { nodeName: 'n2' } }), metadata: { namespace: 'ns', name: 'web-1', labels: { app: 'web' } } });
    expect(d.labels).toEqual({ app: 'web' });
    expect(d.fields).toBe(c.fields);
    const e = s.put({ ...pod('ns', 'web-1', { spec: { nodeName: 'n2' } }), metadata: { namespace: 'ns', name: 'web-1', labels: { app: 'web', tier: 'db' } } });
    expect(e.labels).toEqual({ app: 'web', tier: 'db' });
    // The index follows what was stored.
    expect(s.index!.fields.get('spec.nodeName')!.get('n2')).toBe(e.key);
    expect(s.index!.fields.get('spec.nodeName')!.has('n1')).toBe(false);
    expect(s.index!.labels.get('tier')!.get('db')).toBe(e.key);
  });

  it('emits ADDED, MODIFIED, DELETED with the deletion carrying its own resourceVersion', () => {
    const s = new Store({ clock: newRvClock() });
    const seen: string[] = [];
    s.subscribe((e) => seen.push(`${e.type}:${e.object.key}:${e.rv}:${objectOf(e.object).metadata.resourceVersion}`));
    s.put(pod('ns', 'a'));
    s.put(pod('ns', 'a', { spec: { x: 1 } }));
    s.remove('ns/a');
    expect(seen).toEqual(['ADDED:ns/a:2:2', 'MODIFIED:ns/a:3:3', 'DELETED:ns/a:4:4']);
    expect(s.get('ns/a')).toBeUndefined();
  });

  it("a deletion's last state is the object's bytes with only metadata.resourceVersion changed", () => {
    const s = new Store({ clock: newRvClock(99) });
    // Labels and annotations named resourceVersion, and a value that looks like the version, stay as they are.
    const stored = s.put(pod('ns', 'a', { metadata: { namespace: 'ns', name: 'a', labels: { resourceVersion: '100' }, annotations: { note: '"resourceVersion":"100"' } }, spec: { nodeName: 'n\u00e9' } }));
    expect(stored.rv).toBe(100);
    let deleted: StoredObject | undefined;
    s.subscribe((e) => (e.type === 'DELETED' ? (deleted = e.object) : undefined));
    s.remove('ns/a');
    expect(deleted!.rv).toBe(101);
    const before = stored.json.toString();
    expect(before).toContain('"resourceVersion":"100"},"spec"');
    expect(deleted!.json.toString()).toBe(before.replace('"resourceVersion":"100"},"spec"', '"resourceVersion":"101"},"spec"'));
    expect(deleted!.json.toString()).not.toBe(before);
    const obj = objectOf(deleted!) as any;
    expect(obj.metadata.resourceVersion).toBe('101');
    expect(obj.metadata.labels).toEqual({ resourceVersion: '100' });
    expect(obj.metadata.annotations.note).toBe('"resourceVersion":"100"');
    expect(deleted!.labels).toBe(stored.labels);
    expect(deleted!.fields).toEqual(stored.fields);
  });

  it('restamps objects whose version it cannot find in their bytes by parsing them, as before', () => {
    const s = new Store({ clock: newRvClock() });
    const stored = s.put(pod('ns', 'a'));
    // Escaped keys: the byte reader leaves these to a parse.
    const odd = { ...stored, json: Buffer.from(stored.json.toString().replace('"metadata"', '"\\u006detadata"')) };
    const again = s.restamp(odd, 50);
    expect(objectOf(again).metadata.resourceVersion).toBe('50');
    expect(objectOf(again).metadata.name).toBe('a');
  });

  it('rebuilds the state at an older resourceVersion from the event window', () => {
    const s = new Store({ clock: newRvClock() });
    s.put(pod('ns', 'a'));
    s.put(pod('ns', 'b'));
    const at = s.clock.current();
    s.put(pod('ns', 'c'));
    s.put(pod('ns', 'a', { spec: { changed: true } }));
    s.remove('ns/b');
    const old = s.snapshot(at);
    const objs = [...old.iterate('', '')];
    expect(objs.map((o) => o.key)).toEqual(['ns/a', 'ns/b']);
    expect((objectOf(objs[0]) as any).spec).toBeUndefined();
    expect(keysOf(s.snapshot().iterate('', ''))).toEqual(['ns/a', 'ns/c']);
    expect(keysOf(old.iterate('ns/b', 'ns/'))).toEqual(['ns/b']);
    // remainingItemCount counts the objects at that resourceVersion from a key on: created, changed and removed
    // since then as they were.
    expect(old.countFrom('', '')).toBe(2);
    expect(old.countFrom('ns/b', 'ns/')).toBe(1);
    expect(old.countFrom('ns/c', 'ns/')).toBe(0);
    expect(old.countFrom('', 'other/')).toBe(0);
  });

  it('forgets events past the window and says so', () => {
    const s = new Store({ clock: newRvClock(), windowSize: 3 });
    for (let i = 0; i < 10; i++) s.put(pod('ns', `p${i}`));
    expect(() => s.eventsSince(2)).toThrow(ResourceVersionTooOld);
    expect(s.eventsSince(s.oldestRV).map((e) => e.rv)).toEqual([9, 10, 11]);
    expect(() => s.snapshot(3)).toThrow(ResourceVersionTooOld);
  });

  it('replays exactly the events after a resourceVersion', () => {
    const s = new Store({ clock: newRvClock() });
    for (let i = 0; i < 5; i++) s.put(pod('ns', `p${i}`));
    expect(s.eventsSince(4).map((e) => e.object.name)).toEqual(['p3', 'p4']);
    expect(s.eventsSince(6)).toEqual([]);
  });

  it('hands out the current objects in batches: each present throughout once, in order, within the prefix', () => {
    const s = new Store({ clock: newRvClock() });
    const name = (i: number) => `p${String(i).padStart(5, '0')}`;
    for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 2000; i += 2) s.put(pod(ns, name(i)));
    const cursor = s.snapshot().iterate('', 'b/') as unknown as { fill(out: unknown[]): number };
    expect(typeof cursor.fill).toBe('function');
    const seen: string[] = [];
    const out: { key: string }[] = new Array(100);
    let round = 0;
    for (let n = cursor.fill(out); n > 0; n = cursor.fill(out)) {
      for (let i = 0; i < n; i++) seen.push(out[i]!.key);
      // Between batches: new keys before and after the place reached, and deletes of keys given and not yet given.
      for (let j = 0; j < 30; j++) s.put(pod('b', name(((round * 37 + j * 61) % 1000) * 2 + 1)));
      s.remove(`b/${name((round * 40) % 2000)}`);
      s.remove(`b/${name((round * 40 + 1000) % 2000)}`);
      round++;
    }
    expect(round).toBeGreaterThan(5);
    expect(seen.every((k) => k.startsWith('b/'))).toBe(true);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(seen.length);
    const deleted = new Set<string>();
    for (let r = 0; r < round; r++) for (const x of [(r * 40) % 2000, (r * 40 + 1000) % 2000]) deleted.add(`b/${name(x)}`);
    for (let i = 0; i < 2000; i += 2) if (!deleted.has(`b/${name(i)}`)) expect(seen, name(i)).toContain(`b/${name(i)}`);
    // The same walk by next(), on a store left alone, and by batches: the same keys.
    const byNext = keysOf(s.snapshot().iterate('b/p00500', 'b/'));
    const batches = s.snapshot().iterate('b/p00500', 'b/') as unknown as { fill(out: unknown[]): number };
    const byFill: string[] = [];
    for (let n = batches.fill(out); n > 0; n = batches.fill(out)) for (let i = 0; i < n; i++) byFill.push(out[i]!.key);
    expect(byFill).toEqual(byNext);
    expect(byNext[0]).toBe('b/p00500');
    expect(byNext.at(-1)!.startsWith('b/')).toBe(true);
  });

  it('counts keys in a namespace without scanning them', () => {
    const s = new Store({ clock: newRvClock() });
    for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 10; i++) s.put(pod(ns, `p${i}`));
    const snap = s.snapshot();
    expect(snap.countFrom('', 'b/')).toBe(10);
    expect(snap.countFrom('b/p5', 'b/')).toBe(5);
    expect(snap.countFrom('', '')).toBe(30);
  });
});

describe('stored objects are kept serialized only', () => {
  it("current objects hold their slab and where in it their JSON lies, not a view each; json is that span", () => {
    const s = new Store({ clock: newRvClock() });
    const a = s.put(pod('ns', 'a'));
    const b = s.put(pod('ns', 'b'));
    // One slab for both: a view per object was ~100 bytes of JS heap each.
    expect(a.bytes).toBe(b.bytes);
    expect(a.end - a.start).toBe(a.json.length);
    expect(b.start).toBeGreaterThanOrEqual(a.end);
    expect(JSON.parse(b.json.toString()).metadata.name).toBe('b');
    expect(b.bytes.subarray(b.start, b.end).equals(b.json)).toBe(true);
    // A replaced object's bytes stay readable for the event window.
    s.put(pod('ns', 'a', { spec: { x: 1 } }));
    expect(JSON.parse(a.json.toString()).metadata.name).toBe('a');
  });

  it('objectOf parses a fresh copy each time: changing it changes neither the store nor later reads', () => {
    const s = new Store({ clock: newRvClock() });
    const stored = s.put(pod('ns', 'web-1', { spec: { nodeName: 'n1' } }));
    expect(Object.keys(stored)).not.toContain('obj');
    const a = objectOf(stored) as any;
    expect(a.metadata.resourceVersion).toBe(String(stored.rv));
    a.spec.nodeName = 'changed';
    a.metadata.labels.app = 'changed';
    expect((objectOf(stored) as any).spec.nodeName).toBe('n1');
    expect(objectOf(s.get('ns/web-1')!)).not.toBe(objectOf(s.get('ns/web-1')!));
    expect(stored.labels).toEqual({ app: 'web' });
  });

  it('a deletion serializes the last state anew under its own resourceVersion, leaving the old version intact', () => {
    const s = new Store({ clock: newRvClock() });
    const before = s.put(pod('ns', 'a', { spec: { x: 1 } }));
    const last = s.remove('ns/a')!;
    expect(JSON.parse(last.json.toString())).toEqual({ ...JSON.parse(before.json.toString()), metadata: { ...JSON.parse(before.json.toString()).metadata, resourceVersion: String(last.rv) } });
    expect(objectOf(before).metadata.resourceVersion).toBe(String(before.rv));
  });

  it('metadataOf reads metadata without the rest, whatever strings and nesting come before it', () => {
    const s = new Store({ clock: newRvClock() });
    const tricky = {
      spec: { note: 'a "metadata": {"x":1} } ] \\ inside a string', list: [{ metadata: { name: 'nested' } }, [1, [2]]], n: -1.5e3, t: true, z: null },
      metadata: { namespace: 'ns', name: 'tricky', uid: 'u-1', annotations: { 'a"}': '{' } },
      status: { metadata: 'not this one' },
    };
    const stored = s.put(tricky as any);
    expect(metadataOf(stored)).toEqual(objectOf(stored).metadata);
    expect(metadataOf(stored).uid).toBe('u-1');
  });

  it('topLevelValue finds values of every type only at the top level', () => {
    const json = '{ "a" : {"metadata":1}, "s":"x\\"y", "n": 12.5 ,"b":false,"l":[1,{"k":"]"}],"metadata" : {"name":"m"} }';
    const at = (k: string) => {
      const r = topLevelValue(json, k);
      return r && json.slice(r[0], r[1]);
    };
    expect(at('metadata')).toBe('{"name":"m"}');
    expect(at('s')).toBe('"x\\"y"');
    expect(at('n')).toBe('12.5');
    expect(at('b')).toBe('false');
    expect(at('l')).toBe('[1,{"k":"]"}]');
    expect(at('name')).toBeUndefined();
    expect(at('k')).toBeUndefined();
    expect(topLevelValue('[{"metadata":1}]', 'metadata')).toBeUndefined();
    expect(topLevelValue('{}', 'metadata')).toBeUndefined();
  });
});
