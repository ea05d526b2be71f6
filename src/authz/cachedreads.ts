// Authorization of reads the merged cache answers. Forwarded requests are decided by the control plane through
// impersonation; a cached read never reaches it, so the gateway asks the control plane itself with a
// SubjectAccessReview for the same attributes the control plane's authorizer would have seen, and refuses with
// kube-apiserver's exact 403. Issue 5 adds decision caching (wrap `sar`) and a per-cluster mode (a
// CachedReadAuthorizer that answers with the subset of members the caller may read).

import type { Attributes, Decision, UserInfo } from '../api/user.js';
import { newForbiddenAttributes, newInternalError } from '../api/status.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { RequestContext } from '../server/context.js';
import type { ClusterFilter } from '../cache/serve.js';

export type SubjectAccessReviewer = (attrs: Attributes) => Promise<Decision>;

/**
 * Decides a cached read: resolves with the members whose objects the caller may see (undefined: all of them)
 * or rejects with the 403 Status (500 when the review itself fails, as the apiserver's authorization filter).
 */
export type CachedReadAuthorizer = (ctx: RequestContext) => Promise<ClusterFilter | undefined>;

/** The authorizer Attributes of a request, as k8s.io/apiserver's GetAuthorizerAttributes builds them. */
export function attributesOf(user: UserInfo, info: RequestInfo): Attributes {
  return {
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
}

/** Fleet mode: one review against the control plane decides for every member. */
export function fleetReadAuthorizer(sar: SubjectAccessReviewer): CachedReadAuthorizer {
  return async (ctx) => {
    if (!ctx.user) throw newInternalError('no user found for request');
    const attrs = attributesOf(ctx.user, ctx.info);
    const d = await sar(attrs);
    if (!d.allowed) throw newForbiddenAttributes(attrs, d.reason);
    return undefined;
  };
}
