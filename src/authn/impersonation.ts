// A caller's own Impersonate-* headers, handled as k8s.io/apiserver's impersonation filter does
// (pkg/endpoints/filters/impersonation): every requested user, group, extra value and uid is authorized
// separately with verb "impersonate", against the control plane's authorizer (a SubjectAccessReview made by the
// gateway); the first refusal is the 403. The gateway then forwards with its own credentials and the allowed
// identity, so the caller's headers never reach the control plane as sent.

import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { newBadRequest, newForbiddenDecision } from '../api/status.js';
import {
  SERVICE_ACCOUNT_USER_PREFIX,
  SYSTEM_ANONYMOUS,
  SYSTEM_AUTHENTICATED,
  SYSTEM_UNAUTHENTICATED,
  type Attributes,
  type Decision,
  type UserInfo,
} from '../api/user.js';

export const IMPERSONATE_USER_HEADER = 'impersonate-user';
export const IMPERSONATE_GROUP_HEADER = 'impersonate-group';
export const IMPERSONATE_UID_HEADER = 'impersonate-uid';
export const IMPERSONATE_EXTRA_PREFIX = 'impersonate-extra-';

const AUTHENTICATION_GROUP = 'authentication.k8s.io';

/** What the caller asks to be: exactly the header values, before any authorization. */
export interface ImpersonationRequest {
  user: string;
  uid?: string;
  groups: string[];
  /** Keys lower-cased and percent-unescaped, in header order. */
  extra: Record<string, string[]>;
}

type Headers = IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/**
 * The Impersonate-* headers of a request, one array entry per header line. Node's `req.headers` joins repeated
 * headers with ", ", which would merge or split group names; rawHeaders keeps them apart for HTTP/1 and HTTP/2
 * alike. Returns null, without allocating, when there is no such header (the common case).
 */
export function impersonationHeadersOf(req: IncomingMessage | Http2ServerRequest): Record<string, string[]> | null {
  const raw = req.rawHeaders;
  let out: Record<string, string[]> | null = null;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length < 15 || (name.charCodeAt(0) | 0x20) !== 0x69 /* i */) continue;
    const lower = name.toLowerCase();
    if (!lower.startsWith('impersonate-')) continue;
    out ??= {};
    (out[lower] ??= []).push(raw[i + 1]!);
  }
  return out;
}

/** True when any Impersonate-* header is present: the forwarder must never pass the caller's own on. */
export function hasImpersonationHeaders(headers: Headers): boolean {
  for (const name of Object.keys(headers)) {
    if (name.length >= 15 && name.toLowerCase().startsWith('impersonate-')) return true;
  }
  return false;
}

/**
 * The impersonation a request asks for, or null when it carries no Impersonate-* header (or only empty
 * Impersonate-User/Uid values, which upstream ignores). Array values are taken as separate header lines;
 * a string value is split at ", " (node's join). Groups, extra or uid without a user is upstream's 400:
 * `requested [{Group  g    }] without impersonating a user`.
 */
export function requestedImpersonation(headers: Headers): ImpersonationRequest | null {
  let user = '';
  let uid = '';
  let groups: string[] | undefined;
  let extra: Record<string, string[]> | undefined;
  for (const name of Object.keys(headers)) {
    if (name.length < 15) continue;
    const lower = name.toLowerCase();
    if (!lower.startsWith('impersonate-')) continue;
    const values = utf8Values(headerValues(headers[name]));
    if (values.length === 0) continue;
    if (lower === IMPERSONATE_USER_HEADER) {
      if (user === '') user = values[0]!;
    } else if (lower === IMPERSONATE_UID_HEADER) {
      if (uid === '') uid = values[0]!;
    } else if (lower === IMPERSONATE_GROUP_HEADER) {
      (groups ??= []).push(...values);
    } else if (lower.startsWith(IMPERSONATE_EXTRA_PREFIX)) {
      const key = unescapeExtraKey(lower.slice(IMPERSONATE_EXTRA_PREFIX.length));
      // No prototype: a key such as __proto__ or constructor is an extra key like any other.
      ((extra ??= Object.create(null) as Record<string, string[]>)[key] ??= []).push(...values);
    }
  }
  const hasGroups = groups !== undefined;
  const hasExtra = extra !== undefined;
  if (user === '' && !hasGroups && !hasExtra && uid === '') return null;

  const wanted: ImpersonationRequest = { user, groups: groups ?? [], extra: extra ?? {} };
  if (uid !== '') wanted.uid = uid;
  if (user === '') throw newBadRequest(`requested ${formatObjectReferences(wanted)} without impersonating a user`);
  return wanted;
}

/**
 * Asks the control plane about each impersonated value (users or serviceaccounts, groups, userextras/<key>,
 * uids; one SubjectAccessReview each, in upstream's order) and returns the identity to act as. A refusal is
 * upstream's 403, e.g. `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group
 * "" at the cluster scope`. Errors thrown by `sar` propagate unchanged (the caller knows whether the control
 * plane was unreachable). The result gets system:authenticated (system:unauthenticated for system:anonymous)
 * unless the caller named one itself; a service account without explicit groups gets its SA groups.
 */
export async function authorizeImpersonation(
  requester: UserInfo,
  wanted: ImpersonationRequest,
  sar: (attrs: Attributes) => Promise<Decision>,
): Promise<UserInfo> {
  const groupsSpecified = wanted.groups.length > 0;
  let groups: string[] = [];
  const check = async (attrs: Attributes): Promise<void> => {
    const d = await sar(attrs);
    if (!d.allowed) throw newForbiddenDecision(attrs, d);
  };

  const sa = splitServiceAccountUsername(wanted.user);
  if (sa !== null) {
    await check(attributes(requester, '', 'serviceaccounts', '', sa.namespace, sa.name));
    if (!groupsSpecified) groups = ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`];
  } else {
    await check(attributes(requester, '', 'users', '', '', wanted.user));
  }
  for (const g of wanted.groups) {
    await check(attributes(requester, '', 'groups', '', '', g));
    groups.push(g);
  }
  for (const [key, values] of Object.entries(wanted.extra)) {
    for (const v of values) await check(attributes(requester, AUTHENTICATION_GROUP, 'userextras', key, '', v));
  }
  if (wanted.uid !== undefined && wanted.uid !== '') {
    await check(attributes(requester, AUTHENTICATION_GROUP, 'uids', '', '', wanted.uid));
  }

  if (wanted.user !== SYSTEM_ANONYMOUS) {
    if (!groups.includes(SYSTEM_AUTHENTICATED) && !groups.includes(SYSTEM_UNAUTHENTICATED)) groups.push(SYSTEM_AUTHENTICATED);
  } else if (!groups.includes(SYSTEM_UNAUTHENTICATED)) {
    groups.push(SYSTEM_UNAUTHENTICATED);
  }

  const user: UserInfo = { username: sa !== null ? SERVICE_ACCOUNT_USER_PREFIX + sa.namespace + ':' + sa.name : wanted.user, groups };
  if (wanted.uid !== undefined && wanted.uid !== '') user.uid = wanted.uid;
  const keys = Object.keys(wanted.extra);
  if (keys.length > 0) {
    user.extra = {};
    for (const k of keys) user.extra[k] = [...wanted.extra[k]!];
  }
  return user;
}

function attributes(requester: UserInfo, apiGroup: string, resource: string, subresource: string, namespace: string, name: string): Attributes {
  return {
    user: requester,
    verb: 'impersonate',
    isResourceRequest: true,
    path: '',
    namespace,
    apiGroup,
    // ObjectReference's version: "" for core kinds, "v1" for authentication.k8s.io/v1 ones.
    apiVersion: apiGroup === '' ? '' : 'v1',
    resource,
    subresource,
    name,
  };
}

/**
 * Node reads header bytes as latin1; Go, and so the upstream, reads them as UTF-8. `kubectl --as jürgen` sends the
 * name's UTF-8 bytes, which must be authorized and forwarded as "jürgen", not as the latin1 reading "jÃ¼rgen".
 */
function utf8Values(values: string[]): string[] {
  let out = values;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!/[^\x00-\x7f]/.test(v)) continue;
    if (out === values) out = [...values];
    out[i] = Buffer.from(v, 'latin1').toString('utf8');
  }
  return out;
}

function headerValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v;
  return v.split(', ');
}

/** serviceaccount.SplitUsername: system:serviceaccount:<namespace>:<name>, namespace a DNS label, name a subdomain. */
function splitServiceAccountUsername(username: string): { namespace: string; name: string } | null {
  if (!username.startsWith(SERVICE_ACCOUNT_USER_PREFIX)) return null;
  const parts = username.slice(SERVICE_ACCOUNT_USER_PREFIX.length).split(':');
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

/** url.PathUnescape; a malformed escape keeps the key as sent, as the Go filter does. */
function unescapeExtraKey(encoded: string): string {
  if (!encoded.includes('%')) return encoded;
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    if (encoded[i] === '%') {
      const hex = encoded.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return encoded;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      for (const b of Buffer.from(encoded[i]!, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * fmt's %v of the []v1.ObjectReference the Go filter builds (Kind Namespace Name UID APIVersion ResourceVersion
 * FieldPath, space-separated in braces), in its order: user, groups, extras, uid.
 */
function formatObjectReferences(w: ImpersonationRequest): string {
  const refs: string[] = [];
  const ref = (kind: string, namespace: string, name: string, apiVersion: string, fieldPath: string): void => {
    refs.push(`{${kind} ${namespace} ${name}  ${apiVersion}  ${fieldPath}}`);
  };
  // Only reached without a user, so no User/ServiceAccount entry.
  for (const g of w.groups) ref('Group', '', g, '', '');
  for (const [key, values] of Object.entries(w.extra)) {
    for (const v of values) ref('UserExtra', '', v, 'authentication.k8s.io/v1', key);
  }
  if (w.uid !== undefined) ref('UID', '', w.uid, 'authentication.k8s.io/v1', '');
  return '[' + refs.join(' ') + ']';
}
