// Scenario 1's request, counted: the instructions a forwarded GET of a ConfigMap costs the process that forwards it,
// the gateway (its full chain: client certificate, audit at Metadata to a file, flow control, impersonation) or a
// bare hop (test/bench/scenarios/barehop.ts), under valgrind's callgrind. Timed runs on the shared VM differ by
// more than the gateway's chain costs; the count does not move with the machine.
//
//   node --import tsx test/bench/tools/request-instructions.ts [--sides gateway,h2] [--count 2000] [--warmup 8000]
//
// Each side runs once under callgrind, serving GETs one at a time from a client in this process (undici, keep-alive,
// the client certificate of a user bound to a ClusterRole that reads ConfigMaps) against a real kube-apiserver and
// etcd (test/e2e/cluster.ts startRealFleet): a warm-up, then callgrind_control zeroes the counts, then `count` GETs,
// then it dumps them. Requests go on while a command waits to be taken (callgrind takes it between two of the
// program's blocks, and an idle server runs none), so the stretch counted holds a few requests more than `count`:
// those sent while the dump was pending are added to the divisor. A dump taken mid-run also charges the frames on
// the stack at that moment with what ran under them: the ones there throughout (main, the event loop) are left out
// (scenarios/instructions.ts byFunction), the rest make the kinds add up to a few percent more than the total, which
// is exact. Two runs of each side with a difference taken
// between them did not work for the gateway: its start-up (full collections of the start-up's garbage, compilations)
// fell differently in each, by more than the requests cost. The warm-up is long because V8 was still optimizing the
// chain's functions a few thousand requests in under callgrind (which runs ~50x slower, so timers and
// code-dependency changes come after fewer requests than in service: after 3,000 the compiler still did 35,000-185,000
// instructions a request in the stretch, after 8,000 ~22,000-48,000); what V8's compiler and the collections did in
// the counted stretch is reported apart (byKind), so that runs compare without them. That work is found by where it
// ran, not by its name (scenarios/instructions.ts dumpCosts): until the eighth round of 2026-11-28 the kinds went by
// function names, and a scavenge's helpers with generic names (BodyDescriptorBase::IteratePointers, memcpy) were
// counted as the runtime's, ~25,000-40,000 a request when a collection fell in the stretch. Code no perf map names is
// WebAssembly, here undici's HTTP/1.1 parser (llhttp), in the gateway and the hops alike. node runs with --predictable
// (the GC's and the compiler's work on the one thread) and the gateway's young generation.
//
// The gateway's certificates sit in a directory of their own here; its audit log in another. (With both in one
// directory, every audit write made the gateway reload its certificates until src/config/watch.ts compared the
// watched files' signature; this count found it.) FLEETGATE_KEEP_CALLGRIND=1 keeps the work directory and the dumps.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildKubeconfig } from '../../../src/pki/kubeconfig.js';
import { createCA, issueClientCert, issueServingCert } from '../../../src/pki/index.js';
import { impersonationHeaders } from '../../../src/upstream/headers.js';
import { RECOMMENDED_SEMI_SPACE_MB } from '../../../src/cache/younggen.js';
import { GATEWAY_USER, startRealFleet } from '../../e2e/cluster.js';
import { seedForwardedRead } from '../scenarios/01-forwarding.js';
import { byFunction, type DumpCosts, instructionsUnavailable, KIND } from '../scenarios/instructions.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PATH = '/api/v1/namespaces/default/configmaps/bench';
/** What the code no perf map names is on this path (the intake's JSON scan is not on it), and its kind. */
const LLHTTP = "WebAssembly: undici's HTTP/1.1 parser (llhttp)";
const LLHTTP_KIND = "undici's HTTP/1.1 parser (WebAssembly)";

export interface RequestInstructions {
  side: string;
  /** GETs in the counted stretch. */
  requests: number;
  warmup: number;
  perRequest: number;
  byKind: Record<string, number>;
  top: Array<{ name: string; perRequest: number }>;
}

const { values } = parseArgs({
  options: {
    sides: { type: 'string', default: 'gateway,h2' },
    count: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '8000' },
  },
});
const sides = values.sides!.split(',');
const count = Number(values.count);
const warmup = Number(values.warmup);
if (!Number.isInteger(count) || count < 1 || !Number.isInteger(warmup)) throw new Error('--count and --warmup take whole numbers');
const missing = instructionsUnavailable();
if (missing) throw new Error(missing);

const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
log('compiling the sources (npm run build)');
const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json')], { encoding: 'utf8' });
if (tsc.status !== 0) throw new Error(`tsc failed: ${(tsc.stdout + tsc.stderr).slice(0, 2000)}`);

const work = mkdtempSync(join(tmpdir(), 'fleetgate-request-instructions-'));
log('starting a real kube-apiserver + etcd');
const fleet = await startRealFleet({ members: [] });
const results: RequestInstructions[] = [];
try {
  const cp = fleet.controlPlane;
  await seedForwardedRead(cp.endpoint);
  const certs = join(work, 'certs');
  mkdirSync(certs);
  const servingCA = await createCA('request-instructions-ca');
  const clientCA = await createCA('request-instructions-client-ca');
  const serving = await issueServingCert(servingCA, ['127.0.0.1', 'localhost']);
  writeFileSync(join(certs, 'serving.crt'), serving.certPem);
  writeFileSync(join(certs, 'serving.key'), serving.keyPem, { mode: 0o600 });
  writeFileSync(join(certs, 'client-ca.crt'), clientCA.certPem);
  const identity = join(work, 'gateway-identity.kubeconfig');
  writeFileSync(identity, buildKubeconfig({ name: 'control-plane', server: cp.url, caPem: cp.caPem, user: GATEWAY_USER, token: cp.gatewayToken }), { mode: 0o600 });
  writeFileSync(join(work, 'audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n');
  const config = join(work, 'fleetgate.yaml');
  writeFileSync(
    config,
    `server:
  address: 127.0.0.1
  port: 0
  tls:
    certFile: ${join(certs, 'serving.crt')}
    keyFile: ${join(certs, 'serving.key')}
    clientCAFile: ${join(certs, 'client-ca.crt')}
  requestTimeoutSeconds: 60
  shutdownGracePeriodSeconds: 1
controlPlane:
  kubeconfig: ${identity}
  timeoutSeconds: 60
resources:
  exposed:
    - group: ""
      resources: [configmaps, namespaces]
logging:
  level: info
audit:
  policyFile: ${join(work, 'audit-policy.yaml')}
  log:
    path: ${join(work, 'audit', 'audit.log')}
    maxSizeBytes: 0
flowControl:
  enabled: true
cache:
  karmada:
    enabled: false
`,
  );
  mkdirSync(join(work, 'audit'));
  const user = await issueClientCert(clientCA, 'bench-user', ['bench']);
  const impersonation = impersonationHeaders({ username: 'bench-user', groups: ['bench', 'system:authenticated'], extra: {} });
  // --perf-basic-prof also writes V8's log, by default into the working directory (the repository): keep it here.
  const nodeFlags = ['--predictable', `--max-semi-space-size=${RECOMMENDED_SEMI_SPACE_MB}`, '--perf-basic-prof', `--logfile=${join(work, 'v8.log')}`, '--no-logfile-per-isolate'];

  for (const side of sides) {
    let command: string[];
    if (side === 'gateway') {
      command = [join(ROOT, 'bin', 'fleetgate.js'), 'serve', '--config', config];
    } else {
      const options = join(work, `hop-${side}.json`);
      writeFileSync(options, JSON.stringify({ upstreamUrl: cp.url, upstreamCaPem: cp.caPem, token: cp.gatewayToken, impersonation, servingCertPem: serving.certPem, servingKeyPem: serving.keyPem, clientCaPem: clientCA.certPem, listener: side }));
      command = ['--import', 'tsx', join(ROOT, 'test', 'bench', 'tools', 'barehop-main.ts'), options];
    }
    log(`${side}: ${warmup} GETs, then ${count} counted, under callgrind`);
    const run = await countRun(join(work, `${side}.out`), [...nodeFlags, ...command], side === 'gateway', servingCA.certPem, user);
    // The kinds are the intake's (scenarios/instructions.ts); its scan is not on this path, llhttp is.
    const kindHere = (kind: string): string => (kind === KIND.scan ? LLHTTP_KIND : kind);
    const requests = run.requests;
    const byKind: Record<string, number> = {};
    for (const [kind, ir] of run.costs.kinds) byKind[kindHere(kind)] = Math.round(ir / requests);
    const top = [...run.costs.fns].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([name, ir]) => ({ name, perRequest: Math.round(ir / requests) }));
    const r: RequestInstructions = { side, requests, warmup, perRequest: Math.round(run.total / requests), byKind, top };
    results.push(r);
    const apart = (byKind[KIND.compiler] ?? 0) + (byKind[KIND.youngGC] ?? 0) + (byKind[KIND.fullGC] ?? 0);
    log(`${side}: ${r.perRequest.toLocaleString('en-US')} instructions a request over ${requests} (${(r.perRequest - apart).toLocaleString('en-US')} without the compiler and the collections)`);
  }
} finally {
  await fleet.stop();
  if (!process.env.FLEETGATE_KEEP_CALLGRIND) rmSync(work, { recursive: true, force: true });
}
console.log(JSON.stringify(results, null, 1));

/** One callgrind run of the side: ready, the warm-up, zeroed, count GETs, dumped; what the dump holds. */
async function countRun(
  out: string,
  args: string[],
  gateway: boolean,
  caPem: string,
  user: { certPem: string; keyPem: string },
): Promise<{ costs: DumpCosts; total: number; requests: number }> {
  const child = spawn('valgrind', ['--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  const started = Date.now();
  // The gateway logs the port it listens on (0 in its config); a bare hop prints its URL.
  const listening = (): string | undefined => {
    if (!gateway) return /URL (\S+)/.exec(output)?.[1];
    const port = /"port":(\d+)[^\n]*"fleetgate is serving"/.exec(output)?.[1];
    return port === undefined ? undefined : `https://127.0.0.1:${port}`;
  };
  let url: string | undefined;
  while ((url = listening()) === undefined) {
    if (child.exitCode !== null || Date.now() - started > 600_000) throw new Error(`the ${gateway ? 'gateway' : 'hop'} did not start: ${output.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const pool = new Pool(url, { connections: 1, pipelining: 1, connect: { ca: caPem, cert: user.certPem, key: user.keyPem } });
  const get = async () => {
    const r = await pool.request({ path: PATH, method: 'GET' });
    const body = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`GET ${PATH}: ${r.statusCode} ${body.slice(0, 300)}`);
  };
  /** Runs callgrind_control with flag, sending GETs until it returns (the server takes it only while it runs); how many. */
  const control = async (flag: string): Promise<number> => {
    const c = spawn('callgrind_control', [flag, String(child.pid)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    c.stdout.on('data', (d: Buffer) => (text += d));
    c.stderr.on('data', (d: Buffer) => (text += d));
    let done: number | null | undefined;
    c.on('close', (code) => (done = code));
    let sent = 0;
    while (done === undefined) {
      await get();
      sent++;
    }
    if (done !== 0) throw new Error(`callgrind_control ${flag} failed (${done}): ${text}`);
    return sent;
  };
  let requests = count;
  try {
    for (let i = 0; i < warmup; i++) await get();
    await control('--zero');
    for (let i = 0; i < count; i++) await get();
    requests += await control('--dump');
  } finally {
    await pool.close();
    child.kill('SIGTERM');
  }
  const code = await closed;
  const map = `/tmp/perf-${child.pid}.map`;
  // The dump callgrind_control asked for is the first numbered one (the whole run's goes to out at exit).
  const dump = `${out}.1`;
  try {
    const text = readFileSync(dump, 'utf8');
    const total = Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1]);
    if (!Number.isFinite(total)) throw new Error(`callgrind's dump has no total (exit ${code}): ${output.slice(-2000)}`);
    return { costs: byFunction(dump, map, LLHTTP), total, requests };
  } finally {
    if (!process.env.FLEETGATE_KEEP_CALLGRIND) for (const f of [map, out, dump]) rmSync(f, { force: true });
  }
}
