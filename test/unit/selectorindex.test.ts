import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { podFields } from '../../src/api/fields.js';
import { parseListOptions } from '../../src/api/listoptions.js';
import type { KubeObject } from '../../src/api/meta.js';
import { StatusError } from '../../src/api/status.js';
import { listPage, type ListPage, type ListTarget } from '../../src/cache/list.js';
import { candidatesFor } from '../../src/cache/selectorindex.js';
import { newRvClock, Store, type StoredObject } from '../../src/cache/store.js';
import { serveWatch } from '../../src/cache/watch.js';
import { prng as rng } from '../support/prng.js';

const CLUSTER = 'fleetgate.io/cluster';

/** A store keyed and indexed as the merged cache's pods: "namespace/name\0cluster", spec.nodeName and all labels. */
function podStore(indexed = true, windowSize = 10_000): Store {
  return new Store({
    clock: newRvClock(1),
    windowSize,
    fieldsOf: podFields,
    keyOf: (obj, ns, name) => `${ns}/${name}\u0000${obj.metadata.labels?.[CLUSTER] ?? ''}`,
    index: indexed ? { fields: ['spec.nodeName'], labels: true } : undefined,
  });
}

interface PodSpec {
  ns: string;
  name: string;
  cluster: string;
  node?: string;
  labels?: Record<string, string>;
  phase?: string;
}

function pod(p: PodSpec): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: p.ns, name: p.name, labels: { ...p.labels, [CLUSTER]: p.cluster } },
    spec: p.node === undefined ? {} : { nodeName: p.node },
    status: { phase: p.phase ?? 'Running' },
  } as KubeObject;
}

const key = (ns: string, name: string, cluster: string) => `${ns}/${name}\u0000${cluster}`;

function opts(query: string) {
  return parseListOptions(new URLSearchParams(query), { group: '', version: 'v1', resource: 'pods' });
}

/** The candidate keys the index offers for a query, or undefined when it offers none. */
function candidates(store: Store, query: string): { via: string; size: number; keys: string[] } | undefined {
  const o = opts(query);
  const c = candidatesFor(store.index!, o.labelSelector, o.fieldSelector);
  return c && { via: c.via, size: c.size, keys: [...c.from('')] };
}

const PODS = { group: '', version: 'v1', resource: 'pods', singular: 'pod', kind: 'Pod', listKind: 'PodList', namespaced: true, verbs: ['list', 'watch'] };
const target = (namespace = ''): ListTarget => ({ desc: PODS, printer: undefined as unknown as ListTarget['printer'], namespace });

async function list(store: Store, query: string, namespace = ''): Promise<ListPage & { keys: string[] }> {
  const page = await listPage(store, target(namespace), opts(query));
  const items = [...page.items];
  return { ...page, items, keys: items.map((o) => o.key) };
}

describe('selector index', () => {
  it('follows adds, label and node changes, status-only updates and deletes', () => {
    const s = podStore();
    s.put(pod({ ns: 'a', name: 'p1', cluster: 'c1', node: 'n1', labels: { app: 'web' } }));
    s.put(pod({ ns: 'a', name: 'p2', cluster: 'c1', node: 'n2', labels: { app: 'web' } }));
    s.put(pod({ ns: 'b', name: 'p3', cluster: 'c1', node: 'n1', labels: { app: 'db' } }));
    expect(candidates(s, 'fieldSelector=spec.nodeName%3Dn1')).toEqual({ via: 'field spec.nodeName', size: 2, keys: [key('a', 'p1', 'c1'), key('b', 'p3', 'c1')] });
    expect(candidates(s, 'labelSelector=app%3Dweb')?.keys).toEqual([key('a', 'p1', 'c1'), key('a', 'p2', 'c1')]);

    // p1 moves from web to db and from n1 to n2.
    s.put(pod({ ns: 'a', name: 'p1', cluster: 'c1', node: 'n2', labels: { app: 'db' } }));
    expect(candidates(s, 'labelSelector=app%3Dweb')?.keys).toEqual([key('a', 'p2', 'c1')]);
    expect(candidates(s, 'labelSelector=app%3Ddb')?.keys).toEqual([key('a', 'p1', 'c1'), key('b', 'p3', 'c1')]);
    expect(candidates(s, 'fieldSelector=spec.nodeName%3Dn1')?.keys).toEqual([key('b', 'p3', 'c1')]);
    expect(candidates(s, 'fieldSelector=spec.nodeName%3Dn2')?.keys).toEqual([key('a', 'p1', 'c1'), key('a', 'p2', 'c1')]);

    // A status update keeps every entry; losing a label drops it.
    s.put(pod({ ns: 'a', name: 'p1', cluster: 'c1', node: 'n2', labels: { app: 'db' }, phase: 'Failed' }));
    expect(candidates(s, 'labelSelector=app%3Ddb')?.keys).toEqual([key('a', 'p1', 'c1'), key('b', 'p3', 'c1')]);
    s.put(pod({ ns: 'b', name: 'p3', cluster: 'c1', node: 'n1' }));
    expect(candidates(s, 'labelSelector=app%3Ddb')?.keys).toEqual([key('a', 'p1', 'c1')]);

    s.remove(key('a', 'p1', 'c1'));
    expect(candidates(s, 'labelSelector=app%3Ddb')).toEqual({ via: 'label app', size: 0, keys: [] });
    expect(candidates(s, 'fieldSelector=spec.nodeName%3Dn2')?.keys).toEqual([key('a', 'p2', 'c1')]);
    // Emptied values and keys are forgotten, not kept as empty postings.
    expect(s.index!.labels.get('app')!.has('db')).toBe(false);
    s.remove(key('a', 'p2', 'c1'));
    expect(s.index!.labels.has('app')).toBe(false);
    expect([...s.index!.fields.get('spec.nodeName')!.keys()]).toEqual(['n1']);
  });

  it('keeps one entry per cluster for the same namespace/name, and indexes the cluster label', () => {
    const s = podStore();
    for (const c of ['c3', 'c1', 'c2']) s.put(pod({ ns: 'a', name: 'web-1', cluster: c, node: `${c}-n1`, labels: { app: 'web' } }));
    s.put(pod({ ns: 'a', name: 'web-0', cluster: 'c2', node: 'c2-n1', labels: { app: 'web' } }));
    expect(candidates(s, 'labelSelector=app%3Dweb')?.keys).toEqual([key('a', 'web-0', 'c2'), key('a', 'web-1', 'c1'), key('a', 'web-1', 'c2'), key('a', 'web-1', 'c3')]);
    expect(candidates(s, `labelSelector=${CLUSTER}%3Dc2`)?.keys).toEqual([key('a', 'web-0', 'c2'), key('a', 'web-1', 'c2')]);
    s.remove(key('a', 'web-1', 'c2'));
    expect(candidates(s, `labelSelector=${CLUSTER}%3Dc2`)?.keys).toEqual([key('a', 'web-0', 'c2')]);
    expect(candidates(s, 'fieldSelector=spec.nodeName%3Dc2-n1')?.keys).toEqual([key('a', 'web-0', 'c2')]);
  });

  it('takes the smallest set a requirement offers, unions the values of "in", and ignores what it cannot narrow', () => {
    const s = podStore();
    for (let i = 0; i < 30; i++) {
      s.put(pod({ ns: 'a', name: `p${String(i).padStart(2, '0')}`, cluster: 'c1', node: `n${i % 3}`, labels: { app: `app${i % 5}`, tier: i % 2 ? 'fe' : 'be' } }));
    }
    expect(candidates(s, 'labelSelector=tier%3Dfe,app%3Dapp1&fieldSelector=spec.nodeName%3Dn0')).toMatchObject({ via: 'label app', size: 6 });
    expect(candidates(s, 'labelSelector=tier%3Dfe&fieldSelector=spec.nodeName%3Dn0')).toMatchObject({ via: 'field spec.nodeName', size: 10 });
    const union = candidates(s, 'labelSelector=app+in+(app1,app3,nope)')!;
    expect(union.size).toBe(12);
    expect(union.keys).toEqual([...union.keys].sort());
    expect(union.keys.map((k) => Number(k.slice(3, 5)) % 5).every((m) => m === 1 || m === 3)).toBe(true);
    expect(candidates(s, 'labelSelector=app!%3Dapp1,tier,!x,app+notin+(app2)&fieldSelector=spec.nodeName!%3Dn1,status.phase%3DRunning')).toBeUndefined();
    expect(candidates(s, 'labelSelector=missing%3Dx')).toEqual({ via: 'label missing', size: 0, keys: [] });
    // The empty node name is a value like any other: fields.Set gives "" for a pod not scheduled.
    s.put(pod({ ns: 'b', name: 'pending', cluster: 'c1', labels: {} }));
    expect(candidates(s, 'fieldSelector=spec.nodeName%3D')?.keys).toEqual([key('b', 'pending', 'c1')]);
  });

  it('only configured label keys when given a list', () => {
    const s = new Store({ clock: newRvClock(1), fieldsOf: podFields, index: { labels: ['app'] } });
    s.put(pod({ ns: 'a', name: 'p', cluster: 'c1', labels: { app: 'web', tier: 'fe' } }));
    expect([...s.index!.labels.keys()]).toEqual(['app']);
    expect(candidates(s, 'labelSelector=tier%3Dfe')).toBeUndefined();
    expect(candidates(s, 'labelSelector=app%3Dweb')?.keys).toEqual(['a/p']);
  });
});

describe('indexed lists', () => {
  /** 40 pods in namespace a, 10 in b; needle=yes on every 7th; node nN by i % 4. */
  function filled(indexed: boolean): Store {
    const s = podStore(indexed);
    for (let i = 0; i < 50; i++) {
      const labels: Record<string, string> = { app: 'web' };
      if (i % 7 === 0) labels.needle = 'yes';
      s.put(pod({ ns: i < 40 ? 'a' : 'b', name: `p${String(i).padStart(2, '0')}`, cluster: i % 2 ? 'c1' : 'c2', node: `n${i % 4}`, labels }));
    }
    return s;
  }

  it('pages in key order across the index with continue, and ends with a token exactly when the scan does', async () => {
    const s = filled(true);
    const q = 'labelSelector=needle%3Dyes&limit=3';
    const p1 = await list(s, q);
    expect(p1.keys).toEqual([key('a', 'p00', 'c2'), key('a', 'p07', 'c1'), key('a', 'p14', 'c2')]);
    expect(p1.continueToken).not.toBe('');
    expect(p1.remainingItemCount).toBeUndefined();
    // Changes after the first page: the next pages are served at the first page's version (an older snapshot).
    s.put(pod({ ns: 'a', name: 'p21', cluster: 'c1', node: 'n1', labels: { app: 'web' } })); // loses needle
    s.put(pod({ ns: 'a', name: 'p22', cluster: 'c2', node: 'n2', labels: { needle: 'yes' } })); // gains it
    s.remove(key('a', 'p28', 'c2'));
    s.put(pod({ ns: 'a', name: 'p29', cluster: 'c9', labels: { needle: 'yes' } })); // new
    const p2 = await list(s, `${q}&continue=${p1.continueToken}`);
    expect(p2.rv).toBe(p1.rv);
    expect(p2.keys).toEqual([key('a', 'p21', 'c1'), key('a', 'p28', 'c2'), key('a', 'p35', 'c1')]);
    const p3 = await list(s, `${q}&continue=${p2.continueToken}`);
    // p49 (namespace b, last key of the store) is the last match: no object follows it, so no token.
    expect(p3.keys).toEqual([key('b', 'p42', 'c2'), key('b', 'p49', 'c1')]);
    expect(p3.continueToken).toBe('');
    // The current state sees the changes.
    expect((await list(s, 'labelSelector=needle%3Dyes')).keys).toEqual([0, 7, 14, 22, 29, 35, 42, 49].map((i) => key(i < 40 ? 'a' : 'b', `p${String(i).padStart(2, '0')}`, i === 22 ? 'c2' : i === 29 ? 'c9' : i % 2 ? 'c1' : 'c2')));

  });

  it('ends a page on the last match with a token when non-matching objects follow it, as the scan does', async () => {
    const s = filled(true);
    const ns = await list(s, 'fieldSelector=spec.nodeName%3Dn3&limit=2', 'b');
    expect(ns.keys).toEqual([key('b', 'p43', 'c1'), key('b', 'p47', 'c1')]);
    expect(ns.continueToken).not.toBe('');
    const ref = await list(filled(false), 'fieldSelector=spec.nodeName%3Dn3&limit=2', 'b');
    expect(ns.continueToken).toBe(ref.continueToken);
    const rest = await list(s, `fieldSelector=spec.nodeName%3Dn3&limit=2&continue=${ns.continueToken}`, 'b');
    expect(rest.keys).toEqual([]);
    expect(rest.continueToken).toBe('');
  });

  it('walks only the smallest candidate set; the whole selector and the extra filter still decide', async () => {
    const s = filled(true);
    const o = opts('labelSelector=needle%3Dyes,app%3Dweb&fieldSelector=spec.nodeName%3Dn2');
    const matches = o.labelSelector.matches.bind(o.labelSelector);
    let looked = 0;
    (o.labelSelector as { matches: typeof matches }).matches = (labels) => (looked++, matches(labels));
    const page = await listPage(s, target(), o, (x) => x.name !== 'p42');
    expect([...page.items].map((x: StoredObject) => x.name)).toEqual(['p14']);
    // needle=yes has 8 pods, spec.nodeName=n2 12, app=web 50: the 8 are looked at, not the store's 50.
    expect(looked).toBe(8);
  });
});

describe('a watch from now with a selector', () => {
  /** The body of a watch that sends its initial events and is stopped right after. */
  async function initialEvents(store: Store, query: string, namespace = ''): Promise<string> {
    const chunks: string[] = [];
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      writableLength: 0,
      destroyed: false,
      writeHead: () => res,
      flushHeaders: () => {},
      write: (b: Buffer | string) => (chunks.push(String(b)), true),
      end: (b?: Buffer | string) => {
        if (b) chunks.push(String(b));
        res.writableEnded = true;
      },
    });
    const w = serveWatch(res as unknown as ServerResponse, store, target(namespace), opts(query), { as: 'object' });
    // The initial events leave with backpressure, over a few turns of the loop: wait until nothing more comes.
    for (let quiet = 0; quiet < 3; ) {
      const n = chunks.length;
      await new Promise((r) => setImmediate(r));
      quiet = chunks.length === n ? quiet + 1 : 0;
    }
    w.stop();
    await w.done;
    return chunks.join('');
  }

  it('sends the initial events of the candidates only, the same as the scan', async () => {
    const stores = [podStore(true), podStore(false)];
    for (const s of stores) {
      for (let i = 0; i < 60; i++) s.put(pod({ ns: i % 2 ? 'a' : 'b', name: `p${i}`, cluster: 'c1', node: `n${i % 6}`, labels: { app: `app${i % 4}` } }));
    }
    for (const [q, ns] of [['watch=1&fieldSelector=spec.nodeName%3Dn2', ''], ['watch=1&labelSelector=app+in+(app1,app2)', 'a'], ['watch=1&labelSelector=app%3Dapp3&fieldSelector=spec.nodeName%3Dn3', '']] as const) {
      const [indexed, scanned] = await Promise.all(stores.map((s) => initialEvents(s, q, ns)));
      expect(indexed, q).toBe(scanned);
      expect(indexed.match(/"type":"ADDED"/g)?.length, q).toBe(q.includes('n2') ? 10 : q.includes('app1') ? 15 : 5);
    }
    // Only the 10 pods on n2 are looked at, not the store's 60.
    const o = opts('watch=1&fieldSelector=spec.nodeName%3Dn2');
    const matches = o.fieldSelector.matches.bind(o.fieldSelector);
    let looked = 0;
    (o.fieldSelector as { matches: typeof matches }).matches = (f) => (looked++, matches(f));
    const w = serveWatch(Object.assign(new EventEmitter(), { writableLength: 0, writeHead() {}, write: () => true, end() {} }) as unknown as ServerResponse, stores[0]!, target(), o, { as: 'object' });
    w.stop();
    await w.done;
    expect(looked).toBe(10);
  });
});

// ---- differential: the indexed list answers exactly what the scan answers ----


const LABEL_TERMS = ['app=x', 'app=y', 'app==z', 'app in (x,y)', 'app in (z,q)', 'app!=x', 'app notin (y)', 'tier', '!tier', 'tier=fe', `${CLUSTER}=c2`, `${CLUSTER} in (c1,c3)`, 'pod=p3', 'nokey=v', 'tier=', 'n>2', 'n<3'];
const FIELD_TERMS = ['spec.nodeName=n1', 'spec.nodeName=n2', 'spec.nodeName=', 'spec.nodeName!=n1', 'metadata.namespace=b', 'metadata.name=p4', 'status.phase=Running', 'status.phase!=Failed'];

describe('indexed lists against the scan, random stores and selectors', () => {
  it('agree on items, continue tokens, remainingItemCount and versions', async () => {
    let indexedPages = 0;
    let pages = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
      const window = r() < 0.2 ? 30 : 10_000;
      const stores = [podStore(true, window), podStore(false, window)] as const;
      const live = new Map<string, PodSpec>();
      const rvs: number[] = [];
      const mutate = () => {
        const x = r();
        if (x < 0.2 && live.size > 0) {
          const k = pick([...live.keys()]);
          live.delete(k);
          for (const s of stores) s.remove(k);
        } else {
          let p: PodSpec;
          if (x < 0.4 && live.size > 0) {
            // A status-only update: labels and node as they were.
            p = { ...pick([...live.values()]), phase: pick(['Running', 'Failed', 'Pending']) };
          } else {
            const labels: Record<string, string> = {};
            if (r() < 0.8) labels.app = pick(['x', 'y', 'z']);
            if (r() < 0.5) labels.tier = pick(['fe', 'be', '']);
            if (r() < 0.3) labels.pod = `p${Math.floor(r() * 10)}`;
            if (r() < 0.3) labels.n = String(Math.floor(r() * 5));
            p = { ns: pick(['a', 'b', 'c']), name: `p${Math.floor(r() * 12)}`, cluster: pick(['c1', 'c2', 'c3']), labels, node: pick([undefined, 'n1', 'n2', 'n3']), phase: pick(['Running', 'Pending']) };
          }
          live.set(key(p.ns, p.name, p.cluster), p);
          for (const s of stores) s.put(pod(p));
        }
        rvs.push(stores[0].clock.current());
      };
      const n = 20 + Math.floor(r() * 150);
      for (let i = 0; i < n; i++) mutate();

      for (let q = 0; q < 25; q++) {
        const ls = Array.from({ length: Math.floor(r() * 3) }, () => pick(LABEL_TERMS)).join(',');
        const fs = Array.from({ length: Math.floor(r() * 3) }, () => pick(FIELD_TERMS)).join(',');
        const params = new URLSearchParams();
        if (ls) params.set('labelSelector', ls);
        if (fs) params.set('fieldSelector', fs);
        const limit = r() < 0.3 ? 0 : 1 + Math.floor(r() * 6);
        if (limit) params.set('limit', String(limit));
        // Now and then an exact older version: the index (current) merged with the window's changed keys.
        if (r() < 0.2 && rvs.length > 1) {
          params.set('resourceVersion', String(pick(rvs.slice(-40))));
          params.set('resourceVersionMatch', 'Exact');
        }
        const namespace = pick(['', '', 'a', 'b', 'c']);
        const o = opts(params.toString());
        if (candidatesFor(stores[0].index!, o.labelSelector, o.fieldSelector)) indexedPages++;
        const what = `seed ${seed} query ${q}: ${namespace || '*'} ${params}`;
        for (let pageNo = 0; ; pageNo++) {
          const got = await Promise.allSettled(stores.map((s) => list(s, params.toString(), namespace)));
          pages++;
          if (got[1].status === 'rejected') {
            expect(got[1].reason, what).toBeInstanceOf(StatusError);
            expect(got[0].status === 'rejected' && (got[0].reason as StatusError).status, what).toEqual((got[1].reason as StatusError).status);
            break;
          }
          expect(got[0].status, what).toBe('fulfilled');
          const [a, b] = got.map((g) => (g as PromiseFulfilledResult<ListPage & { keys: string[] }>).value);
          expect(a!.keys, `${what} page ${pageNo}`).toEqual(b!.keys);
          expect((a!.items as StoredObject[]).map((x) => x.json), what).toEqual((b!.items as StoredObject[]).map((x) => x.json));
          expect([a!.rv, a!.continueToken, a!.remainingItemCount], what).toEqual([b!.rv, b!.continueToken, b!.remainingItemCount]);
          if (!b!.continueToken) break;
          params.set('continue', b!.continueToken);
          params.delete('resourceVersion');
          params.delete('resourceVersionMatch');
          // Changes between pages, so continues are served from older snapshots.
          for (let m = Math.floor(r() * 4); m > 0; m--) mutate();
        }
      }
    }
    // The comparison means something only if the index was used often.
    expect(indexedPages).toBeGreaterThan(400);
    expect(pages).toBeGreaterThan(2000);
  });
});

/** Every posting as plain keys: field or label, value -> keys in order. */
function postingsOf(store: Store): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const idx = store.index!;
  const add = (what: string, byValue: Map<string, string | { from(from?: string): IterableIterator<string> }>) => {
    for (const [value, p] of byValue) out[`${what}=${value}`] = typeof p === 'string' ? [p] : [...p.from('')];
  };
  for (const [field, byValue] of idx.fields) add(`field ${field}`, byValue);
  for (const [label, byValue] of idx.labels) add(`label ${label}`, byValue);
  return out;
}

describe('an index deferred while a store fills, then built in key order', () => {
  it('offers nothing while deferred (lists scan, with the same answers), then the index kept on every change', async () => {
    const r = rng(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const deferred = podStore();
    const kept = podStore();
    deferred.deferIndex();
    const live: string[] = [];
    const mutate = () => {
      const x = r();
      if (x < 0.15 && live.length > 0) {
        const k = live.splice(Math.floor(r() * live.length), 1)[0]!;
        for (const s of [deferred, kept]) s.remove(k);
        return;
      }
      const p: PodSpec =
        x < 0.4 && live.length > 0
          ? // An existing pod, relabelled or moved.
            (() => {
              const [ns, rest] = pick(live).split('/') as [string, string];
              const [name, cluster] = rest.split('\u0000') as [string, string];
              return { ns, name, cluster, node: pick(['n1', 'n2', undefined]), labels: { app: pick(['x', 'y']) } };
            })()
          : { ns: pick(['a', 'b', 'c', 'd']), name: `p${Math.floor(r() * 4000)}`, cluster: pick(['c1', 'c2', 'c3']), node: pick(['n1', 'n2', 'n3', undefined]), labels: { app: pick(['x', 'y', 'z']), ...(r() < 0.5 ? { uid: `u${Math.floor(r() * 1e6)}` } : {}) } };
      const k = key(p.ns, p.name, p.cluster);
      if (!deferred.get(k)) live.push(k);
      for (const s of [deferred, kept]) s.put(pod(p));
    };
    for (let i = 0; i < 9000; i++) mutate();
    expect(deferred.size).toBeGreaterThan(3 * 1024);
    expect(postingsOf(deferred)).toEqual({});
    expect(candidates(deferred, 'labelSelector=app%3Dx')).toBeUndefined();
    const byScan = await list(deferred, 'labelSelector=app%3Dx&limit=50', 'b');
    const byIndex = await list(kept, 'labelSelector=app%3Dx&limit=50', 'b');
    expect([byScan.keys, byScan.continueToken]).toEqual([byIndex.keys, byIndex.continueToken]);

    // Built in slices of one batch, with changes between them: before and after the keys built so far.
    let slices = 0;
    let built = false;
    const building = deferred.buildIndex(0).then(() => (built = true));
    expect(deferred.index!.state).toBe('building');
    while (!built) {
      slices++;
      for (let i = 0; i < 40; i++) mutate();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await building;
    expect(slices).toBeGreaterThan(2);
    expect(deferred.index!.state).toBe('built');
    expect(postingsOf(deferred)).toEqual(postingsOf(kept));
    for (let i = 0; i < 500; i++) mutate();
    expect(postingsOf(deferred)).toEqual(postingsOf(kept));
    expect(candidates(deferred, 'labelSelector=app%3Dx')).toEqual(candidates(kept, 'labelSelector=app%3Dx'));
  });

  it('stops a build that a new deferral overtook', async () => {
    const s = podStore();
    for (let i = 0; i < 5000; i++) s.put(pod({ ns: 'a', name: `p${i}`, cluster: 'c1', node: 'n1', labels: { app: 'x' } }));
    s.deferIndex();
    const first = s.buildIndex(0);
    s.deferIndex();
    await first;
    expect(s.index!.state).toBe('deferred');
    expect(postingsOf(s)).toEqual({});
    await s.buildIndex();
    expect(candidates(s, 'labelSelector=app%3Dx')?.size).toBe(5000);
  });
});
