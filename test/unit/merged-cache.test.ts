import { describe, expect, it } from 'vitest';
import { fleetReadAuthorizer } from '../../src/authz/cachedreads.js';
import { CLUSTER_LABEL, MergedCache, newAmbiguousError } from '../../src/cache/merged.js';
import type { StoreEvent } from '../../src/cache/store.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';

const BASE = 1_000_000;

function newCache(base = BASE) {
  return new MergedCache({ instanceID: 'test', windowSize: 100, dropManagedFields: true, rvBase: base });
}

function pod(ns: string, name: string, rv: string, extra: Record<string, any> = {}): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: ns, name, resourceVersion: rv, labels: { app: name }, managedFields: [{ manager: 'kubectl' }] },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'x' }] },
    ...extra,
  };
}

function event(ns: string, name: string, rv: string): any {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { namespace: ns, name, resourceVersion: rv },
    involvedObject: { kind: 'Pod', namespace: ns, name: 'web' },
    reason: 'Started',
    message: 'Started container',
    type: 'Normal',
    count: 1,
    source: { component: 'kubelet', host: 'node-1' },
  };
}

function record(cache: MergedCache, which: 'pods' | 'events' | 'eventsV1' = 'pods') {
  const seen: StoreEvent[] = [];
  cache[which].subscribe((ev) => seen.push(ev));
  return {
    seen,
    summary: () => seen.map((e) => `${e.type} ${e.object.key.replace('\u0000', '@')} ${e.rv}`),
  };
}

describe('MergedCache ingest', () => {
  it('labels objects with their cluster, drops managedFields and issues gateway resourceVersions', () => {
    const cache = newCache();
    cache.sink('member-a', 'pods').replace([pod('ns', 'web', '17')], '20');
    const [o] = cache.owners('pods', 'ns', 'web');
    expect(o.cluster).toBe('member-a');
    expect(o.memberRV).toBe('17');
    expect(o.stored.rv).toBe(BASE + 1);
    const served = JSON.parse(o.stored.json.toString());
    expect(served.metadata.resourceVersion).toBe(String(BASE + 1));
    expect(served.metadata.labels).toEqual({ app: 'web', [CLUSTER_LABEL]: 'member-a' });
    expect(served.metadata).not.toHaveProperty('managedFields');
    expect(o.stored.fields['spec.nodeName']).toBe('node-1');
    expect(cache.lastMemberRV('member-a', 'pods')).toBe('20');
  });

  it('keeps managedFields when asked to', () => {
    const cache = new MergedCache({ instanceID: 'x', windowSize: 10, dropManagedFields: false, rvBase: BASE });
    cache.sink('a', 'pods').apply('ADDED', pod('ns', 'web', '1'));
    expect(JSON.parse(cache.owners('pods', 'ns', 'web')[0].stored.json.toString()).metadata.managedFields).toEqual([{ manager: 'kubectl' }]);
  });

  it('holds one name once per cluster, listed in namespace/name then cluster order', () => {
    const cache = newCache();
    cache.sink('member-b', 'pods').replace([pod('ns', 'web', '5'), pod('ns', 'web-2', '6')], '6');
    cache.sink('member-a', 'pods').replace([pod('ns', 'web', '9'), pod('a', 'web', '3')], '9');
    expect([...cache.pods.values()].map((o) => o.key.replace('\u0000', '@'))).toEqual(['a/web@member-a', 'ns/web@member-a', 'ns/web@member-b', 'ns/web-2@member-b']);
    expect(cache.owners('pods', 'ns', 'web').map((o) => [o.cluster, o.memberRV])).toEqual([['member-a', '9'], ['member-b', '5']]);
    expect(cache.owners('pods', 'ns', 'we')).toEqual([]);
    expect(cache.objectCounts('member-a')).toEqual({ pods: 2, events: 0 });
  });

  it("gives back each member's resourceVersion as the member wrote it, numbers or not", () => {
    const cache = newCache();
    const rvs = ['0', '7', '123456789', '999999999999999', '1234567890123456', '007', '1e3', '-1', 'abc', ''];
    cache.sink('m', 'pods').replace(rvs.map((rv, i) => pod('ns', `p${i}`, rv)), '10');
    for (const [i, rv] of rvs.entries()) {
      const [o] = cache.owners('pods', 'ns', `p${i}`);
      expect(o!.memberRV).toBe(rv);
      expect(cache.toMemberRV('pods', 'ns', `p${i}`, 'm', String(o!.stored.rv))).toBe(rv);
      expect(cache.toGatewayRV('pods', 'ns', `p${i}`, 'm', rv)).toBe(String(o!.stored.rv));
    }
    // Another spelling of the same number is another version.
    expect(cache.toGatewayRV('pods', 'ns', 'p1', 'm', '07')).toBeUndefined();
    expect(cache.toGatewayRV('pods', 'ns', 'p5', 'm', '7')).toBeUndefined();
    // The same versions again change nothing (but for a pod without one, which is always taken anew); a new one does.
    const { seen } = record(cache);
    cache.sink('m', 'pods').replace(rvs.map((rv, i) => pod('ns', `p${i}`, i === 2 ? '123456790' : rv)), '11');
    expect(seen.map((e) => [e.type, e.object.name])).toEqual([['MODIFIED', 'p2'], ['MODIFIED', 'p9']]);
  });

  it('a relist emits exactly the difference: ADDED, MODIFIED, DELETED, nothing for unchanged objects', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'pods');
    sink.replace([pod('ns', 'keep', '1'), pod('ns', 'change', '2'), pod('ns', 'gone', '3')], '3');
    const rec = record(cache);
    sink.replace([pod('ns', 'keep', '1'), pod('ns', 'change', '7'), pod('ns', 'new', '8')], '9');
    expect(rec.summary()).toEqual([`MODIFIED ns/change@m ${BASE + 4}`, `ADDED ns/new@m ${BASE + 5}`, `DELETED ns/gone@m ${BASE + 6}`]);
    expect(cache.pods.size).toBe(3);
  });

  it('watch events: duplicates are ignored, DELETED removes, deletes of unknown objects are no-ops', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'pods');
    const rec = record(cache);
    sink.apply('ADDED', pod('ns', 'web', '1'));
    sink.apply('ADDED', pod('ns', 'web', '1'));
    sink.apply('MODIFIED', pod('ns', 'web', '2'));
    sink.apply('DELETED', pod('ns', 'web', '3'));
    sink.apply('DELETED', pod('ns', 'other', '4'));
    sink.progress!('10');
    expect(rec.summary()).toEqual([`ADDED ns/web@m ${BASE + 1}`, `MODIFIED ns/web@m ${BASE + 2}`, `DELETED ns/web@m ${BASE + 3}`]);
    expect(cache.lastMemberRV('m', 'pods')).toBe('10');
    expect(cache.clock.current()).toBe(BASE + 3);
  });

  it('serves core events as events.k8s.io/v1 under the same keys and resourceVersions', () => {
    const cache = newCache();
    const v1 = record(cache, 'eventsV1');
    const sink = cache.sink('m', 'events');
    sink.apply('ADDED', event('ns', 'web.1', '4'));
    const core = cache.events.get('ns/web.1\u0000m')!;
    const ev1 = cache.eventsV1.get('ns/web.1\u0000m')!;
    expect(ev1.rv).toBe(core.rv);
    const obj = JSON.parse(ev1.json.toString());
    expect(obj).toMatchObject({ apiVersion: 'events.k8s.io/v1', note: 'Started container', regarding: { name: 'web' }, deprecatedCount: 1 });
    expect(obj.metadata.labels[CLUSTER_LABEL]).toBe('m');
    expect(ev1.fields['involvedObject.name']).toBe('web');
    sink.apply('DELETED', event('ns', 'web.1', '5'));
    expect(v1.summary()).toEqual([`ADDED ns/web.1@m ${BASE + 1}`, `DELETED ns/web.1@m ${BASE + 2}`]);
    expect(cache.eventsV1.size).toBe(0);
  });

  it('removing a cluster deletes its objects for open watches and disarms its old sinks', async () => {
    const cache = newCache();
    const a = cache.sink('a', 'pods');
    a.replace([pod('ns', 'x', '1'), pod('ns', 'y', '2')], '2');
    cache.sink('b', 'pods').replace([pod('ns', 'x', '1')], '1');
    cache.sink('a', 'events').replace([event('ns', 'e', '1')], '1');
    const rec = record(cache);
    const v1 = record(cache, 'eventsV1');
    await cache.removeCluster('a');
    expect(rec.summary().map((s) => s.split(' ').slice(0, 2).join(' '))).toEqual(['DELETED ns/x@a', 'DELETED ns/y@a']);
    expect(v1.seen.map((e) => e.type)).toEqual(['DELETED']);
    expect(cache.clusters()).toEqual(['b']);
    a.apply('ADDED', pod('ns', 'z', '3'));
    expect(cache.owners('pods', 'ns', 'z')).toEqual([]);
    // Added again (a Karmada Cluster recreated): a new sink works.
    cache.sink('a', 'pods').apply('ADDED', pod('ns', 'z', '3'));
    expect(cache.owners('pods', 'ns', 'z').map((o) => o.cluster)).toEqual(['a']);
  });
});

describe('MergedCache lists page by page', () => {
  const keys = (cache: MergedCache) => [...cache.pods.values()].map((o) => o.key.replace('\u0000', '@'));

  it('stores each page as it comes and deletes what the list did not name only when it ends complete', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'pods');
    sink.replace([pod('ns', 'keep', '1'), pod('ns', 'change', '2'), pod('ns', 'gone', '3')], '3');
    const rec = record(cache);
    const list = sink.startList();
    list.add([pod('ns', 'change', '7')]);
    list.add([pod('ns', 'keep', '1'), pod('ns', 'new', '8')]);
    // Mid-list: newer versions are in, nothing is deleted yet, the member's version is still the last list's.
    expect(rec.summary()).toEqual([`MODIFIED ns/change@m ${BASE + 4}`, `ADDED ns/new@m ${BASE + 5}`]);
    expect(keys(cache)).toEqual(['ns/change@m', 'ns/gone@m', 'ns/keep@m', 'ns/new@m']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('3');
    list.end('9');
    expect(rec.summary().slice(2)).toEqual([`DELETED ns/gone@m ${BASE + 6}`]);
    expect(keys(cache)).toEqual(['ns/change@m', 'ns/keep@m', 'ns/new@m']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('9');
    expect(cache.objectCounts('m').pods).toBe(3);
  });

  it('an abandoned list keeps what it stored and deletes nothing; the next list starts with nothing seen', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'pods');
    sink.replace([pod('ns', 'a', '1'), pod('ns', 'b', '2')], '2');
    const rec = record(cache);
    const first = sink.startList();
    first.add([pod('ns', 'a', '5'), pod('ns', 'c', '6')]);
    first.abort();
    // Nothing more from an abandoned list.
    first.add([pod('ns', 'd', '7')]);
    first.end('99');
    expect(keys(cache)).toEqual(['ns/a@m', 'ns/b@m', 'ns/c@m']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('2');
    // Started over: c, seen by the abandoned attempt, is gone by now; a is still there (same version: no event).
    const second = sink.startList();
    second.add([pod('ns', 'a', '5'), pod('ns', 'b', '2')]);
    second.end('10');
    expect(rec.summary()).toEqual([`MODIFIED ns/a@m ${BASE + 3}`, `ADDED ns/c@m ${BASE + 4}`, `DELETED ns/c@m ${BASE + 5}`]);
    expect(keys(cache)).toEqual(['ns/a@m', 'ns/b@m']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('10');
  });

  it('a member removed mid-list leaves nothing behind, and the rest of its list does not touch the member added again', async () => {
    const cache = newCache();
    const list = cache.sink('m', 'pods').startList();
    list.add([pod('ns', 'a', '1'), pod('ns', 'b', '2')]);
    await cache.removeCluster('m');
    list.add([pod('ns', 'c', '3')]);
    expect(keys(cache)).toEqual([]);
    // The member comes back (a new sink) before the old list has ended: the old list's end deletes nothing of it.
    cache.sink('m', 'pods').replace([pod('ns', 'x', '9')], '9');
    list.end('3');
    expect(keys(cache)).toEqual(['ns/x@m']);
    expect(cache.lastMemberRV('m', 'pods')).toBe('9');
  });

  it('events lists page by page too, with their events.k8s.io/v1 views', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'events');
    sink.replace([event('ns', 'e1', '1'), event('ns', 'e2', '2')], '2');
    const list = sink.startList();
    list.add([event('ns', 'e2', '2'), event('ns', 'e3', '3')]);
    expect(cache.eventsV1.size).toBe(3);
    list.end('3');
    expect([...cache.eventsV1.values()].map((o) => o.name)).toEqual(['e2', 'e3']);
    expect([...cache.events.values()].map((o) => o.name)).toEqual(['e2', 'e3']);
  });
});

describe('the pods index while members make their first lists', () => {
  it('waits while lists fill an empty cache, is built once none is under way, and is kept on every change after', () => {
    const cache = newCache();
    const a = cache.sink('a', 'pods').startList();
    const b = cache.sink('b', 'pods').startList();
    a.add([pod('ns', 'x', '1'), pod('ns', 'y', '2')]);
    b.add([pod('ns', 'x', '1')]);
    expect(cache.pods.index!.state).toBe('deferred');
    a.end('2');
    // b is still listing.
    expect(cache.pods.index!.state).toBe('deferred');
    cache.sink('a', 'pods').apply('MODIFIED', pod('ns', 'y', '3', { spec: { nodeName: 'node-2' } }));
    b.abort();
    // A few keys are built at once; a million take slices (Store.buildIndex).
    expect(cache.pods.index!.state).toBe('built');
    const nodes = cache.pods.index!.fields.get('spec.nodeName')!;
    const keysOf = (p: unknown) => (typeof p === 'string' ? [p] : [...(p as { from(): Iterable<string> }).from()]).map((k) => k.replace('\u0000', '@'));
    expect(keysOf(nodes.get('node-1'))).toEqual(['ns/x@a', 'ns/x@b']);
    expect(keysOf(nodes.get('node-2'))).toEqual(['ns/y@a']);
    // A cache that holds pods keeps its index while a member lists again or another one joins.
    const c = cache.sink('c', 'pods').startList();
    c.add([pod('ns', 'z', '1')]);
    expect(cache.pods.index!.state).toBe('built');
    expect(keysOf(cache.pods.index!.labels.get('app')!.get('z'))).toEqual(['ns/z@c']);
    c.end('1');
  });

  it('is built even when the last list under way failed as it ended', () => {
    const cache = newCache();
    const a = cache.sink('a', 'pods').startList();
    const b = cache.sink('b', 'pods').startList();
    a.add([pod('ns', 'x', '1')]);
    a.end('1');
    // y reaches b's sink outside its list, which then ends without it: the end deletes y, and a listener fails on that.
    cache.sink('b', 'pods').apply('ADDED', pod('ns', 'y', '2'));
    b.add([pod('ns', 'z', '3')]);
    const stop = cache.pods.subscribe((ev) => {
      if (ev.type === 'DELETED') throw new Error('a listener failed');
    });
    expect(cache.pods.index!.state).toBe('deferred');
    expect(() => b.end('3')).toThrow('a listener failed');
    stop();
    expect(cache.pods.index!.state).toBe('built');
  });
});

describe('removing a big member', () => {
  it('goes in batches that let the event loop run, and spares what the member brings back meanwhile', async () => {
    const cache = newCache();
    cache.sink('big', 'pods').replace(Array.from({ length: 2500 }, (_, i) => pod('ns', `p-${String(i).padStart(4, '0')}`, '1')), '1');
    cache.sink('small', 'pods').replace([pod('ns', 'p-0000', '1')], '1');
    const rec = record(cache);
    const done = cache.removeCluster('big');
    expect(rec.seen.length).toBe(1000);
    expect(cache.clusters()).toEqual(['small']);
    // Back before the removal finished (a Cluster object deleted and created again): p-2400 is its again.
    cache.sink('big', 'pods').apply('ADDED', pod('ns', 'p-2400', '7'));
    await done;
    expect(rec.seen.filter((e) => e.type === 'DELETED')).toHaveLength(2499);
    expect([...cache.pods.values()].map((o) => o.key.replace('\u0000', '@'))).toEqual(['ns/p-0000@small', 'ns/p-2400@big']);
    expect(cache.owners('pods', 'ns', 'p-2400')[0].memberRV).toBe('7');
  });
});

describe('MergedCache resourceVersions', () => {
  it('translates the current gateway version back to the member version, and nothing else', () => {
    const cache = newCache();
    const sink = cache.sink('m', 'pods');
    sink.apply('ADDED', pod('ns', 'web', '41'));
    const first = String(cache.owners('pods', 'ns', 'web')[0].stored.rv);
    expect(cache.toMemberRV('pods', 'ns', 'web', 'm', first)).toBe('41');
    expect(cache.toGatewayRV('pods', 'ns', 'web', 'm', '41')).toBe(first);
    sink.apply('MODIFIED', pod('ns', 'web', '42'));
    expect(cache.toMemberRV('pods', 'ns', 'web', 'm', first)).toBeUndefined();
    expect(cache.toGatewayRV('pods', 'ns', 'web', 'm', '41')).toBeUndefined();
    expect(cache.toMemberRV('pods', 'ns', 'web', 'other', first)).toBeUndefined();
    expect(cache.toMemberRV('pods', 'ns', 'nope', 'm', first)).toBeUndefined();
  });

  it('recognises only versions it issued', () => {
    const cache = newCache();
    cache.sink('m', 'pods').apply('ADDED', pod('ns', 'web', '1'));
    expect(cache.isOurRV(String(BASE))).toBe(true);
    expect(cache.isOurRV(String(BASE + 1))).toBe(true);
    expect(cache.isOurRV(String(BASE + 2))).toBe(false);
    expect(cache.isOurRV(String(BASE - 1))).toBe(false);
    for (const junk of ['', '0', 'abc', '-5', '1e9', '99999999999999999999']) expect(cache.isOurRV(junk)).toBe(false);
  });

  it('two processes start far apart: neither accepts the other one versions', () => {
    const a = new MergedCache({ instanceID: 'a', windowSize: 10, dropManagedFields: true });
    const b = new MergedCache({ instanceID: 'b', windowSize: 10, dropManagedFields: true });
    expect(a.rvBase).not.toBe(b.rvBase);
    expect(a.rvBase).toBeGreaterThanOrEqual(2 ** 40);
    expect(a.rvBase).toBeLessThan(2 ** 52);
    a.sink('m', 'pods').apply('ADDED', pod('ns', 'web', '1'));
    b.sink('m', 'pods').apply('ADDED', pod('ns', 'web', '1'));
    expect(a.isOurRV(String(b.clock.current()))).toBe(false);
    expect(b.isOurRV(String(a.clock.current()))).toBe(false);
  });

  it('pods and events share one resourceVersion sequence', () => {
    const cache = newCache();
    cache.sink('m', 'pods').apply('ADDED', pod('ns', 'p', '1'));
    cache.sink('m', 'events').apply('ADDED', event('ns', 'e', '1'));
    cache.sink('m', 'pods').apply('ADDED', pod('ns', 'q', '2'));
    expect([...cache.pods.values()].map((o) => o.rv)).toEqual([BASE + 1, BASE + 3]);
    expect([...cache.events.values()].map((o) => o.rv)).toEqual([BASE + 2]);
  });
});

describe('ambiguous names', () => {
  it('answer 409 Conflict naming the clusters and how to pick one', () => {
    const s = newAmbiguousError({ group: '', resource: 'pods' }, 'web', ['member-a', 'member-b']).status;
    expect(s.code).toBe(409);
    expect(s.reason).toBe('Conflict');
    expect(s.details).toEqual({ name: 'web', kind: 'pods' });
    expect(s.message).toBe(
      'pods "web" is ambiguous: it exists in member clusters member-a, member-b; select one with the label selector ' +
        'fleetgate.io/cluster=<cluster> (e.g. -l fleetgate.io/cluster=member-a --field-selector metadata.name=web) or ' +
        'address it through /clusters/<cluster>/',
    );
    const g = newAmbiguousError({ group: 'events.k8s.io', resource: 'events' }, 'e', ['a', 'b']).status;
    expect(g.details).toEqual({ name: 'e', group: 'events.k8s.io', kind: 'events' });
    expect(g.message).toMatch(/^events\.events\.k8s\.io "e" is ambiguous/);
  });
});

describe('fleetReadAuthorizer', () => {
  const ctxFor = (method: string, path: string, username = 'alice'): RequestContext => {
    const url = new URL(path, 'https://gw');
    return { url, info: newRequestInfo(method, url.pathname, url.searchParams), user: { username, groups: ['system:authenticated'] } } as RequestContext;
  };

  it('asks the control plane with the request attributes and allows', async () => {
    const asked: any[] = [];
    const authz = fleetReadAuthorizer(async (a) => {
      asked.push(a);
      return { allowed: true, reason: '' };
    });
    expect(await authz(ctxFor('GET', '/api/v1/namespaces/demo/pods?watch=1'))).toBeUndefined();
    expect(asked[0]).toMatchObject({ verb: 'watch', namespace: 'demo', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', name: '' });
    expect(asked[0].user.username).toBe('alice');
  });

  it('refuses with kube-apiserver 403 messages', async () => {
    const deny = fleetReadAuthorizer(async () => ({ allowed: false, reason: '' }));
    await expect(deny(ctxFor('GET', '/api/v1/pods'))).rejects.toMatchObject({
      status: { code: 403, reason: 'Forbidden', message: 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope', details: { kind: 'pods' } },
    });
    await expect(deny(ctxFor('GET', '/apis/events.k8s.io/v1/namespaces/x/events/e1'))).rejects.toMatchObject({
      status: { message: 'events.events.k8s.io "e1" is forbidden: User "alice" cannot get resource "events" in API group "events.k8s.io" in the namespace "x"' },
    });
    const why = fleetReadAuthorizer(async () => ({ allowed: false, reason: 'no RBAC policy matched' }));
    await expect(why(ctxFor('GET', '/api/v1/namespaces/x/pods'))).rejects.toMatchObject({
      status: { message: 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "x": no RBAC policy matched' },
    });
  });

  it('a failing review is a 500, as the authorization filter answers', async () => {
    const broken = fleetReadAuthorizer(async () => {
      throw new Error('connection refused');
    });
    await expect(broken(ctxFor('GET', '/api/v1/pods'))).rejects.toThrow('connection refused');
  });
});
