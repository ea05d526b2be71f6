// The chain's authentication step: who is calling (client certificate, bearer token), then, if the caller sent
// Impersonate-* headers, whether the control plane lets it act as that identity (one SubjectAccessReview per
// value, as kube-apiserver's impersonation filter does). Anonymous callers get 401 unless anonymous access is on;
// the health endpoints answer anyone, so probes need no credentials.

import { newUnauthorized } from '../api/status.js';
import type { Attributes, Decision } from '../api/user.js';
import type { Step } from '../server/chain.js';
import { anonymousUser, type Authenticator } from './index.js';
import { authorizeImpersonation, impersonationHeadersOf, requestedImpersonation } from './impersonation.js';

export interface AuthenticationOptions {
  authenticator: Authenticator;
  anonymous: boolean;
  /** Asks the control plane whether a user may do something (here: impersonate). */
  sar: (attrs: Attributes) => Promise<Decision>;
  /** Non-resource paths any caller may reach (health probes). */
  publicPaths: (path: string) => boolean;
}

export function authenticationStep(o: AuthenticationOptions): Step {
  return async (ctx, next) => {
    let user = await o.authenticator.authenticate(ctx.req);
    if (!user) {
      if (!o.anonymous && !(!ctx.info.isResourceRequest && o.publicPaths(ctx.url.pathname))) throw newUnauthorized();
      user = anonymousUser();
    }
    const headers = impersonationHeadersOf(ctx.req);
    const wanted = headers ? requestedImpersonation(headers) : null;
    if (wanted) {
      ctx.impersonator = user;
      ctx.user = await authorizeImpersonation(user, wanted, o.sar);
    } else {
      ctx.user = user;
    }
    await next();
  };
}
