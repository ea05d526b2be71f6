// Authorization of reads the merged cache answers. Forwarded requests are decided by the control plane through
// impersonation; a cached read never reaches an apiserver, so the gateway asks with a SubjectAccessReview for the
// same attributes that apiserver's authorizer would have seen, and refuses with kube-apiserver's exact 403.
//
// Two modes:
// - fleet: one review against the control plane decides for every member.
// - perCluster: each member's own RBAC decides for that member's objects (one review per member, in parallel).
//   The caller sees the members that allow the read; the others are left out with a Warning naming them. None
//   allowing is a 403, as kube-apiserver's authorization filter gives it. A member whose review fails is left out
//   too (with its own Warning); if no member allows and one failed, the answer is a 500, as kube's filter answers
//   an authorizer error with no allowing authorizer (guessing "forbidden" would hide an outage).
//   A GET by name looks only in the members that allow it: an object that exists only where the caller may not
//   read is a 404, exactly as if it did not exist. kube authorizes before it looks an object up, so a 403 never
//   depends on whether the object exists; answering 403 here would tell the caller that it exists somewhere.
//
// Both record the decision and its reason in the audit annotations (authorization.k8s.io/decision and /reason),
// and an error as reason "internal error" without a decision, as kube's filter does.

import { parseFieldSelector } from '../api/fields.js';
import { parseLabelSelector } from '../api/labels.js';
import { isStatusError, newForbiddenDecision, newInternalError } from '../api/status.js';
import type { Attributes, SelectorRequirement, UserInfo } from '../api/user.js';
import { addAuditAnnotation, annotateAuthorization, ANNOTATION_REASON } from '../audit/index.js';
import { addCachedReadWarning, type ClusterFilter } from '../cache/serve.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { RequestContext } from '../server/context.js';
import { decisionCacheFor, decisionKey, type DecisionCacheOptions, type SubjectAccessReviewer } from './decisioncache.js';

export { cachingReviewer, DECISION_CACHE_DEFAULTS, type DecisionCacheOptions, type SubjectAccessReviewer } from './decisioncache.js';

/**
 * Decides a cached read: resolves with the members whose objects the caller may see (undefined: all of them)
 * or rejects with the 403 Status (500 when the review itself fails, as the apiserver's authorization filter).
 */
export type CachedReadAuthorizer = (ctx: RequestContext) => Promise<ClusterFilter | undefined>;

const REASON_ERROR = 'internal error';

/** The authorizer Attributes of a request, as k8s.io/apiserver's GetAuthorizerAttributes builds them. */
export function attributesOf(user: UserInfo, info: RequestInfo): Attributes {
  const attrs: Attributes = {
    user,
    verb: info.verb,
    isResourceRequest: info.isResourceRequest,
    path: info.path,
    namespace: info.namespace,
    apiGroup: info.apiGroup,
    apiVersion: info.apiVersion,
    resource: info.resource,
    subresource: info.subresource,
    name: info.name,
  };
  // Request info keeps the raw selectors of lists, watches and collection deletes only, as kube's does.
  if (info.fieldSelector) {
    const r = fieldSelectorRequirements(info.fieldSelector);
    if (r) attrs.fieldSelector = r;
  }
  if (info.labelSelector) {
    const r = labelSelectorRequirements(info.labelSelector);
    if (r) attrs.labelSelector = r;
  }
  return attrs;
}

// A selector that does not parse, or a requirement a review cannot express, is left out rather than refused: the
// request fails its own parse later with the apiserver's 400, and a review without a requirement asks about a
// broader read than the one made, never a narrower one (requirements are ANDed). The webhook authorizer
// (fieldSelectorToAuthorizationAPI, labelSelectorToAuthorizationAPI) drops them alike.

/** A field selector's requirements as a SubjectAccessReview carries them; undefined when there are none. */
export function fieldSelectorRequirements(raw: string): SelectorRequirement[] | undefined {
  let reqs;
  try {
    reqs = parseFieldSelector(raw).requirements;
  } catch {
    return undefined;
  }
  const out: SelectorRequirement[] = [];
  for (const r of reqs) out.push({ key: r.field, operator: r.operator === '!=' ? 'NotIn' : 'In', values: [r.value] });
  return out.length > 0 ? out : undefined;
}

/** A label selector's requirements as a SubjectAccessReview carries them (gt and lt left out); undefined when none are left. */
export function labelSelectorRequirements(raw: string): SelectorRequirement[] | undefined {
  let reqs;
  try {
    reqs = parseLabelSelector(raw).requirements;
  } catch {
    return undefined;
  }
  const out: SelectorRequirement[] = [];
  for (const r of reqs) {
    const operator = LABEL_OPERATORS[r.operator];
    if (operator === undefined) continue;
    out.push(r.values.length > 0 ? { key: r.key, operator, values: [...r.values] } : { key: r.key, operator });
  }
  return out.length > 0 ? out : undefined;
}

const LABEL_OPERATORS: Partial<Record<string, SelectorRequirement['operator']>> = {
  in: 'In',
  '=': 'In',
  '==': 'In',
  notin: 'NotIn',
  '!=': 'NotIn',
  exists: 'Exists',
  '!': 'DoesNotExist',
};

/** Fleet mode: one review against the control plane decides for every member (wrap sar with cachingReviewer). */
export function fleetReadAuthorizer(sar: SubjectAccessReviewer): CachedReadAuthorizer {
  return async (ctx) => {
    if (!ctx.user) throw newInternalError('no user found for request');
    const attrs = attributesOf(ctx.user, ctx.info);
    let d;
    try {
      d = await sar(attrs);
    } catch (e) {
      addAuditAnnotation(ctx, ANNOTATION_REASON, REASON_ERROR);
      throw isStatusError(e) ? e : newInternalError(e);
    }
    annotateAuthorization(ctx, d);
    if (!d.allowed) throw newForbiddenDecision(attrs, d);
    return undefined;
  };
}

export interface PerClusterOptions {
  /** Decision caching per member and attributes (kube's webhook defaults); false or maxEntries 0: every read asks every member. */
  cache?: Partial<DecisionCacheOptions> | false;
}

type MemberOutcome = { cluster: string; allowed: boolean; reason: string; denied?: boolean; error?: undefined } | { cluster: string; error: string };

/**
 * perCluster mode: each member in clusters() is asked, with reviewFor(member) (a SubjectAccessReview against that
 * member, as the gateway), whether the caller may do this read there. Decisions are cached per member.
 */
export function perClusterReadAuthorizer(
  reviewFor: (cluster: string) => SubjectAccessReviewer | undefined,
  clusters: () => string[],
  opts: PerClusterOptions = {},
): CachedReadAuthorizer {
  const cache = opts.cache === false ? undefined : decisionCacheFor(opts.cache ?? {});
  const ask = async (cluster: string, key: string, attrs: Attributes): Promise<MemberOutcome> => {
    const sar = reviewFor(cluster);
    if (!sar) return { cluster, error: 'no connection to the member' };
    try {
      const d = cache ? await cache.review(`${cluster}\u0000${key}`, attrs, sar) : await sar(attrs);
      return { cluster, allowed: d.allowed, reason: d.reason, denied: d.denied };
    } catch (e) {
      return { cluster, error: errorText(e) };
    }
  };
  return async (ctx) => {
    if (!ctx.user) throw newInternalError('no user found for request');
    const attrs = attributesOf(ctx.user, ctx.info);
    const key = decisionKey(attrs);
    const members = clusters();
    // Fresh decisions are read without a promise per member; only misses wait, all at once.
    const outcomes: MemberOutcome[] = new Array(members.length);
    let misses: Array<Promise<void>> | undefined;
    for (let i = 0; i < members.length; i++) {
      const cluster = members[i]!;
      const hit = cache?.peek(`${cluster}\u0000${key}`);
      if (hit) outcomes[i] = { cluster, allowed: hit.allowed, reason: hit.reason, denied: hit.denied };
      else (misses ??= []).push(ask(cluster, key, attrs).then((o) => void (outcomes[i] = o)));
    }
    if (misses) await Promise.all(misses);
    return decide(ctx, attrs, outcomes);
  };
}

function decide(ctx: RequestContext, attrs: Attributes, outcomes: MemberOutcome[]): ClusterFilter {
  const allowed = new Set<string>();
  const forbidden: string[] = [];
  const failed: Array<{ cluster: string; error: string }> = [];
  for (const o of outcomes) {
    if (o.error !== undefined) failed.push(o);
    else if (o.allowed) allowed.add(o.cluster);
    else forbidden.push(o.cluster);
  }
  if (failed.length > 0) ctx.log.warn({ failed }, 'member access reviews failed; those members are left out of the read');
  if (allowed.size === 0) {
    if (failed.length > 0) {
      addAuditAnnotation(ctx, ANNOTATION_REASON, REASON_ERROR);
      throw newInternalError(`access review failed in ${failed.map((f) => `member cluster ${f.cluster}: ${f.error}`).join('; ')}`);
    }
    const reason = denialReason(outcomes);
    annotateAuthorization(ctx, { allowed: false, reason });
    // As kube's union of authorizers: one Deny decides; otherwise none had an opinion.
    throw newForbiddenDecision(attrs, { reason, denied: outcomes.some((o) => o.error === undefined && o.denied === true) });
  }
  annotateAuthorization(ctx, { allowed: true, reason: auditReason(outcomes) });
  const what = `${attrs.verb} ${attrs.resource}`;
  if (forbidden.length > 0) {
    addCachedReadWarning(ctx, `${clusterList(forbidden)} left out: you may not ${what} there`);
  }
  for (const f of failed) {
    addCachedReadWarning(ctx, `${clusterList([f.cluster])} left out: the member could not be asked whether you may ${what} there`);
  }
  return (cluster) => allowed.has(cluster);
}

function clusterList(clusters: string[]): string {
  return clusters.length === 1 ? `member cluster ${clusters[0]} is` : `member clusters ${clusters.join(', ')} are`;
}

/**
 * The reason a 403 carries: each member's own reason, named; empty when none gave one (RBAC's plain denial), so
 * the message is then exactly kube-apiserver's.
 */
function denialReason(outcomes: MemberOutcome[]): string {
  const parts: string[] = [];
  for (const o of outcomes) if (o.error === undefined && o.reason !== '') parts.push(`${o.cluster}: ${o.reason}`);
  return parts.join('; ');
}

/** The audit reason of a read some members allow: what each member decided, and why when it said. */
function auditReason(outcomes: MemberOutcome[]): string {
  return outcomes
    .map((o) => {
      if (o.error !== undefined) return `${o.cluster}: error (${o.error})`;
      const d = o.allowed ? 'allow' : 'forbid';
      return o.reason ? `${o.cluster}: ${d} (${o.reason})` : `${o.cluster}: ${d}`;
    })
    .join('; ');
}

function errorText(e: unknown): string {
  const text = (isStatusError(e) ? e.status.message : undefined) ?? (e instanceof Error ? e.message : String(e));
  return text.replace(/^Internal error occurred: /, '');
}
