// RBAC for the sim, over the rbac.authorization.k8s.io/v1 objects a simulated cluster stores: the same walk as
// plugin/pkg/auth/authorizer/rbac (ClusterRoleBindings first, then RoleBindings of the request's namespace, first
// matching rule wins), the same rule matching (pkg/apis/rbac/v1/evaluation_helpers.go) and the same reason
// strings. system:masters is allowed before RBAC is asked, as kube-apiserver's privileged-group authorizer does.
// There is no aggregation controller in the sim, so a ClusterRole with an aggregationRule gets its rules computed
// when it is read, the way the controller would have written them.

import type { KubeObject } from '../../src/api/meta.js';
import { SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED, type Attributes, type Decision, type UserInfo } from '../../src/api/user.js';
import type { SimResourceAccess } from './access.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

interface RoleRef {
  apiGroup?: string;
  kind: string;
  name: string;
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** The loose view of a stored object this module reads; stored objects are plain JSON. */
type Obj = {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  rules?: PolicyRule[] | null;
  subjects?: Subject[] | null;
  roleRef?: RoleRef;
  aggregationRule?: { clusterRoleSelectors?: LabelSelector[] | null } | null;
};

/** Called for each rule that applies, with the binding it came from; false stops the walk. */
type Visitor = (source: string | null, rule: PolicyRule | null, err: string | null) => boolean;

export function rbacAuthorize(access: SimResourceAccess, attrs: Attributes): Decision {
  if (attrs.user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, reason: '' };
  let reason = '';
  const errors: string[] = [];
  visitRulesFor(access, attrs.user, attrs.namespace, (source, rule, err) => {
    if (rule !== null && ruleAllows(attrs, rule)) {
      reason = `RBAC: allowed by ${source}`;
      return false;
    }
    if (err !== null) errors.push(err);
    return true;
  });
  if (reason !== '') return { allowed: true, reason };
  return { allowed: false, reason: errors.length > 0 ? `RBAC: ${aggregate(errors)}` : '' };
}

/**
 * Every rule that applies to the user in the namespace (RulesFor, used by SelfSubjectRulesReview), with the
 * resolution errors as one aggregated message ('' when none).
 */
export function rbacRulesFor(access: SimResourceAccess, user: UserInfo, namespace: string): { rules: PolicyRule[]; evaluationError: string } {
  const rules: PolicyRule[] = [];
  const errors: string[] = [];
  visitRulesFor(access, user, namespace, (_source, rule, err) => {
    if (rule !== null) rules.push(rule);
    if (err !== null) errors.push(err);
    return true;
  });
  return { rules, evaluationError: aggregate(errors) };
}

/** RuleAllows: verb, API group, resource (with subresource and "*\/sub"), resource name, or non-resource URL. */
export function ruleAllows(attrs: Attributes, rule: PolicyRule): boolean {
  if (!verbMatches(rule, attrs.verb)) return false;
  if (attrs.isResourceRequest) {
    const combined = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    return apiGroupMatches(rule, attrs.apiGroup) && resourceMatches(rule, combined, attrs.subresource) && resourceNameMatches(rule, attrs.name);
  }
  return nonResourceURLMatches(rule, attrs.path);
}

function verbMatches(rule: PolicyRule, verb: string): boolean {
  for (const v of rule.verbs ?? []) if (v === '*' || v === verb) return true;
  return false;
}

function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  for (const g of rule.apiGroups ?? []) if (g === '*' || g === group) return true;
  return false;
}

function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource === '') continue;
    if (r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource)) return true;
  }
  return false;
}

function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  if (names.length === 0) return true;
  return names.includes(name);
}

function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === '*' || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.replace(/\*+$/, ''))) return true;
  }
  return false;
}

function visitRulesFor(access: SimResourceAccess, user: UserInfo, namespace: string, visit: Visitor): void {
  for (const b of access.list(RBAC_GROUP, 'clusterrolebindings') as Obj[]) {
    const subject = appliesTo(user, b.subjects ?? [], '');
    if (subject === null) continue;
    const resolved = roleReferenceRules(access, b.roleRef, '');
    if (typeof resolved === 'string') {
      if (!visit(null, null, resolved)) return;
      continue;
    }
    const source = `ClusterRoleBinding ${goQuote(b.metadata?.name ?? '')} of ${b.roleRef?.kind ?? ''} ${goQuote(b.roleRef?.name ?? '')} to ${describeSubject(subject, '')}`;
    for (const rule of resolved) if (!visit(source, rule, null)) return;
  }
  if (namespace === '') return;
  for (const b of access.list(RBAC_GROUP, 'rolebindings', namespace) as Obj[]) {
    const subject = appliesTo(user, b.subjects ?? [], namespace);
    if (subject === null) continue;
    const resolved = roleReferenceRules(access, b.roleRef, namespace);
    if (typeof resolved === 'string') {
      if (!visit(null, null, resolved)) return;
      continue;
    }
    const ns = b.metadata?.namespace ?? namespace;
    const source = `RoleBinding ${goQuote((b.metadata?.name ?? '') + '/' + ns)} of ${b.roleRef?.kind ?? ''} ${goQuote(b.roleRef?.name ?? '')} to ${describeSubject(subject, ns)}`;
    for (const rule of resolved) if (!visit(source, rule, null)) return;
  }
}

/** The first subject of the binding that is this user, or null. */
function appliesTo(user: UserInfo, subjects: Subject[], namespace: string): Subject | null {
  for (const s of subjects) {
    switch (s.kind) {
      case 'User':
        if (user.username === s.name) return s;
        break;
      case 'Group':
        if (user.groups.includes(s.name)) return s;
        break;
      case 'ServiceAccount': {
        // A RoleBinding may name a service account of its own namespace without saying so.
        const ns = s.namespace || namespace;
        if (ns !== '' && user.username === `system:serviceaccount:${ns}:${s.name}`) return s;
        break;
      }
    }
  }
  return null;
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} ${goQuote(s.name + '/' + (s.namespace || bindingNamespace))}`;
  return `${s.kind} ${goQuote(s.name)}`;
}

/** GetRoleReferenceRules: the rules, or the error text the listers would give. */
function roleReferenceRules(access: SimResourceAccess, ref: RoleRef | undefined, bindingNamespace: string): PolicyRule[] | string {
  switch (ref?.kind) {
    case 'Role': {
      const role = access.get(RBAC_GROUP, 'roles', bindingNamespace, ref.name) as Obj | undefined;
      if (!role) return `role.${RBAC_GROUP} ${goQuote(ref.name)} not found`;
      return role.rules ?? [];
    }
    case 'ClusterRole': {
      const role = access.get(RBAC_GROUP, 'clusterroles', '', ref.name) as Obj | undefined;
      if (!role) return `clusterrole.${RBAC_GROUP} ${goQuote(ref.name)} not found`;
      return effectiveClusterRoleRules(access, role, new Set());
    }
    default:
      return `unsupported role reference kind: ${goQuote(ref?.kind ?? '')}`;
  }
}

/**
 * What the clusterrole-aggregation controller would have stored: for each selector in order, the matching
 * ClusterRoles sorted by name (not the role itself), their rules appended unless already present.
 */
function effectiveClusterRoleRules(access: SimResourceAccess, role: Obj, visiting: Set<string>): PolicyRule[] {
  const selectors = role.aggregationRule?.clusterRoleSelectors;
  if (!selectors) return role.rules ?? [];
  const name = role.metadata?.name ?? '';
  visiting.add(name);
  const all = access.list(RBAC_GROUP, 'clusterroles') as Obj[];
  const out: PolicyRule[] = [];
  for (const sel of selectors) {
    const matched = all
      .filter((r) => matchesSelector(sel, r.metadata?.labels ?? {}))
      .sort((a, b) => compare(a.metadata?.name ?? '', b.metadata?.name ?? ''));
    for (const r of matched) {
      const rName = r.metadata?.name ?? '';
      if (rName === name || visiting.has(rName)) continue;
      for (const rule of effectiveClusterRoleRules(access, r, visiting)) {
        if (!out.some((o) => sameRule(o, rule))) out.push(rule);
      }
    }
  }
  visiting.delete(name);
  return out;
}

/** metav1.LabelSelectorAsSelector semantics; an empty selector matches everything. */
function matchesSelector(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(labels[e.key]!)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[e.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

function sameRule(a: PolicyRule, b: PolicyRule): boolean {
  return sameList(a.verbs, b.verbs) && sameList(a.apiGroups, b.apiGroups) && sameList(a.resources, b.resources) &&
    sameList(a.resourceNames, b.resourceNames) && sameList(a.nonResourceURLs, b.nonResourceURLs);
}

function sameList(a: string[] | undefined, b: string[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** utilerrors.NewAggregate(...).Error(): one message bare, several as "[a, b]", duplicates dropped. */
function aggregate(msgs: string[]): string {
  const uniq = [...new Set(msgs)];
  if (uniq.length === 0) return '';
  return uniq.length === 1 ? uniq[0]! : `[${uniq.join(', ')}]`;
}

/** %q for the names we print (names are printable; escape quotes and backslashes). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

// ---------------------------------------------------------------------------------------------------------------
// The default ClusterRoles and ClusterRoleBindings kube-apiserver reconciles at start-up (bootstrappolicy,
// 1.30+), limited to the ones users meet: the user-facing roles and what every authenticated user is granted.

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const READ_WRITE = [...READ, ...WRITE];

/** rbacv1helpers.NewRule(...).RuleOrDie(): every list sorted, as the reconciled objects show them. */
function rule(verbs: string[], groups: string[] | null, resources: string[] | null, urls?: string[]): PolicyRule {
  const r: PolicyRule = { verbs: [...verbs].sort() };
  if (groups) r.apiGroups = [...groups].sort();
  if (resources) r.resources = [...resources].sort();
  if (urls) r.nonResourceURLs = [...urls].sort();
  return r;
}

const res = (verbs: string[], group: string, ...resources: string[]): PolicyRule => rule(verbs, [group], resources);
const urls = (verbs: string[], ...u: string[]): PolicyRule => rule(verbs, null, null, u);

const AGGREGATE_TO_ADMIN = 'rbac.authorization.k8s.io/aggregate-to-admin';
const AGGREGATE_TO_EDIT = 'rbac.authorization.k8s.io/aggregate-to-edit';
const AGGREGATE_TO_VIEW = 'rbac.authorization.k8s.io/aggregate-to-view';

interface RoleSpec {
  name: string;
  labels?: Record<string, string>;
  rules?: PolicyRule[];
  aggregateFrom?: string;
}

function bootstrapRoles(): RoleSpec[] {
  return [
    { name: 'cluster-admin', rules: [rule(['*'], ['*'], ['*']), urls(['*'], '*')] },
    {
      name: 'system:discovery',
      rules: [urls(['get'], '/livez', '/readyz', '/healthz', '/version', '/version/', '/openapi', '/openapi/*', '/api', '/api/*', '/apis', '/apis/*')],
    },
    {
      name: 'system:monitoring',
      rules: [urls(['get'], '/metrics', '/metrics/slis', '/livez', '/readyz', '/healthz', '/livez/*', '/readyz/*', '/healthz/*')],
    },
    {
      name: 'system:basic-user',
      rules: [
        res(['create'], 'authorization.k8s.io', 'selfsubjectaccessreviews', 'selfsubjectrulesreviews'),
        res(['create'], 'authentication.k8s.io', 'selfsubjectreviews'),
      ],
    },
    { name: 'system:public-info-viewer', rules: [urls(['get'], '/livez', '/readyz', '/healthz', '/version', '/version/')] },
    {
      name: 'system:auth-delegator',
      rules: [res(['create'], 'authentication.k8s.io', 'tokenreviews'), res(['create'], 'authorization.k8s.io', 'subjectaccessreviews')],
    },
    { name: 'admin', aggregateFrom: AGGREGATE_TO_ADMIN },
    { name: 'edit', labels: { [AGGREGATE_TO_ADMIN]: 'true' }, aggregateFrom: AGGREGATE_TO_EDIT },
    { name: 'view', labels: { [AGGREGATE_TO_EDIT]: 'true' }, aggregateFrom: AGGREGATE_TO_VIEW },
    {
      name: 'system:aggregate-to-admin',
      labels: { [AGGREGATE_TO_ADMIN]: 'true' },
      rules: [
        res(['create'], 'authorization.k8s.io', 'localsubjectaccessreviews'),
        res(READ_WRITE, RBAC_GROUP, 'roles', 'rolebindings'),
      ],
    },
    {
      name: 'system:aggregate-to-edit',
      labels: { [AGGREGATE_TO_EDIT]: 'true' },
      rules: [
        // Read on escalating resources.
        res(READ, '', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward', 'secrets', 'services/proxy'),
        res(['impersonate'], '', 'serviceaccounts'),
        res(WRITE, '', 'pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward'),
        res(['create'], '', 'pods/eviction'),
        res(WRITE, '', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/proxy',
          'persistentvolumeclaims', 'configmaps', 'secrets'),
        res(['create'], '', 'serviceaccounts/token'),
        res(WRITE, 'apps', 'statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback',
          'replicasets', 'replicasets/scale'),
        res(WRITE, 'autoscaling', 'horizontalpodautoscalers'),
        res(WRITE, 'batch', 'jobs', 'cronjobs'),
        res(WRITE, 'extensions', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'ingresses', 'replicasets',
          'replicasets/scale', 'replicationcontrollers/scale', 'networkpolicies'),
        res(WRITE, 'policy', 'poddisruptionbudgets'),
        res(WRITE, 'networking.k8s.io', 'networkpolicies', 'ingresses'),
      ],
    },
    {
      name: 'system:aggregate-to-view',
      labels: { [AGGREGATE_TO_VIEW]: 'true' },
      rules: [
        res(READ, '', 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status',
          'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps'),
        res(READ, '', 'limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status', 'namespaces/status',
          'replicationcontrollers/status', 'pods/log'),
        // Namespaces at namespace scope: a user can read the namespaces it has access to.
        res(READ, '', 'namespaces'),
        res(READ, 'discovery.k8s.io', 'endpointslices'),
        res(READ, 'apps', 'controllerrevisions', 'statefulsets', 'statefulsets/status', 'statefulsets/scale', 'daemonsets', 'daemonsets/status',
          'deployments', 'deployments/status', 'deployments/scale', 'replicasets', 'replicasets/status', 'replicasets/scale'),
        res(READ, 'autoscaling', 'horizontalpodautoscalers', 'horizontalpodautoscalers/status'),
        res(READ, 'batch', 'jobs', 'cronjobs', 'cronjobs/status', 'jobs/status'),
        res(READ, 'extensions', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses',
          'ingresses/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale', 'networkpolicies'),
        res(READ, 'policy', 'poddisruptionbudgets', 'poddisruptionbudgets/status'),
        res(READ, 'networking.k8s.io', 'networkpolicies', 'ingresses', 'ingresses/status'),
      ],
    },
  ];
}

const BOOTSTRAP_BINDINGS: Array<{ name: string; role: string; groups: string[] }> = [
  { name: 'cluster-admin', role: 'cluster-admin', groups: [SYSTEM_MASTERS] },
  { name: 'system:basic-user', role: 'system:basic-user', groups: [SYSTEM_AUTHENTICATED] },
  { name: 'system:discovery', role: 'system:discovery', groups: [SYSTEM_AUTHENTICATED] },
  { name: 'system:monitoring', role: 'system:monitoring', groups: ['system:monitoring'] },
  { name: 'system:public-info-viewer', role: 'system:public-info-viewer', groups: [SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED] },
];

function bootstrapMetadata(name: string, labels: Record<string, string> = {}): Record<string, unknown> {
  return {
    name,
    labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', ...labels },
    annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
  };
}

/**
 * The default ClusterRoles (with aggregated rules already filled in, as a running cluster shows them) and
 * ClusterRoleBindings, ready to store. Fresh objects on every call.
 */
export function bootstrapRbacObjects(): KubeObject[] {
  const specs = bootstrapRoles();
  const roles: Obj[] = specs.map((s) => {
    const o: Record<string, unknown> = {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: 'ClusterRole',
      metadata: bootstrapMetadata(s.name, s.labels),
    };
    if (s.aggregateFrom) o.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { [s.aggregateFrom]: 'true' } }] };
    o.rules = s.rules ?? [];
    return o as Obj;
  });
  // Fill aggregated roles from the others, as the controller does once the apiserver is up.
  const byName = new Map(roles.map((r) => [r.metadata!.name!, r]));
  const staticAccess: SimResourceAccess = {
    list: (group, resource) => (group === RBAC_GROUP && resource === 'clusterroles' ? (roles as unknown as KubeObject[]) : []),
    get: (group, resource, _ns, name) =>
      (group === RBAC_GROUP && resource === 'clusterroles' ? (byName.get(name) as unknown as KubeObject) : undefined),
  };
  for (const r of roles) {
    if (r.aggregationRule) r.rules = effectiveClusterRoleRules(staticAccess, r, new Set()).map((x) => structuredClone(x));
  }
  const bindings = BOOTSTRAP_BINDINGS.map((b) => ({
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: bootstrapMetadata(b.name),
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: b.role },
    subjects: b.groups.map((g) => ({ apiGroup: RBAC_GROUP, kind: 'Group', name: g })),
  }));
  return [...roles, ...bindings] as unknown as KubeObject[];
}
