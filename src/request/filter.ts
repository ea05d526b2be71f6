// The chain's first step: what is being asked for. Splits off a /clusters/<name> prefix (one member through the
// same chain), then derives RequestInfo from what is left, as k8s.io/apiserver's WithRequestInfo does.

import { newBadRequest, newInternalError, newNotFound } from '../api/status.js';
import type { RequestContext } from '../server/context.js';
import type { Step } from '../server/chain.js';
import { newRequestInfo } from './requestinfo.js';

const CLUSTER_PREFIX = /^\/clusters\/([^/]+)(\/.*)?$/;

export function requestInfoStep(opts: { deadlineMs: number }): Step {
  return async (ctx, next) => {
    const m = CLUSTER_PREFIX.exec(ctx.url.pathname);
    if (m) {
      ctx.cluster = clusterName(m[1]!);
      ctx.url.pathname = m[2] ?? '/';
      if (!ctx.cluster) throw newNotFound({ group: 'cluster.karmada.io', resource: 'clusters' }, '');
    }
    ctx.info = newRequestInfo(ctx.req.method ?? 'GET', ctx.url.pathname, ctx.url.searchParams);
    // kube-apiserver's WithRequestInfo answers what its NewRequestInfo cannot make sense of with a 500.
    if (ctx.info.error !== undefined) throw newInternalError(new Error(`failed to create RequestInfo: ${ctx.info.error}`));
    // Only what kube-apiserver serves over an upgraded connection is tunnelled: exec, attach, port-forward, proxy,
    // logs and watches, all long-running. The steps after this one take an upgrade for one of those (flow control
    // and admission let them through), so anything else sent with Upgrade (a DELETE, say) must stop here.
    if (ctx.upgrade && !(ctx.info.isResourceRequest && ctx.info.longRunning)) {
      throw newBadRequest('the Upgrade header is only honoured for exec, attach, port-forward, proxy, log and watch requests; send this request without it');
    }
    // kube-apiserver's WithTimeoutForNonLongRunningRequests: watches, logs, exec, attach, port-forward have none.
    if (!ctx.info.longRunning) ctx.deadline = Date.now() + opts.deadlineMs;
    await next();
  };
}

/** The member's name from its escaped path segment; a malformed escape is the client's error, as Go's URL parser says. */
function clusterName(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw newBadRequest(`invalid URL escape in the cluster name of the path /clusters/${segment}/`);
  }
}

/** The path and query to send upstream for this request (the /clusters prefix removed). */
export function targetPath(ctx: RequestContext): string {
  return ctx.url.pathname + ctx.url.search;
}
