import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import type { Attributes, UserInfo } from '../../src/api/user.js';
import type { SimResourceAccess } from '../../test/sim/access.js';
import { bootstrapRbacObjects, rbacAuthorize, rbacRulesFor, ruleAllows } from '../../test/sim/rbac.js';

const G = 'rbac.authorization.k8s.io';

function accessOf(objs: KubeObject[]): SimResourceAccess {
  const resourceOf: Record<string, string> = {
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    Role: 'roles',
    RoleBinding: 'rolebindings',
  };
  const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  const sorted = [...objs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return {
    list: (group, resource, namespace) =>
      sorted.filter((o) => group === G && resourceOf[o.kind!] === resource && (namespace === undefined || o.metadata.namespace === namespace)),
    get: (group, resource, namespace, name) =>
      sorted.find((o) => group === G && resourceOf[o.kind!] === resource && (o.metadata.namespace ?? '') === namespace && o.metadata.name === name),
  };
}

const obj = (kind: string, name: string, namespace: string | undefined, rest: Record<string, unknown>): KubeObject =>
  ({ apiVersion: `${G}/v1`, kind, metadata: namespace ? { name, namespace } : { name }, ...rest }) as KubeObject;
const crb = (name: string, role: string, subjects: object[]) =>
  obj('ClusterRoleBinding', name, undefined, { roleRef: { apiGroup: G, kind: 'ClusterRole', name: role }, subjects });
const rb = (name: string, ns: string, kind: string, role: string, subjects: object[]) =>
  obj('RoleBinding', name, ns, { roleRef: { apiGroup: G, kind, name: role }, subjects });

const alice: UserInfo = { username: 'alice', groups: ['system:authenticated'] };
const anon: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

function res(user: UserInfo, verb: string, resource: string, namespace = '', extra: Partial<Attributes> = {}): Attributes {
  return { user, verb, isResourceRequest: true, path: '', namespace, apiGroup: '', apiVersion: 'v1', resource, subresource: '', name: '', ...extra };
}
function url(user: UserInfo, verb: string, path: string): Attributes {
  return { user, verb, isResourceRequest: false, path, namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
}

const objects = [
  ...bootstrapRbacObjects(),
  crb('alice-view', 'view', [{ kind: 'User', apiGroup: G, name: 'alice' }]),
  obj('Role', 'pod-exec', 'ns1', { rules: [{ verbs: ['create', 'get'], apiGroups: [''], resources: ['pods/exec'], resourceNames: ['web-0'] }] }),
  rb('alice-exec', 'ns1', 'Role', 'pod-exec', [{ kind: 'User', apiGroup: G, name: 'alice' }]),
  rb('builder-edit', 'ns1', 'ClusterRole', 'edit', [{ kind: 'ServiceAccount', name: 'builder' }]),
  rb('dangling', 'ns2', 'Role', 'missing', [{ kind: 'Group', apiGroup: G, name: 'system:authenticated' }]),
  obj('ClusterRole', 'widgets-view', undefined, {
    metadata: { name: 'widgets-view', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    rules: [{ verbs: ['get', 'list'], apiGroups: ['example.com'], resources: ['widgets'] }],
  }),
];
const access = accessOf(objects);

describe('rbacAuthorize', () => {
  it('allows system:masters before RBAC with an empty reason', () => {
    expect(rbacAuthorize(accessOf([]), res({ username: 'root', groups: ['system:masters'] }, 'delete', 'nodes'))).toEqual({ allowed: true, reason: '' });
  });

  it('names the binding, role and subject that allowed', () => {
    expect(rbacAuthorize(access, res(alice, 'list', 'pods', 'default'))).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "alice-view" of ClusterRole "view" to User "alice"',
    });
    expect(rbacAuthorize(access, res(alice, 'create', 'pods', 'ns1', { subresource: 'exec', name: 'web-0' }))).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "alice-exec/ns1" of Role "pod-exec" to User "alice"',
    });
  });

  it('denies with an empty reason when nothing matches', () => {
    expect(rbacAuthorize(access, res(alice, 'create', 'pods', 'default'))).toEqual({ allowed: false, reason: '' });
    expect(rbacAuthorize(access, res(alice, 'create', 'pods', 'ns1', { subresource: 'exec', name: 'web-1' })).allowed).toBe(false);
    expect(rbacAuthorize(access, res(alice, 'create', 'pods', 'ns3', { subresource: 'exec', name: 'web-0' })).allowed).toBe(false);
    expect(rbacAuthorize(access, res(alice, 'get', 'secrets', 'default')).allowed).toBe(false);
  });

  it('reports role resolution errors in the denial reason', () => {
    expect(rbacAuthorize(access, res(alice, 'create', 'pods', 'ns2'))).toEqual({
      allowed: false,
      reason: 'RBAC: role.rbac.authorization.k8s.io "missing" not found',
    });
  });

  it('matches service accounts of the binding namespace and describes them name/namespace', () => {
    const sa: UserInfo = { username: 'system:serviceaccount:ns1:builder', groups: ['system:serviceaccounts', 'system:authenticated'] };
    expect(rbacAuthorize(access, res(sa, 'create', 'deployments', 'ns1', { apiGroup: 'apps' }))).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "builder-edit/ns1" of ClusterRole "edit" to ServiceAccount "builder/ns1"',
    });
    expect(rbacAuthorize(access, res(sa, 'get', 'secrets', 'ns1')).allowed).toBe(true);
    expect(rbacAuthorize(access, res(sa, 'create', 'deployments', 'default', { apiGroup: 'apps' })).allowed).toBe(false);
  });

  it('computes aggregated roles from labelled ClusterRoles, as the controller would', () => {
    expect(rbacAuthorize(access, res(alice, 'list', 'widgets', 'default', { apiGroup: 'example.com' })).allowed).toBe(true);
    // edit aggregates view, so the service account bound to edit sees widgets too.
    const sa: UserInfo = { username: 'system:serviceaccount:ns1:builder', groups: [] };
    expect(rbacAuthorize(access, res(sa, 'get', 'widgets', 'ns1', { apiGroup: 'example.com' })).allowed).toBe(true);
  });

  it('grants what every user gets by default', () => {
    expect(rbacAuthorize(access, res(alice, 'create', 'selfsubjectaccessreviews', '', { apiGroup: 'authorization.k8s.io' }))).toEqual({
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"',
    });
    expect(rbacAuthorize(access, res(alice, 'create', 'selfsubjectreviews', '', { apiGroup: 'authentication.k8s.io' })).allowed).toBe(true);
    expect(rbacAuthorize(access, url(alice, 'get', '/apis/apps/v1')).reason).toBe(
      'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"',
    );
    expect(rbacAuthorize(access, url(anon, 'get', '/version')).allowed).toBe(true);
    expect(rbacAuthorize(access, url(anon, 'get', '/healthz')).allowed).toBe(true);
    expect(rbacAuthorize(access, url(anon, 'get', '/api')).allowed).toBe(false);
    expect(rbacAuthorize(access, res(anon, 'create', 'selfsubjectaccessreviews', '', { apiGroup: 'authorization.k8s.io' })).allowed).toBe(false);
  });
});

describe('ruleAllows', () => {
  const a = (over: Partial<Attributes>) => res(alice, 'get', 'pods', 'ns', over);
  it('matches resources, subresources, */sub, * and names as RBAC does', () => {
    expect(ruleAllows(a({ subresource: 'log' }), { verbs: ['get'], apiGroups: [''], resources: ['pods/log'] })).toBe(true);
    expect(ruleAllows(a({ subresource: 'log' }), { verbs: ['get'], apiGroups: [''], resources: ['pods'] })).toBe(false);
    expect(ruleAllows(a({}), { verbs: ['get'], apiGroups: [''], resources: ['pods/log'] })).toBe(false);
    expect(ruleAllows(a({ resource: 'deployments', apiGroup: 'apps', subresource: 'scale' }), { verbs: ['get'], apiGroups: ['apps'], resources: ['*/scale'] })).toBe(true);
    expect(ruleAllows(a({ subresource: 'status' }), { verbs: ['get'], apiGroups: [''], resources: ['*/scale'] })).toBe(false);
    expect(ruleAllows(a({ subresource: 'exec' }), { verbs: ['*'], apiGroups: ['*'], resources: ['*'] })).toBe(true);
    expect(ruleAllows(a({ name: 'x' }), { verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['y'] })).toBe(false);
    expect(ruleAllows(a({ name: '' }), { verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['y'] })).toBe(false);
    expect(ruleAllows(a({ apiGroup: 'apps' }), { verbs: ['get'], apiGroups: [''], resources: ['pods'] })).toBe(false);
  });

  it('matches non-resource URLs exactly or by trailing *', () => {
    const rule = { verbs: ['get'], nonResourceURLs: ['/healthz', '/apis/*'] };
    expect(ruleAllows(url(alice, 'get', '/healthz'), rule)).toBe(true);
    expect(ruleAllows(url(alice, 'get', '/healthz/etcd'), rule)).toBe(false);
    expect(ruleAllows(url(alice, 'get', '/apis/apps'), rule)).toBe(true);
    expect(ruleAllows(url(alice, 'get', '/apis'), rule)).toBe(false);
    expect(ruleAllows(url(alice, 'post', '/healthz'), rule)).toBe(false);
    // A resource rule never matches a path.
    expect(ruleAllows(url(alice, 'get', '/healthz'), { verbs: ['*'], apiGroups: ['*'], resources: ['*'] })).toBe(false);
  });
});

describe('rbacRulesFor and the bootstrap objects', () => {
  it('collects cluster-wide and namespace rules with resolution errors', () => {
    const { rules, evaluationError } = rbacRulesFor(access, alice, 'ns2');
    expect(evaluationError).toBe('role.rbac.authorization.k8s.io "missing" not found');
    expect(rules).toContainEqual({ verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] });
    expect(rules).toContainEqual({ verbs: ['get', 'list'], apiGroups: ['example.com'], resources: ['widgets'] });
  });

  it('ships the user-facing roles with aggregated rules filled in and the default bindings', () => {
    const objs = bootstrapRbacObjects() as any[];
    const byName = (kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);
    expect(byName('ClusterRole', 'cluster-admin').rules).toEqual([
      { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
      { verbs: ['*'], nonResourceURLs: ['*'] },
    ]);
    const admin = byName('ClusterRole', 'admin');
    expect(admin.aggregationRule).toEqual({ clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } }] });
    expect(admin.rules).toContainEqual({ verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], apiGroups: [G], resources: ['rolebindings', 'roles'] });
    expect(admin.rules).toContainEqual({ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: expect.arrayContaining(['pods', 'configmaps']) });
    expect(byName('ClusterRole', 'view').rules).not.toContainEqual(expect.objectContaining({ resources: expect.arrayContaining(['secrets']) }));
    expect(byName('ClusterRole', 'view').metadata.labels).toEqual({
      'kubernetes.io/bootstrapping': 'rbac-defaults',
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
    });
    expect(byName('ClusterRoleBinding', 'cluster-admin').subjects).toEqual([{ apiGroup: G, kind: 'Group', name: 'system:masters' }]);
    expect(byName('ClusterRoleBinding', 'system:public-info-viewer').subjects.map((s: any) => s.name)).toEqual([
      'system:authenticated',
      'system:unauthenticated',
    ]);
    expect(bootstrapRbacObjects()).not.toBe(bootstrapRbacObjects());
  });
});
