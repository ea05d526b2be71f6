// apiserver_current_inflight_requests, as kube-apiserver keeps it: the most requests executing at once, by kind
// (readOnly or mutating), over each second, set once a second. Long-running requests (watches, logs, exec, attach,
// port-forward, proxy) are not counted, nor are requests still waiting in a flow-control queue or refused before it
// (authentication, 429): the step sits after flow control in the chain, where kube's priority-and-fairness (or
// max-in-flight) filter counts them.
//
// A scrape between two requests still sees how many ran at once in the last second; a gauge of the count at that
// moment mostly reads 0 (or 1: the scrape itself). Each period starts from the requests still executing, where
// kube's starts from 0 and so reads 0 for a second in which a long request neither started nor ended.

import type { Step } from '../server/chain.js';
import { isMutating, type ApiserverMetrics } from './apiserver.js';

/** kube's inflightUsageMetricUpdatePeriod. */
export const INFLIGHT_PERIOD_MS = 1000;

const READ_ONLY = 0;
const MUTATING = 1;

export interface InflightRequests {
  step: Step;
  /** Sets the gauge to each kind's high-water mark of the period and starts the next one (the timer's job). */
  publish(): void;
  stop(): void;
}

export function inflightRequests(metrics: ApiserverMetrics, periodMs = INFLIGHT_PERIOD_MS): InflightRequests {
  // Both kinds show from the start, at 0.
  const gauges = [metrics.inflight.labels('readOnly'), metrics.inflight.labels('mutating')] as const;
  const executing = [0, 0];
  const highest = [0, 0];
  const publish = (): void => {
    for (const k of [READ_ONLY, MUTATING]) {
      gauges[k].set(highest[k]!);
      highest[k] = executing[k]!;
    }
  };
  publish();
  const timer = setInterval(publish, periodMs).unref();
  const step: Step = async (ctx, next) => {
    if (ctx.info.longRunning) return next();
    const k = isMutating(ctx.req.method ?? 'GET') ? MUTATING : READ_ONLY;
    const now = ++executing[k]!;
    if (now > highest[k]!) highest[k] = now;
    try {
      await next();
    } finally {
      executing[k]!--;
    }
  };
  return { step, publish, stop: () => clearInterval(timer) };
}
