import { describe, expect, it } from 'vitest';
import { compilePolicy, defaultPolicyPath, loadPolicyFile, parsePolicy } from '../../src/audit/index.js';
import type { PolicyAttributes } from '../../src/audit/policy.js';
import type { UserInfo } from '../../src/api/user.js';

const alice: UserInfo = { username: 'alice', groups: ['dev', 'system:authenticated'] };
const bob: UserInfo = { username: 'bob', groups: ['ops', 'system:authenticated'] };

function res(verb: string, resource: string, o: Partial<PolicyAttributes> = {}): PolicyAttributes {
  return { isResourceRequest: true, path: '', verb, apiGroup: '', namespace: 'default', resource, subresource: '', name: '', ...o };
}
function nonRes(path: string, verb = 'get'): PolicyAttributes {
  return { isResourceRequest: false, path, verb, apiGroup: '', namespace: '', resource: '', subresource: '', name: '' };
}
function policy(rules: string, extra = ''): ReturnType<typeof compilePolicy> {
  return compilePolicy(parsePolicy(`apiVersion: audit.k8s.io/v1\nkind: Policy\n${extra}\nrules:\n${rules}`));
}

describe('audit policy: reading and validation', () => {
  const bad = (text: string) => () => parsePolicy(`apiVersion: audit.k8s.io/v1\nkind: Policy\n${text}`);

  it('refuses what kube refuses, with its messages', () => {
    expect(bad('rules:\n- users: [a]')).toThrow('rules[0].level: Required value');
    expect(bad('rules:\n- level: Everything')).toThrow(
      'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"',
    );
    expect(bad('rules:\n- level: None\n  nonResourceURLs: [healthz]')).toThrow(
      `rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character`,
    );
    expect(bad('rules:\n- level: None\n  nonResourceURLs: ["/a*/b"]')).toThrow("non-resource URL wildcards '*' must be the final character of the rule");
    expect(bad('rules:\n- level: None\n  nonResourceURLs: ["/a"]\n  namespaces: [x]')).toThrow('rules cannot apply to both regular resources and non-resource URLs');
    expect(bad('rules:\n- level: None\n  resources: [{group: apps, resourceNames: [x]}]')).toThrow(
      'rules[0].resources.resourceNames: Invalid value: ["x"]: using resourceNames requires at least one resource',
    );
    expect(bad('rules:\n- level: None\n  resources: [{group: apps/v1}]')).toThrow('rules[0].resources.group: Invalid value: "apps/v1"');
    expect(bad('rules:\n- level: None\n  omitStages: [Done]')).toThrow(
      'rules[0].omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic',
    );
    expect(bad('rules: []')).toThrow('loaded illegal policy with 0 rules');
  });

  it('refuses unknown fields, so a misspelt rule cannot silently match everything', () => {
    expect(bad('rules:\n- level: None\n  resource: [{group: ""}]')).toThrow('rules[0].resource: Unsupported value: "resource"');
    expect(bad('rules:\n- level: None\n  resources: [{group: "", resource: [pods]}]')).toThrow('rules[0].resources[0].resource: Unsupported value');
  });

  it('wants audit.k8s.io/v1 Policy', () => {
    expect(() => parsePolicy('apiVersion: audit.k8s.io/v2\nkind: Policy\nrules: [{level: None}]')).toThrow('unknown group version field audit.k8s.io/v2');
    expect(() => parsePolicy('apiVersion: audit.k8s.io/v1\nkind: Event\nrules: [{level: None}]')).toThrow('Kind=Event');
    expect(() => parsePolicy('{not yaml')).toThrow('failed decoding');
  });

  it('reads JSON too, and names the file in errors', () => {
    const p = parsePolicy('{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}');
    expect(p.rules).toEqual([expect.objectContaining({ level: 'Metadata' })]);
    expect(() => loadPolicyFile('/nonexistent/policy.yaml')).toThrow('failed to read file path "/nonexistent/policy.yaml"');
  });
});

describe('audit policy: matching (checker.go)', () => {
  it('first matching rule wins; no match is None', () => {
    const p = policy(`
- level: RequestResponse
  users: [alice]
- level: Metadata
  userGroups: [ops]
- level: Request
  verbs: [delete]`);
    expect(p.evaluate(alice, res('get', 'pods')).level).toBe('RequestResponse');
    expect(p.evaluate(bob, res('delete', 'pods')).level).toBe('Metadata');
    expect(p.evaluate({ username: 'carol', groups: [] }, res('delete', 'pods')).level).toBe('Request');
    expect(p.evaluate({ username: 'carol', groups: [] }, res('get', 'pods')).level).toBe('None');
    // users and userGroups never match a request without a user.
    expect(p.evaluate(undefined, res('get', 'pods')).level).toBe('None');
  });

  it('resources with subresources, wildcards and names', () => {
    const p = policy(`
- level: Request
  resources: [{group: "", resources: ["pods/log"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["*/scale"]}]
- level: Metadata
  resources: [{group: "apps", resources: ["deployments/*"]}]
- level: Request
  resources: [{group: "", resources: ["configmaps"], resourceNames: [special]}]
- level: RequestResponse
  resources: [{group: "batch"}]
- level: Metadata
  resources: [{group: "rbac.authorization.k8s.io", resources: ["*"]}]`);
    expect(p.evaluate(alice, res('get', 'pods', { name: 'p', subresource: 'log' })).level).toBe('Request');
    expect(p.evaluate(alice, res('get', 'pods', { name: 'p' })).level).toBe('None');
    expect(p.evaluate(alice, res('get', 'pods', { name: 'p', subresource: 'exec' })).level).toBe('None');
    expect(p.evaluate(alice, res('patch', 'replicationcontrollers', { name: 'r', subresource: 'scale' })).level).toBe('RequestResponse');
    // "*/scale" is about the scale subresource only, in the rule's group.
    expect(p.evaluate(alice, res('patch', 'scale')).level).toBe('None');
    expect(p.evaluate(alice, res('patch', 'deployments', { apiGroup: 'apps', name: 'd', subresource: 'scale' })).level).toBe('Metadata');
    // "deployments/*" covers the resource itself as well, as kube's checker has it.
    expect(p.evaluate(alice, res('get', 'deployments', { apiGroup: 'apps', name: 'd' })).level).toBe('Metadata');
    expect(p.evaluate(alice, res('get', 'configmaps', { name: 'special' })).level).toBe('Request');
    expect(p.evaluate(alice, res('get', 'configmaps', { name: 'other' })).level).toBe('None');
    expect(p.evaluate(alice, res('list', 'configmaps')).level).toBe('None');
    expect(p.evaluate(alice, res('create', 'jobs', { apiGroup: 'batch' })).level).toBe('RequestResponse');
    expect(p.evaluate(alice, res('get', 'roles', { apiGroup: 'rbac.authorization.k8s.io', subresource: 'x' })).level).toBe('Metadata');
    // Resource rules never match non-resource requests.
    expect(p.evaluate(alice, nonRes('/api')).level).toBe('None');
  });

  it('namespaces, with "" for cluster-scoped requests', () => {
    const p = policy(`
- level: Metadata
  namespaces: ["kube-system"]
- level: Request
  namespaces: [""]`);
    expect(p.evaluate(alice, res('get', 'pods', { namespace: 'kube-system' })).level).toBe('Metadata');
    expect(p.evaluate(alice, res('get', 'nodes', { namespace: '' })).level).toBe('Request');
    expect(p.evaluate(alice, res('get', 'pods')).level).toBe('None');
    expect(p.evaluate(alice, nonRes('/healthz')).level).toBe('None');
  });

  it('non-resource URLs: exact, "*" and a trailing *', () => {
    const p = policy(`
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Request
  nonResourceURLs: ["/apis/*"]
- level: Metadata
  nonResourceURLs: ["*"]`);
    expect(p.evaluate(alice, nonRes('/healthz')).level).toBe('None');
    expect(p.evaluate(alice, nonRes('/healthz/etcd')).level).toBe('None');
    expect(p.evaluate(alice, nonRes('/version')).level).toBe('None');
    expect(p.evaluate(alice, nonRes('/version/x')).level).toBe('Metadata');
    expect(p.evaluate(alice, nonRes('/apis/apps')).level).toBe('Request');
    expect(p.evaluate(alice, nonRes('/apis')).level).toBe('Metadata');
    expect(p.evaluate(alice, res('get', 'pods')).level).toBe('None');
  });

  it("omitStages add to the policy's; omitManagedFields falls back to the policy's", () => {
    const p = policy(
      `
- level: Metadata
  users: [alice]
  omitStages: [ResponseStarted]
  omitManagedFields: false
- level: Request`,
      'omitStages: [RequestReceived]\nomitManagedFields: true',
    );
    const a = p.evaluate(alice, res('get', 'pods'));
    expect([...a.omitStages].sort()).toEqual(['RequestReceived', 'ResponseStarted']);
    expect(a.omitManagedFields).toBe(false);
    const b = p.evaluate(bob, res('get', 'pods'));
    expect([...b.omitStages]).toEqual(['RequestReceived']);
    expect(b.omitManagedFields).toBe(true);
  });
});

describe('the default policy (config/audit-policy.yaml)', () => {
  const p = loadPolicyFile(defaultPolicyPath());
  const level = (a: PolicyAttributes) => p.evaluate(alice, a);

  it('leaves out probes, version and Events', () => {
    for (const path of ['/healthz', '/livez', '/readyz/ping', '/version', '/metrics']) expect(level(nonRes(path)).level).toBe('None');
    expect(level(res('create', 'events')).level).toBe('None');
    expect(level(res('list', 'events', { apiGroup: 'events.k8s.io' })).level).toBe('None');
  });

  it('keeps secrets and configmaps at Metadata, reads without RequestReceived', () => {
    const read = level(res('get', 'secrets', { name: 's' }));
    expect(read.level).toBe('Metadata');
    expect(read.omitStages.has('RequestReceived')).toBe(true);
    const write = level(res('create', 'configmaps'));
    expect(write.level).toBe('Metadata');
    expect(write.omitStages.has('RequestReceived')).toBe(false);
  });

  it('records workload changes in full, other changes with their request, reads as metadata', () => {
    expect(level(res('patch', 'deployments', { apiGroup: 'apps', name: 'd', subresource: 'scale' })).level).toBe('RequestResponse');
    expect(level(res('delete', 'clonesets', { apiGroup: 'apps.kruise.io', name: 'c' })).level).toBe('RequestResponse');
    expect(level(res('create', 'propagationpolicies', { apiGroup: 'policy.karmada.io' })).level).toBe('RequestResponse');
    expect(level(res('delete', 'namespaces', { namespace: '', name: 'n' })).level).toBe('RequestResponse');
    expect(level(res('create', 'pods')).level).toBe('Request');
    const list = level(res('list', 'deployments', { apiGroup: 'apps' }));
    expect(list.level).toBe('Metadata');
    expect(list.omitStages.has('RequestReceived')).toBe(true);
    expect(level(nonRes('/apis')).level).toBe('Metadata');
    expect(list.omitManagedFields).toBe(true);
  });
});
