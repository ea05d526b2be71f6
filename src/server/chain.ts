// The request chain, composed in this one place and in this order, as k8s.io/apiserver's DefaultBuildHandlerChain
// composes its filters:
//
//   request info -> authentication -> audit -> flow control -> (in-flight count) -> authorization -> admission -> routing
//
// Each step lives in the folder of its layer and does one job; it either calls next() or ends the request by
// throwing a StatusError, which the server writes as a Kubernetes Status.

import { admissionStep } from '../admission/index.js';
import { auditAuthenticationFailuresStep, auditStep, addAuditAnnotation } from '../audit/step.js';
import { authenticationStep } from '../authn/filter.js';
import { authorizationStep } from '../authz/filter.js';
import { flowControlStep } from '../flowcontrol/index.js';
import { requestInfoStep } from '../request/filter.js';
import type { RequestContext } from './context.js';
import { routingStep } from './routes.js';
import type { Gateway } from './gateway.js';
import { isHealthPath } from './health.js';
import { estimateCachedObjects, servedFromCache, upstreamFor } from './routes.js';

export type Step = (ctx: RequestContext, next: () => Promise<void>) => Promise<void>;

export function compose(steps: readonly Step[]): (ctx: RequestContext) => Promise<void> {
  const run = (i: number, ctx: RequestContext): Promise<void> => (i < steps.length ? steps[i]!(ctx, () => run(i + 1, ctx)) : Promise.resolve());
  return (ctx) => run(0, ctx);
}

export function buildChain(g: Gateway): (ctx: RequestContext) => Promise<void> {
  const timeoutMs = g.config.server.requestTimeoutSeconds * 1000;
  return compose([
    requestInfoStep({ deadlineMs: timeoutMs }),
    // Failed authentications are audited too (one ResponseComplete for every request).
    auditAuthenticationFailuresStep(g.auditor),
    authenticationStep({ authenticator: g.authenticator, anonymous: g.config.authentication.anonymous.enabled, sar: g.sar, publicPaths: isHealthPath, metrics: g.metrics }),
    auditStep(g.auditor),
    ...(g.flowControl ? [flowControlStep(g.flowControl, { estimateObjects: (ctx) => estimateCachedObjects(g, ctx), requestWaitLimitMs: timeoutMs / 4 })] : []),
    // Requests executing, as kube-apiserver counts them past its flow control (apiserver_current_inflight_requests).
    g.inflight.step,
    // Authorization: forwarded requests are decided by the upstream's RBAC through impersonation; reads served
    // from the member cache are decided here.
    authorizationStep({ authorizeCachedRead: g.authorizeCachedRead, servedFromCache: (ctx) => servedFromCache(g, ctx), metrics: g.metrics }),
    admissionStep({
      upstreamFor: (ctx) => upstreamFor(g, ctx),
      rules: g.admissionRules,
      breakGlassGroups: g.config.admission.breakGlassGroups,
      audit: addAuditAnnotation,
      maxRequestBodyBytes: g.config.server.maxRequestBodyBytes,
    }),
    routingStep(g),
  ]);
}
