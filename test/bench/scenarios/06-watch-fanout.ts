// Scenario 6: watch fan-out. 1,000 watches on the gateway with mixed selectors (a few unfiltered, labels,
// spec.nodeName, and selectors matching nothing) while the members churn pods at 2,000 changes/s. Each change
// carries the time it was made (annotation bench/t, set by the sim child on this machine), so every delivered
// event gives a lag: its arrival here minus its making. The watchers run in this process, the gateway and the
// members in their own; the gateway's CPU time over the churn is divided by the events it delivered.

import { get as httpsGet } from 'node:https';
import { availableParallelism } from 'node:os';
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { machineCpuTicks, round, stealShare, summarize, type Scenario } from '../lib.js';
import { agentFor, loopDelay, scaleFor, scaleNote, startScale, timedGet, type LoopDelay, type ScaleFleet } from './scale.js';
import type { ClusterEndpoint } from '../../support/http.js';
import { prng } from '../../support/prng.js';

const STAMP_BYTES = Buffer.from('"bench/t":"');
const RATE = 2000;
const WATCHERS = 1000;
/** Seconds of churn before the measured window (see phase). */
const WARMUP_S = 2;
/** Where the measured churn's start ends, for the lag figures split there. */
const SETTLE_MS = 3000;
/** HTTP/2 watchers share this many connections, as that many client-go processes would (one per host each). */
const H2_SESSIONS = 10;
const ownLoop = loopDelay();

type Protocol = 'h2' | 'http/1.1';

interface Watcher {
  selector: string;
  kind: 'all' | 'label' | 'node' | 'none';
  events: number;
  /** Bytes received. */
  bytes: number;
  lags: number[];
  ended: boolean;
  endedEarly: boolean;
  close?: () => void;
}

/** Each kind of watcher as the report names it. */
const KIND_NAMES: Record<Watcher['kind'], string> = { all: 'unfiltered', label: 'label-selected', node: 'node-selected', none: 'matching nothing' };

/** Every delivery's lag, and when it arrived (ms since the epoch), in arrival order. */
interface Deliveries {
  lags: number[];
  at: number[];
}

/**
 * Counts each delivered line that carries a stamp and records its lag. It scans the bytes as they come (no
 * decoding to strings): at ~50,000 events/s of ~4-5 KB the watchers' own process is a third of a core already.
 */
function lineReader(w: Watcher, d: Deliveries): (chunk: Buffer) => void {
  let tail: Buffer | undefined;
  const scan = (b: Buffer, now: number): number => {
    let start = 0;
    let stamp = b.indexOf(STAMP_BYTES);
    for (let nl = b.indexOf(10); nl >= 0; nl = b.indexOf(10, start)) {
      if (stamp >= 0 && stamp < start) stamp = b.indexOf(STAMP_BYTES, start);
      if (stamp >= 0 && stamp < nl) {
        const from = stamp + STAMP_BYTES.length;
        const lag = now - Number(b.toString('latin1', from, b.indexOf(34, from)));
        d.lags.push(lag);
        d.at.push(now);
        w.lags.push(lag);
        w.events++;
      }
      start = nl + 1;
    }
    return start;
  };
  return (chunk) => {
    const now = performance.timeOrigin + performance.now();
    w.bytes += chunk.length;
    if (tail) {
      // Only the line that spans the chunks is joined.
      const nl = chunk.indexOf(10);
      if (nl < 0) {
        tail = Buffer.concat([tail, chunk]);
        return;
      }
      scan(Buffer.concat([tail, chunk.subarray(0, nl + 1)]), now);
      chunk = chunk.subarray(nl + 1);
    }
    const start = scan(chunk, now);
    tail = start < chunk.length ? chunk.subarray(start) : undefined;
  };
}

function openWatch(ep: ClusterEndpoint, w: Watcher, path: string, d: Deliveries, open: () => void, fail: (e: Error) => void): void {
  const req = httpsGet(new URL(path, ep.url), { agent: agentFor(ep), headers: { accept: 'application/json' } }, (res) => {
    if (res.statusCode !== 200) return fail(new Error(`watch ${path}: ${res.statusCode}`));
    open();
    res.on('data', lineReader(w, d));
    res.on('end', () => (w.ended = true));
    res.on('error', () => (w.ended = true));
  });
  req.on('error', (e) => (w.ended ? undefined : fail(e)));
  w.close = () => req.destroy();
}

function openSession(ep: ClusterEndpoint): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    // Go's HTTP/2 transport (client-go's) opens 4 MiB per stream and 1 GiB per connection of receive window.
    const s = http2Connect(ep.url, { ca: ep.caPem, cert: ep.certPem, key: ep.keyPem, settings: { initialWindowSize: 4 << 20 } });
    s.once('error', reject);
    s.once('connect', () => {
      s.setLocalWindowSize(1 << 30);
      resolve(s);
    });
  });
}

function openWatchH2(session: ClientHttp2Session, w: Watcher, path: string, d: Deliveries, open: () => void, fail: (e: Error) => void): void {
  const stream = session.request({ ':path': path, accept: 'application/json' });
  stream.once('response', (headers) => {
    if (headers[':status'] !== 200) return fail(new Error(`watch ${path}: ${headers[':status']}`));
    open();
  });
  stream.on('data', lineReader(w, d));
  stream.on('end', () => (w.ended = true));
  stream.on('error', (e) => (w.ended ? undefined : ((w.ended = true), fail(e))));
  w.close = () => stream.close();
}

interface PhaseResult {
  figures: Record<string, number>;
  lags: ReturnType<typeof summarize>;
  dropped: number;
  droppedKinds: string[];
  /** Each unfiltered watcher's events, and whether it was dropped. */
  unfiltered: Array<{ events: number; dropped: boolean }>;
  made: { ops: number; events: number; ms: number };
}

/** Lets what is in flight arrive: waits until deliveries stop growing. */
async function quiet(lags: number[]): Promise<void> {
  for (let last = -1; last !== lags.length; ) {
    last = lags.length;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** 1,000 watches over one protocol, the churn for `seconds`, and what arrived. */
async function phase(fleet: ScaleFleet, protocol: Protocol, seconds: number, log: (m: string) => void): Promise<PhaseResult> {
  const ep = fleet.gateway;
  const members = fleet.members;
  // The members' process stands for 100 machines, and one full collection of its heap (~0.8 GB at 1M pods, mostly
  // the garbage of serving the gateway's first lists) would stall all 100 at once, which no fleet does: it collects
  // before the watches open. The gateway gets no such help: it collected once after its first listing, as it does in
  // production (src/members/caches.ts), and what it collects from then on is part of the figures.
  const simGc = await fleet.sim({ op: 'gc' });
  log(`06 ${protocol}: members' process collected in ${round(simGc.ms)} ms`);
  const head = await timedGet(ep, '/api/v1/pods?limit=1', { keep: true });
  const rv = /"resourceVersion":"(\d+)"/.exec(head.body!.subarray(0, 4096).toString())![1];
  const apps = ['web', 'api', 'worker', 'cache', 'batch'];
  const rand = prng(6);
  const pick = (n: number) => Math.floor(rand() * n);
  const member = () => `member-${String(pick(members) + 1).padStart(3, '0')}`;
  const watchers: Watcher[] = [];
  for (let i = 0; i < WATCHERS; i++) {
    // 1% unfiltered, 29% app + cluster labels, 35% one node, 35% a label nothing carries; which app, member
    // and node drawn at random, so the selective watchers share the churn evenly.
    const k = i % 100;
    const base = { events: 0, bytes: 0, lags: [] as number[], ended: false, endedEarly: false };
    watchers.push(
      k < 1
        ? { kind: 'all', selector: '', ...base }
        : k < 30
          ? { kind: 'label', selector: `labelSelector=${encodeURIComponent(`app=${apps[pick(apps.length)]},fleetgate.io/cluster=${member()}`)}`, ...base }
          : k < 65
            ? { kind: 'node', selector: `fieldSelector=${encodeURIComponent(`spec.nodeName=${member()}-node-${pick(10) + 1}`)}`, ...base }
            : { kind: 'none', selector: `labelSelector=${encodeURIComponent(`app=absent-${i}`)}`, ...base },
    );
  }
  const d: Deliveries = { lags: [], at: [] };
  const lags = d.lags;
  const sessions = protocol === 'h2' ? await Promise.all(Array.from({ length: H2_SESSIONS }, () => openSession(ep))) : [];
  try {
    const t0 = performance.now();
    // Opened 50 at a time: 1,000 TLS handshakes at once would time out on 2 cores.
    for (let i = 0; i < watchers.length; i += 50) {
      await Promise.all(
        watchers.slice(i, i + 50).map(
          (w, j) =>
            new Promise<void>((resolve, reject) => {
              const path = `/api/v1/namespaces/churn/pods?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}&timeoutSeconds=3600${w.selector ? `&${w.selector}` : ''}`;
              if (protocol === 'h2') openWatchH2(sessions[Math.floor(((i + j) * sessions.length) / watchers.length)]!, w, path, d, resolve, reject);
              else openWatch(ep, w, path, d, resolve, reject);
            }),
        ),
      );
    }
    log(`06 ${protocol}: ${watchers.length} watches open in ${round(performance.now() - t0)} ms; churning ${RATE}/s for ${WARMUP_S} s, then for ${seconds} s measured`);
    // The churn at its full rate, watches open, before the measured window: from idle, every process's code and
    // memory for it (the gateway's fan-out, the watchers' reading, the members' changes) takes its first seconds to
    // reach speed, and the lag climbs there. Its figures are kept (warmup_*); a watcher dropped in it counts as
    // dropped. Then counts start again once nothing more arrives.
    await fleet.sim({ op: 'churn', rate: RATE });
    await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
    await fleet.sim({ op: 'stopChurn' });
    await quiet(lags);
    const warmup = summarize(lags);
    const warmupDropped = watchers.filter((w) => w.ended).length;
    log(`06 ${protocol}: warm-up ${lags.length} events delivered, lag p99 ${round(warmup.p99)} ms, ${warmupDropped} dropped`);
    lags.length = 0;
    d.at.length = 0;
    for (const w of watchers) {
      w.events = 0;
      w.bytes = 0;
      w.lags.length = 0;
    }
    const counters0 = await fleet.gw({ op: 'memberCounters' });
    const cpu0 = await fleet.gw({ op: 'cpu' });
    await fleet.gw({ op: 'stampLag', start: true });
    const sim0 = await fleet.sim({ op: 'cpu' });
    const own0 = process.cpuUsage();
    const machine0 = machineCpuTicks();
    await fleet.gw({ op: 'loopDelay', start: true });
    await fleet.sim({ op: 'loopDelay', start: true });
    ownLoop(true);
    const c0 = performance.now();
    await fleet.sim({ op: 'churn', rate: RATE });
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const made = await fleet.sim({ op: 'stopChurn' });
    const churnMs = performance.now() - c0;
    const steal = stealShare(machine0, machineCpuTicks());
    const loops = { gateway: (await fleet.gw({ op: 'loopDelay', start: false })) as LoopDelay, members: (await fleet.sim({ op: 'loopDelay', start: false })) as LoopDelay, watchers: ownLoop(false)! };
    await quiet(lags);
    const cpu1 = await fleet.gw({ op: 'cpu' });
    const intake = await fleet.gw({ op: 'stampLag', start: false });
    const counters1 = await fleet.gw({ op: 'memberCounters' });
    const own = process.cpuUsage(own0);
    const sim1 = await fleet.sim({ op: 'cpu' });
    const simShare = (sim1.user - sim0.user + sim1.system - sim0.system) / 1000 / churnMs;
    for (const w of watchers) w.endedEarly = w.ended;
    const delivered = lags.length;
    const cpuUs = cpu1.user - cpu0.user + (cpu1.system - cpu0.system);
    // The gateway's main thread (intake and fan-out): on a core, and runnable but waiting for one.
    const gwBusy = (cpu1.sched.runNs - cpu0.sched.runNs) / 1e6 / churnMs;
    const gwWaiting = (cpu1.sched.waitNs - cpu0.sched.waitNs) / 1e6 / churnMs;
    const s = summarize(lags);
    // The churn's first seconds apart from the rest: every process starts the churn from idle, and the lag climbs
    // there before it settles (or does not).
    const settledFrom = performance.timeOrigin + c0 + SETTLE_MS;
    const early = summarize(lags.filter((_, i) => d.at[i]! < settledFrom));
    const settled = summarize(lags.filter((_, i) => d.at[i]! >= settledFrom));
    // The churn second by second: how many seconds' lag p99 reached the goal, and the typical second's p99 (a
    // collection or a stall shows as a few bad seconds; a machine too small for the load as all of them).
    const bySecond = new Map<number, number[]>();
    for (let i = 0; i < lags.length; i++) {
      const sec = Math.floor((d.at[i]! - performance.timeOrigin - c0) / 1000);
      if (sec < 0 || sec >= seconds) continue;
      let b = bySecond.get(sec);
      if (!b) bySecond.set(sec, (b = []));
      b.push(lags[i]!);
    }
    // In order, to be lined up with a --trace-gc log or a perf capture of the same run.
    const secondsInOrder = [...bySecond.entries()].sort(([a], [b]) => a - b).map(([, b]) => summarize(b).p99);
    log(`06 ${protocol}: lag p99 by second of the churn from ${new Date(performance.timeOrigin + c0).toISOString().slice(11, 19)}: ${secondsInOrder.map((p) => round(p, 0)).join(' ')} ms`);
    const secondP99s = [...secondsInOrder].sort((a, b) => a - b);
    const secondsOverGoal = secondP99s.filter((p) => p >= 100).length;
    const medianSecondP99 = secondP99s[Math.floor(secondP99s.length / 2)] ?? NaN;
    const dropped = watchers.filter((w) => w.endedEarly);
    const perKind = (k: Watcher['kind']) => watchers.filter((w) => w.kind === k).reduce((a, w) => a + w.events, 0);
    // What the watchers asked for: an unfiltered watcher every change the members made, a dropped one included; a
    // selective one what it got (a lower bound if one of those was dropped).
    const asked = watchers.reduce((a, w) => a + (w.kind === 'all' ? made.events : w.events), 0);
    const bytesPerEvent = watchers.reduce((a, w) => a + w.bytes, 0) / Math.max(1, delivered);
    const p99Of = (k: Watcher['kind']) => round(summarize(watchers.filter((w) => w.kind === k).flatMap((w) => w.lags)).p99);
    log(`06 ${protocol}: ${delivered} events delivered, lag p50 ${round(s.p50)} p99 ${round(s.p99)} ms (p99 in the first ${SETTLE_MS / 1000} s ${round(early.p99)}, after ${round(settled.p99)}; unfiltered ${p99Of('all')}, label ${p99Of('label')}, node ${p99Of('node')}; at the gateway's store p50 ${round(intake.p50)} p99 ${round(intake.p99)}; ${secondsOverGoal} of ${secondP99s.length} seconds at p99 >= 100 ms, the median second's p99 ${round(medianSecondP99)} ms), ${dropped.length} dropped, ${round(cpuUs / delivered, 1)} µs gateway CPU per event; member relists ${counters1.relists - counters0.relists}, watch restarts ${counters1.watchRestarts - counters0.watchRestarts}; CPU share gateway ${round(cpuUs / 1000 / churnMs, 2)} (main thread on a core ${round(gwBusy, 2)}, waiting for one ${round(gwWaiting, 2)}), watchers ${round((own.user + own.system) / 1000 / churnMs, 2)}, members ${round(simShare, 2)}; event-loop delay p99 gateway ${round(loops.gateway.p99)} ms, watchers ${round(loops.watchers.p99)}, members ${round(loops.members.p99)}`);
    return {
      figures: {
        churn_s: round(churnMs / 1000),
        changes_made: made.ops,
        changes_made_per_s: round(made.ops / (made.ms / 1000)),
        delivered_events: delivered,
        delivered_per_s: round(delivered / (churnMs / 1000)),
        delivered_unfiltered: perKind('all'),
        delivered_label: perKind('label'),
        delivered_node: perKind('node'),
        delivered_none: perKind('none'),
        member_changes_made: made.events,
        asked_events: asked,
        asked_per_s: round(asked / (churnMs / 1000)),
        asked_MB_per_s: round((asked * bytesPerEvent) / 1e6 / (churnMs / 1000)),
        delivered_to_asked_ratio: round(delivered / Math.max(1, asked), 3),
        lag_p50_ms: round(s.p50),
        lag_p90_ms: round(s.p90),
        lag_p99_ms: round(s.p99),
        lag_max_ms: round(s.max),
        lag_p99_unfiltered_ms: p99Of('all'),
        lag_p99_label_ms: p99Of('label'),
        lag_p99_node_ms: p99Of('node'),
        warmup_s: WARMUP_S,
        warmup_lag_p99_ms: round(warmup.p99),
        warmup_dropped_watchers: warmupDropped,
        lag_p99_first_3s_ms: round(early.p99),
        seconds_lag_p99_over_goal: secondsOverGoal,
        lag_p99_median_second_ms: round(medianSecondP99),
        lag_p99_after_3s_ms: round(settled.p99),
        // The same stamps read where the gateway's cache stores the change: what the members and the gateway's
        // intake add before the fan-out starts.
        intake_lag_p50_ms: round(intake.p50),
        intake_lag_p99_ms: round(intake.p99),
        dropped_watchers: dropped.length,
        // The gateway's own watches of the members over the churn: a relist reads a member's whole list again.
        member_relists: counters1.relists - counters0.relists,
        member_watch_restarts: counters1.watchRestarts - counters0.watchRestarts,
        gateway_cpu_us_per_event: round(cpuUs / delivered, 2),
        gateway_cpu_share: round(cpuUs / 1000 / churnMs, 3),
        gateway_thread_busy_share: round(gwBusy, 3),
        gateway_thread_runqueue_share: round(gwWaiting, 3),
        // The watchers' own process (TLS, HTTP and finding the stamps), over the same time.
        client_cpu_share: round((own.user + own.system) / 1000 / churnMs, 3),
        sim_cpu_share: round(simShare, 3),
        // How long ready work waited for each process's thread over the churn (event-loop delay): the watchers'
        // own share of the lag, and the gateway's and the members'.
        gateway_loop_delay_p99_ms: round(loops.gateway.p99),
        gateway_loop_delay_max_ms: round(loops.gateway.max),
        members_loop_delay_p99_ms: round(loops.members.p99),
        watchers_loop_delay_p99_ms: round(loops.watchers.p99),
        watchers_loop_delay_max_ms: round(loops.watchers.max),
        // The machine's CPU time the host took for others over the churn (steal, /proc/stat).
        host_steal_share: round(steal, 3),
      },
      lags: s,
      dropped: dropped.length,
      droppedKinds: [...new Set(dropped.map((w) => w.kind))],
      unfiltered: watchers.filter((w) => w.kind === 'all').map((w) => ({ events: w.events, dropped: w.endedEarly })),
      made,
    };
  } finally {
    for (const w of watchers) {
      w.ended = true;
      w.close?.();
    }
    for (const s of sessions) s.close();
  }
}

export const run: Scenario = async ({ quick, log }) => {
  const { members, podsPerMember } = scaleFor(quick);
  const fleet = await startScale({ members, podsPerMember, log });
  try {
    const seconds = quick ? 10 : 30;
    // Start the churn's namespace first, then watch from the current version.
    await fleet.sim({ op: 'churn', rate: 0 });
    await fleet.sim({ op: 'stopChurn' });
    // FLEETGATE_BENCH_WATCH_ONLY=h2|http/1.1 runs one phase (for profiling one protocol); the figures of the
    // other are then absent.
    const only = process.env.FLEETGATE_BENCH_WATCH_ONLY;
    const h2 = only === 'http/1.1' ? undefined : await phase(fleet, 'h2', seconds, log);
    const h1 = only === 'h2' ? undefined : await phase(fleet, 'http/1.1', seconds, log);
    const phases = [['h2', h2], ['http/1.1', h1]].filter((p): p is [Protocol, PhaseResult] => p[1] !== undefined);
    const key = (p: Protocol) => (p === 'h2' ? 'h2' : 'http1');
    // Met only if every phase run meets it: clients come both ways.
    const met = phases.every(([, r]) => r.lags.p99 < 100 && r.dropped === 0);
    const notes = [
      scaleNote(members, podsPerMember),
      `${WATCHERS} watches (10 unfiltered on the churn namespace, 290 app+cluster labels, 350 spec.nodeName, 350 matching nothing), ${RATE} changes/s for ${seconds} s (40% create, 40% update, 20% update+delete) per phase, measured after ${WARMUP_S} s of the same churn with the watches open (from idle the lag climbs in the churn's first seconds; the warm-up's lag p99 and drops are figures, warmup_*, and a watcher it dropped counts as dropped)`,
      `two phases on the same fleet: h2, the watches as client-go opens them (HTTP/2 through ALPN, one connection per client process: ${H2_SESSIONS} connections of ${WATCHERS / H2_SESSIONS} streams, each with the same mix of selectors); then http/1.1, a connection per watch. The goal is judged on both`,
      'lag is measured in the benchmark process, which also parses every delivered line: its own event loop is part of the figure; the three processes share 2 cores',
    ];
    for (const [name, r] of phases) {
      const kept = r.unfiltered.filter((u) => !u.dropped).map((u) => u.events);
      const cut = r.unfiltered.filter((u) => u.dropped).map((u) => u.events);
      const agree = (xs: number[]) => Math.min(...xs) === Math.max(...xs);
      const span = (xs: number[]) => (agree(xs) ? `${xs[0]}` : `${Math.min(...xs)}-${Math.max(...xs)}`);
      const unfiltered = [
        kept.length ? `${kept.length} unfiltered watchers saw ${agree(kept) ? 'the same ' : ''}${span(kept)} events${agree(kept) ? '' : ' (they should agree)'} of the ${r.made.events} the members made` : '',
        cut.length ? `${cut.length}${kept.length ? '' : ' unfiltered watchers'} were dropped after ${span(cut)} events` : '',
      ].filter(Boolean).join(', ');
      notes.push(`${name}: the watchers asked for ${Math.round(Number(r.figures.asked_per_s)).toLocaleString('en-US')} events/s (${Math.round(Number(r.figures.asked_MB_per_s))} MB/s) and got ${round(Number(r.figures.delivered_to_asked_ratio) * 100, 0)}% of them; ${unfiltered}; lag p99 ${round(r.lags.p99)} ms${r.lags.p99 >= 100 ? `, ${round(r.lags.p99 - 100)} ms over the goal` : ''}; ${r.dropped} dropped${r.dropped ? ` (${r.droppedKinds.join(', ')})` : ''}; the gateway's main thread (intake and fan-out) was on a core ${round(Number(r.figures.gateway_thread_busy_share) * 100, 0)}% of the churn and runnable but waiting for one ${round(Number(r.figures.gateway_thread_runqueue_share) * 100, 0)}% (schedstat); the host took ${round(Number(r.figures.host_steal_share) * 100, 0)}% of the machine's CPU time for others (steal)`);
      if (r.made.ops / (r.made.ms / 1000) < RATE * 0.95) notes.push(`${name}: the sim made only ${round(r.made.ops / (r.made.ms / 1000))} changes/s of the ${RATE} asked: the members' process is CPU-bound on the cores it shares with the gateway`);
    }
    if (!met) {
      notes.push(
        "in the ninth round of 2026-11-28, looked at and not built: a shortest interval between a watcher's writes (a few milliseconds), so that a busy watcher's events of several loop iterations would leave in one TLS record and syscall. Counted in a quick HTTP/1.1 churn (FLEETGATE_BENCH_WATCH_ONLY=http/1.1, the code as published, a temporary counter in src/cache/watch.ts): the gateway's event loop turned only 6-31 times a second in the churn, and each watcher's events of a turn already left in one write, 3,700-8,700 writes a second for 19,000-33,000 events (4-7 events a write); so the writes are batched past what such an interval would add, and the thread is bound by the work per event (31.4 us of the gateway's CPU per delivered event in that run, on a slow stretch of this VM: a loopback TCP exchange took 134-223 us, against 56 us in scenario 1's published run), not by the number of writes",
        "in the eighth round of 2026-11-28 a watcher's batches go as copies once its connection holds views of 16 shared frame chunks (src/cache/watch.ts; found in review: each ~5 KB frame is a view of a 1 MiB chunk, and a stalled watcher with a narrow selection, one frame in each chunk, held 802 MiB of chunks for 8 MiB of frames; 24 MiB with the change). Two alternating quick pairs against the commit before (1f55cc9, in a worktree; npm run bench -- --quick --no-publish 6): over h2 lag p99 46 and 92 ms against 108 and 117 ms, the gateway's CPU per delivered event 22.2 and 26.8 us against 25.7 and 17.4 us; over HTTP/1.1 269 and 388 ms against 338 and 314 ms, 32.8 and 22.2 us against 31.3 and 33.2 us; the unfiltered watchers were dropped in the warm-up in all four runs (quick scale, the three processes on the 2 cores): no sign of a cost. Not run at 1M this round",
        "also in the fourth round of 2026-11-28: a watch event's frame, encoded once per form for every watcher, is copied into its frame chunk (a SharedArrayBuffer) with one memcpy instead of V8's relaxed atomic copy (src/api/offheap.ts copyBytes; see scenario 5): ~2 us less per 5 KB pod encoded, and the same for each pod a change stores in the cache's slab. Not measured at 1M that round",
        "in the fourth round of 2026-11-28, tried and not kept: ending a watch only when its client does not keep up, where 16 MiB unsent ends it at once (src/cache/watch.ts): past 16 MiB a watch had 5 s to get back under, and past 64 MiB it was ended at once, so that the burst every watcher gets after a stall of the gateway's own (the published HTTP/1.1 run before: 9 unfiltered watchers ended in a 1 s stall near the end of the churn) would not end watchers whose clients still read. On a slow stretch of this VM (the sim ~2x as long to generate its 1M pods as the round before; 40-100 us of the gateway's CPU per delivered event, against 22-25 us), with it: two full runs, h2 lag p99 3,452 and 6,752 ms, HTTP/1.1 21.8 and 22.4 s, the 10 unfiltered watchers ended in each phase; one alternating pair of HTTP/1.1-only runs against the commit before (3ed57ae, in a worktree; FLEETGATE_BENCH_WATCH_ONLY=http/1.1): lag p99 11.0 s with it against 2.0 s, the 10 unfiltered ended in both. Without the grace they were ended once 2.5 s behind and the other watchers recovered to ~150 ms a second; with it the machine, unable to carry every watcher, kept serving the 10 that could not keep up (their unsent bytes went back under 16 MiB now and then, which started their grace over) while the lag of every watcher climbed to 12 s (label and node watchers p99 5.5 s against 1.4 s). Ending a watcher that falls behind is what keeps the others served; reverted, and no run of this round was published",
        "in the third round of 2026-11-28 each change's pod is checked by the WebAssembly scan before the intake reads it (src/api/jsonscan.ts; see scenario 5): 7.2 us an event against 14.0 us for a 5 KB pod (test/bench/scratch/podbytes.ts). In a node --cpu-prof of the HTTP/1.1 churn at quick scale (FLEETGATE_BENCH_WATCH_ONLY=http/1.1, the code before) the byte scanner had taken ~0.85 s of the main thread's ~9 s busy, and writev (a TLS record and a socket write per watcher) 3.8 s. The gateway's CPU per delivered event was level in the published run (22.1 and 25.4 us against 21.9 and 25.4 us in the round before): a change's intake is shared by every watcher it reaches. This round's 1M runs, all on a slow stretch of this VM: with the code before, HTTP/1.1 alone with --trace-gc, 164 ms with none dropped (no mark in its churn; four marks back to back while its 1,000 connections opened and in the warm-up), and one full run, 1,459 ms over HTTP/2 and 2,183 ms over HTTP/1.1, the 10 unfiltered watchers dropped in both; with the scan, the published run (273 ms over HTTP/2, none dropped; 1,440 ms over HTTP/1.1, 9 of the unfiltered dropped in a 1 s stall of the event loop in the churn's last 2 s), one with --trace-gc (580 ms over HTTP/2, none dropped, its worst seconds 0.5-0.8 s with no mark in the churn; 1,861 ms over HTTP/1.1 with the 10 dropped, the lag climbing from its 8th second to 0.3-0.6 s a second, and two marks 21 and 23 s in lining up with its worst seconds, 1.1-2.5 s) and one full run right after the one with the code before (377 ms over HTTP/2, none dropped; 229 ms over HTTP/1.1 after a warm-up that dropped the 10 unfiltered)",
        "in the second round of 2026-11-28 the gateway runs with V8's young generation at 64 MiB a semi-space, as the image and the chart now start node (src/cache/younggen.ts; node's default is 16 MiB). Found with --trace-gc of the gateway at 1M pods: a young collection came every ~0.5 s of the churn, and much of the fan-out's short-lived work was still alive at two of them running and was promoted, so the old generation grew ~3.5 MB/s where what the event window keeps on purpose is ~1.4 MB/s (~700 B per change), and V8 marked the ~0.6 GB heap once or twice in each 30 s of churn; each of those marks lined up with the seconds whose lag p99 reached 0.4-2 s. Two alternating pairs of h2-only 1M runs (FLEETGATE_BENCH_WATCH_ONLY=h2, --trace-gc, the flag given to the gateway alone): the old generation grew 3.50 and 3.91 MB/s over the 30 s churn with 16 MiB against 1.37 and 1.25 MB/s with 64; full marks in the churn 2 and 1 against 0 and 0; young collections 55 and 58 (624 and 581 ms in all, ~10-11 ms each at p50) against 26 and 21 (426 and 230 ms, ~10-14 ms each). Lag p99 572 ms (none dropped) and 1,949 ms (the 10 unfiltered dropped; the spike came in the churn's last 3 s, with a mark) against 2,098 ms (the 10 unfiltered dropped) and 139 ms (none dropped). The 2,098 ms run had no mark and no young collection over 31 ms in its churn: over the churn the gateway's main thread waited for a core 32% of the time (17-24% in the other three runs) while the three processes used 1.1 of the 2 cores (1.5-1.7 in the others), and its lag p99 was 0.1-2.3 s in each of the first 20 seconds and 13-22 ms in each of the last 9, so that run is the machine's spread, not the setting. From this round the benchmark's own process, whose watchers read the events, runs with 64 MiB as well (npm run bench)",
        "in the first round of 2026-11-28 the gateway's heap holds fewer objects per cached pod and per change, so a full mark has less to visit and less is promoted: pods of a cluster with the same labels share one frozen labels object, a pod's resourceVersion and its member's are no longer an object each, and a new version of a pod keeps its old version's labels and fields objects and strings while they are equal (scenario 4: JS heap ~620 -> ~530 B per cached pod; what a pod update leaves in the event window ~270 -> ~110 B, test/bench/scratch/updates.ts). Two alternating pairs of full 1M runs (npm run bench -- --no-publish 6) against the commit before (4648cae, in a worktree), with all but the last of these changes: over HTTP/1.1 lag p99 212 and 202 ms with nothing dropped against 1,605 and 1,376 ms with the 10 unfiltered watchers dropped (the event loop held at most 208 and 257 ms against 814 and 860 ms; no 1M run on record before had dropped none over HTTP/1.1); over HTTP/2 96 and 34 ms against 54 and 39 ms, nothing dropped in any (a faster stretch of this VM than the runs before; the same code's first run gave 236 ms over HTTP/2 and 299 ms over HTTP/1.1, nothing dropped). With the last change too, two alternating quick pairs (h2 only, --trace-gc): the old generation grew 1.39 and 1.41 MB/s over the churn against 1.57 and 1.58 MB/s (lag p99 63 and 61 ms against 100 and 81 ms), so the cache's own objects are a small part of what the churn promotes (~700 B per change of the 2,000 a second); what the rest is (the fan-out's own objects in flight across a young collection, or others) is not placed yet. At 1M with all of these: the published run gave 1,782 ms over HTTP/2 with the 10 unfiltered watchers dropped (the event loop held up to 562 ms) and 435 ms over HTTP/1.1 with none dropped; one more, h2 only with --trace-gc, 299 ms with none dropped, and in its churn one full mark of the 608 MB heap took 402 ms of wall time and 149 ms of the main thread (27 ms of pause and 122 ms in 376 steps), where the fifth round's mark of ~1 GB took 0.94 s and 325 ms of steps. A second h2-only run with --trace-gc gave 1,331 ms with the 10 unfiltered dropped (12 of its 30 seconds at a p99 of 100 ms or more, the event loop held up to 749 ms): two full marks came in its churn 9 s apart, 675 and 471 ms of wall time (226 and 155 ms of the main thread), the second with the heap only ~18 MB past what the first kept, so not started by the heap's limit; what else held it over those 12 seconds is not placed. So over HTTP/1.1 nothing was dropped in any of the four 1M runs of this round's code; over HTTP/2 the spread is as wide as before (34 ms to 1.8 s). Its runs that dropped the unfiltered watchers show ~33 us of the gateway's CPU per delivered event against 18-23 us in the others: the same intake over fewer deliveries, not more work per event (the process's CPU share was 0.54-0.70 in runs of either kind). One more h2-only run under perf (perf record -a -g over the warm-up and the churn) dropped 8 watchers in the warm-up (its lag p99 1.39 s; the measured window after it 26 ms): in the warm-up's worst half second V8's helper threads of the gateway took 0.9-1.2 of the 2 cores (a concurrent mark of its ~580 MB heap) while the benchmark's own watcher process, whose event loop is part of the measured lag, ran a full collection too, and that process's share fell from ~0.85 of a core to 0.01-0.34. Tried and not kept: the gateway without concurrent marking (node --no-concurrent-marking, so its main thread marks in steps and V8's helpers do not take the cores): h2 only, two alternating 1M pairs, lag p99 66 and 153 ms (the event loop held at most 80 and 103 ms) against 486 and 64 ms (473 and 73 ms), nothing dropped in any: no difference that shows beside the spread",
        "in the ninth round of 2026-11-27, two runs at the full 1M pods (npm run bench -- 6) minutes apart: over HTTP/2 lag p99 1,011 ms with the 10 unfiltered watchers dropped, then 466 ms with none dropped (the published run; its event loop held up to 303 ms at once); over HTTP/1.1 1.7 and 1.9 s, the 10 unfiltered dropped in both. A third, h2 only, with --trace-gc (FLEETGATE_BENCH_GATEWAY_FLAGS): lag p99 47 ms with nothing dropped, the goal, the event loop held at most 68 ms; V8 ran no full mark of the gateway's heap in its churn (the last was the one before ready, 278 ms at 673 MB), and its 392 scavenges took ~10-12 ms each at ~0.8 GB, 37 ms at most. So at 1M the same code meets the goal over HTTP/2 in one run and drops the unfiltered watchers in another; what held the loop 303 ms and 1 s in the others is not placed yet. A node --cpu-prof of the gateway in a run that stalled (h2 only: lag p99 1,975 ms, the loop held up to 1,011 ms) has no stretch of its main thread's JavaScript busy for more than 132 ms in the churn, so it was not the gateway's JS: native work the profile does not attribute to a function (TLS, HTTP/2 framing, page faults in them) or the thread waiting for a core. Tried and not kept: one V8 helper thread instead of 4 (--v8-pool-size=1), in case its GC helpers took the main thread's core: h2 only, three alternating pairs, 95, 254 and 1,841 ms against 479, 489 and 134 ms without (the loop held up to 70, 132 and 916 ms against 418, 344 and 82). Two more runs under perf record: 89 and 64 ms, nothing dropped, no stall to see; a third stalled (lag p99 628 ms, the loop held up to 426 ms, nothing dropped), and perf placed it: for 0.7 s of its churn V8's four helper threads of the gateway (a full mark of its ~0.8 GB heap, marked concurrently) used 1.1-1.35 of the 2 cores, the members' process another ~0.3, and the gateway's main thread got ~0.3 of a core, part of it in the mark's own steps on that thread; the rest of the churn it got 0.4-0.9. So in that run the stall was a full mark of the heap on a machine without a core to spare for it, as in the fifth round. Tried and not kept: every thread of the gateway's process but the main one at nice 10 (V8's helpers, libuv's pool, the touch-ahead thread; set by a temporary change to the benchmark's gateway child), so that the mark's helpers yield the core to the event loop: h2 only, three alternating pairs, 102, 39 and 2,092 ms (the last with the 10 unfiltered dropped, the loop held up to 1,151 ms) against 76, 1,333 and 587 ms: no difference that shows beside the spread. The scenario now states its bound apart (the report's list of missed goals) from the run's own figures",
        "in the eighth round of 2026-11-27 the pods store has its next slabs made resident by a helper thread while members' pod lists are under way (src/api/touchahead.ts, cache.touchAheadBytes; scenario 5). Asked for all the time it cost the churn at quick scale (h2, four alternating pairs: 16-29 us of the gateway's CPU per event against 15-18 us, 2-9 watchers dropped against 0-3), so it asks only during lists; one quick pair after that: 13.5 against 13.6 us per event, nothing dropped in either. At the full 1M pods (h2 only, npm run bench -- --no-publish 6 with FLEETGATE_BENCH_WATCH_ONLY=h2), two alternating pairs with it on and off: lag p99 1,474 and 105 ms with 10 and 0 dropped on, 957 and 1,150 ms with 6 and 10 dropped off (22-36 us of CPU per event either way): the stretch's noise, no sign of a cost",
        "in the seventh round of 2026-11-27, what starts the marks for external memory pressure over HTTP/1.1 (found, not fixed). V8 counts memory outside its heap that native code reports to it, and Node's TLS reports ~50 KB for each connection (its TLSWrap) and the encrypted bytes a connection has not yet handed to the kernel (its output buffers). Neither shows in process.memoryUsage().external or v8.getHeapStatistics().external_memory, which is why the samples of the round before found nothing; V8's own count is printed by --trace-gc-verbose ('External memory reported'). A bare Node 20 TLS server holding 1,000 connections: 2.06 -> 2.07 MB by those two, 114 MB by V8's count, and V8 started a mark for it. In quick HTTP/1.1 runs V8's count went from ~50 MB before the watches opened to ~90-160 MB once they had, and to 385-409 MB in the warm-up (three runs), mostly the encrypted backlog of the connections behind (unsent bytes per watcher up to ~7 MB, ~143 MB over all at the peak), and every 64 MiB of it past the last mark started one. At 1M pods (one HTTP/1.1 run, the code as it is): ~25 -> ~330 MB within ~8 s of the watches opening, four marks of the ~0.6 GB heap for it, lag p99 2.6 s with the ten unfiltered watchers dropped (433 ms after the first 3 s). Tried and not kept: handing a connection at most 64 KiB (or 1 MiB) of unsent bytes and keeping the rest as references to the frames every watcher shares until 'drain'. V8's count then peaked at 246-254 MB, but it still started 1-3 marks, and the ten unfiltered watchers were dropped in each of three alternating quick pairs, where the code as it is dropped none (lag p99 136, 156 and 176 ms; 16-17 us of the gateway's CPU per event): a connection that is behind then gets at most that much per turn of the event loop, and in the warm-up the gateway's turns ran ~250 ms (one dropped watcher: 4 waits for 'drain' of ~250 ms each, 4.8 MB written, 15.7 MB still queued). The encrypted backlog is what keeps a slow connection fed across a long turn, so on this path V8's count is the price of throughput. Next lever: the TLS of watch connections in worker threads, whose own small heaps would take these marks instead of the cache's",
        "in the fifth round of 2026-11-27, at quick scale. (1) The gateway's heap (~120 MB) was marked every ~0.5 s through the churn: --trace-incremental-marking showed each mark started by V8's own task with ~27 MB of room left, on a limit ~1.2 times what the last mark kept, V8's minimum growth for a heap whose marking looks cheap; --trace-gc-nvp ~35 MB/s allocated and 1.5-2 MB/s promoted. Its marking threads took 1.7-2.8 s of CPU over a 14 s recording (perf), on the 2 cores the three processes share. cache.heapGrowingPercent (default 50, src/cache/heapgrowth.ts) gives a heap under 256 MiB 1.5 times: in alternating h2 runs under perf, the gateway's threads other than its main one 0.99 and 0.98 s against 1.73 and 2.68 s, lag p99 107 and 179 ms against 137 and 1,250 ms (node's own flag, two pairs before: 1.03 and 0.66 s against 2.78 and 2.14 s, lag p99 148 and 121 ms against 350 and 254 ms); at 1M pods the heap (~0.9 GB) keeps V8's own growth. (2) Why HTTP/1.1 misses, timed per 200 ms from the warm-up's start: the lag climbs from the first moment for every kind of watcher (median 0.2 s at 0.2 s, 0.75 s at 1 s, 1.3-1.6 s at 2.4 s) until the ten unfiltered watchers are dropped 2.5-3.4 s in, after 3,300-4,100 events each; the remaining ~26,000 events/s are then delivered with a lag p99 of 0.15-0.45 s. Over HTTP/1.1 every event is a TLS record and a write per watcher (27-39 us of the gateway's CPU per event in these runs, 13-16 over HTTP/2), and ~54,000 events/s over 1,000 connections is more than the 2 cores carry beside the watchers and the members. (3) Tried and not kept: on HTTP/1.1 the watch framed each shared frame as its chunk once per event and wrote it to the socket itself, instead of Node's response framing every write (three writes per frame). The main thread used 5-10% less in four alternating pairs, but Node copies a single buffer written to a TLS socket into memory V8 counts (StreamBase::WriteBuffer: a TLS socket takes no trial write), and the marking threads doubled (3.9-4.7 s against 1.8-2.8 s); written as the frame plus its chunk's end (two buffers, one writev, no copy) the gateway's total was level (11.4 and 11.4 s against 11.2 and 12.3 s)",
        "at the full 1M pods, in the sixth round of 2026-11-27 (npm run bench -- --no-publish 6, with --trace-gc): the gateway's JS heap is ~0.56 GB after the collection that ends the sync (~0.9-1 GB before), at ~640 B per cached pod instead of ~926 (see scenarios 4 and 5). Over HTTP/2, lag p99 117 ms with nothing dropped (the median second's 64 ms; event-loop delay max 73 ms, against 964 ms in the round before, when a mark of the ~1 GB heap ended the unfiltered watchers); the marks of ~0.66 GB came between the phases (273 and 499 ms of main-thread steps, 0.46 and 0.74 s of wall time). One HTTP/2-only pair against the commit before (edf6e36, in a worktree): both delivered everything, lag p99 60.8 ms before and 33.8 ms after, event-loop delay max 86.6 and 27.7 ms, ready in 56.9 and 53.4 s, the collection after the sync 651 ms (963 -> 830 MB) and 270 ms (733 -> 561 MB); V8 started no mark in either 30 s churn, so the pair shows the smaller heap's cheaper collections, not a mark avoided. Over HTTP/1.1, three runs: 1.88 s with 10 dropped, 306 ms with 1 dropped, and (HTTP/1.1 alone) 42 ms after a warm-up that dropped the 10 unfiltered. In the two runs traced with --trace-incremental-marking, V8 marked the heap back to back while the 1,000 connections opened and in the warm-up, 3-4 marks in ~5 s of 0.4-0.65 s each, every one started for external memory pressure; in the first run (--trace-gc only) three marks of 0.64-0.67 s came back to back 18 s into the churn. What pushed V8's count of external memory 64 MiB past its level at the last mark was not found then: process.memoryUsage().external, sampled every 100 ms, stayed 12-25 MB (arrayBuffers, which include the uncounted slabs, grew ~50 MB); that figure leaves out what Node's TLS reports to V8 (see the seventh round's note)",
        "at the full 1M pods, in the fifth round of 2026-11-27: the one stall of the gateway's event loop that ends the unfiltered watchers (last round: not yet placed) is a full mark of its ~1 GB heap. V8 starts one when the heap has grown ~150 MB past what the collection after the sync kept, ~30 s into the churn at ~4.7 MB/s promoted (the event window's objects, which die when they leave it). In a run with --trace-gc, the event loop timed every 5 ms and perf over the whole machine: the mark took 0.94 s of wall time, of which the main thread spent 325 ms in 282 marking steps (up to 17 ms each); for those ~1.3 s V8's four marking threads took ~1 core of the 2 (0.24-0.26 each), leaving the gateway's main thread 0.43 of a core (0.76 before), the members 0.41 (0.54) and the watchers 0.06 (0.27). The gateway's event loop was held 0.64, 0.47, 0.27 and 0.15 s, the members' up to 0.29 s, and the lag p99 rose past 1 s: the ten unfiltered watchers were dropped (h2 lag p99 1.16 s in that run; 2.0 s over HTTP/2 and 0.63 s over HTTP/1.1 in this round's plain run, gateway_loop_delay_max_ms 964 and 696; 173 ms with nothing dropped in an earlier run). With one marking thread (node --v8-pool-size=1) the main thread did more of the marking itself (733 ms in 495 steps over 1.25 s) and was held 0.78 and 1.0 s: no better. What bounds it is the work of marking ~1 GB (~925 B of JS heap per cached pod: its labels and fields as objects, its key and index entries) on cores the members and the watchers use too; next lever: the pods' labels and fields out of the JS heap",
        "at the full 1M pods across 100 members (npm run bench -- 6, 30 s of churn measured per phase), in the fourth round of 2026-11-27, on this round's final code: the first run gave h2 lag p99 80.4 ms with nothing dropped (the goal; 1 of the 30 seconds had a p99 of 100 ms or more, the median second's p99 was 32 ms; intake lag p99 27.9 ms; 21.3 us of the gateway's CPU per event) and HTTP/1.1 2.07 s with the ten unfiltered watchers dropped (4 of 30 seconds at 100 ms or more, the median second 22 ms, intake p99 1.19 s). It did not repeat: two runs of the same code some 50 minutes later (one with --trace-gc) gave h2 2.36 and 2.63 s with the ten dropped (10 and 14 of 30 seconds at 100 ms or more, the median second 47 and 100 ms; HTTP/1.1 2.67 s, ten dropped), and in them the gateway's event loop was held once for 0.95-1.4 s (gateway_loop_delay_max_ms; 56 ms in the good run) while --trace-gc showed no pause longer than 57 ms and one incremental mark: what held it is the next thing to find. Also tried and not kept: holding a watcher's events as references once its connection was 1 MiB behind, until it drained (so TLS would not copy them into buffers V8 counts): h2 1.8 s and HTTP/1.1 2.3 s in its one run, in the same slow stretch. What had held changes back at 1M, found this round by timing the lag second by second and each process's event-loop delay (figures now: seconds_lag_p99_over_goal, lag_p99_median_second_ms, *_loop_delay_*), beside --trace-gc and --trace-incremental-marking of both processes: every stall lined up with a full mark of a ~1 GB heap, in the gateway or in the members' process. Between marks the per-second p99 was 12-40 ms; in the second or two of each it was 0.5-1.5 s, and the intake lag alone went from ~12 ms to 0.5-1 s (the main threads looked half idle because the marking threads had the cores). The gateway marked every ~6 s, each started by V8's external-memory pressure while its old generation was far below its limit (958 of 3,361 MB): watch frames (~14 MB/s, SharedArrayBuffers) used up the fixed 64 MiB allowed to await collection in ~5 s, after which new slabs were ordinary buffers V8 counts; a deleted pod's last state (~2 MB/s, kept in the event window) was counted too; and the first mark after the cold sync came a few seconds into the churn. Changed: the allowance grows to an eighth of the slabs held (~650 MB at 1M; src/api/offheap.ts), last states go into the slabs, and the gateway collects its heap once after the first listing, before /readyz says ready (src/members/caches.ts; ~0.5 s at 1M, post_sync_collection_ms in scenario 5). The members' process stands for 100 machines and one mark of its heap stalls them all: it marked every ~12 s as its heap grew with the churn's pods, so it now collects before the watches open and grows twice as far before marking (--heap-growing-percent=100; bench only). Full marks during the 30 s h2 churn (runs with --trace-gc): the gateway 5 -> 1-2, the members 4 -> 0. Not yet explained: the gateway still starts a mark about every 12 s from external-memory pressure, from memory V8 counts that the Buffer allocations we could see do not account for (process.memoryUsage().external grew ~1 MB/s; the read path's short-lived copies, ~10 MB/s, do not survive to count), and with 1,000 TLS connections (HTTP/1.1) one such mark dropped the unfiltered watchers. Before this round (third round of 2026-11-27, four h2 runs): h2 1.2-2.1 s with the ten unfiltered watchers dropped in every run, HTTP/1.1 1.8 s",
        "in the second round of 2026-11-27 (perf record -e cpu-clock -g over the whole machine during the h2 churn, beside node --cpu-prof): with glibc.malloc.hugetlb=1, which the image and these runs set until then, the kernel zeroing fresh huge pages (clear_page_erms under do_huge_pmd_anonymous_page) was 35-46% of the gateway thread's samples, from the memcpy into the large buffers that Http2Session::SendPendingData and the TLS BIO write each answer through (new memory each time). The tunable is gone (see docs/operations.md, Memory): in alternating runs the h2 lag p99 went from 2.7, 5.3 and 8.2 s to 1.8, 2.5 and 4.3 s (HTTP/1.1 2.1-3.5 s either way), and copies with their faults fell to ~8% of the thread. Runs now split in two: in some none of the ten unfiltered watchers is dropped, and then the gateway delivers all the watchers ask (~53,600 events/s, ~286 MB/s at quick scale) at ~15 us of its CPU per event with lag p99 0.35-0.55 s; in the others some or all ten are dropped in the churn's first seconds. Lag over the churn in half-second steps (three h2 runs): it climbs to 0.5-2 s in the first ~2.5 s, then settles at a p99 of 30-150 ms per step, with swells of 200-500 ms; a 3 s churn at 500/s before the measured one (watches open, nothing dropped) did not remove the climb, but 2 s at the full rate did: in alternating h2 runs (later, on a faster stretch of the VM, when no run dropped anything) lag p99 608 and 671 ms from cold (730 and 776 ms in the first 3 s), 255 and 115 ms after the 2 s (193 and 41 ms in the first 3 s); so each phase now runs 2 s of churn before its measured window and reports the warm-up apart. In the runs from cold on that faster stretch, nothing was dropped and the lag p99 was 0.21-0.55 s, 28-200 ms after the first 3 s, at 12.4-14.9 us of the gateway's CPU per event; a larger young generation for the gateway (--min-semi-space-size=16) changed nothing that shows (first 3 s p99 212-493 ms against 354-547). That is a machine at the edge of its capacity: over the churn the whole machine was idle ~4% of the time (perf), the gateway's main thread ~0.75 of a core, the members' ~0.5 (0.41 since the churn keeps its own pods instead of parsing them back), the watchers' ~0.4-0.5. Of the gateway thread (perf, without the tunable): reading the members' watch streams and everything done in those reads (the intake, the store and handing each change to its watchers) ~52%; HTTP/2 sending (nghttp2 framing, AES-GCM at 7.5% of the thread, copies) ~17%; the rest of the JS (flushing the watchers' queues into their streams, timers) ~25%. Changed as well: a watch of several label equalities listens under all of them (called ~6 times per change here instead of ~29), a watch's encoded-event keys are made once; no change out of the noise on their own",
        "in the round of 2026-11-27 (node --cpu-prof of the gateway child over the h2 churn at quick scale, its last 12 s): the gateway's main thread was on a core ~72% of the churn and runnable but waiting for one ~25%, so it asked for ~97% of a core; in the churn window the intake of the members' watch events was ~41% of its samples inclusive, of which handing each change to the watchers under its trigger value (Store dispatch: selectors checked, the event encoded once per form, queued) ~25%, and native work outside JS frames (HTTP/2 framing, TLS, socket writes) ~16%. A watcher is called for every change under its trigger value; changed this round: of several label equalities, a watch now takes the value the fewest objects carry (fleetgate.io/cluster=c for these, ~29 label watchers called per change, ~6 of them matching; it took the first, app=X, ~58 per change), and a deletion's last state has its resourceVersion spliced into the pod's bytes instead of a parse and a serialization (objectOf in Store.remove was 2.9% of those samples). Not a relist: the members' relists and watch restarts over the churn are figures now (member_relists, member_watch_restarts; 0 and 0 in this round's runs). Not the gateway's priority: its threads at nice -5 (one run) still waited for a core ~18% of the churn, lag p99 1.6 s against 2.3 s in the run before, within this scenario's spread",
        'what bounds it (four rounds before this one: node --cpu-prof of the gateway per phase at quick scale, FLEETGATE_BENCH_CPUPROF and FLEETGATE_BENCH_WATCH_ONLY, and the three processes\' CPU over the churn): the two cores. Gateway, watchers and members together used 1.7-1.9 of the 2 cores (gateway 0.75-0.9, the watchers\' process 0.4-0.55 reading ~30,000 events/s of ~5 KB over TLS, the members 0.45-0.6 making and serving the changes), and the gateway\'s one thread does both the intake and the fan-out: when it falls behind, changes wait before its store (intake_lag: p50 7-60 ms and p99 0.35-0.75 s in the better h2 runs, seconds in the worse) and every watcher\'s lag includes that wait. Of the gateway\'s busy time in the h2 profile: native HTTP/2 framing, TLS and socket writes ~3.1 s, the fan-out in JS (Store record, selector match, queueing) ~1.6 s, GC ~0.9 s, new slabs and frames outside the heap ~0.9 s, the intake by bytes ~1 s; over HTTP/1.1 socket writes (a TLS record and syscall per watcher per iteration) ~3.6 s. Runs of the same code vary 3-10x in lag on this shared machine (h2 p50 57 ms to 8 s). The unfiltered watchers are the ones dropped: each asks 2,400 events/s x ~5 KB = 12 MB/s, and once the gateway is behind by 16 MiB (about 1.4 s of that) for one of them it ends that watch, as kube-apiserver\'s cacher ends a watcher whose buffer is full (its client re-watches from its last resourceVersion; these do not, so their counts stop there)',
        'three rounds before this one: the cache\'s slabs are SharedArrayBuffers, which V8 does not count as memory outside its heap (src/cache/arena.ts), so new slabs during the churn no longer start marks or marking steps (h2 gateway CPU per event 22.6-25.8 us in its runs without the profiler, 29.2 us before; the lag still varies from run to run as below). Four rounds before: events of one iteration are written corked (one writev per watcher, no buffer joined per watcher: 2.4 s of 17.5 s busy in the profile before), pods\' watch events are read as bytes like list pages (no JSON.parse and JSON.stringify per change), event frames are cut from 1 MiB chunks and slabs grow with the cache (fewer buffers outside V8\'s heap, each of which makes the main thread do a marking step while V8 marks), and HTTP/2 connections take at most 1,000 streams (kube-apiserver\'s setting). Next levers: the TLS writes of watch streams off the main thread (worker threads owning watch connections), and fewer bytes per event for watchers that allow it (protobuf, or PartialObjectMetadata)',
      );
    }
    const figureOf = (r: PhaseResult) => (k: string) => Number(r.figures[k]);
    const bound = met
      ? undefined
      : phases
          .map(([name, r]) => `over ${name}, lag p99 ${round(r.lags.p99, 0)} ms against 100 ms${r.lags.p99 >= 100 ? ` (${round(r.lags.p99 / 100, 1)}×)` : ''} and ${r.dropped} watchers dropped${r.dropped ? ` (${r.droppedKinds.map((k) => KIND_NAMES[k as Watcher['kind']] ?? k).join(', ')})` : ''}`)
          .join('; ') +
        ". One thread of the gateway takes in every member change and hands it to every watcher it matches (an event is encoded once per form and shared), so whatever holds that thread holds every watcher back: " +
        phases
          .map(([name, r]) => {
            const f = figureOf(r);
            const cores = round(f('gateway_cpu_share') + f('client_cpu_share') + f('sim_cpu_share'), 2);
            return (
              `over ${name} its event loop was held up to ${round(f('gateway_loop_delay_max_ms'), 0)} ms at once (p99 ${round(f('gateway_loop_delay_p99_ms'), 0)} ms), its intake of the members' changes lagged ${round(f('intake_lag_p99_ms'), 0)} ms at p99, ` +
              `and it was on a core ${round(f('gateway_thread_busy_share') * 100, 0)}% of the churn and runnable but waiting for one ${round(f('gateway_thread_runqueue_share') * 100, 0)}%, ` +
              `delivering ${Math.round(f('delivered_per_s')).toLocaleString('en-US')} events/s at ${round(f('gateway_cpu_us_per_event'), 1)} µs of the gateway's CPU each ` +
              `(the gateway's process ${round(f('gateway_cpu_share'), 2)} of a core, the watchers' ${round(f('client_cpu_share'), 2)}, the members' ${round(f('sim_cpu_share'), 2)}: ${cores} of the ${availableParallelism()})`
            );
          })
          .join('; ') +
        '. Over HTTP/1.1 each event to each watch is a TLS record and a socket write of its own; over HTTP/2 the events of one pass share a connection. ' +
        "A watch more than 16 MiB behind on its socket is ended (src/cache/watch.ts; a kube-apiserver likewise ends a watcher too slow for its buffer): the unfiltered watchers, which take every event, are the first to fall that far behind in a stall. " +
        (quick
          ? "At quick scale, in earlier rounds' --trace-gc runs, the gateway's ~120 MB heap was marked every ~0.5 s through the churn (cache.heapGrowingPercent spaces those out; see the notes)"
          : "At the full 1M pods the stalls placed so far were full marks of the gateway's heap (~0.6-1 GB): --trace-gc in the fifth round of 2026-11-27, and perf in the ninth, where V8's four helper threads marking it took 1.1-1.35 of the 2 cores for 0.7 s and left the main thread ~0.3 of one; with the fewer objects per pod of the first round of 2026-11-28 a mark of the ~0.6 GB heap took 0.4 s of wall time in the one run traced; since the second round of 2026-11-28 the gateway's larger young generation promotes ~1.3 MB/s of churn where it promoted ~3.5, so the old generation reaches the limit at which V8 marks it about a third as fast (no mark in the 30 s churn of either traced run with it, against 2 and 1 without; see the notes)");
    const verdict = `${met ? 'met' : 'missed'}: ${phases.map(([name, r]) => `${name} lag p99 ${round(r.lags.p99, 0)} ms, ${r.dropped} dropped`).join('; ')} (goal < 100 ms, none dropped)`;
    const figures: Record<string, number | string> = { verdict };
    // The judged figures first (the README's table shows the first few), then the rest.
    for (const [name] of phases) for (const k of ['lag_p99_ms', 'dropped_watchers', 'gateway_cpu_us_per_event']) figures[`${key(name)}_${k}`] = 0;
    Object.assign(figures, { watchers: WATCHERS, churn_rate_per_s: RATE });
    for (const [name, r] of phases) for (const [k, v] of Object.entries(r.figures)) figures[`${key(name)}_${k}`] = v;
    return {
      id: 6,
      title: 'Watch fan-out',
      goal: '1,000 watchers, 2,000 events/s: delivery lag p99 < 100 ms, no watcher dropped, CPU per delivered event reported',
      figures,
      met,
      bound,
      notes,
      series: [
        {
          title: 'Watch delivery lag',
          x: 'percentile',
          y: 'ms',
          points: [
            ...phases.flatMap(([name, r]) => [
              { label: `${name} p50`, value: round(r.lags.p50) },
              { label: `${name} p99`, value: round(r.lags.p99) },
            ]),
            { label: 'goal', value: 100 },
          ],
        },
      ],
    };
  } finally {
    await fleet.close();
  }
};
