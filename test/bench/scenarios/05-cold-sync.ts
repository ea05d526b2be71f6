// Scenario 5: cold sync, from the gateway's start to every member's first list in its cache (what /readyz
// waits for), with the pods already in the members. Baseline in the same run: one member's pods listed straight
// from it in pages of 500 by a plain client, times the number of members (listing them one after another).
// Also the gateway process's memory once synced, per cached pod.

import { round, type Scenario } from '../lib.js';
import { scaleFor, scaleNote, startScale, timedGet } from './scale.js';

export const run: Scenario = async ({ quick, log }) => {
  const { members, podsPerMember } = scaleFor(quick);
  const fleet = await startScale({ members, podsPerMember, log });
  try {
    const mem = await fleet.gw({ op: 'rss' });
    const simMem = await fleet.sim({ op: 'rss' });
    // Baseline: one member straight, paged as the reflector pages.
    const direct = async () => {
      const t0 = performance.now();
      let cont: string | undefined;
      do {
        cont = (await timedGet(fleet.firstMember, `/api/v1/pods?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`)).continue;
      } while (cont);
      return performance.now() - t0;
    };
    await direct();
    const oneMemberMs = Math.min(await direct(), await direct());
    const serialMs = oneMemberMs * members;
    const total = fleet.totalPods + 100;
    const ms = fleet.coldSyncMs;
    log(`05: cold sync ${round(ms)} ms for ${total} pods; one member straight ${round(oneMemberMs)} ms`);
    // The goal is for 1M pods; a smaller run is judged on the same pods-per-second rate, stated as such.
    const goalMs = 30_000 * (total / 1_000_000);
    const met = ms < goalMs;
    const notes = [
      scaleNote(members, podsPerMember),
      total >= 1_000_000 ? 'judged on the time itself' : `judged against 30 s scaled linearly to ${total} pods (${round(goalMs)} ms): an extrapolation, the sync of 1M was not run here`,
      'members and gateway are separate processes on the same 2 cores: the sim serving its lists competes with the gateway ingesting them',
      `gateway process once synced: RSS ${round(mem.rss / 2 ** 20)} MiB, JS heap ${round(mem.heapUsed / 2 ** 20)} MiB, buffers outside the heap ${round(mem.arrayBuffers / 2 ** 20)} MiB (the cache keeps each object's JSON there; includes the process's own baseline)`,
    ];
    if (!met) {
      notes.push(
        `${round(ms - goalMs)} ms over the scaled goal (${round(ms / goalMs, 1)}x)`,
        'what bounds it (node --cpu-prof of the gateway child at 50,000 pods / 10 members, FLEETGATE_BENCH_CPUPROF=<dir>): of 14.8 s of gateway main-thread samples, 5.1 s garbage collection, 3.2 s the reflector\'s list (JSON.parse of each 500-pod page), 1.5 s Store seal (JSON.stringify of each pod), under 1 s idle: the gateway is CPU-bound on parse + serialize + GC, competing for the 2 cores with the sim serving the same lists. A larger young generation (--max-semi-space-size=64) did not change the time. With 100 small members (200 pods each) the profile is 11.8 s of samples: GC 2.8 s, list 1.1 s, TLS contexts and handshakes for 100 members ~0.6 s, and ~1.5 s of tsx compiling TypeScript at start (the benchmark runs the sources; a built gateway skips it). Bigger levers, not small: keep the member\'s bytes instead of re-serializing (splice the label and resourceVersion into the member\'s JSON), and parse pages off the main thread',
      );
    }
    return {
      id: 5,
      title: 'Cold sync',
      goal: 'start to ready under 30 s at 1M pods / 100 members',
      figures: {
        pods: total,
        members,
        cold_sync_ms: round(ms),
        gateway_started_ms: round(fleet.startedMs),
        pods_per_s: round(total / (ms / 1000)),
        one_member_direct_list_ms: round(oneMemberMs),
        members_listed_serially_ms: round(serialMs),
        ratio_to_serial_direct: round(ms / serialMs, 3),
        gateway_rss_bytes_per_pod: round(mem.rss / total),
        gateway_heap_bytes_per_pod: round(mem.heapUsed / total),
        gateway_buffer_bytes_per_pod: round(mem.arrayBuffers / total),
        sim_rss_MiB: round(simMem.rss / 2 ** 20),
      },
      met,
      notes,
      series: [
        {
          title: 'Cold sync vs listing the members directly',
          x: 'how',
          y: 'ms',
          points: [
            { label: 'gateway cold sync', value: round(ms) },
            { label: 'direct, one member after another', value: round(serialMs) },
          ],
        },
      ],
    };
  } finally {
    await fleet.close();
  }
};
