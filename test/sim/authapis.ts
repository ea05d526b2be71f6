// The review APIs kubectl's `auth whoami` and `auth can-i` (and controllers' delegated authorization) call:
// authentication.k8s.io SelfSubjectReview and authorization.k8s.io SubjectAccessReview, SelfSubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectRulesReview. Nothing is stored; each POST answers with the object echoed
// back and its status filled in, shaped as the real REST handlers (pkg/registry/authorization/*,
// pkg/registry/authentication/selfsubjectreview) and their validation (pkg/apis/authorization/validation) do.

import { fieldInvalid, newBadRequest, newInvalid, type FieldError } from '../../src/api/status.js';
import type { Attributes, Decision, UserInfo } from '../../src/api/user.js';
import type { RequestInfo } from '../../src/request/requestinfo.js';
import type { SimResourceAccess } from './access.js';
import { rbacRulesFor } from './rbac.js';

export interface AuthApiResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  verbs: string[];
  namespaced: boolean;
}

const AUTHN = 'authentication.k8s.io';
const AUTHZ = 'authorization.k8s.io';

const RESOURCES: readonly AuthApiResource[] = [
  { group: AUTHN, version: 'v1', resource: 'selfsubjectreviews', kind: 'SelfSubjectReview', verbs: ['create'], namespaced: false },
  { group: AUTHN, version: 'v1beta1', resource: 'selfsubjectreviews', kind: 'SelfSubjectReview', verbs: ['create'], namespaced: false },
  { group: AUTHZ, version: 'v1', resource: 'localsubjectaccessreviews', kind: 'LocalSubjectAccessReview', verbs: ['create'], namespaced: true },
  { group: AUTHZ, version: 'v1', resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', verbs: ['create'], namespaced: false },
  { group: AUTHZ, version: 'v1', resource: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview', verbs: ['create'], namespaced: false },
  { group: AUTHZ, version: 'v1', resource: 'subjectaccessreviews', kind: 'SubjectAccessReview', verbs: ['create'], namespaced: false },
];

/** The review resources, for discovery (fresh copies). */
export function authApiResources(): AuthApiResource[] {
  return RESOURCES.map((r) => ({ ...r, verbs: [...r.verbs] }));
}

/**
 * Answers a request to one of the review resources: undefined when the request is not for one of them (the
 * caller goes on routing), the response to write on success, and a thrown StatusError (400, 422) otherwise.
 * Verbs other than create on these paths are left to the caller, which answers 405 as for any resource.
 */
export function handleAuthApi(
  info: RequestInfo,
  body: any,
  user: UserInfo,
  authorize: (a: Attributes) => Decision,
  access: SimResourceAccess,
): { code: number; body: any } | undefined {
  const r = RESOURCES.find((x) => x.group === info.apiGroup && x.version === info.apiVersion && x.resource === info.resource);
  if (!r || info.verb !== 'create' || info.subresource || info.name) return undefined;
  // Cluster-scoped reviews have no namespaced path and the local one has no cluster-wide path.
  if (r.namespaced !== (info.namespace !== '')) return undefined;

  const gv = `${r.group}/${r.version}`;
  const obj = decodeBody(body, gv, r.kind);
  const meta: Record<string, any> = isObject(obj.metadata) ? { ...obj.metadata } : {};
  // rest.EnsureObjectNamespaceMatchesRequestNamespace, run by the create handler before the REST storage.
  const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
  if (r.namespaced) {
    if (ns === '') meta.namespace = info.namespace;
    else if (ns !== info.namespace) throw newBadRequest('the namespace of the provided object does not match the namespace sent on the request');
  } else if (ns !== '') {
    delete meta.namespace;
  }

  switch (r.kind) {
    case 'SelfSubjectReview':
      return { code: 201, body: selfSubjectReview(gv, user) };
    case 'SelfSubjectRulesReview':
      return { code: 201, body: selfSubjectRulesReview(gv, obj, user, access) };
    default:
      return { code: 201, body: accessReview(r.kind, gv, obj, meta, user, authorize) };
  }
}

function decodeBody(body: any, gv: string, kind: string): Record<string, any> {
  if (!isObject(body)) throw newBadRequest(`the object provided is unrecognized (must be of type ${kind})`);
  const apiVersion = body.apiVersion;
  if (typeof apiVersion === 'string' && apiVersion !== '' && apiVersion !== gv) {
    throw newBadRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${gv})`);
  }
  return body;
}

/** SelfSubjectReview: who the server thinks you are (after impersonation). creationTimestamp is now, as upstream. */
function selfSubjectReview(gv: string, user: UserInfo): object {
  const userInfo: Record<string, unknown> = { username: user.username };
  if (user.uid) userInfo.uid = user.uid;
  if (user.groups.length > 0) userInfo.groups = [...user.groups];
  if (user.extra && Object.keys(user.extra).length > 0) userInfo.extra = structuredClone(user.extra);
  return {
    kind: 'SelfSubjectReview',
    apiVersion: gv,
    metadata: { creationTimestamp: new Date().toISOString().slice(0, 19) + 'Z' },
    status: { userInfo },
  };
}

type Kind = 'SubjectAccessReview' | 'SelfSubjectAccessReview' | 'LocalSubjectAccessReview' | string;

function accessReview(kind: Kind, gv: string, obj: Record<string, any>, meta: Record<string, any>, requester: UserInfo, authorize: (a: Attributes) => Decision): object {
  const spec = normalizeSpec(isObject(obj.spec) ? obj.spec : {}, kind !== 'SelfSubjectAccessReview');
  const errs = validate(kind, spec, meta);
  // The decoded internal object has no TypeMeta, so the kind in the message is empty: `.authorization.k8s.io "" is invalid`.
  if (errs.length > 0) throw newInvalid({ group: AUTHZ, kind: '' }, '', errs);

  const subject: UserInfo = kind === 'SelfSubjectAccessReview'
    ? requester
    : { username: spec.user ?? '', groups: spec.groups ?? [], ...(spec.uid ? { uid: spec.uid } : {}), ...(spec.extra ? { extra: spec.extra } : {}) };
  const attrs: Attributes = spec.resourceAttributes
    ? {
        user: subject,
        verb: spec.resourceAttributes.verb ?? '',
        isResourceRequest: true,
        path: '',
        namespace: spec.resourceAttributes.namespace ?? '',
        apiGroup: spec.resourceAttributes.group ?? '',
        // authorizationutil.ResourceAttributesFrom: an empty version means any version.
        apiVersion: spec.resourceAttributes.version || '*',
        resource: spec.resourceAttributes.resource ?? '',
        subresource: spec.resourceAttributes.subresource ?? '',
        name: spec.resourceAttributes.name ?? '',
      }
    : {
        user: subject,
        verb: spec.nonResourceAttributes!.verb ?? '',
        isResourceRequest: false,
        path: spec.nonResourceAttributes!.path ?? '',
        namespace: '',
        apiGroup: '',
        apiVersion: '',
        resource: '',
        subresource: '',
        name: '',
      };
  const d = authorize(attrs);
  const status: Record<string, unknown> = { allowed: d.allowed };
  if (d.reason) status.reason = d.reason;
  return { kind, apiVersion: gv, metadata: echoMeta(meta), spec: specJson(spec), status };
}

/** SelfSubjectRulesReview: everything RBAC grants the requester in spec.namespace. The spec is not echoed. */
function selfSubjectRulesReview(gv: string, obj: Record<string, any>, user: UserInfo, access: SimResourceAccess): object {
  const namespace = isObject(obj.spec) && typeof obj.spec.namespace === 'string' ? obj.spec.namespace : '';
  if (namespace === '') throw newBadRequest('no namespace on request');
  const { rules, evaluationError } = rbacRulesFor(access, user, namespace);
  const resourceRules: object[] = [];
  const nonResourceRules: object[] = [];
  for (const rule of rules) {
    if ((rule.resources ?? []).length > 0) {
      const rr: Record<string, unknown> = { verbs: [...(rule.verbs ?? [])] };
      if (rule.apiGroups?.length) rr.apiGroups = [...rule.apiGroups];
      rr.resources = [...rule.resources!];
      if (rule.resourceNames?.length) rr.resourceNames = [...rule.resourceNames];
      resourceRules.push(rr);
    }
    if ((rule.nonResourceURLs ?? []).length > 0) {
      nonResourceRules.push({ verbs: [...(rule.verbs ?? [])], nonResourceURLs: [...rule.nonResourceURLs!] });
    }
  }
  const status: Record<string, unknown> = { resourceRules, nonResourceRules, incomplete: false };
  if (evaluationError) status.evaluationError = evaluationError;
  return { kind: 'SelfSubjectRulesReview', apiVersion: gv, metadata: { creationTimestamp: null }, spec: {}, status };
}

// ---------------------------------------------------------------------------------------------------------------
// Spec handling: the request as the versioned type keeps it (omitempty strings dropped), validated as upstream.

interface ResourceAttributes {
  namespace?: string;
  verb?: string;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  fieldSelector?: unknown;
  labelSelector?: unknown;
}

interface Spec {
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: { path?: string; verb?: string };
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
}

function normalizeSpec(raw: Record<string, any>, withSubject: boolean): Spec {
  const spec: Spec = {};
  if (isObject(raw.resourceAttributes)) {
    const ra: ResourceAttributes = {};
    for (const k of ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'] as const) {
      const v = raw.resourceAttributes[k];
      if (typeof v === 'string' && v !== '') ra[k] = v;
    }
    if (isObject(raw.resourceAttributes.fieldSelector)) ra.fieldSelector = raw.resourceAttributes.fieldSelector;
    if (isObject(raw.resourceAttributes.labelSelector)) ra.labelSelector = raw.resourceAttributes.labelSelector;
    spec.resourceAttributes = ra;
  }
  if (isObject(raw.nonResourceAttributes)) {
    const na: { path?: string; verb?: string } = {};
    if (typeof raw.nonResourceAttributes.path === 'string' && raw.nonResourceAttributes.path !== '') na.path = raw.nonResourceAttributes.path;
    if (typeof raw.nonResourceAttributes.verb === 'string' && raw.nonResourceAttributes.verb !== '') na.verb = raw.nonResourceAttributes.verb;
    spec.nonResourceAttributes = na;
  }
  if (!withSubject) return spec;
  if (typeof raw.user === 'string' && raw.user !== '') spec.user = raw.user;
  if (Array.isArray(raw.groups) && raw.groups.length > 0) spec.groups = raw.groups.map(String);
  if (isObject(raw.extra) && Object.keys(raw.extra).length > 0) {
    spec.extra = Object.fromEntries(Object.entries(raw.extra).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : []]));
  }
  if (typeof raw.uid === 'string' && raw.uid !== '') spec.uid = raw.uid;
  return spec;
}

function validate(kind: Kind, spec: Spec, meta: Record<string, any>): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.resourceAttributes && spec.nonResourceAttributes) {
    errs.push(fieldInvalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'cannot be specified in combination with resourceAttributes'));
  }
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    errs.push(fieldInvalid('spec.resourceAttributes', null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified'));
  }
  if (kind !== 'SelfSubjectAccessReview' && !spec.user && !spec.groups) {
    errs.push(fieldInvalid('spec.user', '', 'at least one of user or group must be specified'));
  }
  const rest = { ...meta };
  delete rest.managedFields;
  delete rest.creationTimestamp;
  if (kind === 'LocalSubjectAccessReview') {
    delete rest.namespace;
    if (Object.values(rest).some(nonEmpty)) errs.push(fieldInvalid('metadata', metaJson(meta), 'must be empty except for namespace'));
    const ns = typeof meta.namespace === 'string' ? meta.namespace : '';
    if (spec.resourceAttributes && (spec.resourceAttributes.namespace ?? '') !== ns) {
      errs.push(fieldInvalid('spec.resourceAttributes.namespace', spec.resourceAttributes.namespace ?? '', 'must match metadata.namespace'));
    }
    if (spec.nonResourceAttributes) {
      errs.push(fieldInvalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'disallowed on this kind of request'));
    }
  } else if (Object.values(rest).some(nonEmpty)) {
    errs.push(fieldInvalid('metadata', metaJson(meta), 'must be empty'));
  }
  return errs;
}

function nonEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObject(v)) return Object.keys(v).length > 0;
  return true;
}

/** ObjectMeta as the response carries it: only what was set, creationTimestamp always (null). */
function echoMeta(meta: Record<string, any>): Record<string, unknown> {
  const m = metaJson(meta);
  return { ...m, creationTimestamp: null };
}

function metaJson(meta: Record<string, any>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ['name', 'generateName', 'namespace']) {
    if (typeof meta[k] === 'string' && meta[k] !== '') out[k] = meta[k];
  }
  return out;
}

/** The spec in v1 JSON field order. */
function specJson(spec: Spec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (spec.resourceAttributes) out.resourceAttributes = spec.resourceAttributes;
  if (spec.nonResourceAttributes) out.nonResourceAttributes = spec.nonResourceAttributes;
  if (spec.user) out.user = spec.user;
  if (spec.groups) out.groups = spec.groups;
  if (spec.extra) out.extra = spec.extra;
  if (spec.uid) out.uid = spec.uid;
  return out;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
