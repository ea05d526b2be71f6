import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { StatusError, type Status } from '../../src/api/status.js';
import type { Attributes, Decision, UserInfo } from '../../src/api/user.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { SimResourceAccess } from '../../test/sim/access.js';
import { authApiResources, handleAuthApi } from '../../test/sim/authapis.js';
import { bootstrapRbacObjects, rbacAuthorize } from '../../test/sim/rbac.js';

const G = 'rbac.authorization.k8s.io';
const objects: KubeObject[] = [
  ...bootstrapRbacObjects(),
  {
    apiVersion: `${G}/v1`, kind: 'RoleBinding', metadata: { name: 'alice-edit', namespace: 'dev' },
    roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'edit' }, subjects: [{ apiGroup: G, kind: 'User', name: 'alice' }],
  } as KubeObject,
  {
    apiVersion: `${G}/v1`, kind: 'RoleBinding', metadata: { name: 'broken', namespace: 'dev' },
    roleRef: { apiGroup: G, kind: 'Role', name: 'gone' }, subjects: [{ apiGroup: G, kind: 'User', name: 'alice' }],
  } as KubeObject,
];
const plural: Record<string, string> = { ClusterRole: 'clusterroles', ClusterRoleBinding: 'clusterrolebindings', Role: 'roles', RoleBinding: 'rolebindings' };
const access: SimResourceAccess = {
  list: (_g, r, ns) => objects.filter((o) => plural[o.kind!] === r && (ns === undefined || o.metadata.namespace === ns)),
  get: (_g, r, ns, name) => objects.find((o) => plural[o.kind!] === r && (o.metadata.namespace ?? '') === ns && o.metadata.name === name),
};
const authorize = (a: Attributes): Decision => rbacAuthorize(access, a);
const alice: UserInfo = { username: 'alice', uid: 'a-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['x'] } };

function post(path: string, body: unknown, user = alice) {
  const info = newRequestInfo('POST', path, new URLSearchParams());
  return handleAuthApi(info, body, user, authorize, access);
}

function failure(path: string, body: unknown): Status {
  try {
    post(path, body);
  } catch (e) {
    if (e instanceof StatusError) return e.status;
    throw e;
  }
  throw new Error('expected a StatusError');
}

describe('SelfSubjectReview (kubectl auth whoami)', () => {
  it('returns the requesting user with a creation timestamp', () => {
    const out = post('/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    expect(out?.code).toBe(201);
    expect(out?.body).toEqual({
      kind: 'SelfSubjectReview',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { creationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) },
      status: { userInfo: { username: 'alice', uid: 'a-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['x'] } } },
    });
    expect(post('/apis/authentication.k8s.io/v1beta1/selfsubjectreviews', {})?.body.apiVersion).toBe('authentication.k8s.io/v1beta1');
  });

  it('leaves other paths and verbs to the caller', () => {
    expect(post('/apis/authentication.k8s.io/v1alpha1/selfsubjectreviews', {})).toBeUndefined();
    expect(post('/apis/authentication.k8s.io/v1/tokenreviews', {})).toBeUndefined();
    const get = newRequestInfo('GET', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', new URLSearchParams());
    expect(handleAuthApi(get, undefined, alice, authorize, access)).toBeUndefined();
  });
});

describe('SelfSubjectAccessReview (kubectl auth can-i)', () => {
  const path = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

  it('echoes the spec and answers for the requester', () => {
    const spec = { resourceAttributes: { namespace: 'dev', verb: 'create', group: 'apps', resource: 'deployments' } };
    expect(post(path, { kind: 'SelfSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: { creationTimestamp: null }, spec })).toEqual({
      code: 201,
      body: {
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: { creationTimestamp: null },
        spec,
        status: { allowed: true, reason: 'RBAC: allowed by RoleBinding "alice-edit/dev" of ClusterRole "edit" to User "alice"' },
      },
    });
  });

  it('denies without a reason and drops empty strings from the echo', () => {
    const out = post(path, { spec: { resourceAttributes: { namespace: 'prod', verb: 'get', group: '', resource: 'secrets', name: '' } } });
    expect(out?.body.spec).toEqual({ resourceAttributes: { namespace: 'prod', verb: 'get', resource: 'secrets' } });
    expect(out?.body.status).toEqual({ allowed: false });
  });

  it('answers non-resource checks', () => {
    const out = post(path, { spec: { nonResourceAttributes: { path: '/apis', verb: 'get' } } });
    expect(out?.body.status.allowed).toBe(true);
  });

  it('rejects a spec with neither or both attribute kinds (422, kind-less as upstream)', () => {
    expect(failure(path, { spec: {} })).toEqual({
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 422, reason: 'Invalid',
      message: '.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified',
      details: {
        group: 'authorization.k8s.io',
        causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified', field: 'spec.resourceAttributes' }],
      },
    });
    const both = failure(path, { spec: { resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/', verb: 'get' } } });
    expect(both.details?.causes?.[0]?.field).toBe('spec.nonResourceAttributes');
    expect(failure(path, { metadata: { name: 'x' }, spec: { resourceAttributes: { verb: 'get' } } }).message).toContain('metadata: Invalid value: {"name":"x"}: must be empty');
  });

  it('refuses a body of another API version', () => {
    expect(failure(path, { apiVersion: 'authorization.k8s.io/v1beta1', spec: {} })).toMatchObject({
      code: 400,
      message: 'the API version in the data (authorization.k8s.io/v1beta1) does not match the expected API version (authorization.k8s.io/v1)',
    });
  });
});

describe('SubjectAccessReview and LocalSubjectAccessReview', () => {
  it('checks the user named in the spec', () => {
    const out = post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      spec: { user: 'alice', groups: ['system:authenticated'], resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'secrets' } },
    });
    expect(out?.body.status.allowed).toBe(true);
    expect(out?.body.spec).toEqual({ resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'secrets' }, user: 'alice', groups: ['system:authenticated'] });
    const bob = post('/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { user: 'bob', resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'secrets' } } });
    expect(bob?.body.status).toEqual({ allowed: false });
  });

  it('requires a user or group', () => {
    const s = failure('/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { resourceAttributes: { verb: 'get' } } });
    expect(s.message).toBe('.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified');
  });

  it('local reviews default the namespace from the path and must agree with it', () => {
    const path = '/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews';
    const out = post(path, { spec: { user: 'alice', resourceAttributes: { namespace: 'dev', verb: 'create', resource: 'pods' } } });
    expect(out?.body.metadata).toEqual({ namespace: 'dev', creationTimestamp: null });
    expect(out?.body.kind).toBe('LocalSubjectAccessReview');
    expect(out?.body.status.allowed).toBe(true);
    expect(failure(path, { spec: { user: 'alice', resourceAttributes: { namespace: 'other', verb: 'get' } } }).message).toBe(
      '.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace',
    );
    expect(failure(path, { metadata: { namespace: 'x' }, spec: {} })).toMatchObject({
      code: 400,
      message: 'the namespace of the provided object does not match the namespace sent on the request',
    });
    expect(failure(path, { spec: { user: 'a', nonResourceAttributes: { path: '/', verb: 'get' } } }).message).toContain(
      'spec.nonResourceAttributes: Invalid value: {"path":"/","verb":"get"}: disallowed on this kind of request',
    );
  });
});

describe('SelfSubjectRulesReview (kubectl auth can-i --list)', () => {
  const path = '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews';

  it('lists the requester\'s rules in the namespace, without echoing the spec', () => {
    const out = post(path, { spec: { namespace: 'dev' } });
    expect(out?.code).toBe(201);
    expect(out?.body.kind).toBe('SelfSubjectRulesReview');
    expect(out?.body.metadata).toEqual({ creationTimestamp: null });
    expect(out?.body.spec).toEqual({});
    expect(out?.body.status.incomplete).toBe(false);
    expect(out?.body.status.evaluationError).toBe('role.rbac.authorization.k8s.io "gone" not found');
    expect(out?.body.status.resourceRules).toContainEqual({
      verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
    });
    expect(out?.body.status.resourceRules).toContainEqual(expect.objectContaining({ apiGroups: ['apps'], resources: expect.arrayContaining(['deployments']) }));
    expect(out?.body.status.nonResourceRules).toContainEqual({ verbs: ['get'], nonResourceURLs: expect.arrayContaining(['/api', '/version']) });
  });

  it('needs a namespace', () => {
    expect(failure(path, { spec: {} })).toMatchObject({ code: 400, reason: 'BadRequest', message: 'no namespace on request' });
  });
});

describe('authApiResources', () => {
  it('describes the review resources for discovery', () => {
    const rs = authApiResources();
    expect(rs).toContainEqual({ group: 'authorization.k8s.io', version: 'v1', resource: 'localsubjectaccessreviews', kind: 'LocalSubjectAccessReview', verbs: ['create'], namespaced: true });
    expect(rs.filter((r) => r.resource === 'selfsubjectreviews').map((r) => r.version)).toEqual(['v1', 'v1beta1']);
    expect(rs).toHaveLength(6);
  });
});
