// Classification with the shipped flow schemas, kube's matching rules, seats and Retry-After.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { UserInfo } from '../../src/api/user.js';
import { defaultFlowControlDir, loadFlowControlDir } from '../../src/flowcontrol/config.js';
import { classify, newController, requestKind } from '../../src/flowcontrol/controller.js';
import { flowDistinguisher, hashFlowID, matchesSubject } from '../../src/flowcontrol/match.js';
import { newFlowControlMetrics } from '../../src/flowcontrol/metrics.js';
import { newDroppedRequestsTracker } from '../../src/flowcontrol/retryafter.js';
import { estimateSeats, priorityLevelMaxSeats } from '../../src/flowcontrol/seats.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';

const objs = await loadFlowControlDir(defaultFlowControlDir());
const ctl = newController({ maxRequestsInflight: 400, maxMutatingRequestsInflight: 200, metrics: newFlowControlMetrics(new Registry()) }, objs);

function info(method: string, url: string) {
  const u = new URL(url, 'https://x');
  return newRequestInfo(method, u.pathname, u.searchParams);
}
const user = (username: string, ...groups: string[]): UserInfo => ({ username, groups });
const human = user('alice', 'dev', 'system:authenticated');
const admin = user('root', 'system:masters', 'system:authenticated');
const sa = (ns: string, name: string) => user(`system:serviceaccount:${ns}:${name}`, 'system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated');

describe('classification with the default flow schemas', () => {
  it.each([
    ['admins are exempt', admin, 'DELETE', '/api/v1/namespaces/x', 'exempt', 'exempt'],
    ['probes are exempt, even anonymous', user('system:anonymous', 'system:unauthenticated'), 'GET', '/readyz', 'probes', 'exempt'],
    ['and under a sub-path', human, 'GET', '/healthz/ping', 'probes', 'exempt'],
    ['but not when posted to', human, 'POST', '/healthz', 'global-default', 'global-default'],
    ['people are global-default', human, 'GET', '/api/v1/namespaces/demo/pods', 'global-default', 'global-default'],
    ['so are anonymous callers', user('system:anonymous', 'system:unauthenticated'), 'GET', '/version', 'global-default', 'global-default'],
    ['service accounts are workload-low', sa('ci', 'deployer'), 'PATCH', '/apis/apps/v1/namespaces/ci/deployments/web', 'service-accounts', 'workload-low'],
    ['kube-system service accounts are workload-high', sa('kube-system', 'karmada'), 'GET', '/api/v1/nodes', 'kube-system-service-accounts', 'workload-high'],
    ['lease renewals go to leader-election', sa('ops', 'ctl'), 'PUT', '/apis/coordination.k8s.io/v1/namespaces/ops/leases/ctl', 'workload-leader-election', 'leader-election'],
    ['but not their deletion', sa('ops', 'ctl'), 'DELETE', '/apis/coordination.k8s.io/v1/namespaces/ops/leases/ctl', 'service-accounts', 'workload-low'],
    ['a caller in neither group falls to catch-all', user('odd'), 'GET', '/api/v1/pods', 'catch-all', 'catch-all'],
  ])('%s', (_why, u, method, url, fsName, plName) => {
    const c = classify(ctl, info(method, url), u);
    expect(c.flow.name).toBe(fsName);
    expect(c.flow.pl.name).toBe(plName);
  });

  it('hashes flows per user (ByUser) or per namespace (ByNamespace), the same every time', () => {
    const a = classify(ctl, info('GET', '/api/v1/pods'), human);
    const b = classify(ctl, info('GET', '/api/v1/pods'), user('bob', 'system:authenticated'));
    expect(a.hash).toBe(hashFlowID('global-default', 'alice'));
    expect(b.hash).not.toBe(a.hash);
    expect(classify(ctl, info('GET', '/api/v1/namespaces/x/pods'), human).hash).toBe(a.hash);
    const k1 = classify(ctl, info('GET', '/api/v1/namespaces/a/pods'), sa('kube-system', 'x'));
    const k2 = classify(ctl, info('GET', '/api/v1/namespaces/a/pods'), sa('kube-system', 'y'));
    expect(k1.hash).toBe(k2.hash);
    expect(k1.hash).toBe(hashFlowID('kube-system-service-accounts', 'a'));
    // The exempt level has no queues: no hash needed.
    expect(classify(ctl, info('GET', '/api/v1/pods'), admin).hash).toBe(0n);
  });

  it('shares the 600 seats by nominal concurrency shares', () => {
    const cl = Object.fromEntries([...ctl.levels.values()].map((l) => [l.name, l.nominalCL]));
    expect(cl).toEqual({ exempt: 0, 'catch-all': 18, 'leader-election': 35, 'workload-high': 138, 'workload-low': 343, 'global-default': 69 });
    // max seats: min(ceil(15%), nominal/handSize), at most 10.
    expect(ctl.levels.get('global-default')!.maxSeats).toBe(10);
    expect(ctl.levels.get('leader-election')!.maxSeats).toBe(6);
    expect(ctl.levels.get('catch-all')!.maxSeats).toBe(10);
  });
});

describe('matching rules', () => {
  it('matches service account subjects by namespace and name', () => {
    const s = (namespace: string, name: string) => ({ kind: 'ServiceAccount' as const, serviceAccount: { namespace, name } });
    expect(matchesSubject(user('system:serviceaccount:ns:a'), s('ns', 'a'))).toBe(true);
    expect(matchesSubject(user('system:serviceaccount:ns:a'), s('ns', '*'))).toBe(true);
    expect(matchesSubject(user('system:serviceaccount:ns2:a'), s('ns', '*'))).toBe(false);
    expect(matchesSubject(user('system:serviceaccount:ns:ab'), s('ns', 'a'))).toBe(false);
    expect(matchesSubject(user('ns:a'), s('ns', 'a'))).toBe(false);
  });

  it('distinguishes by user or namespace, or not at all', () => {
    const i = info('GET', '/api/v1/namespaces/demo/pods');
    expect(flowDistinguisher(i, human, 'ByUser')).toBe('alice');
    expect(flowDistinguisher(i, human, 'ByNamespace')).toBe('demo');
    expect(flowDistinguisher(i, human, undefined)).toBe('');
  });

  it('tells mutating requests by verb, as kube does', () => {
    expect(['get', 'list', 'watch'].map(requestKind)).toEqual(['readOnly', 'readOnly', 'readOnly']);
    expect(['create', 'patch', 'deletecollection', 'post', 'head'].map(requestKind)).toEqual(['mutating', 'mutating', 'mutating', 'mutating', 'mutating']);
  });
});

describe('seats', () => {
  const ctx = (method: string, url: string) => {
    const u = new URL(url, 'https://x');
    return { info: newRequestInfo(method, u.pathname, u.searchParams), url: u } as unknown as RequestContext;
  };
  const objects = (n: number | undefined) => () => n;

  it('charges a LIST a seat per 100 objects, within the level maximum', () => {
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, objects(0))).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, objects(100))).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, objects(101))).toBe(2);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, objects(5000))).toBe(10);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 6, objects(5000))).toBe(6);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, objects(undefined))).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/pods'), 10, undefined)).toBe(1);
  });

  it('charges a LIST by name, a GET, a write and a plain watch one seat; a watch with initial events like a LIST', () => {
    const many = objects(900);
    expect(estimateSeats(ctx('GET', '/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dx'), 10, many)).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/namespaces/a/pods/x'), 10, many)).toBe(1);
    expect(estimateSeats(ctx('POST', '/api/v1/namespaces/a/pods'), 10, many)).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/pods?watch=1'), 10, many)).toBe(1);
    expect(estimateSeats(ctx('GET', '/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan'), 10, many)).toBe(9);
  });

  it('caps a level\'s widest request at 15% of its seats and seats per hand', () => {
    expect(priorityLevelMaxSeats(600, 6)).toBe(10);
    expect(priorityLevelMaxSeats(40, 6)).toBe(6);
    expect(priorityLevelMaxSeats(20, 6)).toBe(3);
    expect(priorityLevelMaxSeats(3, 6)).toBe(1);
    expect(priorityLevelMaxSeats(20, undefined)).toBe(10);
  });
});

describe('Retry-After', () => {
  it('starts at 1s, doubles under sustained drops, and comes back down', () => {
    let t = 1_000_000;
    const tr = newDroppedRequestsTracker(() => t);
    expect(tr.retryAfter('pl')).toBe(1);
    for (let s = 0; s < 3; s++) {
      for (let i = 0; i < 10; i++) tr.record('pl');
      t += 1000;
    }
    tr.record('pl');
    expect(tr.retryAfter('pl')).toBeGreaterThanOrEqual(2);
    const high = tr.retryAfter('pl');
    expect(tr.retryAfter('other')).toBe(1);
    // Quiet for a while, then single drops: it shrinks a second at a time.
    for (let s = 0; s < 40; s++) {
      t += 5000;
      tr.record('pl');
    }
    expect(tr.retryAfter('pl')).toBeLessThan(high);
    expect(tr.retryAfter('pl')).toBe(1);
  });
});

describe('gateway-wide in-flight limits', () => {
  it('cap executing requests per kind across levels, and a freed slot dispatches another level\'s queue', async () => {
    const { begin, decided, isWaiting, release, classify: cls, newController: mk } = await import('../../src/flowcontrol/controller.js');
    const c = mk({ maxRequestsInflight: 1, maxMutatingRequestsInflight: 5, metrics: newFlowControlMetrics(new Registry()) }, objs);
    const people = cls(c, info('GET', '/api/v1/pods'), human);
    const robots = cls(c, info('GET', '/api/v1/pods'), sa('ci', 'bot'));
    expect([people.flow.pl.name, robots.flow.pl.name]).toEqual(['global-default', 'workload-low']);
    const a = begin(c, people, 1, 'readOnly', false, 10_000);
    const b = begin(c, robots, 1, 'readOnly', false, 10_000);
    const w = begin(c, cls(c, info('POST', '/api/v1/namespaces/ci/configmaps'), sa('ci', 'bot2')), 1, 'mutating', false, 10_000);
    if (typeof a === 'string' || typeof b === 'string' || typeof w === 'string') throw new Error('rejected');
    expect(isWaiting(a)).toBe(false);
    expect(isWaiting(b)).toBe(true); // its level has 343 seats, but the gateway allows one read at a time
    expect(isWaiting(w)).toBe(false); // writes have their own cap, and are not stuck behind the blocked read
    const bDecided = decided(c, b);
    release(c, a);
    expect(await bDecided).toBe('execute');
    expect(c.global.readOnly.inUse).toBe(1);
    release(c, b);
    release(c, w);
    release(c, w);
    expect(c.global.readOnly.inUse).toBe(0);
    expect(c.global.mutating.inUse).toBe(0);
    // system:masters are outside both caps.
    const root = begin(c, cls(c, info('GET', '/api/v1/pods'), user('root', 'system:masters')), 1, 'readOnly', false, 10_000);
    const also = begin(c, cls(c, info('GET', '/api/v1/pods'), user('root', 'system:masters')), 1, 'readOnly', false, 10_000);
    const ppl = begin(c, people, 1, 'readOnly', false, 10_000);
    if (typeof root === 'string' || typeof also === 'string' || typeof ppl === 'string') throw new Error('rejected');
    expect([isWaiting(root), isWaiting(also), isWaiting(ppl)]).toEqual([false, false, false]);
    for (const t of [root, also, ppl]) release(c, t);
  });
});
