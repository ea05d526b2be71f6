// Notes of a round that concern every scenario, or that were measured apart from any scenario's own code: put with
// each full run's notes, before the history of earlier rounds (the notes that begin "in the ... round"), so that a
// later run keeps saying them. A scenario's own findings stay in its file.

import type { ScenarioResult } from './lib.js';

const NEW_HOST =
  'in the first round of 2026-12-01 the benchmarks ran on another host: an Intel Xeon (KVM under Firecracker, its kernel under nested PVM), where every run published before was on an AMD EPYC. Two full runs that day, 31 minutes each: 634e637 (the code of the round before) and 853749e (this round\'s: lists copy objects out of their slabs with one memcpy, see scenario 2), the latter published';

const POD_SIZE =
  "in the first round of 2026-12-02 the sim's pods became ~4.3 KB of JSON (4,280 bytes generated, 4,413 as a 1M list serves them), as the issue asks (about 4 KB): they were ~5.1 KB (5,124 generated, ~5,250 served), their sidecar carrying the app container's env and probes. Every figure of the rounds before is of the larger pods, so bytes, times and rates compare with them only per byte";

// The first run of 2026-12-02 (4c57908): the AMD EPYC host kind again, but its baselines ran 1.8-4x slower than
// in the AMD runs before (the last published 2026-11-28, 5cb8a16), so its times say more about the host than the code.
const SLOW_HOST =
  "the first round's run of 2026-12-02 (4c57908, 40 minutes; published until the second round's) was on the AMD EPYC host kind again, whose baselines ran far slower that day than in the AMD runs before (against the last, published on 2026-11-28): a GET straight to kube-apiserver 3.37 ms at p50 against 1.17, one loopback exchange over TLS 145 µs against 60 (81 µs of CPU a side against 25), a bare Node.js hop behind fastify added 1.48 ms against 0.38, an informer's sync of 100,000 pods straight from a member 29.7 s against 16.4, the members' process 124 s to generate its 1M pods (65 s on a fast stretch); a C loop and AES-GCM ran at their usual speed (210 ms for 3e8 adds, 2.6 GB/s at 16 KiB in openssl speed), so what was slow is what wakes threads and crosses between processes: loopback, scheduling and the host's page backing (a first write to a fresh page 11.3 µs). The ratios are the figures to compare";

// The run published in the second round of 2026-12-02 (0256a74): an Intel Xeon host again, on a fast day for it.
const FAST_HOST =
  "the second round's run of 2026-12-02 (0256a74, the code of the first round's run but for the report's rendering; 21 minutes, published) was on an Intel Xeon host, as on 2026-12-01, on a fast day: a GET straight to kube-apiserver 1.11 ms at p50 (3.37 in the first round's run that day, on the AMD host kind; 1.37-1.59 on 2026-12-01's Intel host), one loopback exchange over TLS 76 µs (145; 32 µs of CPU a side against 81), a bare Node.js hop behind fastify added 0.29 ms (1.48), an informer's sync of 100,000 pods straight from a member 10.7 s (29.7; 23.7-26.1), the members' process 51 s to generate its 1M pods (124), a first write to a fresh page 9.5 µs (11.3), and kube-apiserver built in 168 s (359). The code being the same, the cache's intake counted 111,061 instructions a pod against 112,446: the difference between the two runs is the host";

const ROUND_2026_12_02_SECOND: Record<number, string[]> = {
  1: [
    `${FAST_HOST}. Here added at p50 at c=1 0.515 ms (2.85 in the first round's run), a bare hop 0.297 ms, throughput 68% and 73% of direct at c=1 and c=64 (53% and 54%); the gateway's thread 532 µs of CPU per request at c=1 against 318 µs for the bare hop behind fastify (2,337 and 1,149). The bare hop alone comes to the goal: a hop's two loopback exchanges, where a direct request makes one, cost about what the goal allows`,
  ],
  2: [
    `${FAST_HOST}. Here the loopback ceiling was 657 MB/s (244 in the first round's run), the full JSON list at 100.5% of it, and the 10k-pod list 81.4 ms at p50 (190 ms), under the goal for the first time in a published run: both of the scenario's goals met`,
  ],
  3: [`${FAST_HOST}. Here p99 6.0, 9.1 and 10.7 ms (15.1, 45.1 and 45.6 in the first round's run)`],
  4: [`${FAST_HOST}. Here 1.10x heap and 1.13x RSS per added pod, as in the first round's run: memory does not move with the host`],
  5: [
    `${FAST_HOST}. Here 27.4 s from start to ready (72.7 s in the first round's run; 48.7 s on 2026-12-01 with the larger pods), under the goal for the first time: the gateway's main thread busy 22.9 s and waiting for a core 4.2 s, its process's CPU 38.3 s (90.7), the machine idle 15% of the sync. The same code and the same count of instructions per pod: on this host the goal is met, on the first round's it missed by 2.4x`,
  ],
  6: [
    `${FAST_HOST}. Here over h2 lag p99 30 ms with none dropped (the goal met over h2; 1,962 ms with the 10 unfiltered dropped in the first round's run), over HTTP/1.1 291 ms with none dropped (2,432 ms, 10 dropped), 15.7 and 18.3 µs of the gateway's CPU per delivered event. Over HTTP/1.1 3 of the 30 seconds had a p99 of 100 ms or more (the median second 18 ms), the event loop held up to 314 ms. One HTTP/1.1-only run after it with --trace-gc (FLEETGATE_BENCH_WATCH_ONLY=http/1.1, FLEETGATE_BENCH_GATEWAY_FLAGS=--trace-gc; lag p99 175 ms, none dropped) placed those seconds: its seconds were 10-42 ms but for its 12th (280 ms) and its last two (150 and 303 ms), and two full marks of the ~570 MB heap came then, 17 s apart, each ~350 ms of wall time (345 and 367 ms) for 83 and 27 ms of the main thread's steps and pauses of 23 and 19 ms: the marking threads taking the cores, as placed in the rounds of 2026-11-27 and 2026-11-28, and none came in the h2 phase`,
  ],
  7: [
    `${FAST_HOST}. Here the victim's GET p99 2.53x its p99 alone (rounds 2.5 / 2.67 / 2.77; 2.17x in the first round's run), 1.54x timed inside the gateway, its p99 alone 0.62 ms (2.28 ms): on the faster host the victim's own p99 shrank more than the time it waits for a core beside the flood, which is what the ratio counts`,
  ],
  8: [`${FAST_HOST}. Here 1.14x direct (12.25 s against 10.75 s), as in the first round's run`],
};

const ROUND_2026_12_02: Record<number, string[]> = {
  1: [
    `${SLOW_HOST}. Here: added at p50 at c=1 2.85 ms (0.379 on 2026-11-28), a bare hop 1.90 ms (0.229), throughput 53% and 54% of direct at c=1 and c=64 (74% and 63%); the gateway's thread 2,337 µs of CPU per request at c=1 against 1,149 µs for the bare hop behind fastify (513 and ~250 then). This scenario forwards a ConfigMap and does not use the sim's pods`,
  ],
  2: [
    POD_SIZE,
    `${SLOW_HOST}. Here the loopback ceiling was 244 MB/s (382 on 2026-11-28), the full JSON list 98.3% of it; the 10k-pod list (41.96 MB with the smaller pods, 49.92 MB before) 190 ms at p50, where the ceiling moves those bytes in 172 ms`,
  ],
  3: [POD_SIZE, `${SLOW_HOST}. Here p99 15.1, 45.1 and 45.6 ms (12.1, 17.3 and 19.5 on 2026-11-28): met, with less room`],
  4: [
    `${POD_SIZE}. Judged from this round on the second of two fills (what one more cached pod costs), where one fill's average was judged before: with the new pods one fill of 100,000 averaged 1.25x the JSON in heap and 1.54x in RSS, of which 120 MiB of RSS was the young generation grown to its limit (~1,260 B a pod at that count); the second fill's growth was 1.10x and 1.12x (npm run bench -- --no-publish 4), and 1.10x and 1.13x in the published run. Memory is the one scenario the host's speed does not move`,
  ],
  5: [
    POD_SIZE,
    `${SLOW_HOST}. Here 72.7 s from start to ready (44.5 s on 2026-11-28), the gateway's main thread busy 63.0 s and waiting for a core 9.2 s, its process's CPU 90.7 s (63.1), while its count of instructions per pod taken in went from 122,513 to 112,446 with the smaller pods (the WebAssembly scan 34,961 -> 27,381, as it reads every byte; the gateway's JavaScript 36,329 -> 36,306, as it walks the same members): the same work per pod took the host ~1.45x as long`,
    "also in the first round of 2026-12-02, measured and not built: transparent huge pages for the slabs. On this host's kernel (6.18) a byte written to each 4 KiB page of 1 GiB given to madvise(MADV_HUGEPAGE) cost 0.6-1.1 µs a page where the host had backed the memory already (2.7-3.1 µs without huge pages) and 7-8 µs where it had not (9-12 µs without); test/bench/tools/firsttouch.c, way touch_madv_hugepage. A cold sync's pages are mostly of the second kind, so the saving would be ~3 µs of ~10 a page, and Node gives no madvise for an ArrayBuffer: a native addon, or glibc's hugetlb tunable, which made every large allocation huge and cost scenario 6 (its second round of 2026-11-27)",
  ],
  6: [
    POD_SIZE,
    `${SLOW_HOST}. Here the 10 unfiltered watchers were dropped in both phases, so the watchers got 18% of the events they asked for over h2, and the gateway's CPU per delivered event (150 µs over h2) is its intake over fewer deliveries; the label and node watchers' lag p99 was 750 and 744 ms over h2`,
  ],
  7: [POD_SIZE, `${SLOW_HOST}. Here the victim's GET p99 2.17x its p99 alone (rounds 1.76 / 1.91 / 2.89; 2.03x on 2026-11-28), 1.25x timed inside the gateway`],
  8: [POD_SIZE, `${SLOW_HOST}. Here 1.14x direct (33.8 s against 29.7 s; 1.06x on 2026-11-28)`],
};

const ROUND_2026_12_01: Record<number, string[]> = {
  1: [
    `${NEW_HOST}. Added at p50 at c=1: 0.756 and 0.653 ms (0.379 published on the other host); throughput at c=1 65% and 67%, at c=64 73% and 67%; the direct side alone was slower here (c=1 p50 1.589 and 1.370 ms against 1.174), as was a bare hop behind fastify (added 0.411 and 0.555 ms against 0.382), and the gateway's thread spent 854 and 691 µs of CPU per request at c=1 (513 on the other host). The code on this path did not change between the two runs`,
  ],
  2: [
    `${NEW_HOST}. 10k-pod list p50 119.4 and 141.8 ms, the full JSON list at 90.4% and 88.0% of the ceiling (414 and 450 MB/s): one run each, no difference beside the spread at 1M`,
    "in the first round of 2026-12-01: a list copied each object out of its slab (a SharedArrayBuffer) with Buffer.copy, which V8 does through relaxed atomics when either side is shared; perf record of the gateway serving 10k-pod lists (quick scale, 52.5 MB each) had v8::internal::relaxed_memmove at 33% of its samples. Objects now leave their slabs with one memcpy, as they are copied in (src/api/offheap.ts copyBytes; 5.2 KB out of a SharedArrayBuffer: 2.4 µs with Buffer.copy, 0.6-0.7 µs, three rounds of 200,000 copies each), and relaxed_memmove is gone from the profile (AES-GCM 22%, memcpy 19% of it then). Two alternating quick-scale pairs of fifteen 10k lists each side (test/bench/scratch/tenk-client.mts, against 634e637 in a worktree), p50: read by curl 90.5 and 110.4 ms before, 69.7 and 83.6 ms after; by the bench's node client 97.6 and 108.5 before, 95.0 and 102.4 after. The node client is the larger part of its own figure: a bare node HTTPS server writing 52 MB from memory in 64 KiB to 1 MiB writes was read by curl at 640-1,010 MB/s, by a node client in a process of its own at 400 MB/s on its first request and ~780 MB/s by its fifth. At the full 1M pods, two alternating pairs (the same script, SCALE=100x10000, before / after / after / before), p50: read by curl 127.7 and 93.4 ms before, 105.9 and 79.0 ms after; by the node client 113.0 and 102.1 before, 112.6 and 92.8 after. The issue's goal is judged on the node client, as in every round before",
  ],
  3: [`${NEW_HOST}. p99 of the label selector, namespace page and spec.nodeName page: 7.5, 12.7 and 13.2 ms; 9.0, 21.5 and 18.9 ms`],
  4: [`${NEW_HOST}. Heap and RSS per cached pod 1.16 and 1.47 times its JSON; 1.16 and 1.45 times`],
  5: [
    `${NEW_HOST}. 55.8 and 48.7 s from start to ready, the gateway's main thread busy 48.7 and 42.8 s, its process's CPU 69.8 and 60.0 s; a first write to a fresh page 7.4 and 7.3 µs (12.3 µs in the run published on the other host). The members' process serves its lists with the same code (src/cache/list.ts), so the copy out of slabs is cheaper there too; one run each, not enough to tell it from the spread`,
  ],
  6: [
    `${NEW_HOST}. h2 lag p99 342 and 304 ms, none dropped in either; HTTP/1.1 1,021 ms with the 10 unfiltered watchers dropped, and 592 ms with none dropped; the gateway's CPU per delivered event 23.8 and 23.7 µs over h2, 28.0 and 24.0 µs over HTTP/1.1`,
  ],
  7: [`${NEW_HOST}. The victim's GET p99 3.74 and 3.88 times its p99 alone (1.01 and 0.95 ms alone); 2.03 times in the run published on the other host`],
  8: [`${NEW_HOST}. 1.11 and 1.11 times direct (direct 26.1 and 23.7 s; 16.4 s on the other host)`],
};

/** The rounds whose notes a full run carries, the newest first: a new round goes at the front. */
const ROUNDS = [ROUND_2026_12_02_SECOND, ROUND_2026_12_02, ROUND_2026_12_01];

/**
 * r's notes with the rounds' notes for its scenario (the newest round first), before the history of earlier rounds.
 * The notes put in are recorded in r.roundNotes, so that `--render` can take them out and put in the rounds' notes
 * as this file says them now.
 */
export function withRoundNotes<R extends ScenarioResult>(r: R): R {
  const extra = ROUNDS.flatMap((round) => round[r.id] ?? []);
  // Results published before roundNotes was recorded hold the rounds' notes as this file says them.
  const put = new Set(r.roundNotes ?? r.notes.filter((n) => extra.includes(n)));
  const notes = r.notes.filter((n) => !put.has(n));
  const at = notes.findIndex((n) => /^(also )?in the \w+ round of /.test(n));
  notes.splice(at < 0 ? notes.length : at, 0, ...extra);
  return { ...r, notes, roundNotes: extra };
}
