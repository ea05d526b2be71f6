// Authorizers of cached reads: fleet mode (one review) and perCluster mode (a review per member, in parallel,
// cached), with scripted reviewers. Audit annotations and the Warnings handed to serveCached are recorded by
// stand-ins for the two functions the authorizers call; the integration test sees the real header.

import pino from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { isStatusError } from '../../src/api/status.js';
import type { Attributes, Decision } from '../../src/api/user.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';

const recorded = vi.hoisted(() => ({ annotations: new WeakMap<object, Record<string, string>>(), warnings: new WeakMap<object, string[]>() }));

vi.mock('../../src/audit/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/audit/index.js')>();
  const add = (ctx: object, key: string, value: string) => {
    const a = recorded.annotations.get(ctx) ?? {};
    a[key] ??= value;
    recorded.annotations.set(ctx, a);
  };
  return {
    ...real,
    addAuditAnnotation: add,
    annotateAuthorization: (ctx: object, d: Decision) => {
      add(ctx, real.ANNOTATION_DECISION, d.allowed ? 'allow' : 'forbid');
      add(ctx, real.ANNOTATION_REASON, d.reason);
    },
  };
});

vi.mock('../../src/cache/serve.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cache/serve.js')>();
  return {
    ...real,
    addCachedReadWarning: (ctx: object, text: string) => {
      const w = recorded.warnings.get(ctx) ?? [];
      w.push(text);
      recorded.warnings.set(ctx, w);
    },
  };
});

const { fleetReadAuthorizer, perClusterReadAuthorizer } = await import('../../src/authz/cachedreads.js');
type Reviewer = (a: Attributes) => Promise<Decision>;

const log = pino({ level: 'silent' });
const BOB = { username: 'bob', groups: ['dev', 'system:authenticated'] };

function ctxFor(method: string, path: string, user: RequestContext['user'] = BOB): RequestContext {
  const url = new URL(path, 'https://gw.invalid');
  return { url, user, info: newRequestInfo(method, url.pathname, url.searchParams), log, auditID: 'a' } as RequestContext;
}

const annotations = (ctx: RequestContext) => recorded.annotations.get(ctx) ?? {};
const warnings = (ctx: RequestContext) => recorded.warnings.get(ctx) ?? [];

async function rejection(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    if (!isStatusError(e)) throw e;
    return e.status;
  }
  throw new Error('expected a Status');
}

/** Per-member reviewers with a fixed answer (or error) each, counting their reviews. */
function fleetOf(answers: Record<string, Decision | Error | 'missing'>) {
  const calls: Record<string, Attributes[]> = {};
  const reviewFor = (cluster: string): Reviewer | undefined => {
    const a = answers[cluster];
    if (a === undefined || a === 'missing') return undefined;
    return async (attrs) => {
      (calls[cluster] ??= []).push(attrs);
      if (a instanceof Error) throw a;
      return a;
    };
  };
  return { reviewFor, clusters: () => Object.keys(answers), calls, total: () => Object.values(calls).reduce((n, c) => n + c.length, 0) };
}

const ALLOW: Decision = { allowed: true, reason: 'RBAC: allowed by RoleBinding "view/demo" of ClusterRole "view" to User "bob"' };
const DENY: Decision = { allowed: false, reason: '' };

beforeEach(() => {
  recorded.annotations = new WeakMap();
  recorded.warnings = new WeakMap();
});

describe('fleetReadAuthorizer', () => {
  it('allows for every member when the control plane allows, and records the decision', async () => {
    const seen: Attributes[] = [];
    const authorize = fleetReadAuthorizer(async (a) => (seen.push(a), ALLOW));
    const ctx = ctxFor('GET', '/api/v1/namespaces/demo/pods/web');
    expect(await authorize(ctx)).toBeUndefined();
    expect(seen).toEqual([{ user: BOB, verb: 'get', isResourceRequest: true, path: '/api/v1/namespaces/demo/pods/web', namespace: 'demo', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', name: 'web' }]);
    expect(annotations(ctx)).toEqual({ 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': ALLOW.reason });
  });

  it("refuses with kube-apiserver's 403", async () => {
    const authorize = fleetReadAuthorizer(async () => ({ allowed: false, reason: 'no RBAC policy matched' }));
    const ctx = ctxFor('GET', '/apis/events.k8s.io/v1/events?watch=true');
    const s = await rejection(authorize(ctx));
    expect(s).toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: 'events.events.k8s.io is forbidden: User "bob" cannot watch resource "events" in API group "events.k8s.io" at the cluster scope: no RBAC policy matched',
      details: { group: 'events.k8s.io', kind: 'events' },
    });
    expect(annotations(ctx)).toEqual({ 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': 'no RBAC policy matched' });
  });

  it('a failed review is a 500 and audited as an internal error without a decision', async () => {
    const authorize = fleetReadAuthorizer(async () => {
      throw new Error('connect ECONNREFUSED');
    });
    const ctx = ctxFor('GET', '/api/v1/pods');
    const s = await rejection(authorize(ctx));
    expect(s).toMatchObject({ code: 500, reason: 'InternalError', message: 'Internal error occurred: connect ECONNREFUSED' });
    expect(annotations(ctx)).toEqual({ 'authorization.k8s.io/reason': 'internal error' });
  });
});

describe('perClusterReadAuthorizer', () => {
  it('lets the caller see only the members whose RBAC allows the read, naming the others in a Warning', async () => {
    const f = fleetOf({ 'member-a': ALLOW, 'member-b': DENY, 'member-c': DENY });
    const authorize = perClusterReadAuthorizer(f.reviewFor, f.clusters);
    const ctx = ctxFor('GET', '/api/v1/namespaces/demo/pods');
    const filter = (await authorize(ctx))!;
    expect(['member-a', 'member-b', 'member-c', 'member-new'].filter(filter)).toEqual(['member-a']);
    // Each member was asked exactly what kube would ask itself.
    for (const c of ['member-a', 'member-b', 'member-c']) {
      expect(f.calls[c]).toEqual([expect.objectContaining({ user: BOB, verb: 'list', namespace: 'demo', apiGroup: '', resource: 'pods', name: '' })]);
    }
    expect(warnings(ctx)).toEqual(['member clusters member-b, member-c are left out: you may not list pods there']);
    expect(annotations(ctx)).toEqual({
      'authorization.k8s.io/decision': 'allow',
      'authorization.k8s.io/reason': `member-a: allow (${ALLOW.reason}); member-b: forbid; member-c: forbid`,
    });
  });

  it('no Warning when every member allows', async () => {
    const f = fleetOf({ 'member-a': ALLOW, 'member-b': ALLOW });
    const ctx = ctxFor('GET', '/api/v1/pods?watch=1');
    const filter = (await perClusterReadAuthorizer(f.reviewFor, f.clusters)(ctx))!;
    expect(['member-a', 'member-b'].filter(filter)).toEqual(['member-a', 'member-b']);
    expect(warnings(ctx)).toEqual([]);
    expect(f.calls['member-a']![0]!.verb).toBe('watch');
  });

  it("is kube-apiserver's 403 when no member allows", async () => {
    const f = fleetOf({ 'member-a': DENY, 'member-b': DENY });
    const authorize = perClusterReadAuthorizer(f.reviewFor, f.clusters);
    const list = ctxFor('GET', '/api/v1/namespaces/demo/pods');
    expect(await rejection(authorize(list))).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "demo"',
      reason: 'Forbidden',
      details: { kind: 'pods' },
      code: 403,
    });
    expect(annotations(list)).toEqual({ 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': '' });
    const get = ctxFor('GET', '/api/v1/namespaces/demo/pods/web');
    expect((await rejection(authorize(get))).message).toBe('pods "web" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "demo"');
    const all = ctxFor('GET', '/api/v1/pods');
    expect((await rejection(authorize(all))).message).toBe('pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope');
  });

  it("names each member's own reason after kube's message when they give one", async () => {
    const f = fleetOf({ 'member-a': { allowed: false, reason: 'denied by policy X' }, 'member-b': DENY });
    const ctx = ctxFor('GET', '/api/v1/namespaces/demo/events');
    const s = await rejection(perClusterReadAuthorizer(f.reviewFor, f.clusters)(ctx));
    expect(s.message).toBe('events is forbidden: User "bob" cannot list resource "events" in API group "" in the namespace "demo": member-a: denied by policy X');
    expect(annotations(ctx)['authorization.k8s.io/reason']).toBe('member-a: denied by policy X');
  });

  it('a member whose review fails (or that has no connection) is left out with its own Warning', async () => {
    const f = fleetOf({ 'member-a': ALLOW, 'member-b': new Error('connect ECONNREFUSED 10.0.0.2:6443'), 'member-c': 'missing' });
    const ctx = ctxFor('GET', '/api/v1/pods');
    const filter = (await perClusterReadAuthorizer(f.reviewFor, f.clusters)(ctx))!;
    expect(['member-a', 'member-b', 'member-c'].filter(filter)).toEqual(['member-a']);
    expect(warnings(ctx)).toEqual([
      'member cluster member-b is left out: the member could not be asked whether you may list pods there',
      'member cluster member-c is left out: the member could not be asked whether you may list pods there',
    ]);
    // The error's details go to the audit record (and the log), not to the caller.
    expect(annotations(ctx)['authorization.k8s.io/reason']).toBe(
      `member-a: allow (${ALLOW.reason}); member-b: error (connect ECONNREFUSED 10.0.0.2:6443); member-c: error (no connection to the member)`,
    );
  });

  it('is a 500, not a 403, when no member allows and a review failed (as kube answers an authorizer error)', async () => {
    const f = fleetOf({ 'member-a': DENY, 'member-b': new Error('timeout') });
    const ctx = ctxFor('GET', '/api/v1/pods');
    const s = await rejection(perClusterReadAuthorizer(f.reviewFor, f.clusters)(ctx));
    expect(s).toMatchObject({ code: 500, reason: 'InternalError', message: 'Internal error occurred: access review failed in member cluster member-b: timeout' });
    expect(annotations(ctx)).toEqual({ 'authorization.k8s.io/reason': 'internal error' });
  });

  it('a fleet without members refuses (nothing allows)', async () => {
    const ctx = ctxFor('GET', '/api/v1/pods');
    expect((await rejection(perClusterReadAuthorizer(() => undefined, () => [])(ctx))).code).toBe(403);
  });

  it('asks the members in parallel', async () => {
    const pending: Array<(d: Decision) => void> = [];
    const authorize = perClusterReadAuthorizer(
      () => () => new Promise<Decision>((r) => pending.push(r)),
      () => ['member-a', 'member-b', 'member-c'],
    );
    const p = authorize(ctxFor('GET', '/api/v1/pods'));
    await vi.waitFor(() => expect(pending).toHaveLength(3));
    for (const r of pending) r(ALLOW);
    expect(await p).toBeTypeOf('function');
  });

  it('caches decisions per member and attributes, with separate allowed and denied TTLs', async () => {
    let t = 0;
    const f = fleetOf({ 'member-a': ALLOW, 'member-b': DENY });
    const authorize = perClusterReadAuthorizer(f.reviewFor, f.clusters, { cache: { allowedTTLms: 60_000, deniedTTLms: 10_000, now: () => t } });
    for (let i = 0; i < 5; i++) await authorize(ctxFor('GET', '/api/v1/namespaces/demo/pods'));
    expect(f.total()).toBe(2);
    // Each answer still decides: the cached path gives the same filter and Warning.
    const again = ctxFor('GET', '/api/v1/namespaces/demo/pods');
    expect(['member-a', 'member-b'].filter((await authorize(again))!)).toEqual(['member-a']);
    expect(warnings(again)).toEqual(['member cluster member-b is left out: you may not list pods there']);
    // Other attributes, other decisions.
    await authorize(ctxFor('GET', '/api/v1/namespaces/prod/pods'));
    await authorize(ctxFor('GET', '/api/v1/namespaces/demo/pods', { username: 'carol', groups: ['system:authenticated'] }));
    expect(f.total()).toBe(6);
    t += 10_001;
    await authorize(ctxFor('GET', '/api/v1/namespaces/demo/pods'));
    expect(f.calls['member-a']).toHaveLength(3);
    expect(f.calls['member-b']).toHaveLength(4); // only the denial expired
    t += 50_000;
    await authorize(ctxFor('GET', '/api/v1/namespaces/demo/pods'));
    expect(f.calls['member-a']).toHaveLength(4);
  });

  it('does not cache with cache: false or maxEntries 0', async () => {
    for (const cache of [false, { maxEntries: 0 }] as const) {
      const f = fleetOf({ 'member-a': ALLOW });
      const authorize = perClusterReadAuthorizer(f.reviewFor, f.clusters, { cache });
      await authorize(ctxFor('GET', '/api/v1/pods'));
      await authorize(ctxFor('GET', '/api/v1/pods'));
      expect(f.total()).toBe(2);
    }
  });

  it('a failed member review is asked again on the next read', async () => {
    let down = true;
    let calls = 0;
    const authorize = perClusterReadAuthorizer(
      (c) => async () => {
        if (c === 'member-b') {
          calls++;
          if (down) throw new Error('unreachable');
        }
        return ALLOW;
      },
      () => ['member-a', 'member-b'],
    );
    expect(['member-a', 'member-b'].filter((await authorize(ctxFor('GET', '/api/v1/pods')))!)).toEqual(['member-a']);
    down = false;
    expect(['member-a', 'member-b'].filter((await authorize(ctxFor('GET', '/api/v1/pods')))!)).toEqual(['member-a', 'member-b']);
    expect(calls).toBe(2);
  });
});
