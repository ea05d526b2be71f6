// The audit Policy: read and validated as k8s.io/apiserver's policy reader and validation do, then matched as its
// checker does (first matching rule wins, no match means level None). Unlike kube's lenient decoder, unknown
// fields are refused: a misspelt "resource:" would silently turn a narrow rule into one that matches everything.

import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { isDNS1123Subdomain } from '../api/meta.js';
import {
  aggregateFieldErrors,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  type FieldError,
} from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import { LEVELS, STAGES, type Level, type Policy, type PolicyRule, type RequestAuditConfig, type Stage } from './types.js';

/** The request attributes a rule looks at (a subset of RequestInfo). */
export interface PolicyAttributes {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiGroup: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

interface CompiledGroupResources {
  group: string;
  resources: readonly string[];
  resourceNames: ReadonlySet<string> | null;
}

interface CompiledRule {
  config: RequestAuditConfig;
  users: ReadonlySet<string> | null;
  userGroups: ReadonlySet<string> | null;
  verbs: ReadonlySet<string> | null;
  namespaces: ReadonlySet<string> | null;
  resources: readonly CompiledGroupResources[] | null;
  nonResourceURLs: readonly string[] | null;
}

export interface CompiledPolicy {
  policy: Policy;
  /** The level, stages to omit and managedFields handling for a request by user. */
  evaluate(user: UserInfo | undefined, attrs: PolicyAttributes): RequestAuditConfig;
}

export class PolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyError';
  }
}

const API_VERSION = 'audit.k8s.io/v1';
const POLICY_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields']);
const RULE_FIELDS = new Set(['level', 'users', 'userGroups', 'verbs', 'resources', 'namespaces', 'nonResourceURLs', 'omitStages', 'omitManagedFields']);
const GROUP_RESOURCES_FIELDS = new Set(['group', 'resources', 'resourceNames']);

export function loadPolicyFile(path: string): CompiledPolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new PolicyError(`failed to read file path "${path}": ${(e as Error).message}`);
  }
  try {
    return compilePolicy(parsePolicy(text));
  } catch (e) {
    throw new PolicyError(`${(e as Error).message}: from file ${path}`);
  }
}

/** YAML or JSON text -> a validated Policy; throws PolicyError with every problem found. */
export function parsePolicy(text: string): Policy {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new PolicyError(`failed decoding: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!isObject(doc)) throw new PolicyError('failed decoding: the policy is not an object');
  if (doc.apiVersion !== API_VERSION || doc.kind !== 'Policy') {
    throw new PolicyError(`unknown group version field ${String(doc.apiVersion ?? '')}, Kind=${String(doc.kind ?? '')} in policy (want apiVersion ${API_VERSION}, kind Policy)`);
  }
  const errs: FieldError[] = [];
  unknownFields(doc, POLICY_FIELDS, '', errs);
  const policy: Policy = { apiVersion: API_VERSION, kind: 'Policy', rules: [] };
  policy.omitStages = stages(doc.omitStages, 'omitStages', errs);
  if (doc.omitManagedFields !== undefined) policy.omitManagedFields = bool(doc.omitManagedFields, 'omitManagedFields', errs);
  if (doc.rules !== undefined && doc.rules !== null && !Array.isArray(doc.rules)) errs.push(fieldInvalid('rules', doc.rules, 'must be a list'));
  const rules = Array.isArray(doc.rules) ? doc.rules : [];
  rules.forEach((r, i) => {
    const rule = parseRule(r, `rules[${i}]`, errs);
    if (rule) policy.rules.push(rule);
  });
  if (errs.length > 0) throw new PolicyError(aggregateFieldErrors(errs));
  if (policy.rules.length === 0) throw new PolicyError('loaded illegal policy with 0 rules');
  return policy;
}

function parseRule(r: unknown, path: string, errs: FieldError[]): PolicyRule | undefined {
  if (!isObject(r)) {
    errs.push(fieldInvalid(path, r, 'must be an object'));
    return undefined;
  }
  unknownFields(r, RULE_FIELDS, path + '.', errs);
  const rule: PolicyRule = { level: 'None' };
  const level = r.level;
  if (level === undefined || level === null || level === '') errs.push(fieldRequired(`${path}.level`));
  else if (typeof level !== 'string' || !(LEVELS as readonly string[]).includes(level)) errs.push(fieldNotSupported(`${path}.level`, level, LEVELS));
  else rule.level = level as Level;

  rule.users = strings(r.users, `${path}.users`, errs);
  rule.userGroups = strings(r.userGroups, `${path}.userGroups`, errs);
  rule.verbs = strings(r.verbs, `${path}.verbs`, errs);
  rule.namespaces = strings(r.namespaces, `${path}.namespaces`, errs);
  rule.nonResourceURLs = strings(r.nonResourceURLs, `${path}.nonResourceURLs`, errs);
  rule.nonResourceURLs?.forEach((u, i) => {
    if (u === '*') return;
    const p = `${path}.nonResourceURLs[${i}]`;
    if (!u.startsWith('/')) errs.push(fieldInvalid(p, u, "non-resource URL rules must begin with a '/' character"));
    if (u !== '' && u.slice(0, -1).includes('*')) errs.push(fieldInvalid(p, u, "non-resource URL wildcards '*' must be the final character of the rule"));
  });
  rule.omitStages = stages(r.omitStages, `${path}.omitStages`, errs);
  if (r.omitManagedFields !== undefined && r.omitManagedFields !== null) rule.omitManagedFields = bool(r.omitManagedFields, `${path}.omitManagedFields`, errs);

  if (r.resources !== undefined && r.resources !== null) {
    if (!Array.isArray(r.resources)) errs.push(fieldInvalid(`${path}.resources`, r.resources, 'must be a list'));
    else {
      rule.resources = [];
      r.resources.forEach((g, i) => {
        const gp = `${path}.resources[${i}]`;
        if (!isObject(g)) {
          errs.push(fieldInvalid(gp, g, 'must be an object'));
          return;
        }
        unknownFields(g, GROUP_RESOURCES_FIELDS, gp + '.', errs);
        const gr = { group: '', resources: strings(g.resources, `${gp}.resources`, errs), resourceNames: strings(g.resourceNames, `${gp}.resourceNames`, errs) };
        if (g.group !== undefined && g.group !== null) {
          if (typeof g.group !== 'string') errs.push(fieldInvalid(`${gp}.group`, g.group, 'must be a string'));
          else gr.group = g.group;
        }
        // The empty string is the core group; any other must be a DNS subdomain ("apps", not "apps/v1").
        if (gr.group !== '') {
          const msgs = isDNS1123Subdomain(gr.group);
          if (msgs.length > 0) errs.push(fieldInvalid(`${path}.resources.group`, gr.group, msgs.join(',')));
        }
        if ((gr.resourceNames?.length ?? 0) > 0 && (gr.resources?.length ?? 0) === 0) {
          errs.push(fieldInvalid(`${path}.resources.resourceNames`, gr.resourceNames, 'using resourceNames requires at least one resource'));
        }
        rule.resources!.push(gr);
      });
    }
  }
  if ((rule.nonResourceURLs?.length ?? 0) > 0 && ((rule.resources?.length ?? 0) > 0 || (rule.namespaces?.length ?? 0) > 0)) {
    errs.push(fieldInvalid(`${path}.nonResourceURLs`, rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
  }
  return rule;
}

export function compilePolicy(policy: Policy): CompiledPolicy {
  const policyOmit = policy.omitStages ?? [];
  const policyOmitManaged = policy.omitManagedFields ?? false;
  const rules: CompiledRule[] = policy.rules.map((r) => ({
    // NewChecker: a rule's omitStages are the union of its own and the policy's.
    config: {
      level: r.level,
      omitStages: new Set<Stage>([...policyOmit, ...(r.omitStages ?? [])]),
      omitManagedFields: r.omitManagedFields ?? policyOmitManaged,
    },
    users: setOrNull(r.users),
    userGroups: setOrNull(r.userGroups),
    verbs: setOrNull(r.verbs),
    namespaces: setOrNull(r.namespaces),
    resources:
      r.resources && r.resources.length > 0
        ? r.resources.map((g) => ({ group: g.group ?? '', resources: g.resources ?? [], resourceNames: setOrNull(g.resourceNames) }))
        : null,
    nonResourceURLs: r.nonResourceURLs && r.nonResourceURLs.length > 0 ? r.nonResourceURLs : null,
  }));
  const fallback: RequestAuditConfig = { level: 'None', omitStages: new Set(policyOmit), omitManagedFields: policyOmitManaged };
  return {
    policy,
    evaluate(user, attrs) {
      for (let i = 0; i < rules.length; i++) {
        const r = rules[i]!;
        if (ruleMatches(r, user, attrs)) return r.config;
      }
      return fallback;
    },
  };
}

function ruleMatches(r: CompiledRule, user: UserInfo | undefined, a: PolicyAttributes): boolean {
  if (r.users !== null && (user === undefined || !r.users.has(user.username))) return false;
  if (r.userGroups !== null) {
    if (user === undefined) return false;
    let matched = false;
    for (const g of user.groups) {
      if (r.userGroups.has(g)) {
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  if (r.verbs !== null && !r.verbs.has(a.verb)) return false;
  if (r.namespaces !== null || r.resources !== null) return resourceMatches(r, a);
  if (r.nonResourceURLs !== null) return nonResourceMatches(r.nonResourceURLs, a);
  return true;
}

function nonResourceMatches(specs: readonly string[], a: PolicyAttributes): boolean {
  if (a.isResourceRequest) return false;
  for (const spec of specs) {
    if (spec === '*' || spec === a.path) return true;
    // A trailing * matches every path that starts with what precedes it (TrimRight drops all trailing stars).
    if (spec.endsWith('*') && a.path.startsWith(trimRightStars(spec))) return true;
  }
  return false;
}

function resourceMatches(r: CompiledRule, a: PolicyAttributes): boolean {
  if (!a.isResourceRequest) return false;
  // Cluster-scoped requests have the empty namespace, which a rule lists as "".
  if (r.namespaces !== null && !r.namespaces.has(a.namespace)) return false;
  if (r.resources === null) return true;
  for (const gr of r.resources) {
    if (gr.group !== a.apiGroup) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames !== null && !gr.resourceNames.has(a.name)) continue;
    for (const res of gr.resources) {
      if (res === '*' || combinedEquals(res, a.resource, a.subresource)) return true;
      // "*/scale": that subresource of any resource.
      if (a.subresource !== '' && res.length === a.subresource.length + 2 && res.startsWith('*/') && res.endsWith(a.subresource)) return true;
      // "pods/*": every subresource of that resource (and, as kube's checker has it, the resource itself).
      if (res.length === a.resource.length + 2 && res.endsWith('/*') && res.startsWith(a.resource)) return true;
    }
  }
  return false;
}

/** res === resource + "/" + subresource (or resource alone), without building the string. */
function combinedEquals(res: string, resource: string, subresource: string): boolean {
  if (subresource === '') return res === resource;
  return res.length === resource.length + 1 + subresource.length && res.startsWith(resource) && res.charCodeAt(resource.length) === 47 && res.endsWith(subresource);
}

function trimRightStars(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 42) end--;
  return s.slice(0, end);
}

// ---------------------------------------------------------------------------------------------------------------

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function unknownFields(o: Record<string, unknown>, known: ReadonlySet<string>, prefix: string, errs: FieldError[]): void {
  for (const k of Object.keys(o)) if (!known.has(k)) errs.push(fieldNotSupported(prefix + k, k, [...known]));
}

function strings(v: unknown, path: string, errs: FieldError[]): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
    errs.push(fieldInvalid(path, v, 'must be a list of strings'));
    return undefined;
  }
  return v as string[];
}

function stages(v: unknown, path: string, errs: FieldError[]): Stage[] | undefined {
  const list = strings(v, path, errs);
  if (!list) return undefined;
  const out: Stage[] = [];
  list.forEach((s, i) => {
    if ((STAGES as readonly string[]).includes(s)) out.push(s as Stage);
    else errs.push(fieldInvalid(`${path}[${i}]`, s, 'allowed stages are ' + STAGES.join(',')));
  });
  return out;
}

function bool(v: unknown, path: string, errs: FieldError[]): boolean | undefined {
  if (typeof v === 'boolean') return v;
  errs.push(fieldInvalid(path, v, 'must be true or false'));
  return undefined;
}

function setOrNull(list: readonly string[] | undefined): ReadonlySet<string> | null {
  return list && list.length > 0 ? new Set(list) : null;
}
