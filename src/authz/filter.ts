// The chain's authorization step. Forwarded requests are decided by the upstream's RBAC (they go as the caller);
// reads served from the member cache are decided here, before flow control has let them run and before routing
// serves them: the authorizer answers which member clusters the caller may read, or refuses with kube's 403.

import type { CachedReadAuthorizer } from './cachedreads.js';
import type { RequestContext } from '../server/context.js';
import type { Step } from '../server/chain.js';

export function authorizationStep(o: { authorizeCachedRead: CachedReadAuthorizer; servedFromCache: (ctx: RequestContext) => boolean }): Step {
  return async (ctx, next) => {
    if (o.servedFromCache(ctx)) ctx.allowedClusters = await o.authorizeCachedRead(ctx);
    await next();
  };
}
