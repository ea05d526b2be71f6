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
        'what bounds it (node --cpu-prof of the gateway child at 200,000 pods / 20 members, FLEETGATE_BENCH_CPUPROF=<dir>, intake on the main thread): of 37.7 s of main-thread samples, JSON.parse of list pages 10.0 s, idle (waiting for the sim) 6.8 s, GC 5.2 s, JSON.stringify of each object 4.5 s, allocating each object\'s buffer 4.6 s. Allocating is first-touching memory: on this VM a 4 KiB page fault costs ~13 µs (1 GiB touched the first time 3.4 s, again 51 ms), so every GiB the cache (and the sim beside it) fills costs seconds; glibc.malloc.hugetlb=1 (set by the image and for these children) halves it in a micro-benchmark. Changes this round: lists reach the cache page by page instead of whole (200k pods: 56.6 -> 31.8 s, median of 3 alternating runs), objects\' JSON kept in buffers outside the heap, Table/list paths not re-encoding. Not linear in the pods: 200k synced in 22-32 s across runs, 1M in the time above. One suspect measured in isolation: V8 starts a full mark for every ~64 MiB of new buffer memory, so the number of mark-compacts grows with the cache and each marks a larger heap (1 GB of kept 5 KB buffers: 15 mark-compacts, 0.35 s; 3 GB: 45, 3.0 s); a profile at 1M was not taken. Parsing in worker threads (cache.intakeWorkers, FLEETGATE_BENCH_INTAKE_WORKERS) was built and measured: 200k 28.2 -> 23.8 s with one worker, but 1M 269 -> 330 s (one run each), so it is off by default: the 2 cores are already busy with the sim and the gateway',
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
