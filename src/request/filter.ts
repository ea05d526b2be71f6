// The chain's first step: what is being asked for. Splits off a /clusters/<name> prefix (one member through the
// same chain), then derives RequestInfo from what is left, as k8s.io/apiserver's WithRequestInfo does.

import { newNotFound } from '../api/status.js';
import type { RequestContext } from '../server/context.js';
import type { Step } from '../server/chain.js';
import { newRequestInfo } from './requestinfo.js';

const CLUSTER_PREFIX = /^\/clusters\/([^/]+)(\/.*)?$/;

export function requestInfoStep(opts: { deadlineMs: number }): Step {
  return async (ctx, next) => {
    const m = CLUSTER_PREFIX.exec(ctx.url.pathname);
    if (m) {
      ctx.cluster = decodeURIComponent(m[1]!);
      ctx.url.pathname = m[2] ?? '/';
      if (!ctx.cluster) throw newNotFound({ group: 'cluster.karmada.io', resource: 'clusters' }, '');
    }
    ctx.info = newRequestInfo(ctx.req.method ?? 'GET', ctx.url.pathname, ctx.url.searchParams);
    // kube-apiserver's WithTimeoutForNonLongRunningRequests: watches, logs, exec, attach, port-forward have none.
    if (!ctx.info.longRunning) ctx.deadline = Date.now() + opts.deadlineMs;
    await next();
  };
}

/** The path and query to send upstream for this request (the /clusters prefix removed). */
export function targetPath(ctx: RequestContext): string {
  return ctx.url.pathname + ctx.url.search;
}
