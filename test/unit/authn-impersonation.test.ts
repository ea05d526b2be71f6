import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatusError, statusBody, type Status } from '../../src/api/status.js';
import type { Attributes, Decision, UserInfo } from '../../src/api/user.js';
import {
  authorizeImpersonation,
  hasImpersonationHeaders,
  impersonationHeadersOf,
  requestedImpersonation,
} from '../../src/authn/impersonation.js';

const alice: UserInfo = { username: 'alice', groups: ['ops', 'system:authenticated'] };

/** A fake control plane: records every SubjectAccessReview and answers from `decide`. */
function fakeSar(decide: (a: Attributes) => Decision = () => ({ allowed: true, reason: '' })) {
  const seen: Attributes[] = [];
  const sar = async (a: Attributes): Promise<Decision> => {
    seen.push(a);
    return decide(a);
  };
  return { seen, sar };
}

async function statusOf(p: Promise<unknown> | (() => unknown)): Promise<Status> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    if (e instanceof StatusError) return e.status;
    throw e;
  }
  throw new Error('expected a StatusError');
}

describe('requestedImpersonation', () => {
  it('is null without Impersonate-* headers, and with only empty user/uid values', () => {
    expect(requestedImpersonation({ authorization: 'Bearer x', accept: 'application/json' })).toBeNull();
    expect(requestedImpersonation({ 'impersonate-user': '', 'impersonate-uid': '' })).toBeNull();
    expect(requestedImpersonation({ 'impersonate-future': 'x' })).toBeNull();
  });

  it('reads user, uid, repeated groups and extras with lower-cased, percent-unescaped keys', () => {
    expect(
      requestedImpersonation({
        'impersonate-user': 'jane',
        'impersonate-uid': 'uid-7',
        'impersonate-group': ['dev', 'qa, team'],
        'impersonate-extra-scopes': ['view', 'edit'],
        'Impersonate-Extra-Example.com%2FTeam': 'blue',
      }),
    ).toEqual({
      user: 'jane',
      uid: 'uid-7',
      groups: ['dev', 'qa, team'],
      extra: { scopes: ['view', 'edit'], 'example.com/team': ['blue'] },
    });
  });

  it('reads values as the UTF-8 their bytes are (node hands them over as latin1), and takes any extra key', () => {
    const latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
    const wanted = requestedImpersonation({ 'impersonate-user': latin1('jürgen'), 'impersonate-group': [latin1('équipe')], 'impersonate-extra-__proto__': 'x', 'impersonate-extra-constructor': 'y' });
    expect(wanted!.user).toBe('jürgen');
    expect(wanted!.groups).toEqual(['équipe']);
    expect(wanted!.extra['__proto__']).toEqual(['x']);
    expect(wanted!.extra['constructor']).toEqual(['y']);
  });

  it('splits node-joined string values at ", " and keeps a malformed escape as sent', () => {
    expect(requestedImpersonation({ 'impersonate-user': 'jane', 'impersonate-group': 'dev, qa', 'impersonate-extra-a%zzb': 'x' })).toEqual({
      user: 'jane',
      groups: ['dev', 'qa'],
      extra: { 'a%zzb': ['x'] },
    });
  });

  it('answers groups, extra or uid without a user with upstream 400 and its %v of the object references', async () => {
    expect(await statusOf(() => requestedImpersonation({ 'impersonate-group': ['dev', 'qa'] }))).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'requested [{Group  dev    } {Group  qa    }] without impersonating a user',
      reason: 'BadRequest',
      code: 400,
    });
    expect((await statusOf(() => requestedImpersonation({ 'impersonate-extra-scopes': 'view', 'impersonate-uid': 'u1' }))).message).toBe(
      'requested [{UserExtra  view  authentication.k8s.io/v1  scopes} {UID  u1  authentication.k8s.io/v1  }] without impersonating a user',
    );
    // An empty user is no user, as headers.Get(...) == "" upstream.
    expect((await statusOf(() => requestedImpersonation({ 'impersonate-user': '', 'impersonate-uid': 'u1' }))).code).toBe(400);
  });

  it('hasImpersonationHeaders spots any Impersonate-* header, known or not', () => {
    expect(hasImpersonationHeaders({ 'impersonate-future': 'x' })).toBe(true);
    expect(hasImpersonationHeaders({ 'Impersonate-User': 'x' })).toBe(true);
    expect(hasImpersonationHeaders({ authorization: 'x', 'x-impersonate-user': 'y' })).toBe(false);
  });
});

describe('impersonationHeadersOf (real HTTP requests)', () => {
  let server: Server;
  let seen: Record<string, string[]> | null | 'unset' = 'unset';
  let port = 0;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      seen = impersonationHeadersOf(req);
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  /** Array values go out as one header line each. */
  function send(headers: Record<string, string | string[]>): Promise<void> {
    seen = 'unset';
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', headers });
      req.on('response', (res) => {
        expect(res.statusCode).toBe(200);
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('keeps repeated header lines apart, even when a value contains ", "', async () => {
    await send({
      'Impersonate-User': 'jane',
      'Impersonate-Group': ['a, b', 'c'],
      'Impersonate-Extra-Scopes': 'view',
      Accept: 'application/json',
    });
    expect(seen).toEqual({ 'impersonate-user': ['jane'], 'impersonate-group': ['a, b', 'c'], 'impersonate-extra-scopes': ['view'] });
    expect(requestedImpersonation(seen as Record<string, string[]>)).toEqual({
      user: 'jane',
      groups: ['a, b', 'c'],
      extra: { scopes: ['view'] },
    });
  });

  it('is null when there is no Impersonate-* header', async () => {
    await send({ Accept: 'application/json' });
    expect(seen).toBeNull();
  });
});

describe('authorizeImpersonation', () => {
  it('asks about the user and adds system:authenticated', async () => {
    const { seen, sar } = fakeSar();
    expect(await authorizeImpersonation(alice, { user: 'jane', groups: [], extra: {} }, sar)).toEqual({
      username: 'jane',
      groups: ['system:authenticated'],
    });
    expect(seen).toEqual([
      {
        user: alice, verb: 'impersonate', isResourceRequest: true, path: '', namespace: '', apiGroup: '', apiVersion: '',
        resource: 'users', subresource: '', name: 'jane',
      },
    ]);
  });

  it('asks once per value in upstream order: user, groups, extras, uid', async () => {
    const { seen, sar } = fakeSar();
    const u = await authorizeImpersonation(
      alice,
      { user: 'jane', uid: 'uid-7', groups: ['dev', 'qa'], extra: { scopes: ['view', 'edit'], 'example.com/team': ['blue'] } },
      sar,
    );
    expect(u).toEqual({
      username: 'jane',
      uid: 'uid-7',
      groups: ['dev', 'qa', 'system:authenticated'],
      extra: { scopes: ['view', 'edit'], 'example.com/team': ['blue'] },
    });
    expect(seen.map((a) => [a.apiGroup, a.apiVersion, a.resource, a.subresource, a.namespace, a.name])).toEqual([
      ['', '', 'users', '', '', 'jane'],
      ['', '', 'groups', '', '', 'dev'],
      ['', '', 'groups', '', '', 'qa'],
      ['authentication.k8s.io', 'v1', 'userextras', 'scopes', '', 'view'],
      ['authentication.k8s.io', 'v1', 'userextras', 'scopes', '', 'edit'],
      ['authentication.k8s.io', 'v1', 'userextras', 'example.com/team', '', 'blue'],
      ['authentication.k8s.io', 'v1', 'uids', '', '', 'uid-7'],
    ]);
    expect(seen.every((a) => a.user === alice && a.verb === 'impersonate' && a.isResourceRequest)).toBe(true);
  });

  it('treats a service account user as serviceaccounts in its namespace and gives it the SA groups', async () => {
    const { seen, sar } = fakeSar();
    expect(await authorizeImpersonation(alice, { user: 'system:serviceaccount:kube-system:deployer', groups: [], extra: {} }, sar)).toEqual({
      username: 'system:serviceaccount:kube-system:deployer',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
    });
    expect(seen.map((a) => [a.resource, a.namespace, a.name])).toEqual([['serviceaccounts', 'kube-system', 'deployer']]);
  });

  it('lets explicit groups replace a service account\'s own, and a malformed SA name is just a user', async () => {
    const { seen, sar } = fakeSar();
    expect((await authorizeImpersonation(alice, { user: 'system:serviceaccount:ns:sa', groups: ['g'], extra: {} }, sar)).groups).toEqual([
      'g',
      'system:authenticated',
    ]);
    seen.length = 0;
    await authorizeImpersonation(alice, { user: 'system:serviceaccount:Bad_NS:sa', groups: [], extra: {} }, sar);
    expect(seen.map((a) => [a.resource, a.namespace, a.name])).toEqual([['users', '', 'system:serviceaccount:Bad_NS:sa']]);
  });

  it('does not add system:authenticated when the caller named (un)authenticated, and anonymous gets unauthenticated', async () => {
    const { sar } = fakeSar();
    expect((await authorizeImpersonation(alice, { user: 'jane', groups: ['system:unauthenticated'], extra: {} }, sar)).groups).toEqual([
      'system:unauthenticated',
    ]);
    expect((await authorizeImpersonation(alice, { user: 'jane', groups: ['system:authenticated', 'x'], extra: {} }, sar)).groups).toEqual([
      'system:authenticated',
      'x',
    ]);
    expect((await authorizeImpersonation(alice, { user: 'system:anonymous', groups: [], extra: {} }, sar)).groups).toEqual([
      'system:unauthenticated',
    ]);
  });

  it('stops at the first refusal with upstream\'s 403 for users', async () => {
    const { seen, sar } = fakeSar((a) => ({ allowed: a.resource !== 'groups', reason: '' }));
    const st = await statusOf(authorizeImpersonation(alice, { user: 'jane', groups: ['dev', 'qa'], extra: {} }, sar));
    expect(st).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'groups "dev" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope',
      reason: 'Forbidden',
      details: { name: 'dev', kind: 'groups' },
      code: 403,
    });
    expect(seen.map((a) => a.name)).toEqual(['jane', 'dev']);
  });

  it('words refusals of service accounts, extras and uids as upstream does, with the authorizer reason appended', async () => {
    const deny = fakeSar(() => ({ allowed: false, reason: 'no RBAC policy matched' }));
    expect((await statusOf(authorizeImpersonation(alice, { user: 'system:serviceaccount:ns1:sa', groups: [], extra: {} }, deny.sar))).message).toBe(
      'serviceaccounts "sa" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1": no RBAC policy matched',
    );
    const onlyExtra = fakeSar((a) => ({ allowed: a.resource === 'users', reason: '' }));
    const st = await statusOf(authorizeImpersonation(alice, { user: 'jane', groups: [], extra: { scopes: ['view'] } }, onlyExtra.sar));
    expect(st.message).toBe(
      'userextras.authentication.k8s.io "view" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope',
    );
    expect(st.details).toEqual({ name: 'view', group: 'authentication.k8s.io', kind: 'userextras' });
    const onlyUser = fakeSar((a) => ({ allowed: a.resource === 'users', reason: '' }));
    expect((await statusOf(authorizeImpersonation(alice, { user: 'jane', uid: 'u-1', groups: [], extra: {} }, onlyUser.sar))).message).toBe(
      'uids.authentication.k8s.io "u-1" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope',
    );
  });

  it('HTML-escapes the attribute sentence of the 403 body, as responsewriters.Forbidden does', async () => {
    const { sar } = fakeSar(() => ({ allowed: false, reason: '' }));
    const st = await statusOf(authorizeImpersonation({ username: '<b>', groups: [] }, { user: 'x', groups: [], extra: {} }, sar));
    expect(statusBody(st)).toContain('User \\"\\u0026lt;b\\u0026gt;\\" cannot impersonate');
  });

  it('lets errors from the SubjectAccessReview call propagate', async () => {
    const boom = new Error('control plane unreachable');
    await expect(authorizeImpersonation(alice, { user: 'jane', groups: [], extra: {} }, async () => { throw boom; })).rejects.toBe(boom);
  });
});
