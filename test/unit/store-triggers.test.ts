// Store.subscribe with a trigger must hand a listener exactly the events whose object or previous state carries
// the trigger's value, each once, and serveWatch must show a triggered watch what an untriggered one would see.

import { describe, expect, it } from 'vitest';
import { parseFieldSelector } from '../../src/api/fields.js';
import { parseLabelSelector } from '../../src/api/labels.js';
import { podFields } from '../../src/api/fields.js';
import { newRvClock, Store, type StoreEvent, type Trigger } from '../../src/cache/store.js';
import { triggerFor } from '../../src/cache/watch.js';

/** A small deterministic PRNG, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const APPS = ['web', 'api', 'db'];
const NODES = ['n1', 'n2', ''];
const NAMESPACES = ['a', 'b'];

function newStore(): Store {
  return new Store({ clock: newRvClock(), windowSize: 100_000, fieldsOf: podFields, index: { fields: ['spec.nodeName'], labels: true } });
}

/** Whether the object satisfies the trigger, read straight from the definition. */
function satisfies(t: Trigger, o: StoreEvent['object']): boolean {
  if (t.kind === 'labels') return t.labels.every(([k, v]) => Object.hasOwn(o.labels, k) && o.labels[k] === v);
  if (t.kind === 'namespace') return o.namespace === t.value;
  return (o.fields[t.name] ?? '') === t.value;
}

describe('Store triggers', () => {
  it('deliver exactly the events whose object or previous state has the value, each once (random churn)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const r = rng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
      const store = newStore();
      const triggers: Trigger[] = [
        ...APPS.map((v) => ({ kind: 'labels' as const, labels: [['app', v]] as const })),
        { kind: 'labels', labels: [['tier', 'x']] },
        // Several labels: called only when every one has its value.
        ...APPS.map((v) => ({ kind: 'labels' as const, labels: [['app', v], ['tier', 'x']] as const })),
        { kind: 'labels', labels: [['app', 'web'], ['tier', 'y']] },
        ...NODES.map((v) => ({ kind: 'field' as const, name: 'spec.nodeName', value: v })),
        ...NAMESPACES.map((v) => ({ kind: 'namespace' as const, value: v })),
      ];
      const got = triggers.map(() => [] as StoreEvent[]);
      const all: StoreEvent[] = [];
      store.subscribe((ev) => all.push(ev));
      const stops = triggers.map((t, i) => store.subscribe((ev) => got[i]!.push(ev), t));
      expect(store.watcherCount).toBe(triggers.length + 1);
      // A listener that stops half-way gets nothing after.
      let stoppedAt = -1;
      for (let i = 0; i < 400; i++) {
        if (i === 200) {
          stoppedAt = all.length;
          stops[0]!();
        }
        const ns = pick(NAMESPACES);
        const name = `p${Math.floor(r() * 15)}`;
        const key = `${ns}/${name}`;
        if (r() < 0.2 && store.get(key)) {
          store.remove(key);
          continue;
        }
        const labels: Record<string, string> = {};
        if (r() < 0.8) labels.app = pick(APPS);
        if (r() < 0.5) labels.tier = pick(['x', 'y']);
        store.put({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: ns, name, labels }, spec: { nodeName: pick(NODES) } } as any);
      }
      triggers.forEach((t, i) => {
        const events = i === 0 ? all.slice(0, stoppedAt) : all;
        const want = events.filter((ev) => satisfies(t, ev.object) || (ev.prev !== undefined && satisfies(t, ev.prev)));
        expect(got[i]!.map((e) => e.rv), `seed ${seed} trigger ${JSON.stringify(t)}`).toEqual(want.map((e) => e.rv));
      });
      stops.forEach((s) => s());
      expect(store.watcherCount).toBe(1);
    }
  });

  it('a watch triggers on an indexed field first, then its one-valued label equalities, then its namespace', () => {
    const store = newStore();
    const opts = (ls: string, fs: string) => ({ labelSelector: parseLabelSelector(ls), fieldSelector: parseFieldSelector(fs) }) as any;
    expect(triggerFor(opts('app=web', 'spec.nodeName=n1'), 'a', store)).toEqual({ kind: 'field', name: 'spec.nodeName', value: 'n1' });
    expect(triggerFor(opts('app=web', 'spec.nodeName!=n1'), 'a', store)).toEqual({ kind: 'labels', labels: [['app', 'web']] });
    expect(triggerFor(opts('app in (web)', ''), '', store)).toEqual({ kind: 'labels', labels: [['app', 'web']] });
    // Two values: the object could move from one to the other; not a trigger.
    expect(triggerFor(opts('app in (web,api)', 'status.phase=Running'), 'a', store)).toEqual({ kind: 'namespace', value: 'a' });
    expect(triggerFor(opts('app!=web,tier', ''), '', store)).toBeUndefined();
    // A field the store does not index (and may not compute) is no trigger.
    expect(triggerFor(opts('', 'status.phase=Running'), '', store)).toBeUndefined();
  });

  it('of several label equalities, a watch listens under all of them, keys in order', () => {
    const store = newStore();
    const opts = (ls: string) => ({ labelSelector: parseLabelSelector(ls), fieldSelector: parseFieldSelector('') }) as any;
    const both = { kind: 'labels', labels: [['app', 'web'], ['cluster', 'c1']] };
    expect(triggerFor(opts('app=web,cluster=c1'), '', store)).toEqual(both);
    expect(triggerFor(opts('cluster=c1,app=web'), '', store)).toEqual(both);
    expect(triggerFor(opts('cluster in (c1),app==web,tier!=x'), '', store)).toEqual(both);
    // Only one-valued equalities.
    expect(triggerFor(opts('app=web,cluster in (c1,c2)'), 'a', store)).toEqual({ kind: 'labels', labels: [['app', 'web']] });
  });

  it('a watch of several labels is called only for objects with all of them, and sees one leave', () => {
    const store = newStore();
    const opts = { labelSelector: parseLabelSelector('app=web,cluster=c1'), fieldSelector: parseFieldSelector('') } as any;
    const got: string[] = [];
    store.subscribe((ev) => got.push(`${ev.type} ${ev.object.name}`), triggerFor(opts, '', store));
    const pod = (name: string, labels: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'a', name, labels } }) as any;
    store.put(pod('p1', { app: 'web', cluster: 'c2' }));
    store.put(pod('p2', { app: 'api', cluster: 'c1' }));
    store.put(pod('p3', { cluster: 'c1' }));
    store.put(pod('p4', { app: 'web', cluster: 'c1' }));
    store.put(pod('p4', { app: 'web', cluster: 'c1', v: '2' }));
    store.put(pod('p1', { app: 'web', cluster: 'c1' }));
    store.put(pod('p4', { app: 'web', cluster: 'c2' }));
    store.remove('a/p1');
    store.put(pod('p2', { app: 'api', cluster: 'c2' }));
    expect(got).toEqual(['ADDED p4', 'MODIFIED p4', 'MODIFIED p1', 'MODIFIED p4', 'DELETED p1']);
  });
});
