// Real Kubernetes control planes for end-to-end tests: per cluster one etcd and one kube-apiserver (built from
// Go modules by build-binaries.sh), on 127.0.0.1 with free ports, RBAC on, a client CA and a tokens file we
// control. No scheduler, controller-manager or kubelet: tests write pod status themselves (see seed.ts).
//
// Nothing may outlive a run: every process gets its own process group (killed as a group), the fleet's temp dir
// records the groups, 'exit'/SIGINT/SIGTERM handlers kill them, a watchdog shell kills them if this process dies
// without running handlers (SIGKILL of a vitest worker), and startRealFleet sweeps leftovers of crashed runs.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { call, type ClusterEndpoint } from '../support/http.js';
import { findGo } from './require-go.js';

export interface RealCluster {
  name: string;
  url: string;
  kubeconfigPath: string;
  adminCertPem: string;
  adminKeyPem: string;
  /** CA of the apiserver's serving certificate. */
  caPem: string;
  clientCaPem: string;
  /** The --client-ca-file CA with its key, so tests can issue user certificates (e.g. alice in group dev). */
  clientCa: CertKeyPem;
  /** Bearer token of user "admin" in group system:masters (tokens file). */
  adminToken: string;
  /** Bearer token of user GATEWAY_USER, bound to cluster-admin: the identity a gateway uses towards members. */
  gatewayToken: string;
  /** Admin access for test/support/http.ts `call`. */
  endpoint: ClusterEndpoint;
  dir: string;
  pids(): { apiserver: number | undefined; etcd: number | undefined };
  stop(): Promise<void>;
  /** Stops the apiserver and starts it again on the same port and etcd (for outage tests); waits until ready. */
  restart(): Promise<void>;
  /** Stops only the apiserver (the outage begins); start it again with restart(). */
  stopApiserver(): Promise<void>;
}

export interface RealFleet {
  controlPlane: RealCluster;
  /** member-a, member-b unless other names were asked for. */
  members: RealCluster[];
  dir: string;
  /** Wall time from startRealFleet's call until every cluster was ready. */
  startupMs: number;
  stop(): Promise<void>;
}

export const GATEWAY_USER = 'fleetgate-gateway';
const READY_TIMEOUT_MS = Number(process.env.FLEETGATE_E2E_READY_TIMEOUT_MS ?? 60_000);
const DIR_PREFIX = 'fleetgate-e2e-';
const HERE = dirname(fileURLToPath(import.meta.url));

// ---- binaries ------------------------------------------------------------------------------------------------

let binaries: Promise<{ kubeApiserver: string; etcd: string }> | undefined;

/** Builds (or reuses from the cache) kube-apiserver and etcd; throws a clear error when go is missing. */
export function ensureBinaries(): Promise<{ kubeApiserver: string; etcd: string }> {
  binaries ??= buildBinaries();
  binaries.catch(() => (binaries = undefined));
  return binaries;
}

async function buildBinaries(): Promise<{ kubeApiserver: string; etcd: string }> {
  if (!findGo()) throw new Error('cannot build kube-apiserver and etcd: go not found on PATH (install Go 1.24+)');
  const script = join(HERE, 'build-binaries.sh');
  const stdout = await new Promise<string>((resolve, reject) => {
    // The first build takes minutes; the script's own lock makes concurrent callers wait for it.
    execFile('bash', [script], { maxBuffer: 16 << 20, timeout: 30 * 60_000 }, (err, out, errOut) => {
      if (err) reject(new Error(`build-binaries.sh failed (${err.message}):\n${String(errOut).slice(-4000)}`));
      else resolve(String(out));
    });
  });
  const kubeApiserver = /^KUBE_APISERVER=(.+)$/m.exec(stdout)?.[1];
  const etcd = /^ETCD=(.+)$/m.exec(stdout)?.[1];
  if (!kubeApiserver || !etcd || !existsSync(kubeApiserver) || !existsSync(etcd)) {
    throw new Error(`build-binaries.sh did not report usable binaries:\n${stdout}`);
  }
  return { kubeApiserver, etcd };
}

// ---- process bookkeeping -------------------------------------------------------------------------------------

interface FleetRecord {
  dir: string;
  groups: Set<number>;
}

const liveFleets = new Set<FleetRecord>();
let handlersInstalled = false;

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** Synchronous last-resort cleanup: runs from 'exit', where nothing asynchronous can happen. */
function killEverythingNow(): void {
  for (const f of liveFleets) {
    for (const g of f.groups) killGroup(g, 'SIGKILL');
    rmSync(f.dir, { recursive: true, force: true });
  }
  liveFleets.clear();
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killEverythingNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      killEverythingNow();
      // Keep the signal's usual meaning: if nobody else handles it, die of it as we would have.
      process.removeListener(sig, onSignal);
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

function recordGroup(f: FleetRecord, pgid: number): void {
  f.groups.add(pgid);
  appendFileSync(join(f.dir, 'pgids'), `${pgid}\n`);
}

function forgetGroup(f: FleetRecord, pgid: number): void {
  f.groups.delete(pgid);
  if (existsSync(f.dir)) writeFileSync(join(f.dir, 'pgids'), [...f.groups].map((g) => `${g}\n`).join(''));
}

/**
 * A detached shell that outlives a SIGKILLed test process: once the owner pid is gone it kills every process
 * group listed in dir/pgids and removes dir. It ends by itself when dir disappears (normal teardown).
 */
export function startWatchdog(dir: string, owner = process.pid): number | undefined {
  const script = [
    'owner=$1; dir=$2',
    'while kill -0 "$owner" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done',
    '[ -d "$dir" ] || exit 0',
    // dash's kill takes no "--": the negative pid follows the signal directly.
    'for g in $(cat "$dir/pgids" 2>/dev/null); do kill -KILL "-$g" 2>/dev/null; done',
    'rm -rf "$dir"',
  ].join('\n');
  const w = spawn('sh', ['-c', script, 'fleetgate-e2e-watchdog', String(owner), dir], { detached: true, stdio: 'ignore' });
  w.unref();
  return w.pid;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/**
 * Kills what a crashed earlier run left behind: fleet dirs whose owner process is gone. A group is killed only
 * if its leader's command line names that dir, so a recycled pid is never hit.
 */
export function sweepStaleRuns(): { dirs: string[]; groups: number[] } {
  const swept = { dirs: [] as string[], groups: [] as number[] };
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(dir, 'owner'), 'utf8').trim());
    } catch {
      // no owner file: a run that died while creating its dir
    }
    if (Number.isInteger(owner) && owner !== process.pid && pidAlive(owner) && cmdline(owner).includes('node')) continue;
    if (owner === process.pid && [...liveFleets].some((f) => f.dir === dir)) continue;
    let groups: number[] = [];
    try {
      groups = readFileSync(join(dir, 'pgids'), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      // none recorded
    }
    for (const g of groups) {
      if (cmdline(g).includes(dir)) {
        killGroup(g, 'SIGKILL');
        swept.groups.push(g);
      }
    }
    rmSync(dir, { recursive: true, force: true });
    swept.dirs.push(dir);
  }
  return swept;
}

// ---- ports ---------------------------------------------------------------------------------------------------

const handedOut = new Set<number>();

/** n distinct free ports on 127.0.0.1, all held open at once so none is handed out twice. */
async function freePorts(n: number): Promise<number[]> {
  const servers = [];
  const ports: number[] = [];
  try {
    while (ports.length < n) {
      const s = createServer();
      servers.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => resolve());
      });
      const port = (s.address() as { port: number }).port;
      if (handedOut.has(port)) continue;
      handedOut.add(port);
      ports.push(port);
    }
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
  return ports;
}

// ---- one cluster ---------------------------------------------------------------------------------------------

interface ClusterPaths {
  dir: string;
  etcdData: string;
  certDir: string;
  servingCert: string;
  servingKey: string;
  clientCa: string;
  tokens: string;
  saKey: string;
  saPub: string;
  kubeconfig: string;
  etcdLog: string;
  apiserverLog: string;
}

function pathsFor(dir: string): ClusterPaths {
  return {
    dir,
    etcdData: join(dir, 'etcd'),
    certDir: join(dir, 'pki'),
    servingCert: join(dir, 'pki', 'serving.crt'),
    servingKey: join(dir, 'pki', 'serving.key'),
    clientCa: join(dir, 'pki', 'client-ca.crt'),
    tokens: join(dir, 'tokens.csv'),
    saKey: join(dir, 'pki', 'sa.key'),
    saPub: join(dir, 'pki', 'sa.pub'),
    kubeconfig: join(dir, 'admin.kubeconfig'),
    etcdLog: join(dir, 'etcd.log'),
    apiserverLog: join(dir, 'kube-apiserver.log'),
  };
}

interface Proc {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
  exitCode: number | null | undefined;
}

function startProcess(f: FleetRecord, bin: string, args: string[], logPath: string): Proc {
  const fd = openSync(logPath, 'a');
  // detached: its own process group, so a kill of the group takes any children with it.
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`cannot start ${bin}`);
  const p: Proc = { child, pid: child.pid, exitCode: undefined, exited: undefined as never };
  p.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      p.exitCode = code ?? (signal ? -1 : null);
      resolve(p.exitCode);
    });
    child.once('error', () => {
      p.exitCode = -1;
      resolve(-1);
    });
  });
  child.unref();
  recordGroup(f, child.pid);
  return p;
}

async function stopProcess(f: FleetRecord, p: Proc | undefined, graceMs = 5_000): Promise<void> {
  if (!p) return;
  if (p.exitCode === undefined) {
    killGroup(p.pid, 'SIGTERM');
    const timer = setTimeout(() => killGroup(p.pid, 'SIGKILL'), graceMs);
    await p.exited;
    clearTimeout(timer);
  }
  // The leader is gone; make sure nothing else in its group survives.
  killGroup(p.pid, 'SIGKILL');
  forgetGroup(f, p.pid);
}

function logTail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Polls until the apiserver answers /readyz and GET /api/v1/namespaces/default with 200. */
async function waitReady(name: string, ep: ClusterEndpoint, proc: Proc, logPath: string, deadline: number): Promise<void> {
  let last = 'no answer yet';
  for (const path of ['/readyz', '/api/v1/namespaces/default']) {
    for (;;) {
      if (proc.exitCode !== undefined) {
        throw new Error(`${name}: kube-apiserver exited with ${proc.exitCode} before it was ready; log tail:\n${logTail(logPath)}`);
      }
      try {
        const r = await call(ep, 'GET', path);
        if (r.status === 200) break;
        last = `${path}: HTTP ${r.status} ${r.text.slice(0, 500)}`;
      } catch (e) {
        last = `${path}: ${(e as Error).message}`;
      }
      if (Date.now() > deadline) {
        throw new Error(`${name}: kube-apiserver not ready within ${READY_TIMEOUT_MS} ms (${last}); log tail:\n${logTail(logPath)}`);
      }
      await sleep(200);
    }
  }
}

async function waitEtcd(name: string, port: number, proc: Proc, logPath: string, deadline: number): Promise<void> {
  for (;;) {
    if (proc.exitCode !== undefined) throw new Error(`${name}: etcd exited with ${proc.exitCode}; log tail:\n${logTail(logPath)}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      const body = (await res.json()) as { health?: string };
      if (res.ok && body.health === 'true') return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name}: etcd not healthy within ${READY_TIMEOUT_MS} ms; log tail:\n${logTail(logPath)}`);
    await sleep(100);
  }
}

function etcdArgs(name: string, p: ClusterPaths, clientPort: number, peerPort: number): string[] {
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    `--name=${name}`,
    `--data-dir=${p.etcdData}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${name}=${peer}`,
    '--initial-cluster-state=new',
    // Test data: durability buys nothing and fsync dominates write latency on shared disks.
    '--unsafe-no-fsync',
    '--log-level=warn',
    '--quota-backend-bytes=2147483648',
  ];
}

function apiserverArgs(p: ClusterPaths, port: number, etcdPort: number): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${port}`,
    `--cert-dir=${p.certDir}`,
    `--tls-cert-file=${p.servingCert}`,
    `--tls-private-key-file=${p.servingKey}`,
    `--client-ca-file=${p.clientCa}`,
    `--token-auth-file=${p.tokens}`,
    `--service-account-issuer=https://127.0.0.1:${port}`,
    `--service-account-key-file=${p.saPub}`,
    `--service-account-signing-key-file=${p.saKey}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--authorization-mode=RBAC',
    // No controller-manager creates default ServiceAccounts, so the admission plugin would reject every pod.
    '--disable-admission-plugins=ServiceAccount',
    '--allow-privileged=true',
    '--v=1',
  ];
}

interface ClusterState {
  f: FleetRecord;
  name: string;
  paths: ClusterPaths;
  bins: { kubeApiserver: string; etcd: string };
  port: number;
  etcdPort: number;
  etcdPeerPort: number;
  etcd?: Proc;
  apiserver?: Proc;
}

async function startApiserver(s: ClusterState, ep: ClusterEndpoint): Promise<void> {
  s.apiserver = startProcess(s.f, s.bins.kubeApiserver, apiserverArgs(s.paths, s.port, s.etcdPort), s.paths.apiserverLog);
  await waitReady(s.name, ep, s.apiserver, s.paths.apiserverLog, Date.now() + READY_TIMEOUT_MS);
}

async function startCluster(f: FleetRecord, name: string, bins: { kubeApiserver: string; etcd: string }): Promise<RealCluster> {
  const dir = join(f.dir, name);
  const paths = pathsFor(dir);
  mkdirSync(paths.certDir, { recursive: true });
  mkdirSync(paths.etcdData, { recursive: true, mode: 0o700 });

  const [servingCa, clientCa] = await Promise.all([createCA(`${name}-serving-ca`), createCA(`${name}-client-ca`)]);
  const [serving, admin] = await Promise.all([
    issueServingCert(servingCa, ['127.0.0.1', 'localhost'], { commonName: 'kube-apiserver' }),
    issueClientCert(clientCa, 'kubernetes-admin', ['system:masters']),
  ]);
  const sa = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(paths.servingCert, serving.certPem);
  writeFileSync(paths.servingKey, serving.keyPem, { mode: 0o600 });
  writeFileSync(paths.clientCa, clientCa.certPem);
  writeFileSync(paths.saKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(paths.saPub, sa.publicKey.export({ type: 'spki', format: 'pem' }));
  const adminToken = randomBytes(24).toString('hex');
  const gatewayToken = randomBytes(24).toString('hex');
  writeFileSync(
    paths.tokens,
    `${adminToken},admin,admin-uid,"system:masters"\n${gatewayToken},${GATEWAY_USER},${GATEWAY_USER}-uid,"fleetgate:gateways"\n`,
    { mode: 0o600 },
  );

  const [port, etcdPort, etcdPeerPort] = await freePorts(3);
  const url = `https://127.0.0.1:${port}`;
  writeFileSync(
    paths.kubeconfig,
    buildKubeconfig({ name, server: url, caPem: servingCa.certPem, user: 'kubernetes-admin', clientCertPem: admin.certPem, clientKeyPem: admin.keyPem }),
    { mode: 0o600 },
  );
  const endpoint: ClusterEndpoint = { url, caPem: servingCa.certPem, certPem: admin.certPem, keyPem: admin.keyPem };
  const s: ClusterState = { f, name, paths, bins, port: port!, etcdPort: etcdPort!, etcdPeerPort: etcdPeerPort! };

  const stopAll = async () => {
    await stopProcess(f, s.apiserver);
    await stopProcess(f, s.etcd);
  };
  try {
    s.etcd = startProcess(f, bins.etcd, etcdArgs(name, paths, s.etcdPort, s.etcdPeerPort), paths.etcdLog);
    await waitEtcd(name, s.etcdPort, s.etcd, paths.etcdLog, Date.now() + READY_TIMEOUT_MS);
    await startApiserver(s, endpoint);
    await bindGateway(name, endpoint);
  } catch (e) {
    await stopAll();
    throw e;
  }

  let stopped = false;
  return {
    name,
    url,
    kubeconfigPath: paths.kubeconfig,
    adminCertPem: admin.certPem,
    adminKeyPem: admin.keyPem,
    caPem: servingCa.certPem,
    clientCaPem: clientCa.certPem,
    clientCa,
    adminToken,
    gatewayToken,
    endpoint,
    dir,
    pids: () => ({
      apiserver: s.apiserver?.exitCode === undefined ? s.apiserver?.pid : undefined,
      etcd: s.etcd?.exitCode === undefined ? s.etcd?.pid : undefined,
    }),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
    },
    async stopApiserver() {
      await stopProcess(f, s.apiserver);
      s.apiserver = undefined;
    },
    async restart() {
      if (stopped) throw new Error(`${name}: restart after stop`);
      await stopProcess(f, s.apiserver);
      await startApiserver(s, endpoint);
    },
  };
}

/** The gateway's member identity may do everything, as a Karmada cluster secret's token usually can. */
async function bindGateway(name: string, ep: ClusterEndpoint): Promise<void> {
  const r = await call(ep, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'fleetgate-gateway' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: GATEWAY_USER }],
    },
  });
  if (r.status !== 201) throw new Error(`${name}: cannot bind ${GATEWAY_USER}: HTTP ${r.status} ${r.text}`);
}

// ---- the fleet -----------------------------------------------------------------------------------------------

/** A control plane (Karmada-like host cluster) and member clusters, started in parallel. */
export async function startRealFleet(opts: { members?: string[] } = {}): Promise<RealFleet> {
  const started = Date.now();
  const bins = await ensureBinaries();
  sweepStaleRuns();
  installExitHandlers();

  const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
  writeFileSync(join(dir, 'owner'), `${process.pid}\n`);
  writeFileSync(join(dir, 'pgids'), '');
  const f: FleetRecord = { dir, groups: new Set() };
  liveFleets.add(f);
  const watchdog = startWatchdog(dir);

  const names = ['control-plane', ...(opts.members ?? ['member-a', 'member-b'])];
  const results = await Promise.allSettled(names.map((n) => startCluster(f, n, bins)));
  const clusters = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(clusters.map((c) => c.stop()));
    for (const g of f.groups) killGroup(g, 'SIGKILL');
    if (watchdog) killGroup(watchdog, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    liveFleets.delete(f);
  };

  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failed.length > 0) {
    await stop();
    throw new Error(`real fleet did not start:\n${failed.map((e) => e.message).join('\n---\n')}`);
  }
  return { controlPlane: clusters[0]!, members: clusters.slice(1), dir, startupMs: Date.now() - started, stop };
}

// ---- measurements --------------------------------------------------------------------------------------------

/** Resident memory of a process in KiB (VmRSS from /proc), or undefined if it is gone. */
export function rssKiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Processes whose command line mentions dir (leftover check after teardown). */
export function processesUsing(dir: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const c = cmdline(Number(e));
    if (c.includes(dir)) found.push({ pid: Number(e), cmdline: c });
  }
  return found;
}
