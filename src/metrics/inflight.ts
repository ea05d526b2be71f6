// apiserver_current_inflight_requests, as kube-apiserver keeps it: requests executing, by kind (readOnly or
// mutating). Long-running requests (watches, logs, exec, attach, port-forward, proxy) are not counted, nor are
// requests still waiting in a flow-control queue or refused before it (authentication, 429): the step sits after
// flow control in the chain, where kube's priority-and-fairness (or max-in-flight) filter counts them.

import type { Step } from '../server/chain.js';
import { isMutating, type ApiserverMetrics } from './apiserver.js';

export function inflightStep(metrics: ApiserverMetrics): Step {
  // Both kinds show from the start, at 0.
  const readOnly = metrics.inflight.labels('readOnly');
  const mutating = metrics.inflight.labels('mutating');
  return async (ctx, next) => {
    if (ctx.info.longRunning) return next();
    const g = isMutating(ctx.req.method ?? 'GET') ? mutating : readOnly;
    g.inc();
    try {
      await next();
    } finally {
      g.dec();
    }
  };
}
