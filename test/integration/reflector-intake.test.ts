// The reflector into a MergedCache against a simulated member whose watch window is too small to resume from:
// every outage ends in a relist, paged or streaming, that reaches the cache page by page while the member keeps
// changing, and each relist is first cut part-way (the member goes away again) and then done again after the
// member deleted pods the cut attempt had already delivered. The cache must end holding exactly the member's
// pods, and its watchers must never see a pod deleted that the member did not delete: a relist deletes only at its
// end, and only what the member no longer has.

import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MergedCache } from '../../src/cache/merged.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector, type ReflectorSink } from '../../src/cache/reflector.js';
import type { StoreEvent } from '../../src/cache/store.js';
import { upstreamFromKubeconfig } from '../../src/upstream/client.js';
import { startChurn } from '../sim/churn.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { until } from '../support/until.js';

const log = pino({ level: 'silent' });

describe('relists into the merged cache while the member changes', () => {
  let fleet: SimFleet;

  beforeAll(async () => {
    // A window of 60 events: an outage with more changes than that cannot be resumed from.
    fleet = await startSimFleet({ clusters: ['member-p', 'member-s'], podsPerCluster: 600, cluster: { windowSize: 60 } });
  });
  afterAll(async () => {
    await fleet?.close();
  });

  for (const [member, useWatchList] of [['member-p', false], ['member-s', true]] as const) {
    it(`${useWatchList ? 'streaming lists' : 'paged lists'}: the cache ends as the member is, and deletes only what the member deleted`, async () => {
      const m = fleet.member(member);
      const cluster = m.cluster;
      const pods = cluster.resourceFor('', 'pods')!;
      const deletedByMember = new Set<string>();
      const stopTruth = cluster.store(pods).subscribe((ev: StoreEvent) => {
        if (ev.type === 'DELETED') deletedByMember.add(ev.object.key);
      });
      const cache = new MergedCache({ instanceID: 't', windowSize: 1000, dropManagedFields: true });
      const wrongDeletes: string[] = [];
      cache.pods.subscribe((ev) => {
        const key = `${ev.object.namespace}/${ev.object.name}`;
        if (ev.type === 'DELETED' && !deletedByMember.has(key)) wrongDeletes.push(key);
      });
      // The cache's sink, watched: the test cuts the member away in the middle of a relist (on its second page).
      const inner = cache.sink(member, 'pods');
      const lists = { started: 0, aborted: 0, pagesOfCurrent: 0 };
      let cutAtSecondPage = false;
      const sink: ReflectorSink = {
        startList() {
          const intake = inner.startList();
          lists.started++;
          lists.pagesOfCurrent = 0;
          return {
            add(objects) {
              intake.add(objects);
              if (++lists.pagesOfCurrent === 2 && cutAtSecondPage) {
                cutAtSecondPage = false;
                void m.stop();
              }
            },
            end: (listRV) => intake.end(listRV),
            abort() {
              lists.aborted++;
              intake.abort();
            },
          };
        },
        apply: (type, obj) => inner.apply(type, obj),
        progress: (rv) => inner.progress(rv),
      };
      const upstream = upstreamFromKubeconfig(m.kubeconfigPath, undefined, member);
      // Pages of 25 at 60 requests a second: a list of 600 pods takes ~0.4 s, long enough for changes to land
      // between its pages.
      const r = startReflector({ upstream, path: '/api/v1/pods', sink, limiter: tokenBucket(60, 5), log, pageSize: 25, useWatchList, backoff: backoff({ initialMs: 100, maxMs: 400 }) });
      // Slow churn all along: the member changes while pages are coming in (in a namespace listed last, apart from
      // the pods the test deletes itself).
      const background = startChurn([cluster], { ratePerSecond: 20, maxOps: 100_000, seed: useWatchList ? 7 : 3, namespace: 'zz-churn-bg', mix: { create: 0.3, update: 0.4, delete: 0.3 } });
      const state = () => {
        const want = cluster
          .list('', 'pods')
          .map((p) => `${p.metadata.namespace}/${p.metadata.name}@${p.metadata.resourceVersion}`)
          .sort();
        const got = [...cache.pods.values()].map((o) => `${o.namespace}/${o.name}@${cache.owners('pods', o.namespace, o.name)[0]?.memberRV}`).sort();
        return { want, got };
      };
      try {
        await until(() => r.synced, 15_000, 'sync');
        expect(r.watchList).toBe(useWatchList);
        for (let round = 0; round < 3; round++) {
          const relists = r.stats.relists;
          const aborted = lists.aborted;
          await m.stop();
          // More changes than the window holds, deletions of listed pods among them.
          await startChurn([cluster], { ratePerSecond: 100_000, maxOps: 120, seed: 50 + round, namespace: 'churn-out', appPrefix: `out${round}` }).done;
          for (const p of cluster.list('', 'pods', 'load').slice(0, 10)) cluster.delete(pods, 'load', p.metadata.name!, { gracePeriodSeconds: 0 });
          // The relist is cut at its second page...
          cutAtSecondPage = true;
          await m.start();
          await until(() => lists.aborted > aborted, 20_000, `relist ${round + 1} cut part-way`);
          expect(r.stats.relists).toBe(relists);
          // ...after which the member deletes pods that attempt delivered (the first in list order), and more.
          for (const p of cluster.list('', 'pods').slice(0, 5)) cluster.delete(pods, p.metadata.namespace!, p.metadata.name!, { gracePeriodSeconds: 0 });
          await startChurn([cluster], { ratePerSecond: 100_000, maxOps: 80, seed: 70 + round, namespace: 'churn-out', appPrefix: `again${round}` }).done;
          await m.start();
          await until(() => r.stats.relists > relists, 20_000, `relist ${round + 1}`);
        }
        background.stop();
        await background.done;
        await until(() => !r.stale && JSON.stringify(state().got) === JSON.stringify(state().want), 20_000, 'the cache to match the member');
        expect(state().got.length).toBeGreaterThan(500);
        expect(wrongDeletes).toEqual([]);
        expect(cache.lastMemberRV(member, 'pods')).not.toBe('');
      } finally {
        background.stop();
        stopTruth();
        await r.stop();
        await upstream.close();
      }
    }, 90_000);
  }
});
