// A client-go SharedInformer against a simulated cluster stays exactly in sync through 10,000 churn events:
// its final store equals the sim's pods, object for object and resourceVersion for resourceVersion.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInformer, INFORMER_BUILD_TIMEOUT_MS, startInformer } from '../clients/informer.js';
import { requireGo } from '../e2e/require-go.js';
import { startChurn } from '../sim/churn.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';

describe.skipIf(!requireGo())('client-go informer against the sim', () => {
  // The first build takes minutes on a fresh machine: not inside a test's timeout.
  beforeAll(() => buildInformer(), INFORMER_BUILD_TIMEOUT_MS);

  let fleet: SimFleet;
  beforeAll(async () => {
    // A small watch window makes the informer's resumes exercise 410 + relist as well.
    fleet = await startSimFleet({ clusters: ['member-a'], podsPerCluster: 200 });
  });
  afterAll(async () => {
    await fleet?.close();
  });

  const truth = (ns: string) =>
    fleet
      .member('member-a')
      .cluster.list('', 'pods', ns)
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name, resourceVersion: p.metadata.resourceVersion, uid: p.metadata.uid }))
      .sort((a, b) => (a.name! < b.name! ? -1 : 1));

  for (const watchList of [false, true]) {
    it(`stays in sync through 10,000 churn events (watch-list ${watchList ? 'on' : 'off'})`, async () => {
      const cluster = fleet.member('member-a').cluster;
      const ns = watchList ? 'churn-watchlist' : 'churn';
      // Some pods exist before the informer starts, so its initial list (or initial events) carries state.
      const before = startChurn([cluster], { ratePerSecond: 100_000, maxOps: 500, seed: 3, namespace: ns, mix: { create: 1, update: 0, delete: 0 } });
      await before.done;
      const informer = startInformer(fleet.member('member-a').kubeconfigPath, { namespace: ns, watchList });
      await informer.waitFor((s) => s.synced, 120_000);
      const run = startChurn([cluster], { ratePerSecond: 2000, maxOps: 10_000, seed: 11, namespace: ns, appPrefix: 'live' });
      await run.done;
      expect(run.ops).toBe(10_000);
      const want = truth(ns);
      const lastRV = String(cluster.clock.current());
      // Wait until the informer has seen the last write, then compare stores.
      await informer.waitFor((s) => s.events.some((e) => Number(e.resourceVersion) >= Number(lastRV)), 60_000);
      const result = await informer.stop();
      expect(result.synced).toBe(true);
      expect(result.watchErrors).toEqual([]);
      expect(result.watchListUsed).toBe(watchList);
      const got = result.pods.map((p) => ({ namespace: p.namespace, name: p.name, resourceVersion: p.resourceVersion, uid: p.uid }));
      expect(got).toEqual(want);
    }, 240_000);
  }
});
