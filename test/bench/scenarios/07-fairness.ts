// Scenario 7, fairness: one user floods full LISTs of pods (served from the member cache, through the gateway);
// another user's GET of one pod is measured alone and then during the flood. Goal: the GET p99 during the flood stays
// within 2x its uncontended p99. Both users are ordinary (group bench, RBAC on the control plane), so flow control
// (global-default, distinguished by user) and cached-read authorization apply to both.

import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startSimFleet, type SimFleet } from '../../sim/fleet.js';
import { startTestGateway, type TestGateway } from '../../support/gateway.js';
import { call, type ClusterEndpoint } from '../../support/http.js';
import { mainThreadSched, round, startHeapSampling, summarize, type Scenario, type ScenarioResult } from '../lib.js';
import { loadInWorker, type LoadResult } from './01-forwarding.js';
import { serverStages, splitAround, tailSplit, type Around } from './stages.js';
import { startSimChild, type SimChild } from './scale.js';

export interface CachedGateway {
  /** The sim members, when they run in this process (scenario 8 issues member credentials from it). */
  fleet?: SimFleet;
  gw: TestGateway;
  close(): Promise<void>;
}

/**
 * A sim control plane, sim members with generated pods and a gateway caching the members (static list).
 * membersInChild: the sims run in a child process, as real members would, so that their objects and work are not
 * in the process and heap of the gateway hosted here (scenario 8 keeps them here: it issues member credentials).
 */
export async function startCachedGateway(o: { members: string[]; podsPerCluster: number; membersInChild?: boolean; log: (m: string) => void }): Promise<CachedGateway> {
  o.log(`starting a sim fleet${o.membersInChild ? ' in a child process' : ''}: ${o.members.length} member(s) x ${o.podsPerCluster} pods`);
  let sim: SimChild | undefined;
  let cpFleet: SimFleet | undefined;
  let fleet: SimFleet | undefined;
  let gw: TestGateway | undefined;
  const stopSims = async () => {
    await sim?.close().catch(() => {});
    await fleet?.close().catch(() => {});
    await cpFleet?.close().catch(() => {});
  };
  try {
    let admin: ClusterEndpoint;
    let cpKubeconfig: string;
    let memberKubeconfig: (name: string) => string;
    if (o.membersInChild) {
      const s = (sim = await startSimChild({ names: o.members, podsPerMember: o.podsPerCluster, needles: false, log: o.log }));
      admin = s.controlPlane;
      cpKubeconfig = s.controlPlaneKubeconfig;
      memberKubeconfig = (name) => s.members.find((m) => m.name === name)!.kubeconfig;
    } else {
      // Two fleets: startSimFleet seeds pods into every cluster it starts, and the control plane needs none.
      cpFleet = await startSimFleet({ clusters: ['control-plane'] });
      const f = (fleet = await startSimFleet({ clusters: o.members, podsPerCluster: o.podsPerCluster }));
      const cp = cpFleet.member('control-plane');
      admin = { url: cp.url, caPem: cpFleet.servingCA.certPem, token: cpFleet.adminToken };
      cpKubeconfig = cp.kubeconfigPath;
      memberKubeconfig = (name) => f.member(name).kubeconfigPath;
    }
    const post = async (path: string, body: object) => {
      const r = await call(admin, 'POST', path, { body });
      if (r.status !== 201 && r.status !== 409) throw new Error(`POST ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    };
    await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'bench-pod-reader' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }] });
    await post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'bench-pod-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-pod-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'bench' }],
    });
    const members = o.members.map((m) => `    - name: ${m}\n      kubeconfig: ${memberKubeconfig(m)}`).join('\n');
    gw = await startTestGateway({
      controlPlaneKubeconfig: cpKubeconfig,
      requestTimeoutSeconds: 60,
      extraYaml: `cache:\n  karmada:\n    enabled: false\n  qps: 1000\n  burst: 1000\n  members:\n${members}\n`,
    });
    const anon = { url: gw.url, caPem: gw.servingCA.certPem };
    const end = Date.now() + 300_000;
    for (;;) {
      const r = await call(anon, 'GET', '/readyz?verbose');
      if (o.members.every((m) => r.text.includes(`${m}: synced`))) break;
      if (Date.now() > end) throw new Error(`gateway cache not synced within 300 s: ${r.text.slice(0, 500)}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const g = gw;
    return {
      fleet,
      gw: g,
      close: async () => {
        await g.close().catch(() => {});
        await stopSims();
      },
    };
  } catch (e) {
    await gw?.close().catch(() => {});
    await stopSims();
    throw e;
  }
}

/** Starts timing this process's main thread; the function returned gives its shares of the wall time since. */
function schedShares(): () => { busy: number; waiting: number } {
  const t0 = performance.now();
  const s0 = mainThreadSched();
  return () => {
    const ms = performance.now() - t0;
    const s1 = mainThreadSched();
    return { busy: (s1.runNs - s0.runNs) / 1e6 / ms, waiting: (s1.waitNs - s0.waitNs) / 1e6 / ms };
  };
}

export const run: Scenario = async ({ quick, log }) => {
  const pods = quick ? 5_000 : 50_000;
  const durationMs = quick ? 4_000 : 15_000;
  const flooders = Number(process.env.FLEETGATE_BENCH_FLOODERS) || (quick ? 4 : 8);
  const cg = await startCachedGateway({ members: ['member-a'], podsPerCluster: pods, membersInChild: true, log: (m) => log(`07: ${m}`) });
  try {
    const victim = await cg.gw.endpointFor('victim', ['bench']);
    const flooder = await cg.gw.endpointFor('flooder', ['bench']);
    const first = await call(victim, 'GET', '/api/v1/namespaces/load/pods?limit=1');
    const target = (JSON.parse(first.text) as { items: Array<{ metadata: { name: string } }> }).items[0];
    if (first.status !== 200 || !target) throw new Error(`07: no pod to GET (${first.status}): ${first.text.slice(0, 300)}`);
    const getPath = `/api/v1/namespaces/load/pods/${target.metadata.name}`;
    const listPath = '/api/v1/pods';
    const check = await call(victim, 'GET', getPath);
    if (check.status !== 200) throw new Error(`victim GET ${getPath}: ${check.status} ${check.text.slice(0, 300)}`);

    // The victim alone and during the judged flood, alternated over several rounds and pooled: on this shared
    // machine the uncontended p99 alone moved 0.5-1.9 ms between runs of the same code (2026-11-27), and one pair
    // of phases judged on one baseline said met or missed by that alone. Per-round ratios are figures too.
    const rounds = quick ? 2 : 3;
    const aloneLoads: LoadResult[] = [];
    const gwAlone: number[] = [];
    const aroundAlone: Array<Around & { total: number }> = [];
    const aloneShares: Array<{ busy: number; waiting: number }> = [];
    const alonePhase = async (): Promise<LoadResult> => {
      log(`07: victim alone`);
      const timing = serverStages(getPath);
      // The gateway's thread (this process's main thread) over each phase: on a core, and runnable but waiting for one.
      const sched = schedShares();
      const r = await loadInWorker({ endpoint: victim, path: getPath, concurrency: 1, durationMs, tagged: true });
      aloneShares.push(sched());
      const t = timing.stop();
      gwAlone.push(...t.times);
      aroundAlone.push(...splitAround(r, t.marks));
      aloneLoads.push(r);
      return r;
    };
    // The flood twice. Judged: its reader (a thread of this process, on the gateway's 2 cores) at nice 19, so it
    // reads with the CPU the gateway leaves idle, as a flooder's client on its own machine would. Shown beside it:
    // the same flood with its reader at nice 0, where the ~600 MB/s it decrypts takes a core the gateway and the
    // victim need. FLEETGATE_BENCH_FLOOD_NICE sets the judged phase's value.
    const judgedNice = process.env.FLEETGATE_BENCH_FLOOD_NICE ? Number(process.env.FLEETGATE_BENCH_FLOOD_NICE) : 19;
    const floodPhase = async (nice: number, sample: boolean) => {
      log(`07: flood (${flooders} concurrent full LISTs of ${pods} pods, reader at nice ${nice}) + victim`);
      const floodP = loadInWorker({ endpoint: flooder, path: listPath, concurrency: flooders, durationMs: durationMs + 2_000, warmup: flooders, nice });
      // Let the flood reach its steady state before measuring the victim.
      await new Promise((r) => setTimeout(r, 1_500));
      // How long the gateway's thread (this process's main thread) kept timers waiting while the victim was measured.
      const loopDelay = monitorEventLoopDelay({ resolution: 1 });
      loopDelay.enable();
      // FLEETGATE_BENCH_HEAP_SAMPLING=<dir>: the gateway thread's JS heap allocations while the victim is measured
      // (judged phase), collected objects included (a .heapprofile for DevTools).
      const stopSampling = sample && process.env.FLEETGATE_BENCH_HEAP_SAMPLING ? await startHeapSampling() : undefined;
      const timing = serverStages(getPath);
      const sched = schedShares();
      const victimLoad = await loadInWorker({ endpoint: victim, path: getPath, concurrency: 1, durationMs, tagged: true });
      const shares = sched();
      const t = timing.stop();
      const gw = t.times;
      const around = splitAround(victimLoad, t.marks);
      loopDelay.disable();
      if (stopSampling) {
        const file = join(process.env.FLEETGATE_BENCH_HEAP_SAMPLING!, `scenario-07-${Date.now()}.heapprofile`);
        await stopSampling(file);
        log(`07: heap sampling written to ${file}`);
      }
      return { victimLoad, shares, gw, around, loopDelay, flood: await floodP };
    };
    const judgedRounds: Array<Awaited<ReturnType<typeof floodPhase>>> = [];
    const roundRatios: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const a = await alonePhase();
      const j = await floodPhase(judgedNice, i === 0);
      judgedRounds.push(j);
      roundRatios.push(summarize(j.victimLoad.latenciesMs).p99 / summarize(a.latenciesMs).p99);
    }
    const unniced = await floodPhase(0, false);
    await alonePhase();

    const floods = judgedRounds.map((j) => j.victimLoad);
    for (const [n, r] of [...aloneLoads.map((l) => ['alone', l] as const), ...floods.map((l) => ['contended', l] as const), ['contended at nice 0', unniced.victimLoad]] as const) {
      if (Object.keys(r.statuses).some((k) => k !== '200')) throw new Error(`victim ${n}: ${JSON.stringify(r.statuses)} ${r.errors.join('; ')}`);
    }
    const base = summarize(aloneLoads.flatMap((l) => l.latenciesMs));
    const c = summarize(floods.flatMap((l) => l.latenciesMs));
    const gwFlood = judgedRounds.flatMap((j) => j.gw);
    const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
    const schedAlone = { busy: mean(aloneShares.map((x) => x.busy)), waiting: mean(aloneShares.map((x) => x.waiting)) };
    const schedFlood = { busy: mean(judgedRounds.map((j) => j.shares.busy)), waiting: mean(judgedRounds.map((j) => j.shares.waiting)) };
    const floodMs = judgedRounds.reduce((a, j) => a + j.flood.elapsedMs, 0);
    const flood = {
      rps: judgedRounds.reduce((a, j) => a + j.flood.latenciesMs.length, 0) / (floodMs / 1000),
      bytes: judgedRounds.reduce((a, j) => a + j.flood.bytes, 0),
      elapsedMs: floodMs,
      statuses: judgedRounds.reduce<Record<string, number>>((acc, j) => {
        for (const [k, v] of Object.entries(j.flood.statuses)) acc[k] = (acc[k] ?? 0) + (v as number);
        return acc;
      }, {}),
    };
    // The judged rounds' loop delay: the worst round's p99 and max, the middle round's p50.
    const loopDelay = {
      p50: judgedRounds.map((j) => j.loopDelay.percentile(50)).sort((x, y) => x - y)[Math.floor(rounds / 2)]!,
      p99: Math.max(...judgedRounds.map((j) => j.loopDelay.percentile(99))),
      max: Math.max(...judgedRounds.map((j) => j.loopDelay.max)),
    };
    const ratio = c.p99 / base.p99;
    const gwA = summarize(gwAlone);
    const gwF = summarize(gwFlood);
    const c0 = summarize(unniced.victimLoad.latenciesMs);
    const gwF0 = summarize(unniced.gw);
    // The slowest 1% of the victim's GETs, split around the gateway's handling (tagged requests matched by X-Bench-Seq).
    const aroundFlood = judgedRounds.flatMap((j) => j.around);
    const tailA = tailSplit(aroundAlone);
    const tailF = tailSplit(aroundFlood);
    const matched = (aroundAlone.length + aroundFlood.length) / Math.max(1, aloneLoads.reduce((a, l) => a + l.latenciesMs.length, 0) + floods.reduce((a, l) => a + l.latenciesMs.length, 0));
    const figures: ScenarioResult['figures'] = {
      verdict: `${ratio <= 2 ? 'met' : 'missed'}: GET p99 ${round(c.p99, 1)} ms during the flood vs ${round(base.p99, 1)} ms alone = ${round(ratio, 2)}× (goal ≤ 2×; flood reader at nice ${judgedNice}; at nice 0, ${round(c0.p99, 1)} ms = ${round(c0.p99 / base.p99, 2)}×)`,
      p99_ratio: round(ratio, 2),
      pods,
      flood_concurrency: flooders,
      victim_alone_p50_ms: round(base.p50, 3),
      victim_alone_p99_ms: round(base.p99, 3),
      victim_flood_p50_ms: round(c.p50, 3),
      victim_flood_p99_ms: round(c.p99, 3),
      victim_alone_rps: round(mean(aloneLoads.map((l) => l.rps)), 0),
      victim_flood_rps: round(mean(floods.map((l) => l.rps)), 0),
      rounds,
      p99_ratio_by_round: roundRatios.map((r) => round(r, 2)).join(' / '),
      flood_lists_per_s: round(flood.rps, 2),
      flood_MB_per_s: round(flood.bytes / 1e6 / (flood.elapsedMs / 1000), 1),
      flood_statuses: JSON.stringify(flood.statuses),
      victim_flood_p90_ms: round(c.p90, 3),
      victim_flood_max_ms: round(c.max, 3),
      // monitorEventLoopDelay: how late a 1 ms timer ran, beyond its 1 ms.
      loop_delay_p50_ms: round(loopDelay.p50 / 1e6 - 1, 2),
      loop_delay_p99_ms: round(loopDelay.p99 / 1e6 - 1, 2),
      loop_delay_max_ms: round(loopDelay.max / 1e6 - 1, 2),
      // The same GETs timed inside the gateway (serverStages): parsed request to last byte handed to the socket.
      victim_gateway_alone_p50_ms: round(gwA.p50, 3),
      victim_gateway_alone_p99_ms: round(gwA.p99, 3),
      victim_gateway_flood_p50_ms: round(gwF.p50, 3),
      victim_gateway_flood_p99_ms: round(gwF.p99, 3),
      victim_gateway_p99_ratio: round(gwF.p99 / gwA.p99, 2),
      gateway_thread_busy_share_alone: round(schedAlone.busy, 3),
      gateway_thread_runqueue_share_alone: round(schedAlone.waiting, 3),
      gateway_thread_busy_share_flood: round(schedFlood.busy, 3),
      gateway_thread_runqueue_share_flood: round(schedFlood.waiting, 3),
      flood_reader_nice: judgedNice,
      // The same flood with its reader at nice 0 (not judged): what this 2-core rig adds when the load generator
      // competes with the gateway for its cores.
      p99_ratio_reader_nice0: round(c0.p99 / base.p99, 2),
      victim_flood_reader_nice0_p50_ms: round(c0.p50, 3),
      victim_flood_reader_nice0_p99_ms: round(c0.p99, 3),
      victim_flood_reader_nice0_rps: round(unniced.victimLoad.rps, 0),
      victim_gateway_flood_reader_nice0_p99_ms: round(gwF0.p99, 3),
      flood_reader_nice0_MB_per_s: round(unniced.flood.bytes / 1e6 / (unniced.flood.elapsedMs / 1000), 1),
      loop_delay_reader_nice0_p99_ms: round(unniced.loopDelay.percentile(99) / 1e6 - 1, 2),
      gateway_thread_busy_share_flood_reader_nice0: round(unniced.shares.busy, 3),
      gateway_thread_runqueue_share_flood_reader_nice0: round(unniced.shares.waiting, 3),
      // Mean over the slowest 1% of the victim's GETs: before the gateway had parsed the request (the client's write,
      // the wait for the gateway's thread, its TLS read), inside (to the last byte handed to the socket), after (the
      // client's thread woken, its TLS read and parse).
      victim_alone_tail_before_ms: round(tailA.before, 3),
      victim_alone_tail_inside_ms: round(tailA.inside, 3),
      victim_alone_tail_after_ms: round(tailA.after, 3),
      victim_flood_tail_before_ms: round(tailF.before, 3),
      victim_flood_tail_inside_ms: round(tailF.inside, 3),
      victim_flood_tail_after_ms: round(tailF.after, 3),
      victim_requests_split_share: round(matched, 3),
    };
    const notes = [
      `one member with ${pods} generated pods (~4 KB each), a sim in a process of its own (since 2026-11-23 afternoon; before, it shared the gateway's process and heap: one run with --trace-gc-nvp after the move, young-generation pauses during the flood ~3.4-3.9 ms as before, p99 ratio 6.6); flooder: ${flooders} closed-loop full JSON LISTs of all pods; victim: closed-loop GET of one pod, both from the cache; the victim alone and during the judged flood alternate over ${rounds} rounds of ${durationMs / 1000} s and are pooled (each round's ratio is a figure: p99_ratio_by_round ${figures.p99_ratio_by_round}), then the nice-0 flood and the victim alone once more`,
      `two floods in the same run (since 2026-11-27): the judged one with the flood's reader thread at nice ${judgedNice}, the other at nice 0. Both loads are threads of the process that hosts the gateway, on the same 2 cores, and the flood's reader decrypts ~600 MB/s: at nice 0 it takes a core the gateway's thread and the victim's need (the gateway thread waited for a core ${round(unniced.shares.waiting * 100, 0)}% of that phase, ${round(schedFlood.waiting * 100, 0)}% of the judged one), which a flooder's client on its own machine would not. Judged at nice ${judgedNice}, it reads with the CPU left idle: p99 ${round(c.p99, 2)} ms (${round(ratio, 2)}×), against ${round(c0.p99, 2)} ms (${round(c0.p99 / base.p99, 2)}×) at nice 0; before 2026-11-27 the scenario ran only at nice 0 and published that`,
    ];
    notes.push(
      "long responses are paced (src/server/respond.ts): a streamed LIST writes for at most one slice (0.25 ms since the eighth round of 2026-11-28, 1 ms before), then waits its turn behind the other long responses, one slice per event-loop iteration, so requests that arrived meanwhile are read and answered between slices; a LIST keeps its flow-control seats until its last byte is out. Measured on this shared machine (load average 10-12 from other work), 5,000 pods, 4 flooders, 3 alternating rounds: victim p99 during the flood 59 ms unpaced vs 21 ms paced, the gateway's event-loop delay p99 ~50 ms vs ~22 ms, flood throughput not lower (93 MB/s unpaced, 126 MB/s paced)",
      "in the eighth round of 2026-11-28 a long response writes for at most 0.25 ms a turn (src/server/respond.ts SLICE_MS, about one 256 KiB chunk with its TLS; 1 ms before, two or three). Four alternating quick pairs (npm run bench -- --quick --no-publish 7, the slice set through a temporary environment variable; in the order 1 then 0.25 ms twice, then 0.25 then 1 ms twice): p99 ratio 3.01, 3.06, 3.21 and 2.26 with 0.25 ms against 4.0, 3.62, 2.89 and 2.54 with 1 ms; the slowest 1% of the victim's GETs waited 2.04, 3.26, 2.08 and 2.99 ms before the gateway had parsed them against 3.05, 3.83, 3.68 and 3.14 ms; the victim's p99 timed inside the gateway 0.77, 1.27, 0.93 and 1.43 ms against 1.53, 1.37, 1.56 and 1.23 ms; the flood's throughput 397, 385, 438 and 355 MB/s against 370, 330, 300 and 319 MB/s. Scenario 2's quick lists in two alternating pairs were as fast either way (the JSON list at 1.04 and 0.89 of the ceiling against 0.90 and 0.90, the 10k-pod list 119 and 86 ms against 121 and 84 ms). At full scale, the published run (the first after the change, on a faster stretch of this VM than the quick pairs: a loopback TCP exchange 87-94 us, against 167-184 us earlier this round and 56 us in scenario 1's published run) gave 2.03x (rounds 1.98 / 1.93 / 2.46; 1.08x timed inside the gateway); a second run right after (npm run bench -- --no-publish 7) gave 2.95x (rounds 3.06 / 2.71 / 4.23; 1.27x inside): full runs differ by more than the change moved the quick pairs",
      'flow control does what kube-apiserver\'s would, with one difference: the flooder and the victim are two flows (ByUser) of global-default, which gets 69 of the 600 seats (20 of 175 shares); a LIST of the cache costs a seat per 100 objects up to the level\'s widest request, 10 seats (kube\'s maximum), so 8 flooders run 6 at a time and queue the rest in their own queues. Found by this scenario and fixed in an earlier round (src/flowcontrol/queueset.ts, backfill): kube\'s queueset dispatches nothing while the request whose turn it is does not fit, and the flooder\'s queue kept the turn (R advances for the 9 seats its 10-seat LISTs cannot use, so it is soon owed service), so the victim\'s 1-seat GET waited until a LIST ended: during the flood the victim got 111-321 GETs/s with a max of 2.3 s and p99 7.9-11.2 ms; with 6 flooders (none waiting) its max was 22 ms. Now a request of another flow may take seats a blocked wide request leaves idle when the widest request running frees enough for it on its own: the first run after gave p99 5.1 ms, max 27.7 ms, 1,411 GETs/s. APF bounds concurrency, not CPU: the lists it admits still share the one event loop with the victim',
    );
    notes.push(
      "in the second round of 2026-11-28 the benchmark's process, which hosts the gateway here, runs with V8's young generation at 64 MiB a semi-space, as the image and the chart now start node (src/cache/younggen.ts; node's default is 16 MiB; its semi-spaces are four times as large, so young collections can come up to four times as seldom). Two alternating pairs of runs (npm run bench -- --no-publish 7, node with and without the flag): p99 ratio 2.91 and 2.84 with it against 4.2 and 2.71 without; the victim's p99 during the flood 2.92 and 1.99 ms against 2.81 and 3.44 ms; timed inside the gateway 1.16x and 1.19x against 1.5x and 1.25x. The uncontended p99 moved 0.67-1.27 ms across the four runs, so the ratio says little on its own",
    );
    notes.push(
      'in the third round of 2026-11-27 the lists\' chunk pool grew to the lists in flight (src/cache/list.ts; before, the flood\'s chunks past 16 and every list\'s last chunk were new buffers V8 counts): in two alternating pairs of runs, 4.13x and 3.76x with the old pool, 3.57x and 3.68x with the new, timed inside the gateway 2.08x and 1.91x against 1.62x and 1.47x; the runs of that round, on a slower stretch of the VM than the round before, gave 3.6-4.6x',
    );
    notes.push(
      `earlier runs of the same code in the second round of 2026-11-27 (nothing that round changed the path of a GET or a LIST): 1.99x with the victim alone at p99 1.93 ms (the flood's p99 3.83 ms), 2.76x and 3.05x with it alone at 0.93 and 0.84 ms (flood 2.56 and 2.55 ms), 3.14x at 0.54 ms (flood 1.7 ms); this run ${round(ratio, 2)}x, pooled over ${rounds} alternating rounds (one alone and one flood phase each, since those runs: a single pair of phases was judged before). Timed inside the gateway, the victim's p99 during the flood was 1.01-1.34x its p99 alone in those runs: what moves the ratio is the time around the gateway's handling on this shared machine, the uncontended baseline included`,
    );
    if (ratio > 2) {
      notes.push(
        `what bounds it now: the time around the gateway's handling, not the handling. Timed inside the gateway (Node's parsed request to its last byte handed to the socket, diagnostics_channel), the victim's GET p99 was ${figures.victim_gateway_alone_p99_ms} ms alone and ${figures.victim_gateway_flood_p99_ms} ms during the flood (${figures.victim_gateway_p99_ratio}×). The rest of the client's ${round(c.p99, 1)} ms is before the gateway reads the request and after it hands over the answer. Split around the gateway (since the seventh round of 2026-11-27: each GET tagged with X-Bench-Seq, the client's and the gateway's moments on the process's monotonic clock), the slowest 1% of the victim's GETs during the flood spent on average ${figures.victim_flood_tail_before_ms} ms before the gateway had parsed the request, ${figures.victim_flood_tail_inside_ms} ms inside it and ${figures.victim_flood_tail_after_ms} ms after its last byte was handed to the socket, until the client had the body (alone: ${figures.victim_alone_tail_before_ms}, ${figures.victim_alone_tail_inside_ms} and ${figures.victim_alone_tail_after_ms} ms). What fills those: the gateway thread's other work (a list's turn writes a 256 KiB chunk, ~0.3-0.5 ms with its TLS; young-generation collections, below), and the busy threads on the 2 cores (the gateway's, the victim's, the flood's reader decrypting ~${round(Number(figures.flood_MB_per_s), -1)} MB/s with what is left, V8's GC helpers, the loopback TCP work the gateway's writes carry). Measured in the round of 2026-11-27, judged flood at nice 19: the gateway's young-generation collections came ~4 times a second at ~1.8 ms (--trace-gc), so they touch 0.2-0.4% of the victim's ~2,000 GETs a second, not 1%; and shorter list turns changed nothing that shows (one run each: 0.25 ms turns with 256 KiB chunks, p99 2.0 ms; 0.25 ms with 64 KiB chunks, p99 2.0 ms and the flood 441 MB/s against ~600; in the seventh round, three alternating quick pairs of 1 ms against 0.25 ms turns, split as above: before the gateway 2.4, 3.1 and 2.6 ms against 2.1, 2.3 and 3.0 ms, after it 2.9-3.1 against 2.8-3.4 ms, ratios 3.1-3.5 against 2.9-3.6; and what lies after the gateway did not move with the load generator's placement, two alternating quick pairs each: the victim's thread pinned to the core the flood's reader mostly leaves idle (taskset), 3.0 and 2.8 ms against 3.1 and 2.5 ms, and the flood's reader as a process of its own started under nice 19, so that V8's helper threads of its isolate get nice 19 too, 2.5 and 3.0 ms against 3.2 and 2.8 ms, ratios 3.0 and 4.0 against 3.5 and 3.4), so the tail beyond the gateway's own 1.3-1.5× is the cores the gateway's thread shares. The gateway's thread was on a core ${round(schedFlood.busy * 100, 0)}% of the flood phase and runnable but waiting for one ${round(schedFlood.waiting * 100, 0)}% (alone: ${round(schedAlone.busy * 100, 0)}% and ${round(schedAlone.waiting * 100, 0)}%; Linux schedstat). It ran a 1 ms timer ${figures.loop_delay_p99_ms} ms late at p99 and ${figures.loop_delay_max_ms} ms at worst (monitorEventLoopDelay); the victim's p90 was ${figures.victim_flood_p90_ms} ms, its max ${figures.victim_flood_max_ms} ms`,
        "young-generation collections during the flood (perf record of the gateway's process over 10 s of it, 2026-11-23 afternoon): ~3.4 ms every ~250 ms, ~13 MB allocated between two, ~0.2-0.3 MB surviving. Each spends ~1.1 ms in V8's walk over the old generation's pages, ~1.1 ms waiting for the GC helper threads (which the 2 busy cores run late) and ~0.4 ms preparing the semispaces; the copying itself is small. One run each: --max-semi-space-size=4 made them ~2.1 ms every ~60 ms (flood p99 3.5 ms, but the uncontended p99 rose to 1.9 ms, so the ratio of 1.84 says little), --no-parallel-scavenge kept them ~3.1 ms (p99 5.1 ms). Copies out of the cache's slabs (SharedArrayBuffers) go through V8's relaxed_memmove: 8% of the process's samples during the flood, against 3% for plain memmove",
        'earlier rounds. 2026-11-23 morning: the per-request context was an object literal with its own get/set log, so each request got a hidden class of its own, which V8 allocates in the old generation; through it the request\'s whole graph outlived every scavenge until the next full collection (--trace-gc-nvp: 1.6-1.9 MB promoted per scavenge under the victim\'s GETs alone, pauses 8-9 ms; after the fix ~150 KB and ~2.5 ms; the victim alone went from ~2,200 to ~4,700 GETs/s). Tried then, one run each: 64 KiB list chunks (flood p50 0.35 ms, p99 3.8 ms, flood 429 MB/s: the tail stays), the two loads in processes of their own rather than worker threads of the process that hosts the gateway (p99 5.0 ms), the victim\'s reader at nice -10 and the flood\'s at nice 19 (p99 3.1 ms, 3.7×), --single-threaded-gc (scavenges longer, 2.8 against 1.7 ms). The round before: the lists allocate nothing per item, a GET by name no longer takes 256 keys to find one, the flood client\'s CPU (nice 19) and a larger young generation were ruled out. Next lever: the lists\' bytes (copy and TLS) off the thread that reads other users\' requests, i.e. serving from several threads or processes (on this machine that moves the work to the other core, which the victim\'s client and the flood\'s reader use)',
      );
    }
    if (flood.statuses['429']) notes.push(`flow control rejected ${flood.statuses['429']} of the flooder's LISTs with 429`);
    const bound =
      ratio <= 2
        ? undefined
        : `the victim's GET p99 was ${round(c.p99, 2)} ms during the flood against ${round(base.p99, 2)} ms alone, ${round(ratio, 2)}× (goal 2×; ${round(ratio / 2, 2)} times the allowed growth). ` +
          `Inside the gateway, from the parsed request to its last byte handed to the socket, the p99 grew ${figures.victim_gateway_p99_ratio}× (${figures.victim_gateway_alone_p99_ms} to ${figures.victim_gateway_flood_p99_ms} ms)${Number(figures.victim_gateway_p99_ratio) <= 2 ? ": flow control keeps the flood's LISTs from taking the victim's turn, and the gateway's own handling of the GET stays within the goal" : ', itself over the goal'}. ` +
          `The rest is around the gateway: the slowest 1% of the GETs spent ${figures.victim_flood_tail_before_ms} ms before the gateway had parsed them and ${figures.victim_flood_tail_after_ms} ms after its last byte until the client had the body (alone ${figures.victim_alone_tail_before_ms} and ${figures.victim_alone_tail_after_ms} ms), ` +
          `waiting for one of the ${availableParallelism()} cores that the gateway's thread (on a core ${round(schedFlood.busy * 100, 0)}% of the flood), the flood's reader taking in ~${round(Number(figures.flood_MB_per_s), -1)} MB/s over TLS, the victim's client and V8's helpers share. ` +
          `With the flood's reader at nice 0 instead of 19 the ratio was ${figures.p99_ratio_reader_nice0}×: how the ${availableParallelism()} cores are shared moves it most`;
    return {
      id: 7,
      title: 'Fairness under a LIST flood',
      goal: "another user's GET p99 ≤ 2× its uncontended p99",
      figures,
      met: ratio <= 2,
      bound,
      notes,
      series: [
        {
          title: 'Victim GET latency, alone vs during a LIST flood (ms)',
          x: 'phase',
          y: 'ms',
          points: [
            { label: 'alone p50', value: round(base.p50, 3) },
            { label: 'flood p50', value: round(c.p50, 3) },
            { label: 'alone p99', value: round(base.p99, 3) },
            { label: 'flood p99', value: round(c.p99, 3) },
          ],
        },
      ],
    };
  } finally {
    await cg.close();
  }
};
