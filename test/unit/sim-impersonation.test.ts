import { describe, expect, it } from 'vitest';
import { StatusError } from '../../src/api/status.js';
import type { Attributes, Decision, UserInfo } from '../../src/api/user.js';
import { impersonate } from '../../test/sim/impersonation.js';

const admin: UserInfo = { username: 'admin', groups: ['ops', 'system:authenticated'] };
const allowAll = (seen: Attributes[]) => (a: Attributes): Decision => {
  seen.push(a);
  return { allowed: true, reason: '' };
};

function statusOf(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return e.status;
    throw e;
  }
  throw new Error('expected a StatusError');
}

describe('impersonate', () => {
  it('returns null without Impersonate-* headers', () => {
    expect(impersonate({ authorization: 'Bearer x' }, admin, allowAll([]))).toBeNull();
  });

  it('impersonates a user and adds system:authenticated', () => {
    const seen: Attributes[] = [];
    expect(impersonate({ 'impersonate-user': 'jane' }, admin, allowAll(seen))).toEqual({ username: 'jane', groups: ['system:authenticated'] });
    expect(seen).toEqual([
      {
        user: admin, verb: 'impersonate', isResourceRequest: true, path: '', namespace: '', apiGroup: '', apiVersion: '',
        resource: 'users', subresource: '', name: 'jane',
      },
    ]);
  });

  it('checks every group (repeated or comma-joined by Node), every extra value and the uid', () => {
    const seen: Attributes[] = [];
    const u = impersonate(
      {
        'impersonate-user': 'jane',
        'impersonate-group': 'dev, qa',
        'impersonate-extra-scopes': 'view, edit',
        'impersonate-extra-example.com%2fteam': 'blue',
        'impersonate-uid': 'uid-7',
      },
      admin,
      allowAll(seen),
    );
    expect(u).toEqual({
      username: 'jane',
      uid: 'uid-7',
      groups: ['dev', 'qa', 'system:authenticated'],
      extra: { scopes: ['view', 'edit'], 'example.com/team': ['blue'] },
    });
    expect(seen.map((a) => [a.apiGroup, a.apiVersion, a.resource, a.subresource, a.name])).toEqual([
      ['', '', 'users', '', 'jane'],
      ['', '', 'groups', '', 'dev'],
      ['', '', 'groups', '', 'qa'],
      ['authentication.k8s.io', 'v1', 'userextras', 'scopes', 'view'],
      ['authentication.k8s.io', 'v1', 'userextras', 'scopes', 'edit'],
      ['authentication.k8s.io', 'v1', 'userextras', 'example.com/team', 'blue'],
      ['authentication.k8s.io', 'v1', 'uids', '', 'uid-7'],
    ]);
  });

  it('keeps header arrays as given (headersDistinct), including commas', () => {
    const u = impersonate({ 'impersonate-user': ['jane'], 'impersonate-group': ['a, b', 'c'] }, admin, allowAll([]));
    expect(u?.groups).toEqual(['a, b', 'c', 'system:authenticated']);
  });

  it('service accounts: serviceaccounts resource in the namespace, SA groups unless groups are given', () => {
    const seen: Attributes[] = [];
    expect(impersonate({ 'impersonate-user': 'system:serviceaccount:kube-system:default' }, admin, allowAll(seen))).toEqual({
      username: 'system:serviceaccount:kube-system:default',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
    });
    expect(seen[0]).toMatchObject({ resource: 'serviceaccounts', namespace: 'kube-system', name: 'default' });
    expect(impersonate({ 'impersonate-user': 'system:serviceaccount:kube-system:default', 'impersonate-group': 'x' }, admin, allowAll([]))?.groups)
      .toEqual(['x', 'system:authenticated']);
    // Not a valid SA name: an ordinary user.
    expect(impersonate({ 'impersonate-user': 'system:serviceaccount:Bad:x' }, admin, allowAll(seen))?.groups).toEqual(['system:authenticated']);
  });

  it('system:authenticated is not added next to system:unauthenticated; anonymous gets system:unauthenticated', () => {
    expect(impersonate({ 'impersonate-user': 'jane', 'impersonate-group': 'system:unauthenticated' }, admin, allowAll([]))?.groups)
      .toEqual(['system:unauthenticated']);
    expect(impersonate({ 'impersonate-user': 'system:anonymous' }, admin, allowAll([]))).toEqual({
      username: 'system:anonymous',
      groups: ['system:unauthenticated'],
    });
  });

  it('refuses with the first denied attribute as a 403', () => {
    const denyGroups = (a: Attributes): Decision => ({ allowed: a.resource !== 'groups', reason: '' });
    const s = statusOf(() => impersonate({ 'impersonate-user': 'jane', 'impersonate-group': 'system:masters' }, admin, denyGroups));
    expect(s).toEqual({
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 403, reason: 'Forbidden',
      message: 'groups "system:masters" is forbidden: User "admin" cannot impersonate resource "groups" in API group "" at the cluster scope',
      details: { name: 'system:masters', kind: 'groups' },
    });
    const denySA = (): Decision => ({ allowed: false, reason: 'no way' });
    expect(statusOf(() => impersonate({ 'impersonate-user': 'system:serviceaccount:ns1:builder' }, admin, denySA)).message).toBe(
      'serviceaccounts "builder" is forbidden: User "admin" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1": no way',
    );
    const denyExtra = (a: Attributes): Decision => ({ allowed: a.resource !== 'userextras', reason: '' });
    expect(statusOf(() => impersonate({ 'impersonate-user': 'j', 'impersonate-extra-scopes': 's1' }, admin, denyExtra)).message).toBe(
      'userextras.authentication.k8s.io "s1" is forbidden: User "admin" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope',
    );
  });

  it('groups, extra or uid without a user is the filter\'s internal error', () => {
    const s = statusOf(() => impersonate({ 'impersonate-group': 'g1' }, admin, allowAll([])));
    expect(s.code).toBe(500);
    expect(s.reason).toBe('InternalError');
    expect(s.message).toBe('Internal error occurred: requested [{Group  g1    }] without impersonating a user');
    expect(statusOf(() => impersonate({ 'impersonate-uid': 'u' }, admin, allowAll([]))).message).toBe(
      'Internal error occurred: requested [{UID  u  authentication.k8s.io/v1  }] without impersonating a user',
    );
  });
});
