// Scenario 3: filtered LISTs from the merged cache, as kubectl sends them: a label selector matching 100 pods
// among all the others, one namespace (a third of the fleet's pods, so in kubectl's pages of 500), and a
// spec.nodeName field selector (kubectl's pages of 500). Each timed to the last byte, sequentially.

import { round, summarize, type Scenario } from '../lib.js';
import { scaleFor, scaleNote, startScale, timedGet } from './scale.js';

export const run: Scenario = async ({ quick, log }) => {
  const { members, podsPerMember } = scaleFor(quick);
  const fleet = await startScale({ members, podsPerMember, log });
  try {
    const ep = fleet.gateway;
    // The goal is about a synced cache: timing starts once the gateway is quiet (under a fifth of a core for a
    // second), so what it still does after the sync (collecting the cold sync's garbage) is not put on one query.
    const settle0 = performance.now();
    for (let busy = 1; busy > 0.2 && performance.now() - settle0 < 60_000; ) {
      const a = await fleet.gw({ op: 'cpu' });
      const t = performance.now();
      await new Promise((r) => setTimeout(r, 1000));
      const b = await fleet.gw({ op: 'cpu' });
      busy = (b.user - a.user + b.system - a.system) / 1000 / (performance.now() - t);
      log(`03: gateway CPU ${round(busy * 100)}% of a core`);
    }
    const settleMs = performance.now() - settle0;
    const n = quick ? 40 : 100;
    const queries = {
      label_100: '/api/v1/pods?labelSelector=bench%3Dneedle',
      namespace_page: '/api/v1/namespaces/load-2/pods?limit=500',
      nodename_page: `/api/v1/pods?limit=500&fieldSelector=spec.nodeName%3Dmember-001-node-3`,
      nodename_all: `/api/v1/pods?fieldSelector=spec.nodeName%3Dmember-001-node-3`,
    };
    const figures: Record<string, number | string> = { pods: fleet.totalPods + 100, members, settle_ms: round(settleMs) };
    const points: Array<{ label: string; value: number }> = [];
    let worst = 0;
    const sampleDir = process.env.FLEETGATE_BENCH_HEAP_SAMPLING;
    if (sampleDir) await fleet.gw({ op: 'heapSampling' });
    for (const [name, path] of Object.entries(queries)) {
      const first = await timedGet(ep, path, { keep: true });
      const items = (first.body!.toString('latin1').match(/"kind":"Pod"/g) ?? []).length;
      const ms: number[] = [];
      for (let i = 0; i < n; i++) ms.push((await timedGet(ep, path)).ms);
      const s = summarize(ms);
      log(`03: ${name}: ${items} items, p50 ${round(s.p50)} ms, p99 ${round(s.p99)} ms`);
      figures[`${name}_items`] = items;
      figures[`${name}_p50_ms`] = round(s.p50);
      figures[`${name}_p99_ms`] = round(s.p99);
      points.push({ label: name, value: round(s.p99) });
      // The unpaged nodeName list is reported, not judged: the goal's lists are the ones kubectl sends.
      if (name !== 'nodename_all') worst = Math.max(worst, s.p99);
    }
    if (sampleDir) log(`03: heap allocations sampled: ${(await fleet.gw({ op: 'heapSampling', file: `${sampleDir}/scenario-03-gateway.heapprofile` })).file}`);
    const met = worst < 50;
    const notes = [
      scaleNote(members, podsPerMember),
      `${n} sequential requests per query. How each is selected: a namespace is a key range of the store (keys begin with namespace/); bench=needle and spec.nodeName=x walk the cache's selector index (label value or node name -> keys in key order, kept on every change, the smallest candidate set of the selector's equality requirements), and the whole selector is then matched on each candidate, so their cost grows with the result, not with the cache. Selectors without an indexed equality (!=, notin, exists, other fields) still scan the namespace or the store`,
      'nodename_all (every pod on one node, unpaged) is shown for scale and not judged',
      `timed once the synced gateway had been under a fifth of a core of CPU for a second (settle_ms after the sync), so work left over from the cold sync does not land in the first query's p99`,
    ];
    if (!met) notes.push(`worst judged p99 ${round(worst)} ms, ${round(worst - 50)} ms over the goal; selection walks only the candidates now (well under a millisecond in process at 200k pods), so what is left is sending the items (100-500 pods, 0.5-2.5 MB over TLS) on this shared machine and the gateway's collections. What the outliers waited for (--trace-gc of the gateway at 1M pods, FLEETGATE_BENCH_GATEWAY_FLAGS): while the lists were served, a scavenge for external memory pressure every ~70 ms, 4-30 ms each, set off by a new 64 KiB buffer per list chunk (memory outside the JS heap); in that run label p99 12.2 ms, node page 15.4 ms, namespace page 71.9 ms, unpaged node list 69.4 ms. Since then list chunks come from a pool and go back once written (src/cache/list.ts), so serving a list allocates no memory outside the heap. In a later round (--trace-gc-nvp of the gateway at 1M, FLEETGATE_BENCH_GATEWAY_FLAGS): in the query window the lists still allocate ~14 MB of JS heap every ~0.3 s (~0.4 MB per 500-item page), so a young-generation collection runs every 3-5 requests; with ~0.4 MB surviving each, they took 6-24 ms at 1M pods (mostly the parallel phase, whose helper threads share the 2 cores with the benchmark's own client) against 2-5 ms at 100k, and the p99 of 100 requests can land on one of them. Not every outlier is one: with a 64 MiB young generation (--max-semi-space-size=64, one run) collections came every ~1 s at 10-16 ms, yet the namespace page p99 was 71 ms; the rest was not pinned down. Judged p99 across one earlier round's five 1M runs before the next change: label 17-42, namespace page 30-71, node page 21-65 ms (one of the five met the goal). Then the heap sampling of the queries (FLEETGATE_BENCH_HEAP_SAMPLING=<dir>, 100k pods) located the allocation: the drain wait and pacing turn after every 64 KiB chunk (each fills the socket past its high-water mark); chunks of stored bytes are 256 KiB since (144 -> 85 MB sampled over the same 400 lists)`);
    return {
      id: 3,
      title: 'Filtered LIST',
      goal: 'p99 < 50 ms (label selector matching 100 pods, a namespace, a spec.nodeName field selector)',
      figures,
      met,
      notes,
      series: [{ title: 'Filtered LIST p99', x: 'query', y: 'ms', points }],
    };
  } finally {
    await fleet.close();
  }
};
