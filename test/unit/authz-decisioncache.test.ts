// The SubjectAccessReview decision cache: kube's webhook-authorizer key, TTLs and limits, against a counting
// reviewer and a hand-driven clock.

import { describe, expect, it } from 'vitest';
import type { Attributes, Decision } from '../../src/api/user.js';
import { freezeUser } from '../../src/authn/group.js';
import { cachingReviewer, DECISION_CACHE_DEFAULTS, decisionKey, newDecisionCache, type SubjectAccessReviewer } from '../../src/authz/decisioncache.js';

function attrs(over: Partial<Attributes> = {}, user: Partial<Attributes['user']> = {}): Attributes {
  return {
    user: { username: 'alice', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] }, ...user },
    verb: 'list',
    isResourceRequest: true,
    path: '/api/v1/namespaces/demo/pods',
    namespace: 'demo',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'pods',
    subresource: '',
    name: '',
    ...over,
  };
}

/** A reviewer that allows whoever is in `allowed`, counting the reviews it is asked for. */
function counting(allowed: Set<string>): SubjectAccessReviewer & { calls: Attributes[] } {
  const calls: Attributes[] = [];
  const f = async (a: Attributes): Promise<Decision> => {
    calls.push(a);
    return allowed.has(a.user.username) ? { allowed: true, reason: 'RBAC: allowed' } : { allowed: false, reason: '' };
  };
  return Object.assign(f, { calls });
}

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('decisionKey', () => {
  it('differs for every attribute a review carries, and only for those', () => {
    const base = decisionKey(attrs());
    const variants = [
      attrs({}, { username: 'bob' }),
      attrs({}, { uid: 'u-2' }),
      attrs({}, { uid: undefined }),
      attrs({}, { groups: ['dev'] }),
      attrs({}, { groups: ['dev', 'system:authenticated', 'ops'] }),
      attrs({}, { extra: { scopes: ['a'] } }),
      attrs({}, { extra: { scopes: ['a', 'b'], other: ['x'] } }),
      attrs({}, { extra: undefined }),
      attrs({ verb: 'watch' }),
      attrs({ apiGroup: 'events.k8s.io' }),
      attrs({ apiVersion: 'v2' }),
      attrs({ resource: 'events' }),
      attrs({ subresource: 'log' }),
      attrs({ namespace: 'prod' }),
      attrs({ namespace: '' }),
      attrs({ name: 'web' }),
      attrs({ isResourceRequest: false }),
    ].map(decisionKey);
    for (const v of variants) expect(v).not.toBe(base);
    expect(new Set(variants).size).toBe(variants.length);
    // The path is not part of a resource request's review; extra keys are a map (order does not matter).
    expect(decisionKey(attrs({ path: '/api/v1/pods' }))).toBe(base);
    const twoKeys = (o: Record<string, string[]>) => decisionKey(attrs({}, { extra: o }));
    expect(twoKeys({ a: ['1'], b: ['2'] })).toBe(twoKeys({ b: ['2'], a: ['1'] }));
    // An empty extra map is no extra at all, as in the review's JSON.
    expect(decisionKey(attrs({}, { extra: {} }))).toBe(decisionKey(attrs({}, { extra: undefined })));
  });

  it('cannot be confused by values that contain separators', () => {
    expect(decisionKey(attrs({ namespace: 'a","b' }))).not.toBe(decisionKey(attrs({ namespace: 'a', name: 'b' })));
    expect(decisionKey(attrs({}, { groups: ['a,b'] }))).not.toBe(decisionKey(attrs({}, { groups: ['a', 'b'] })));
  });

  it("keeps a frozen user's half of the key, and never a user that can still change", () => {
    // The user object itself, as authenticators pass it on (attrs() would copy it).
    const as = (user: Attributes['user'], over: Partial<Attributes> = {}): Attributes => ({ ...attrs(over), user });
    const frozen = freezeUser({ username: 'alice', groups: ['dev'], extra: { scopes: ['a'] } });
    const first = decisionKey(as(frozen));
    expect(decisionKey(as(frozen, { verb: 'watch' }))).not.toBe(first);
    expect(decisionKey(as(frozen))).toBe(first);
    // A user that is not frozen all the way down is keyed anew each time: a change shows in its key.
    const open = { username: 'alice', groups: ['dev'], extra: { scopes: ['a'] } };
    const before = decisionKey(as(open));
    expect(before).toBe(first);
    open.groups.push('admins');
    expect(decisionKey(as(open))).not.toBe(before);
    const shallow = Object.freeze({ username: 'alice', groups: ['dev'] as string[] });
    const k1 = decisionKey(as(shallow));
    shallow.groups.push('admins');
    expect(decisionKey(as(shallow))).not.toBe(k1);
  });

  it('non-resource requests are keyed by verb and path', () => {
    const nr = (path: string) => decisionKey(attrs({ isResourceRequest: false, verb: 'get', path }));
    expect(nr('/version')).not.toBe(nr('/healthz'));
    expect(nr('/version')).toBe(decisionKey(attrs({ isResourceRequest: false, verb: 'get', path: '/version', resource: 'x' })));
  });
});

describe('cachingReviewer', () => {
  it('asks once per distinct request within the TTL', async () => {
    const sar = counting(new Set(['alice']));
    const review = cachingReviewer(sar);
    expect(await review(attrs())).toEqual({ allowed: true, reason: 'RBAC: allowed' });
    expect(await review(attrs())).toEqual({ allowed: true, reason: 'RBAC: allowed' });
    expect(sar.calls).toHaveLength(1);
    expect(await review(attrs({ namespace: 'prod' }))).toEqual({ allowed: true, reason: 'RBAC: allowed' });
    expect(await review(attrs({}, { username: 'bob' }))).toEqual({ allowed: false, reason: '' });
    expect(await review(attrs({}, { username: 'bob' }))).toEqual({ allowed: false, reason: '' });
    expect(sar.calls.map((a) => `${a.user.username}/${a.namespace}`)).toEqual(['alice/demo', 'alice/prod', 'bob/demo']);
  });

  it("keeps allowed and denied decisions for their own TTLs (kube's defaults: 5m and 30s)", async () => {
    expect(DECISION_CACHE_DEFAULTS).toMatchObject({ maxEntries: 8192, allowedTTLms: 300_000, deniedTTLms: 30_000 });
    const c = clock();
    const sar = counting(new Set(['alice']));
    const review = cachingReviewer(sar, { now: c.now });
    const alice = attrs();
    const bob = attrs({}, { username: 'bob' });
    await review(alice);
    await review(bob);
    expect(sar.calls).toHaveLength(2);
    c.advance(29_999);
    await review(alice);
    await review(bob);
    expect(sar.calls).toHaveLength(2);
    c.advance(2);
    await review(alice);
    await review(bob); // the denial expired
    expect(sar.calls.map((a) => a.user.username)).toEqual(['alice', 'bob', 'bob']);
    c.advance(300_000 - 30_001 - 1);
    await review(alice);
    expect(sar.calls).toHaveLength(3);
    c.advance(2);
    await review(alice); // the allowance expired
    expect(sar.calls.map((a) => a.user.username)).toEqual(['alice', 'bob', 'bob', 'alice']);
  });

  it('a newly granted permission is seen once the denial expires', async () => {
    const c = clock();
    const allowed = new Set<string>();
    const sar = counting(allowed);
    const review = cachingReviewer(sar, { now: c.now, deniedTTLms: 1000 });
    expect((await review(attrs())).allowed).toBe(false);
    allowed.add('alice');
    expect((await review(attrs())).allowed).toBe(false);
    c.advance(1001);
    expect((await review(attrs())).allowed).toBe(true);
  });

  it('is bounded: the least recently used decision goes first', async () => {
    const sar = counting(new Set(['a', 'b', 'c']));
    const cache = newDecisionCache({ ...DECISION_CACHE_DEFAULTS, maxEntries: 2 });
    const ask = (u: string) => cache.review(decisionKey(attrs({}, { username: u })), attrs({}, { username: u }), sar);
    await ask('a');
    await ask('b');
    await ask('a'); // a is now the most recent
    await ask('c'); // evicts b
    expect(cache.size).toBe(2);
    await ask('a');
    await ask('c');
    expect(sar.calls.map((x) => x.user.username)).toEqual(['a', 'b', 'c']);
    await ask('b');
    expect(sar.calls.map((x) => x.user.username)).toEqual(['a', 'b', 'c', 'b']);
  });

  it('does not keep failed reviews', async () => {
    let fail = true;
    let calls = 0;
    const review = cachingReviewer(async () => {
      calls++;
      if (fail) throw new Error('connection refused');
      return { allowed: true, reason: '' };
    });
    await expect(review(attrs())).rejects.toThrow('connection refused');
    fail = false;
    expect(await review(attrs())).toEqual({ allowed: true, reason: '' });
    expect(await review(attrs())).toEqual({ allowed: true, reason: '' });
    expect(calls).toBe(2);
  });

  it('concurrent identical requests share one review', async () => {
    let release!: (d: Decision) => void;
    let calls = 0;
    const review = cachingReviewer(() => {
      calls++;
      return new Promise<Decision>((r) => (release = r));
    });
    const p = Promise.all([review(attrs()), review(attrs()), review(attrs())]);
    expect(calls).toBe(1);
    release({ allowed: true, reason: 'ok' });
    expect(await p).toEqual([{ allowed: true, reason: 'ok' }, { allowed: true, reason: 'ok' }, { allowed: true, reason: 'ok' }]);
    expect(calls).toBe(1);
  });

  it('a failure shared by concurrent requests is not kept either', async () => {
    let reject!: (e: Error) => void;
    let calls = 0;
    const review = cachingReviewer(() => {
      calls++;
      return calls === 1 ? new Promise<Decision>((_, r) => (reject = r)) : Promise.resolve({ allowed: false, reason: '' });
    });
    const a = review(attrs());
    const b = review(attrs());
    reject(new Error('timeout'));
    await expect(a).rejects.toThrow('timeout');
    await expect(b).rejects.toThrow('timeout');
    expect(await review(attrs())).toEqual({ allowed: false, reason: '' });
    expect(calls).toBe(2);
  });

  it('does not cache requests with huge caller-controlled attributes (a flood of them would flush the cache)', async () => {
    const sar = counting(new Set(['alice']));
    const review = cachingReviewer(sar);
    const huge = attrs({ name: 'x'.repeat(10_000) });
    await review(huge);
    await review(huge);
    expect(sar.calls).toHaveLength(2);
  });

  it('a TTL of 0 does not cache that kind of decision', async () => {
    const sar = counting(new Set(['alice']));
    const review = cachingReviewer(sar, { deniedTTLms: 0 });
    const bob = attrs({}, { username: 'bob' });
    await review(bob);
    await review(bob);
    await review(attrs());
    await review(attrs());
    expect(sar.calls.map((a) => a.user.username)).toEqual(['bob', 'bob', 'alice']);
  });

  it('maxEntries 0 is no cache: every request is reviewed', async () => {
    const sar = counting(new Set(['alice']));
    const review = cachingReviewer(sar, { maxEntries: 0 });
    await review(attrs());
    await review(attrs());
    expect(sar.calls).toHaveLength(2);
  });

  it('refuses nonsense options', () => {
    const sar = counting(new Set());
    expect(() => cachingReviewer(sar, { maxEntries: -1 })).toThrow('maxEntries must be a positive integer, not -1');
    expect(() => cachingReviewer(sar, { maxEntries: 1.5 })).toThrow('maxEntries must be a positive integer, not 1.5');
    expect(() => cachingReviewer(sar, { allowedTTLms: -1 })).toThrow('allowedTTLms must be a non-negative number of milliseconds, not -1');
    expect(() => cachingReviewer(sar, { deniedTTLms: Number.NaN })).toThrow('deniedTTLms must be');
  });
});
