// Impersonate-* headers, as k8s.io/apiserver/pkg/endpoints/filters/impersonation.go handles them: every requested
// user, group, extra value and uid is authorized separately with verb "impersonate"; the first refusal is the
// 403; the resulting user gets system:authenticated (or, for system:anonymous, system:unauthenticated) unless the
// caller named one of those groups itself.

import type { IncomingHttpHeaders } from 'node:http';
import { newForbiddenAttributes, newInternalError } from '../../src/api/status.js';
import {
  SYSTEM_ANONYMOUS,
  SYSTEM_AUTHENTICATED,
  SYSTEM_UNAUTHENTICATED,
  type Attributes,
  type Decision,
  type UserInfo,
} from '../../src/api/user.js';

const USER_HEADER = 'impersonate-user';
const GROUP_HEADER = 'impersonate-group';
const UID_HEADER = 'impersonate-uid';
const EXTRA_PREFIX = 'impersonate-extra-';
const SA_PREFIX = 'system:serviceaccount:';
const AUTHENTICATION_GROUP = 'authentication.k8s.io';
const AUTHENTICATION_GV = 'authentication.k8s.io/v1';

/** One thing to impersonate: a v1.ObjectReference as the Go filter builds it (only the fields it sets). */
interface ImpersonationRequest {
  kind: 'ServiceAccount' | 'User' | 'Group' | 'UserExtra' | 'UID';
  namespace: string;
  name: string;
  apiVersion: string;
  /** The extra key for UserExtra (the Go code keeps it in ObjectReference.FieldPath). */
  fieldPath: string;
}

/**
 * The user to act as, or null when the request carries no Impersonate-* header. Throws a StatusError:
 * 403 Forbidden (the message names the first refused impersonation) or, for groups/extra/uid without a user,
 * the 500 the Go filter answers with (it calls responsewriters.InternalError; we send it as a Status).
 *
 * Node joins repeated headers with ", ", so a string value is split there; pass arrays (req.headersDistinct
 * values) to keep group names that contain ", ".
 */
export function impersonate(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  requester: UserInfo,
  authorize: (a: Attributes) => Decision,
): UserInfo | null {
  const requests = buildImpersonationRequests(headers);
  if (requests.length === 0) return null;

  // Explicit groups are the authority, including over a service account's own groups.
  const groupsSpecified = headerValues(headers[GROUP_HEADER]).length > 0;
  let username = '';
  let groups: string[] = [];
  let uid = '';
  const extra: Record<string, string[]> = {};

  for (const r of requests) {
    const slash = r.apiVersion.indexOf('/');
    const attrs: Attributes = {
      user: requester,
      verb: 'impersonate',
      isResourceRequest: true,
      path: '',
      namespace: r.namespace,
      apiGroup: slash < 0 ? '' : r.apiVersion.slice(0, slash),
      apiVersion: slash < 0 ? r.apiVersion : r.apiVersion.slice(slash + 1),
      resource: '',
      subresource: '',
      name: r.name,
    };
    switch (r.kind) {
      case 'ServiceAccount':
        attrs.resource = 'serviceaccounts';
        username = SA_PREFIX + r.namespace + ':' + r.name;
        if (!groupsSpecified) groups = ['system:serviceaccounts', `system:serviceaccounts:${r.namespace}`];
        break;
      case 'User':
        attrs.resource = 'users';
        username = r.name;
        break;
      case 'Group':
        attrs.resource = 'groups';
        groups.push(r.name);
        break;
      case 'UserExtra':
        attrs.resource = 'userextras';
        attrs.subresource = r.fieldPath;
        (extra[r.fieldPath] ??= []).push(r.name);
        break;
      case 'UID':
        attrs.resource = 'uids';
        uid = r.name;
        break;
    }
    const decision = authorize(attrs);
    if (!decision.allowed) throw newForbiddenAttributes(attrs, decision.reason);
  }

  if (username !== SYSTEM_ANONYMOUS) {
    if (!groups.includes(SYSTEM_AUTHENTICATED) && !groups.includes(SYSTEM_UNAUTHENTICATED)) groups.push(SYSTEM_AUTHENTICATED);
  } else if (!groups.includes(SYSTEM_UNAUTHENTICATED)) {
    groups.push(SYSTEM_UNAUTHENTICATED);
  }

  const user: UserInfo = { username, groups };
  if (uid !== '') user.uid = uid;
  if (Object.keys(extra).length > 0) user.extra = extra;
  return user;
}

/** True when any Impersonate-* header is present (the core strips them before proxying anything on). */
export function hasImpersonationHeaders(headers: IncomingHttpHeaders | Record<string, unknown>): boolean {
  for (const name of Object.keys(headers)) {
    const n = name.toLowerCase();
    if (n === USER_HEADER || n === GROUP_HEADER || n === UID_HEADER || n.startsWith(EXTRA_PREFIX)) return true;
  }
  return false;
}

function buildImpersonationRequests(headers: Record<string, string | string[] | undefined>): ImpersonationRequest[] {
  const requests: ImpersonationRequest[] = [];
  const requestedUser = headerValues(headers[USER_HEADER])[0] ?? '';
  const hasUser = requestedUser.length > 0;
  if (hasUser) {
    const sa = splitServiceAccountUsername(requestedUser);
    if (sa) requests.push({ kind: 'ServiceAccount', namespace: sa.namespace, name: sa.name, apiVersion: '', fieldPath: '' });
    else requests.push({ kind: 'User', namespace: '', name: requestedUser, apiVersion: '', fieldPath: '' });
  }

  let hasGroups = false;
  for (const g of headerValues(headers[GROUP_HEADER])) {
    hasGroups = true;
    requests.push({ kind: 'Group', namespace: '', name: g, apiVersion: '', fieldPath: '' });
  }

  let hasExtra = false;
  for (const [headerName, value] of Object.entries(headers)) {
    const lower = headerName.toLowerCase();
    if (!lower.startsWith(EXTRA_PREFIX)) continue;
    hasExtra = true;
    const key = unescapeExtraKey(lower.slice(EXTRA_PREFIX.length));
    for (const v of headerValues(value)) {
      requests.push({ kind: 'UserExtra', namespace: '', name: v, apiVersion: AUTHENTICATION_GV, fieldPath: key });
    }
  }

  const requestedUid = headerValues(headers[UID_HEADER])[0] ?? '';
  const hasUid = requestedUid.length > 0;
  if (hasUid) requests.push({ kind: 'UID', namespace: '', name: requestedUid, apiVersion: AUTHENTICATION_GV, fieldPath: '' });

  if ((hasGroups || hasExtra || hasUid) && !hasUser) {
    throw newInternalError(`requested ${formatRequests(requests)} without impersonating a user`);
  }
  return requests;
}

function headerValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v;
  return v.split(', ');
}

/** serviceaccount.SplitUsername: system:serviceaccount:<namespace>:<name>, both valid names. */
function splitServiceAccountUsername(username: string): { namespace: string; name: string } | null {
  if (!username.startsWith(SA_PREFIX)) return null;
  const parts = username.slice(SA_PREFIX.length).split(':');
  if (parts.length !== 2) return null;
  const [namespace, name] = parts as [string, string];
  if (!isDNS1123Label(namespace) || !isDNS1123Subdomain(name)) return null;
  return { namespace, name };
}

function isDNS1123Label(s: string): boolean {
  return s.length > 0 && s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s);
}

function isDNS1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);
}

/** url.PathUnescape; a malformed key is kept as sent, as the Go filter does. */
function unescapeExtraKey(encoded: string): string {
  if (!encoded.includes('%')) return encoded;
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    const c = encoded.charCodeAt(i);
    if (encoded[i] === '%') {
      const hex = encoded.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return encoded;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (c < 0x80) {
      bytes.push(c);
    } else {
      bytes.push(...Buffer.from(encoded[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** fmt's %v of []v1.ObjectReference: each struct's fields in order, space-separated, in braces. */
function formatRequests(requests: ImpersonationRequest[]): string {
  const one = (r: ImpersonationRequest): string =>
    `{${[r.kind, r.namespace, r.name, '', r.apiVersion, '', r.fieldPath].join(' ')}}`;
  return '[' + requests.map(one).join(' ') + ']';
}
