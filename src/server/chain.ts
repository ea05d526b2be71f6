// The request chain, composed in this one place and in this order, as k8s.io/apiserver's DefaultBuildHandlerChain
// composes its filters:
//
//   request info -> authentication -> audit -> flow control -> authorization -> admission -> routing
//
// Each step lives in the folder of its layer and does one job; it either calls next() or ends the request by
// throwing a StatusError, which the server writes as a Kubernetes Status.

import { authenticationStep } from '../authn/filter.js';
import { requestInfoStep } from '../request/filter.js';
import type { RequestContext } from './context.js';
import { routingStep } from './routes.js';
import type { Gateway } from './gateway.js';
import { isHealthPath } from './health.js';

export type Step = (ctx: RequestContext, next: () => Promise<void>) => Promise<void>;

export function compose(steps: readonly Step[]): (ctx: RequestContext) => Promise<void> {
  const run = (i: number, ctx: RequestContext): Promise<void> => (i < steps.length ? steps[i]!(ctx, () => run(i + 1, ctx)) : Promise.resolve());
  return (ctx) => run(0, ctx);
}

export function buildChain(g: Gateway): (ctx: RequestContext) => Promise<void> {
  return compose([
    requestInfoStep({ deadlineMs: g.config.server.requestTimeoutSeconds * 1000 }),
    authenticationStep({ authenticator: g.authenticator, anonymous: g.config.authentication.anonymous.enabled, sar: g.sar, publicPaths: isHealthPath }),
    // audit: issue 5 (src/audit).
    // flow control: issue 5 (src/flowcontrol).
    // authorization: forwarded requests are decided by the control plane through impersonation; reads served
    // from the member cache are authorized in issue 5 (src/authz).
    // admission: issue 5 (src/admission).
    routingStep(g),
  ]);
}
