// apiserver_current_inflight_requests: the most requests executing at once in each period, by kind, as
// kube-apiserver's watermark reports it, not the count at the moment of the scrape.

import { describe, expect, it } from 'vitest';
import { newApiserverMetrics } from '../../src/metrics/apiserver.js';
import { inflightRequests } from '../../src/metrics/inflight.js';
import type { RequestContext } from '../../src/server/context.js';

const ctx = (method: string, longRunning = false) => ({ req: { method }, info: { longRunning } }) as unknown as RequestContext;

/** A request in the step that runs until its release is called. */
function start(step: (c: RequestContext, next: () => Promise<void>) => Promise<void>, c: RequestContext) {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const done = step(c, () => held);
  return { release, done };
}

async function gauge(metrics: ReturnType<typeof newApiserverMetrics>, kind: string): Promise<number> {
  const line = (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`apiserver_current_inflight_requests{request_kind="${kind}"}`));
  if (line === undefined) throw new Error(`no ${kind} series`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('requests in flight', () => {
  it('reports the period high-water mark by kind, from the requests still executing when a period starts', async () => {
    const metrics = newApiserverMetrics();
    const inflight = inflightRequests(metrics, 3_600_000);
    try {
      expect(await gauge(metrics, 'readOnly')).toBe(0);
      expect(await gauge(metrics, 'mutating')).toBe(0);
      const gets = [start(inflight.step, ctx('GET')), start(inflight.step, ctx('GET')), start(inflight.step, ctx('HEAD'))];
      const post = start(inflight.step, ctx('POST'));
      // Set only once a period: the requests above show at the next.
      expect(await gauge(metrics, 'readOnly')).toBe(0);
      gets[0]!.release();
      gets[1]!.release();
      await Promise.all([gets[0]!.done, gets[1]!.done]);
      inflight.publish();
      // Three read-only requests ran at once, though one is left at the end of the period.
      expect(await gauge(metrics, 'readOnly')).toBe(3);
      expect(await gauge(metrics, 'mutating')).toBe(1);
      // The next period starts from what still executes: the HEAD and the POST, neither starting nor ending in it.
      inflight.publish();
      expect(await gauge(metrics, 'readOnly')).toBe(1);
      expect(await gauge(metrics, 'mutating')).toBe(1);
      gets[2]!.release();
      post.release();
      await Promise.all([gets[2]!.done, post.done]);
      inflight.publish();
      expect(await gauge(metrics, 'readOnly')).toBe(1);
      inflight.publish();
      expect(await gauge(metrics, 'readOnly')).toBe(0);
      expect(await gauge(metrics, 'mutating')).toBe(0);
    } finally {
      inflight.stop();
    }
  });

  it('does not count long-running requests, and a request that fails still leaves the count', async () => {
    const metrics = newApiserverMetrics();
    const inflight = inflightRequests(metrics, 3_600_000);
    try {
      const watch = start(inflight.step, ctx('GET', true));
      await expect(inflight.step(ctx('DELETE'), () => Promise.reject(new Error('upstream')))).rejects.toThrow('upstream');
      inflight.publish();
      expect(await gauge(metrics, 'readOnly')).toBe(0);
      expect(await gauge(metrics, 'mutating')).toBe(1);
      inflight.publish();
      expect(await gauge(metrics, 'mutating')).toBe(0);
      watch.release();
      await watch.done;
    } finally {
      inflight.stop();
    }
  });

  it('sets the gauge on its own each period', async () => {
    const metrics = newApiserverMetrics();
    const inflight = inflightRequests(metrics, 20);
    try {
      await inflight.step(ctx('GET'), async () => {});
      const until = Date.now() + 5_000;
      while ((await gauge(metrics, 'readOnly')) !== 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      expect(await gauge(metrics, 'readOnly')).toBe(1);
      while ((await gauge(metrics, 'readOnly')) !== 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      expect(await gauge(metrics, 'readOnly')).toBe(0);
    } finally {
      inflight.stop();
    }
  });
});
