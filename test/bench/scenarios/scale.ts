// A fleet at scale for scenarios 2-6: the simulated members and the gateway each run in their own child process
// (this file, run as a script), so neither shares the runner's 4 GiB default heap or its event loop, and the
// figures measure the gateway's process alone. The parent talks to each child with JSON lines on stdin/stdout.
//
//   sim child:     startSimFleet (members with generated pods) + a control plane; commands: churn, ceiling, rss
//   gateway child: startTestGateway with the members as static members; reports time to ready; commands: rss
//
// FLEETGATE_BENCH_INTAKE_WORKERS=<n> sets the gateway's cache.intakeWorkers (0: lists parsed on its main thread);
// unset, the gateway's default.

import { spawn, type ChildProcess } from 'node:child_process';
import { Agent as HttpsAgent, createServer as createHttpsServer, get as httpsGet } from 'node:https';
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../../../src/api/meta.js';
import type { ClusterEndpoint } from '../../support/http.js';
import { SERVER_CIPHER_OPTIONS } from '../../../src/pki/ciphers.js';
import { collectGarbage } from '../../../src/api/gc.js';
import { touchAheadStats, type TouchAheadStats } from '../../../src/api/touchahead.js';
import { RECOMMENDED_SEMI_SPACE_MB } from '../../../src/cache/younggen.js';
import { intakePaths } from '../../../src/cache/intake.js';
import { idleShare, machineCpuTicks, mainThreadMinorFaults, mainThreadSched, round, startHeapSampling, stealShare } from '../lib.js';

export interface ScaleOptions {
  members: number;
  podsPerMember: number;
  log: (msg: string) => void;
  /** Heap limit of each child, MiB. */
  heapMB?: number;
}

export interface ScaleFleet {
  members: number;
  podsPerMember: number;
  totalPods: number;
  /** An admin endpoint on the gateway (system:masters). */
  gateway: ClusterEndpoint;
  /** Gateway start (config parsed, before listening) to ready: every member synced, then the heap collected once. */
  coldSyncMs: number;
  /** Of which: until every member's first list had landed (before the collection). */
  listedMs: number;
  /** Of which: until startTestGateway returned (PKI for the test gateway, config, listening). */
  startedMs: number;
  /** CPU the gateway's process used from its start to ready (every thread: main, GC helpers, TLS). */
  coldSyncCpuMs: number;
  /** Over the same span: the gateway's minor page faults, and its main thread's time on a CPU and waiting for one. */
  coldSync: { minorFaults: number; mainThreadMinorFaults: number; mainThreadRunMs: number; mainThreadWaitMs: number; hostStealShare: number; machineIdleShare: number; touchAhead: TouchAheadStats; intakePages: { bytes: number; objects: number; scanned: number } };
  /** Gateway start to its pods' selector index built (after ready: Store.buildIndex). */
  indexBuiltMs: number;
  /**
   * ms the members' process took to generate its pods before the gateway started: the same work every run, so a
   * yardstick of how fast the VM ran (~65 s for 1M on a fast stretch of the benchmark VM, 108-134 s on slow ones).
   */
  membersGenerateMs: number;
  /** The first member, straight (admin token): the baseline for reads the gateway serves from its cache. */
  firstMember: ClusterEndpoint;
  /** Sends a command to the sim child (churn, ceiling...). */
  sim(cmd: Record<string, unknown>): Promise<any>;
  gw(cmd: Record<string, unknown>): Promise<any>;
  gatewayPid: number;
  close(): Promise<void>;
}

const self = fileURLToPath(import.meta.url);

interface Child {
  proc: ChildProcess;
  call(cmd: Record<string, unknown>): Promise<any>;
  first: Promise<any>;
}

function spawnChild(mode: string, arg: unknown, heapMB: number, log: (m: string) => void): Child {
  // FLEETGATE_BENCH_CPUPROF=<dir>: a CPU profile of each child, for finding what bounds a figure.
  const prof = process.env.FLEETGATE_BENCH_CPUPROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.FLEETGATE_BENCH_CPUPROF}`] : [];
  // The members' process stands for 100 machines, and a full collection of its heap stalls all of them at once,
  // which no fleet does (kube-apiserver's Go collector runs beside it). At 1M pods its heap (~0.8 GB) grows with the
  // churn's pods, and V8 marked it every ~12 s of scenario 6, each time holding every member's changes back for up
  // to half a second: V8 lets it grow twice as far before marking again.
  const simFlags = mode === 'sim' ? ['--heap-growing-percent=100'] : [];
  // The gateway runs with the young generation the image and the chart give it (src/cache/younggen.ts);
  // FLEETGATE_BENCH_GATEWAY_FLAGS come after, so --max-semi-space-size=0 there gives V8's own back.
  const gatewayFlags = mode === 'gateway' ? [`--max-semi-space-size=${RECOMMENDED_SEMI_SPACE_MB}`] : [];
  const proc = spawn(process.execPath, [`--max-old-space-size=${heapMB}`, '--expose-gc', ...simFlags, ...gatewayFlags, ...prof, ...(process.env[`FLEETGATE_BENCH_${mode.toUpperCase()}_FLAGS`]?.split(' ').filter(Boolean) ?? []), '--import', 'tsx', self, mode, JSON.stringify(arg)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    // No GLIBC_TUNABLES, as the image runs (FLEETGATE_BENCH_GLIBC_TUNABLES=glibc.malloc.hugetlb=1 to try transparent
    // huge pages for malloc, which the image set until the round of 2026-11-27: see docs/operations.md, "Memory").
    env: { ...process.env, NODE_OPTIONS: '', GLIBC_TUNABLES: process.env.FLEETGATE_BENCH_GLIBC_TUNABLES ?? '' },
  });
  const waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let firstResolve!: (v: any) => void;
  let firstReject!: (e: Error) => void;
  const first = new Promise<any>((res, rej) => ((firstResolve = res), (firstReject = rej)));
  let seq = 0;
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return void log(`${mode}: ${line}`);
    const msg = JSON.parse(line);
    if (msg.id === 0) return void (msg.error ? firstReject(new Error(msg.error)) : firstResolve(msg.result));
    const w = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error) w?.reject(new Error(msg.error));
    else w?.resolve(msg.result);
  });
  proc.on('exit', (code) => {
    const err = new Error(`${mode} child exited with ${code}`);
    firstReject(err);
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  });
  return {
    proc,
    first,
    call(cmd) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        proc.stdin!.write(`${JSON.stringify({ id, ...cmd })}\n`);
      });
    },
  };
}

function endChild(c: Child): Promise<void> {
  if (c.proc.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => c.proc.kill('SIGKILL'), 15_000);
    c.proc.once('exit', () => (clearTimeout(t), resolve()));
    c.proc.stdin!.end();
  });
}

/** Sim members (and a sim control plane) in a process of their own. */
export interface SimChild {
  controlPlaneKubeconfig: string;
  /** The control plane, straight (admin token). */
  controlPlane: ClusterEndpoint;
  members: Array<{ name: string; kubeconfig: string }>;
  /** The first member, straight (admin token). */
  firstMember: ClusterEndpoint;
  /** ms the sim took to generate its pods. */
  seedMs: number;
  call(cmd: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

/**
 * Members with podsPerMember generated pods each, served by a child process, so that their objects and their work
 * are not in the heap or on the thread of a gateway hosted by the caller. needles: also 100 pods labelled
 * bench=needle in namespace load (scenario 3).
 */
export async function startSimChild(o: { names: string[]; podsPerMember: number; needles?: boolean; heapMB?: number; log: (msg: string) => void }): Promise<SimChild> {
  const sim = spawnChild('sim', { names: o.names, podsPerMember: o.podsPerMember, needles: o.needles ?? true }, o.heapMB ?? 12_000, o.log);
  try {
    const s = await sim.first;
    return { ...s, call: (cmd) => sim.call(cmd), close: () => endChild(sim) };
  } catch (e) {
    await endChild(sim);
    throw e;
  }
}

export async function startScale(o: ScaleOptions): Promise<ScaleFleet> {
  const heapMB = o.heapMB ?? 12_000;
  const names = Array.from({ length: o.members }, (_, i) => `member-${String(i + 1).padStart(3, '0')}`);
  o.log(`scale: starting ${o.members} members x ${o.podsPerMember} pods`);
  const sim = await startSimChild({ names, podsPerMember: o.podsPerMember, heapMB, log: o.log });
  let gw: Child | undefined;
  try {
    o.log(`scale: sim ready (${sim.seedMs} ms to generate); starting the gateway`);
    gw = spawnChild('gateway', { controlPlaneKubeconfig: sim.controlPlaneKubeconfig, members: sim.members }, heapMB, o.log);
    const g = await gw.first;
    o.log(`scale: gateway ready in ${round(g.coldSyncMs)} ms (members listed at ${round(g.listedMs)} ms, then one full collection)`);
    const gwChild = gw;
    return {
      members: o.members,
      podsPerMember: o.podsPerMember,
      totalPods: o.members * o.podsPerMember,
      gateway: g.endpoint,
      coldSyncMs: g.coldSyncMs,
      listedMs: g.listedMs,
      startedMs: g.startedMs,
      coldSyncCpuMs: g.coldSyncCpuMs,
      coldSync: g.coldSync,
      indexBuiltMs: g.indexBuiltMs,
      membersGenerateMs: sim.seedMs,
      firstMember: sim.firstMember,
      sim: (cmd) => sim.call(cmd),
      gw: (cmd) => gwChild.call(cmd),
      gatewayPid: gwChild.proc.pid!,
      async close() {
        await endChild(gwChild);
        await sim.close();
      },
    };
  } catch (e) {
    if (gw) await endChild(gw);
    await sim.close();
    throw e;
  }
}

/** What kubectl get sends: a server-side Table, else the list. */
export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

const agents = new WeakMap<ClusterEndpoint, HttpsAgent>();

export function agentFor(ep: ClusterEndpoint): HttpsAgent {
  let a = agents.get(ep);
  if (!a) agents.set(ep, (a = new HttpsAgent({ ca: ep.caPem, cert: ep.certPem, key: ep.keyPem, keepAlive: true, maxSockets: Infinity })));
  return a;
}

export interface Timed {
  status: number;
  ms: number;
  bytes: number;
  /** The body, when keep was asked for. */
  body?: Buffer;
  /** metadata.continue, read from the start of the body. */
  continue?: string;
}

/**
 * GET to the last byte with node's own HTTPS client (the lightest reader: data events, no per-chunk promise);
 * the body is kept only when asked (a fleet list is gigabytes).
 */
export function timedGet(ep: ClusterEndpoint, path: string, o: { accept?: string; keep?: boolean; onData?: (chunk: Buffer) => void } = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = httpsGet(new URL(path, ep.url), { agent: agentFor(ep), headers: { accept: o.accept ?? 'application/json', ...(ep.token ? { authorization: `Bearer ${ep.token}` } : {}) } }, (res) => {
      let bytes = 0;
      const chunks: Buffer[] = [];
      let head: Buffer | undefined;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        o.onData?.(c);
        if (o.keep) chunks.push(c);
        else if (!head) head = c;
      });
      res.on('error', reject);
      res.on('end', () => {
        const ms = performance.now() - t0;
        const body = o.keep ? Buffer.concat(chunks) : undefined;
        const start = (body ?? head ?? Buffer.alloc(0)).subarray(0, 4096).toString();
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: ${res.statusCode} ${start.slice(0, 300)}`));
        const m = /"continue":"([^"]*)"/.exec(start);
        resolve({ status: res.statusCode, ms, bytes, body, continue: m?.[1] || undefined });
      });
    });
    req.on('error', reject);
  });
}

/** Sizes: quick runs 30,000 pods across 10 members; full runs the largest that fits this machine (see notes). */
export function scaleFor(quick: boolean): { members: number; podsPerMember: number } {
  const env = process.env.FLEETGATE_BENCH_SCALE; // "members x podsPerMember", to try other sizes
  if (env) {
    const [m, p] = env.split('x').map(Number);
    return { members: m!, podsPerMember: p! };
  }
  return quick ? { members: 10, podsPerMember: 3_000 } : { members: 100, podsPerMember: FULL_PODS_PER_MEMBER };
}

/**
 * Full scale is the issue's 1M pods (10,000 per member). Since the cache keeps objects as JSON only, the sim (6.2 GiB)
 * and the gateway (9.7 GiB) fit in 24 GiB together; before, the run had to stop at 200k.
 */
export const FULL_PODS_PER_MEMBER = 10_000;

export function scaleNote(members: number, podsPerMember: number): string {
  const total = members * podsPerMember;
  return total >= 1_000_000 ? `ran at full scale: ${total} pods across ${members} members` : `ran at ${total} pods across ${members} members (the issue asks 1,000,000 across 100); figures are for this size, not extrapolated unless stated`;
}

// ---- child side ----

const CEILING_CHUNK = 64 * 1024;

function serveCommands(handle: (cmd: any) => Promise<unknown>, onEnd: () => Promise<void>): void {
  const rl = createInterface({ input: process.stdin });
  const loop = loopDelay();
  rl.on('line', async (line) => {
    const cmd = JSON.parse(line);
    try {
      const result = cmd.op === 'loopDelay' ? loop(cmd.start === true) : await handle(cmd);
      process.stdout.write(`${JSON.stringify({ id: cmd.id, result })}\n`);
    } catch (e) {
      process.stdout.write(`${JSON.stringify({ id: cmd.id, error: String((e as Error)?.stack ?? e) })}\n`);
    }
  });
  rl.on('close', () => void onEnd().finally(() => process.exit(0)));
}

/**
 * This process's event-loop delay between start and stop (perf_hooks, 2 ms resolution): how long work that was
 * ready waited for the thread, the part of a lag that belongs to this process.
 */
export function loopDelay(): (start: boolean) => LoopDelay | undefined {
  let h: IntervalHistogram | undefined;
  return (start) => {
    if (start) {
      h?.disable();
      h = monitorEventLoopDelay({ resolution: 2 });
      h.enable();
      return undefined;
    }
    if (!h) return undefined;
    h.disable();
    const ms = (ns: number) => ns / 1e6;
    const r = { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
    h = undefined;
    return r;
  };
}

export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

function memory(): Record<string, number> {
  (globalThis as any).gc?.();
  const m = process.memoryUsage();
  // Slabs the touch-ahead thread made are the process's buffers too; the main thread's count leaves them out.
  const made = touchAheadStats().heldBytes;
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external + made, arrayBuffers: m.arrayBuffers + made };
}

/**
 * ms to write the first byte of each 4 KiB page of mib MiB of fresh memory (a SharedArrayBuffer, as the cache's
 * slabs are), in this process: what one page fault costs here, which on a VM varies with the host.
 */
function firstTouch(mib: number): { ms: number; pages: number } {
  const b = new Uint8Array(new SharedArrayBuffer(mib * 2 ** 20));
  const t0 = performance.now();
  for (let i = 0; i < b.length; i += 4096) b[i] = 1;
  return { ms: performance.now() - t0, pages: b.length / 4096 };
}

async function simChild(arg: { names: string[]; podsPerMember: number; needles: boolean }): Promise<void> {
  const { startSimFleet } = await import('../../sim/fleet.js');
  const { generatePod } = await import('../../sim/podgen.js');
  const { prng } = await import('../../support/prng.js');
  const { createCA, issueServingCert } = await import('../../../src/pki/index.js');
  const t0 = Date.now();
  const cp = await startSimFleet({ clusters: ['control-plane'] });
  const fleet = await startSimFleet({ clusters: arg.names, podsPerCluster: arg.podsPerMember, nodesPerCluster: 10 });
  // 100 needles for the filtered-list scenario: pods a label selector finds among all the others.
  for (let i = 0; i < (arg.needles ? 100 : 0); i++) {
    const c = fleet.members[i % fleet.members.length]!.cluster;
    const { pod, status } = generatePod({ namespace: 'load', app: 'needle', index: 2_000_000 + i, node: `${c.name}-node-1` });
    (pod as any).status = status;
    pod.metadata!.labels = { ...pod.metadata!.labels, bench: 'needle' };
    c.load(c.resourceFor('', 'pods')!, pod);
  }
  const seedMs = Date.now() - t0;
  let churnTimer: NodeJS.Timeout | undefined;
  let churnStats = () => ({ ops: 0, events: 0, ms: 0 });
  let ceiling: { close(): void } | undefined;

  // Churn that stamps each change with the time it was made (ms since the epoch, fractional), so a watcher in
  // another process on this machine can compute delivery lag from the object alone.
  const startChurn = (ratePerSecond: number, namespace: string) => {
    const clusters = fleet.members.map((m) => m.cluster);
    for (const c of clusters) {
      const ns = c.resourceFor('', 'namespaces')!;
      if (!c.get('', 'namespaces', '', namespace)) c.create(ns, '', { metadata: { name: namespace } });
    }
    // The driver's own copy of each live pod as it last wrote it (the member stamps its resourceVersion into it):
    // parsing the member's stored bytes back before every change cost the members' process a JSON.parse of a
    // ~4 KB pod per update and delete, on the cores the gateway and the watchers are measured on.
    const live: KubeObject[][] = clusters.map(() => []);
    let ops = 0;
    // Changes the members made: a create and an update make one; a delete three (the stamp, the graceful mark,
    // the removal; see SimCluster.delete).
    let events = 0;
    let index = 0;
    const started = Date.now();
    const apps = ['web', 'api', 'worker', 'cache', 'batch'];
    // Member, operation, app and node drawn independently: counters taken modulo each other (ops % members and
    // ops % 5 with 10 members) sent every create to the same few members, apps and nodes, so a watcher's share of
    // the churn depended on which of them it picked.
    const rand = prng(20261123);
    const pick = (n: number) => Math.floor(rand() * n);
    const stamped = (pod: KubeObject, stamp: string): KubeObject => ({ ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, 'bench/t': stamp } } });
    churnTimer = setInterval(() => {
      const due = Math.floor(((Date.now() - started) / 1000) * ratePerSecond);
      while (ops < due) {
        const ci = pick(clusters.length);
        const c = clusters[ci]!;
        const pods = c.resourceFor('', 'pods')!;
        const mine = live[ci]!;
        const stamp = String(performance.timeOrigin + performance.now());
        const kind = mine.length < 20 ? 0 : pick(5); // create 40%, update 40%, delete 20% once warm
        if (kind < 2) {
          const { pod, status } = generatePod({ namespace, app: apps[pick(apps.length)]!, index: 1_000_000 + index, node: `${c.name}-node-${pick(10) + 1}` });
          index++;
          (pod as any).status = status;
          const next = stamped(pod, stamp);
          c.load(pods, next);
          mine.push(next);
          events++;
        } else if (kind < 4) {
          const i = pick(mine.length);
          const next = stamped(mine[i]!, stamp);
          c.update(pods, namespace, next.metadata.name!, next, { subresource: '' });
          mine[i] = next;
          events++;
        } else {
          const [last] = mine.splice(pick(mine.length), 1);
          const name = last!.metadata.name!;
          // A DELETED event carries the last state: stamp it first so the deletion is timed too.
          c.update(pods, namespace, name, stamped(last!, stamp), { subresource: '' });
          c.delete(pods, namespace, name, { gracePeriodSeconds: 0 });
          events += 3;
        }
        ops++;
      }
    }, 5);
    churnStats = () => ({ ops, events, ms: Date.now() - started });
    return { started };
  };

  serveCommands(
    async (cmd) => {
      switch (cmd.op) {
        case 'churn':
          return startChurn(cmd.rate, cmd.namespace ?? 'churn');
        case 'stopChurn':
          clearInterval(churnTimer);
          return churnStats();
        case 'rss':
          return memory();
        case 'gc':
          return { ms: collectGarbage() };
        case 'cpu':
          return process.cpuUsage();
        case 'ceiling': {
          // The ceiling for a list: the same bytes, already in memory, written to a TLS loopback socket.
          // In pieces: a fleet's list at 1M pods is ~4.4 GB, beyond one Buffer and beyond what readFile reads.
          const { createReadStream } = await import('node:fs');
          const pieces: Buffer[] = [];
          for await (const piece of createReadStream(cmd.file, { highWaterMark: 64 * 1024 * 1024 })) pieces.push(piece as Buffer);
          const length = pieces.reduce((n, p) => n + p.length, 0);
          const ca = await createCA('bench-ceiling-ca');
          const cert = await issueServingCert(ca, ['127.0.0.1']);
          // The gateway's suites, so that the ceiling pays for the same encryption.
          const srv = createHttpsServer({ key: cert.keyPem, cert: cert.certPem, ...SERVER_CIPHER_OPTIONS }, (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/json', 'content-length': length });
            // In 64 KiB writes with backpressure, as a streaming server writes: one huge TLS write is slower.
            let piece = 0;
            let off = 0;
            const pump = () => {
              for (; piece < pieces.length; piece++, off = 0) {
                const body = pieces[piece]!;
                while (off < body.length) {
                  const chunk = body.subarray(off, (off += CEILING_CHUNK));
                  if (!res.write(chunk)) return void res.once('drain', pump);
                }
              }
              res.end();
            };
            pump();
          });
          await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
          ceiling?.close();
          ceiling = srv;
          return { url: `https://127.0.0.1:${(srv.address() as any).port}`, caPem: ca.certPem };
        }
        default:
          throw new Error(`unknown op ${cmd.op}`);
      }
    },
    async () => {
      clearInterval(churnTimer);
      ceiling?.close();
      await fleet.close();
      await cp.close();
    },
  );
  process.stdout.write(`${JSON.stringify({ id: 0, result: { seedMs, controlPlaneKubeconfig: cp.members[0]!.kubeconfigPath, members: fleet.members.map((m) => ({ name: m.name, kubeconfig: m.kubeconfigPath })), firstMember: { url: fleet.members[0]!.url, caPem: fleet.servingCA.certPem, token: fleet.adminToken }, controlPlane: { url: cp.members[0]!.url, caPem: cp.servingCA.certPem, token: cp.adminToken } } })}\n`);
}

async function gatewayChild(arg: { controlPlaneKubeconfig: string; members: Array<{ name: string; kubeconfig: string }> }): Promise<void> {
  const { startTestGateway } = await import('../../support/gateway.js');
  const members = arg.members.map((m) => `    - name: ${m.name}\n      kubeconfig: ${m.kubeconfig}`).join('\n');
  const intake = process.env.FLEETGATE_BENCH_INTAKE_WORKERS ? `  intakeWorkers: ${Number(process.env.FLEETGATE_BENCH_INTAKE_WORKERS)}\n` : '';
  // FLEETGATE_BENCH_HEAP_GROWING_PERCENT=<n>: cache.heapGrowingPercent (0: V8's own heap growth), to compare.
  const growth = process.env.FLEETGATE_BENCH_HEAP_GROWING_PERCENT ? `  heapGrowingPercent: ${Number(process.env.FLEETGATE_BENCH_HEAP_GROWING_PERCENT)}\n` : '';
  // FLEETGATE_BENCH_TOUCH_AHEAD_BYTES=<n>: cache.touchAheadBytes (0: the event loop faults the slabs in), to compare.
  const touch = process.env.FLEETGATE_BENCH_TOUCH_AHEAD_BYTES ? `  touchAheadBytes: ${Number(process.env.FLEETGATE_BENCH_TOUCH_AHEAD_BYTES)}\n` : '';
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const faults0 = process.resourceUsage().minorPageFault;
  const mainFaults0 = mainThreadMinorFaults();
  const sched0 = mainThreadSched();
  const machine0 = machineCpuTicks();
  const gw = await startTestGateway({
    controlPlaneKubeconfig: arg.controlPlaneKubeconfig,
    requestTimeoutSeconds: 120,
    extraYaml: `cache:\n  mode: all\n  karmada:\n    enabled: false\n  windowSize: 100000\n${intake}${growth}${touch}  members:\n${members}\n`,
  });
  const startedMs = performance.now() - t0;
  const caches = gw.running.gateway.members!.caches;
  // Polled often: the figures are start to the moment the last member's first list landed, and to ready (/readyz's
  // member-caches check: after that, one full collection of the heap, src/members/caches.ts).
  while (caches.statuses().length < arg.members.length || caches.statuses().some((s) => !s.synced)) {
    await new Promise((r) => setTimeout(r, 5));
  }
  while (!caches.ready()) await new Promise((r) => setTimeout(r, 5));
  const coldSyncMs = performance.now() - t0;
  // The collection may run before this loop looks again: the time to the last list is ready less the collection.
  const listedMs = coldSyncMs - (caches.postSyncCollectionMs ?? 0);
  const cpu = process.cpuUsage(cpu0);
  const coldSyncCpuMs = (cpu.user + cpu.system) / 1000;
  const sched = mainThreadSched();
  const machine1 = machineCpuTicks();
  const coldSync = {
    // First writes to fresh pages (every thread of the process): the cache's ~4 KB per pod lands in new memory.
    minorFaults: process.resourceUsage().minorPageFault - faults0,
    mainThreadMinorFaults: mainThreadMinorFaults() - mainFaults0,
    // Slabs made resident by the touch-ahead thread and handed over (src/api/touchahead.ts), and the times one was
    // needed before it was ready.
    touchAhead: touchAheadStats(),
    // List pages by the path they took (src/cache/intake.ts): scanned is those the WebAssembly scan checked.
    intakePages: { ...intakePaths },
    mainThreadRunMs: (sched.runNs - sched0.runNs) / 1e6,
    mainThreadWaitMs: (sched.waitNs - sched0.waitNs) / 1e6,
    hostStealShare: stealShare(machine0, machine1),
    machineIdleShare: idleShare(machine0, machine1),
  };
  // The pods' selector index is built in one pass once the first lists are done (Store.buildIndex), after ready.
  const index = gw.running.gateway.members!.cache.pods.index!;
  while (index.state !== 'built') await new Promise((r) => setTimeout(r, 20));
  const indexBuiltMs = performance.now() - t0;
  const endpoint = await gw.endpointFor('bench-admin', ['system:masters']);
  // FLEETGATE_BENCH_HEAP_SAMPLING=<dir>: scenarios that support it sample the gateway's JS heap allocations over
  // their measured window, garbage included (what makes young-generation collections), into <dir>/*.heapprofile
  // (open in Chrome DevTools).
  let stopSampling: ((file?: string) => Promise<void>) | undefined;
  const heapSampling = async (file?: string) => {
    if (!stopSampling) {
      stopSampling = await startHeapSampling();
      return { started: true };
    }
    await stopSampling(file);
    stopSampling = undefined;
    return { file };
  };
  // For scenario 6: how late churn events (annotation bench/t, stamped by the sim when made) reach the gateway's
  // store, so a watcher's lag can be split into member -> gateway and gateway -> watcher.
  let lags: number[] = [];
  let unsubscribe = () => {};
  const stamp = Buffer.from('"bench/t":"');
  const stampLag = (start: boolean) => {
    unsubscribe();
    const seen = lags;
    lags = [];
    if (start) {
      unsubscribe = gw.running.gateway.members!.cache.pods.subscribe((ev) => {
        const now = performance.timeOrigin + performance.now();
        const json = ev.object.json;
        const i = json.indexOf(stamp);
        if (i >= 0) lags.push(now - Number(json.toString('latin1', i + stamp.length, json.indexOf(34, i + stamp.length))));
      });
    }
    seen.sort((a, b) => a - b);
    const at = (p: number) => seen[Math.min(seen.length - 1, Math.max(0, Math.ceil((p / 100) * seen.length) - 1))] ?? NaN;
    return { n: seen.length, p50: at(50), p99: at(99), max: seen[seen.length - 1] ?? NaN };
  };
  // Relists and watch restarts of the members' reflectors so far, summed over members (fleetgate_member_*_total):
  // a relist in the middle of a measurement is a whole member's list read again.
  const memberCounters = async () => {
    const text = await gw.running.gateway.metrics.registry.metrics();
    const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
    return { relists: sum('fleetgate_member_relists_total'), watchRestarts: sum('fleetgate_member_watch_restarts_total') };
  };
  serveCommands(
    async (cmd) => {
      if (cmd.op === 'rss') return memory();
      if (cmd.op === 'firstTouch') return firstTouch(cmd.mib);
      if (cmd.op === 'cpu') return { ...process.cpuUsage(), sched: mainThreadSched() };
      if (cmd.op === 'stampLag') return stampLag(cmd.start === true);
      if (cmd.op === 'heapSampling') return heapSampling(cmd.file);
      if (cmd.op === 'memberCounters') return memberCounters();
      throw new Error(`unknown op ${cmd.op}`);
    },
    () => gw.close(),
  );
  process.stdout.write(`${JSON.stringify({ id: 0, result: { coldSyncMs, listedMs, startedMs, coldSyncCpuMs, coldSync, indexBuiltMs, endpoint } })}\n`);
}

if (process.argv[1] === self) {
  const [mode, arg] = process.argv.slice(2);
  const main = mode === 'sim' ? simChild : gatewayChild;
  main(JSON.parse(arg!)).catch((e) => {
    process.stdout.write(`${JSON.stringify({ id: 0, error: String(e?.stack ?? e) })}\n`);
    process.exit(1);
  });
}
