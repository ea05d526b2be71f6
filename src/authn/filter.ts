// The chain's authentication step: who is calling (client certificate, bearer token), then, if the caller sent
// Impersonate-* headers, whether the control plane lets it act as that identity (one SubjectAccessReview per
// value, as kube-apiserver's impersonation filter does). Anonymous callers get 401 unless anonymous access is on;
// the health endpoints answer anyone, so probes need no credentials.

import { newUnauthorized } from '../api/status.js';
import type { Attributes, Decision, UserInfo } from '../api/user.js';
import { authorized } from '../authz/filter.js';
import type { ApiserverMetrics } from '../metrics/apiserver.js';
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
  /** authentication_attempts and its kin, as kube-apiserver's authentication filter records them. */
  metrics?: ApiserverMetrics;
}

export function authenticationStep(o: AuthenticationOptions): Step {
  const record = o.metrics?.recordAuthentication;
  return async (ctx, next) => {
    const started = record ? performance.now() : 0;
    let user: UserInfo | null;
    try {
      user = await o.authenticator.authenticate(ctx.req);
    } catch (e) {
      // A credential was presented and none was good.
      ctx.refusedByFilter = true;
      if (record) record('error', (performance.now() - started) / 1000);
      throw e;
    }
    if (!user) {
      if (!o.anonymous && !(!ctx.info.isResourceRequest && o.publicPaths(ctx.url.pathname))) {
        ctx.refusedByFilter = true;
        if (record) record('failure', (performance.now() - started) / 1000);
        throw newUnauthorized();
      }
      user = anonymousUser();
    }
    if (record) record('success', (performance.now() - started) / 1000, user.username);
    const headers = impersonationHeadersOf(ctx.req);
    let wanted: ReturnType<typeof requestedImpersonation> | null = null;
    try {
      wanted = headers ? requestedImpersonation(headers) : null;
    } catch (e) {
      // Malformed Impersonate-* headers: kube's impersonation filter answers 400 before its instrumented handlers.
      ctx.refusedByFilter = true;
      throw e;
    }
    if (wanted) {
      ctx.impersonator = user;
      const as = wanted;
      // An authorization the gateway makes: counted in authorization_attempts_total, refusals left out of the
      // request metrics.
      ctx.user = await authorized(ctx, o.metrics, () => authorizeImpersonation(user, as, o.sar));
    } else {
      ctx.user = user;
    }
    await next();
  };
}
