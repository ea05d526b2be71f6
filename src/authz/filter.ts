// The chain's authorization step. Forwarded requests are decided by the upstream's RBAC (they go as the caller);
// reads served from the member cache are decided here, before flow control has let them run and before routing
// serves them: the authorizer answers which member clusters the caller may read, or refuses with kube's 403.

import { isExplicitDenial, isStatusError } from '../api/status.js';
import type { ApiserverMetrics } from '../metrics/apiserver.js';
import type { CachedReadAuthorizer } from './cachedreads.js';
import type { RequestContext } from '../server/context.js';
import type { Step } from '../server/chain.js';

export interface AuthorizationOptions {
  authorizeCachedRead: CachedReadAuthorizer;
  servedFromCache: (ctx: RequestContext) => boolean;
  /** authorization_attempts_total and authorization_duration_seconds, for the decisions made here. */
  metrics?: ApiserverMetrics;
}

export function authorizationStep(o: AuthorizationOptions): Step {
  return async (ctx, next) => {
    if (o.servedFromCache(ctx)) ctx.allowedClusters = await authorized(ctx, o.metrics, () => o.authorizeCachedRead(ctx));
    await next();
  };
}

/**
 * An authorization the gateway makes (here, for /metrics at routing, and for a caller's Impersonate-* headers at
 * authentication): decide resolves when allowed and throws the refusal (403) or the failure. Recorded in
 * authorization_attempts_total and authorization_duration_seconds; a request refused is left out of the request
 * metrics, as kube-apiserver's authorization filter leaves it.
 */
export async function authorized<T>(ctx: RequestContext, m: ApiserverMetrics | undefined, decide: () => Promise<T>): Promise<T> {
  const record = m?.recordAuthorization;
  const started = record ? performance.now() : 0;
  let result: T;
  try {
    result = await decide();
  } catch (e) {
    ctx.refusedByFilter = true;
    if (record) record(isStatusError(e) && e.status.code === 403 ? (isExplicitDenial(e) ? 'denied' : 'no-opinion') : 'error', (performance.now() - started) / 1000);
    throw e;
  }
  if (record) record('allowed', (performance.now() - started) / 1000);
  return result;
}
