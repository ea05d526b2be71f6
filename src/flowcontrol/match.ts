// Which FlowSchema a request belongs to (k8s.io/apiserver/pkg/util/flowcontrol/rule.go) and which flow inside it
// (the distinguisher, hashed as apf_controller.go's hashFlowID does so shuffle sharding deals the same hands).

import { createHash } from 'node:crypto';
import { SERVICE_ACCOUNT_USER_PREFIX, type UserInfo } from '../api/user.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { DistinguisherMethodType, FlowSchema, NonResourcePolicyRule, ResourcePolicyRule, Subject } from './types.js';

export function matchesFlowSchema(info: RequestInfo, user: UserInfo, fs: FlowSchema): boolean {
  for (const rule of fs.spec.rules ?? []) {
    if (!matchesASubject(user, rule.subjects)) continue;
    if (info.isResourceRequest ? matchesAResourceRule(info, rule.resourceRules) : matchesANonResourceRule(info, rule.nonResourceRules)) return true;
  }
  return false;
}

function matchesASubject(user: UserInfo, subjects: readonly Subject[]): boolean {
  for (const s of subjects) if (matchesSubject(user, s)) return true;
  return false;
}

export function matchesSubject(user: UserInfo, s: Subject): boolean {
  switch (s.kind) {
    case 'User':
      return s.user !== undefined && (s.user.name === '*' || s.user.name === user.username);
    case 'Group':
      return s.group !== undefined && (s.group.name === '*' || user.groups.includes(s.group.name));
    case 'ServiceAccount': {
      const sa = s.serviceAccount;
      if (!sa || !user.username.startsWith(SERVICE_ACCOUNT_USER_PREFIX)) return false;
      const rest = user.username.slice(SERVICE_ACCOUNT_USER_PREFIX.length);
      if (sa.name === '*') return rest.startsWith(sa.namespace + ':');
      return rest === `${sa.namespace}:${sa.name}`;
    }
    default:
      return false;
  }
}

function matchesAResourceRule(info: RequestInfo, rules: readonly ResourcePolicyRule[] | undefined): boolean {
  if (!rules) return false;
  for (const r of rules) {
    if (!containsOrWildcard(info.verb, r.verbs)) continue;
    if (!containsOrWildcard(info.subresource ? `${info.resource}/${info.subresource}` : info.resource, r.resources)) continue;
    if (!containsOrWildcard(info.apiGroup, r.apiGroups)) continue;
    if (info.namespace === '' ? r.clusterScope === true : containsOrWildcard(info.namespace, r.namespaces ?? [])) return true;
  }
  return false;
}

function matchesANonResourceRule(info: RequestInfo, rules: readonly NonResourcePolicyRule[] | undefined): boolean {
  if (!rules) return false;
  for (const r of rules) {
    if (containsOrWildcard(info.verb, r.verbs) && matchesNonResourceURL(r.nonResourceURLs, info.path)) return true;
  }
  return false;
}

/** "*", the exact path, or a prefix: "/apis/*" and also "/healthz" (which covers "/healthz/etcd"), as kube does. */
function matchesNonResourceURL(urls: readonly string[], path: string): boolean {
  for (const u of urls) {
    if (u === '*' || u === path) return true;
    let prefix = u.endsWith('*') ? u.slice(0, -1) : u;
    if (!prefix.endsWith('/')) prefix += '/';
    if (path.startsWith(prefix)) return true;
  }
  return false;
}

/** Validation guarantees a wildcard stands alone, so it is only looked for in one-element lists. */
function containsOrWildcard(x: string, list: readonly string[]): boolean {
  if (list.length === 1 && list[0] === '*') return true;
  return list.includes(x);
}

export function flowDistinguisher(info: RequestInfo, user: UserInfo, method: DistinguisherMethodType | undefined): string {
  if (method === 'ByUser') return user.username;
  if (method === 'ByNamespace') return info.namespace;
  return '';
}

/** sha256(fsName NUL distinguisher), its first 8 bytes little-endian: the flow's entropy for shuffle sharding. */
export function hashFlowID(fsName: string, distinguisher: string): bigint {
  const h = createHash('sha256');
  h.update(fsName);
  h.update(NUL);
  h.update(distinguisher);
  return h.digest().readBigUInt64LE(0);
}

const NUL = Buffer.from([0]);
