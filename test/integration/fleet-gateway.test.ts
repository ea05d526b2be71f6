// The whole gateway in front of the demo federation (a simulated control plane with Karmada Cluster objects and
// members member-a/b/c): members are discovered from the Cluster objects, their pods and events are served merged
// with a CLUSTER column, writes and streams reach the owning member, and a client-go informer through the gateway
// stays in sync while members go down, watches are cut and the gateway itself restarts.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect as tlsConnect } from 'node:tls';
import WebSocket from 'ws';
import type { KubeObject } from '../../src/api/meta.js';
import { buildInformer, INFORMER_BUILD_TIMEOUT_MS, startInformer } from '../clients/informer.js';
import { requireGo } from '../e2e/require-go.js';
import { startChurn } from '../sim/churn.js';
import { startDemoFleet, type DemoFleet } from '../sim/demofleet.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { generatePod } from '../sim/podgen.js';
import { FEDERATED_EXPOSED, startTestGateway, type TestGateway } from '../support/gateway.js';
import { call } from '../support/http.js';
import { kubectl, kubectlPath, type KubectlVersion } from '../support/kubectl.js';

let demo: DemoFleet;
let gw: TestGateway;
let admin: string;
let dir: string;

const EXPOSED = FEDERATED_EXPOSED;
// The federation gateway here parses member list pages in an intake worker (cache.intakeWorkers), so the worker
// path is what syncs, relists after cut watches and restarts in these tests; the other suites use the main thread.
const INTAKE = 'cache:\n  intakeWorkers: 1\n';

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function membersSynced(g: TestGateway, names: string[]): Promise<boolean> {
  const r = await call({ url: g.url, caPem: g.servingCA.certPem }, 'GET', '/readyz?verbose');
  return names.every((n) => new RegExp(`${n}: synced`).test(r.text));
}

/** Pods of the members as the members themselves have them: "cluster/namespace/name". */
function truth(names: string[], namespace?: string): string[] {
  return names.flatMap((n) => demo.fleet.member(n).cluster.list('', 'pods', namespace).map((p) => `${n}/${p.metadata.namespace}/${p.metadata.name}`)).sort();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-fleet-gw-'));
  demo = await startDemoFleet(join(dir, 'fleet'));
  gw = await startTestGateway({ controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath, exposed: EXPOSED, extraYaml: INTAKE });
  admin = await gw.kubeconfigFor('admin', ['system:masters'], join(dir, 'admin.kubeconfig'));
  await until(() => membersSynced(gw, ['member-a', 'member-b', 'member-c']), 30_000, 'member caches synced');
});

afterAll(async () => {
  await gw?.close();
  await demo?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each<KubectlVersion>(['1.27', '1.30', '1.33'])('kubectl %s through the gateway', (v) => {
  it('get pods -A lists every member\'s pods with a CLUSTER column', async () => {
    const r = await kubectl(v, admin, ['get', 'pods', '-A']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
    const rows = lines.slice(1).map((l) => l.split(/\s+/));
    const got = rows.map((c) => `${c[5]}/${c[0]}/${c[1]}`).sort();
    expect(got).toEqual(truth(['member-a', 'member-b', 'member-c']));
  });

  it('-o wide, a cluster label selector and a node field selector', async () => {
    const wide = await kubectl(v, admin, ['get', 'pods', '-n', 'demo', '-o', 'wide']);
    expect(wide.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    const b = await kubectl(v, admin, ['get', 'pods', '-n', 'demo', '-l', 'fleetgate.io/cluster=member-b', '-o', 'name']);
    expect(b.stdout.trim().split('\n').map((s) => s.replace('pod/', '')).sort()).toEqual(truth(['member-b'], 'demo').map((s) => s.split('/')[2]));
    const node = await kubectl(v, admin, ['get', 'pods', '-A', '--field-selector', 'spec.nodeName=member-a-node-1', '-o', 'json']);
    const items = JSON.parse(node.stdout).items as KubeObject[];
    const want = demo.fleet.member('member-a').cluster.list('', 'pods').filter((p: any) => p.spec.nodeName === 'member-a-node-1');
    expect(items.map((p) => p.metadata.name).sort()).toEqual(want.map((p) => p.metadata.name).sort());
    expect(items.every((p) => p.metadata.labels?.['fleetgate.io/cluster'] === 'member-a')).toBe(true);
  });

  it('get events shows CLUSTER before LAST SEEN', async () => {
    const r = await kubectl(v, admin, ['get', 'events', '-n', 'demo']);
    expect(r.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual(['CLUSTER', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  });
});

describe('readiness after the first listing', () => {
  it('member-caches is ready once every member is listed and the heap was collected once after it', async () => {
    const r = await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz?verbose');
    expect(r.status).toBe(200);
    expect(r.text).toContain('[+]member-caches ok');
    expect(gw.running.gateway.members!.caches.ready()).toBe(true);
  });
});

describe('one name in two members', () => {
  beforeAll(async () => {
    for (const m of ['member-a', 'member-b']) {
      const c = demo.fleet.member(m).cluster;
      const { pod, status } = generatePod({ namespace: 'demo', app: 'dup', index: 1, node: `${m}-node-1` });
      pod.metadata.name = 'twin';
      (pod as any).status = status;
      c.load(c.resourceFor('', 'pods')!, pod);
    }
    await until(async () => (await kubectl('1.33', admin, ['get', 'pods', '-n', 'demo', '--field-selector', 'metadata.name=twin', '-o', 'name'])).stdout.trim().split('\n').length === 2, 5000, 'twins cached');
  });

  it('get answers 409 naming the clusters; the list has both rows', async () => {
    const r = await kubectl('1.33', admin, ['get', 'pod', 'twin', '-n', 'demo']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('member-a');
    expect(r.stderr).toContain('member-b');
    expect(r.stderr).toContain('(Conflict)');
    const list = await kubectl('1.33', admin, ['get', 'pods', '-n', 'demo', '--field-selector', 'metadata.name=twin']);
    expect(list.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[4])).toEqual(['member-a', 'member-b']);
  });
});

describe('writes and streams reach the owning member', () => {
  const podIn = (m: string) => demo.fleet.member(m).cluster.list('', 'pods', 'demo').find((p) => p.metadata.labels?.app === 'web')!.metadata.name!;

  it('logs and exec reach a pod in member-b', async () => {
    const name = podIn('member-b');
    const logs = await kubectl('1.33', admin, ['logs', name, '-n', 'demo', '--tail=2']);
    expect(logs.stderr).toBe('');
    expect(logs.stdout.trim().split('\n')).toHaveLength(2);
    const exec = await kubectl('1.33', admin, ['exec', name, '-n', 'demo', '--', 'hostname']);
    expect(exec.stdout.trim()).toBe(name);
  });

  it('delete pod removes it from its member', async () => {
    const name = podIn('member-c');
    const r = await kubectl('1.33', admin, ['delete', 'pod', name, '-n', 'demo', '--grace-period=0', '--force']);
    expect(r.code).toBe(0);
    expect(demo.fleet.member('member-c').cluster.get('', 'pods', 'demo', name)).toBeUndefined();
  });

  it('scaling a Deployment shows the new pods in get pods -w with their clusters', async () => {
    const child = spawn(kubectlPath('1.33'), ['--kubeconfig', admin, 'get', 'pods', '-n', 'demo', '-l', 'app=api', '-w', '--output-watch-events'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      await until(() => out.split('\n').length > 3, 10_000, 'initial list printed');
      const before = out.split('\n').length;
      const t0 = Date.now();
      await kubectl('1.33', admin, ['scale', 'deploy', 'api', '-n', 'demo', '--replicas=6']);
      await until(() => out.split('\n').filter((l) => l.startsWith('ADDED')).length >= 6, 10_000, 'three new pods shown');
      expect(Date.now() - t0).toBeLessThan(5000);
      const added = out.split('\n').slice(before - 1).filter((l) => l.startsWith('ADDED'));
      expect(added.length).toBeGreaterThanOrEqual(3);
      for (const l of added) expect(l).toMatch(/member-[abc]/);
    } finally {
      child.kill();
    }
  });
});

describe('watching the fleet over WebSocket, as browser dashboards do', () => {
  /** A WebSocket watch as user; messages as they come, and how it ended (close code, or the refused handshake's status). */
  async function wsWatch(user: string, groups: string[], path: string) {
    const ep = await gw.endpointFor(user, groups);
    const ws = new WebSocket(ep.url.replace(/^https/, 'wss') + path, { ca: ep.caPem, cert: ep.certPem, key: ep.keyPem });
    const messages: string[] = [];
    const ended = new Promise<{ code?: number; status?: number; body?: string }>((resolve) => {
      ws.on('message', (data, isBinary) => {
        expect(isBinary).toBe(false);
        messages.push(data.toString());
      });
      ws.on('close', (code) => resolve({ code }));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      ws.on('error', () => resolve({ code: -1 }));
    });
    const opened = new Promise<{ protocol: string; auditID: unknown }>((resolve) => ws.on('upgrade', (res) => resolve({ protocol: ws.protocol, auditID: res.headers['audit-id'] })));
    return { ws, messages, ended, opened, events: () => messages.map((m) => JSON.parse(m)) };
  }

  /** The sum of a metric's series whose labels include every one of labels. */
  async function metricValue(name: string, ...labels: string[]): Promise<number> {
    const text = (await call(await gw.endpointFor('admin', ['system:masters']), 'GET', '/metrics')).text;
    let sum = 0;
    for (const l of text.split('\n')) if (l.startsWith(name + '{') && labels.every((x) => l.includes(x))) sum += Number(l.slice(l.lastIndexOf(' ') + 1));
    return sum;
  }

  it('sends the initial state and each change as one text message, its JSON and newline, with the CLUSTER label', async () => {
    const eventsBefore = await metricValue('apiserver_watch_events_total', 'group=""', 'version="v1"', 'kind="Pod"');
    const w = await wsWatch('admin', ['system:masters'], '/api/v1/namespaces/demo/pods?watch=1&labelSelector=app%3Dapi&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan');
    try {
      const { auditID } = await w.opened;
      expect(typeof auditID).toBe('string');
      await until(() => w.events().some((e) => e.type === 'BOOKMARK'), 10_000, 'initial events and their bookmark');
      for (const m of w.messages) expect(m.endsWith('\n') && m.indexOf('\n') === m.length - 1).toBe(true);
      const initial = w.events().filter((e) => e.type === 'ADDED');
      expect(initial.length).toBe(truth(['member-a', 'member-b', 'member-c'], 'demo').filter((k) => k.includes('/api-')).length);
      for (const e of initial) expect(e.object.metadata.labels['fleetgate.io/cluster']).toMatch(/^member-[abc]$/);
      const member = demo.fleet.member('member-b').cluster;
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ws-watched', namespace: 'demo', labels: { app: 'api' } }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'registry.example.com/c:1' }] } };
      member.create(member.resourceFor('', 'pods')!, 'demo', pod);
      await until(() => w.events().some((e) => e.type === 'ADDED' && e.object.metadata.name === 'ws-watched'), 10_000, 'the new pod');
      const added = w.events().find((e) => e.object.metadata.name === 'ws-watched');
      expect(added.object.metadata.labels['fleetgate.io/cluster']).toBe('member-b');
      member.delete(member.resourceFor('', 'pods')!, 'demo', 'ws-watched');
      await until(() => w.events().some((e) => e.type === 'DELETED' && e.object.metadata.name === 'ws-watched'), 10_000, 'its deletion');
      // Open, it is a long-running request, as kube counts an upgraded watch.
      expect(await metricValue('apiserver_longrunning_requests', 'resource="pods"', 'verb="WATCH"')).toBeGreaterThanOrEqual(1);
      // Every event sent is counted (other watches of pods in this file may add more), its size observed.
      expect(await metricValue('apiserver_watch_events_total', 'group=""', 'version="v1"', 'kind="Pod"')).toBeGreaterThanOrEqual(eventsBefore + w.messages.length);
      expect(await metricValue('apiserver_watch_events_sizes_bucket', 'le="+Inf"', 'kind="Pod"')).toBeGreaterThanOrEqual(eventsBefore + w.messages.length);
    } finally {
      w.ws.close();
    }
    // The watch is gone from the gateway once the client closes, and counted as kube-apiserver counts an upgraded
    // request: code "0" (its 101 goes out on the hijacked connection, which its metrics do not see).
    await until(async () => (await metricValue('apiserver_longrunning_requests', 'resource="pods"', 'verb="WATCH"')) === 0, 5_000, 'no pod watch left');
    expect(await metricValue('apiserver_request_total', 'resource="pods"', 'verb="WATCH"', 'code="0"')).toBeGreaterThanOrEqual(1);
  });

  it('ends with an ERROR event for a resourceVersion that is not the gateway\'s, and a bad selector is refused before the handshake', async () => {
    const gone = await wsWatch('admin', ['system:masters'], '/api/v1/pods?watch=1&resourceVersion=12');
    const end = await gone.ended;
    expect(end.code).toBe(1000);
    expect(gone.events().map((e) => [e.type, e.object.code])).toEqual([['ERROR', 410]]);
    const bad = await wsWatch('admin', ['system:masters'], '/api/v1/pods?watch=1&labelSelector=a%20in%20(b');
    const refused = await bad.ended;
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body!).kind).toBe('Status');
  });

  it('closes a connection whose client sends a large message (1009), and answers an upgrade that is not WebSocket with a 400 Status', async () => {
    const w = await wsWatch('admin', ['system:masters'], '/api/v1/namespaces/demo/pods?watch=1&labelSelector=app%3Dnone');
    await w.opened;
    w.ws.send('x'.repeat(100_000));
    expect((await w.ended).code).toBe(1009);
    const ep = await gw.endpointFor('admin', ['system:masters']);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port: gw.running.port, ca: ep.caPem, cert: ep.certPem, key: ep.keyPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => {
        s.write('GET /api/v1/namespaces/demo/pods?watch=1 HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
      });
      let got = '';
      s.on('data', (d) => (got += d));
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const status = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(status).toMatchObject({ kind: 'Status', code: 400 });
    expect(status.message).toMatch(/^only a WebSocket upgrade serves a watch of pods or events across the fleet/);
  });

  it('ends a watch whose client stopped reading once it is 16 MiB behind, and counts it in apiserver_terminated_watchers_total', async () => {
    const before = await metricValue('apiserver_terminated_watchers_total', 'group=""', 'resource="pods"');
    const w = await wsWatch('admin', ['system:masters'], '/api/v1/namespaces/demo/pods?watch=1&labelSelector=app%3Dbulky');
    await w.opened;
    // The client reads nothing more: the socket's buffers fill, then the gateway's queue for it.
    w.ws.pause();
    const member = demo.fleet.member('member-a').cluster;
    const pods = member.resourceFor('', 'pods')!;
    const filler = 'x'.repeat(100 * 1024);
    const names: string[] = [];
    try {
      for (let i = 0; i < 400 && (await metricValue('apiserver_terminated_watchers_total', 'group=""', 'resource="pods"')) === before; i++) {
        const name = `bulky-${i}`;
        member.create(pods, 'demo', { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'demo', labels: { app: 'bulky' }, annotations: { filler } }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'registry.example.com/c:1' }] } });
        names.push(name);
        if (i % 20 === 19) await new Promise((r) => setTimeout(r, 50));
      }
      await until(async () => (await metricValue('apiserver_terminated_watchers_total', 'group=""', 'resource="pods"')) === before + 1, 10_000, 'the watch ended as unresponsive');
      // The client left behind (~100 KB a pod) was not let past the allowance, with the socket's own buffers.
      expect(names.length * filler.length).toBeGreaterThan(16 * 1024 * 1024);
    } finally {
      w.ws.terminate();
      for (const name of names) member.delete(pods, 'demo', name);
    }
  });

  it('is authorized like any cached watch: a user who may not watch those pods gets the 403 instead of a handshake', async () => {
    const w = await wsWatch('alice', ['dev'], '/api/v1/namespaces/kube-system/pods?watch=1');
    const end = await w.ended;
    expect(end.status).toBe(403);
    expect(JSON.parse(end.body!).message).toBe('pods is forbidden: User "alice" cannot watch resource "pods" in API group "" in the namespace "kube-system"');
  });
});

describe('members come and go at run time', () => {
  let extra: SimFleet;
  afterAll(async () => {
    await extra?.close();
  });

  it('a Karmada Cluster added at run time brings its pods in; deleting it takes them away', async () => {
    extra = await startSimFleet({ clusters: ['member-d'], podsPerCluster: 5, nodesPerCluster: 1 });
    const cp = demo.fleet.member('control-plane').cluster;
    cp.create(cp.resourceFor('', 'secrets')!, 'karmada-cluster', {
      metadata: { name: 'member-d', namespace: 'karmada-cluster' },
      data: { token: Buffer.from(extra.adminToken).toString('base64'), caBundle: Buffer.from(extra.servingCA.certPem).toString('base64') },
    });
    cp.create(cp.resourceFor('cluster.karmada.io', 'clusters')!, '', {
      metadata: { name: 'member-d' },
      spec: { apiEndpoint: extra.member('member-d').url, secretRef: { namespace: 'karmada-cluster', name: 'member-d' } },
    });
    const fromD = async () => (await kubectl('1.33', admin, ['get', 'pods', '-A', '-l', 'fleetgate.io/cluster=member-d', '-o', 'name'])).stdout.trim();
    await until(async () => (await fromD()).split('\n').filter(Boolean).length === 5, 20_000, 'member-d pods served');
    cp.delete(cp.resourceFor('cluster.karmada.io', 'clusters')!, '', 'member-d');
    await until(async () => (await fromD()) === '', 20_000, 'member-d pods gone');
  });
});

describe.skipIf(!requireGo())('a client-go informer through the gateway', () => {
  // The first build takes minutes on a fresh machine: not inside a test's timeout.
  beforeAll(() => buildInformer(), INFORMER_BUILD_TIMEOUT_MS);

  it('stays in sync through churn, a member outage, cut watches and a gateway restart', async () => {
    const members = ['member-a', 'member-b', 'member-c'];
    let informer = startInformer(admin, { namespace: 'churn' });
    await informer.waitFor((s) => s.synced, 60_000);
    const churn = startChurn(members.map((m) => demo.fleet.member(m).cluster), { ratePerSecond: 200, namespace: 'churn', seed: 9 });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      // member-b goes down for a while; its pods stay served from the last known state.
      await demo.fleet.member('member-b').stop();
      await new Promise((r) => setTimeout(r, 2000));
      await demo.fleet.member('member-b').start();
      // Every watch between the members and the gateway is cut at once.
      for (const m of members) {
        await demo.fleet.member(m).stop();
        await demo.fleet.member(m).start();
      }
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      churn.stop();
    }
    const want = () => truth(members, 'churn');
    const seen = (s: { events: Array<{ type: string; namespace: string; name: string }> }) => {
      const live = new Map<string, boolean>();
      for (const e of s.events) live.set(`${e.namespace}/${e.name}`, e.type !== 'DELETED');
      return live;
    };
    const inSync = (s: Parameters<typeof seen>[0]) => {
      const live = seen(s);
      const names = want().map((x) => x.split('/').slice(1).join('/'));
      return names.every((n) => live.get(n)) && [...live.entries()].filter(([, v]) => v).length === names.length;
    };
    await informer.waitFor(inSync, 30_000);
    let result = await informer.stop();
    expect(result.synced).toBe(true);
    expect(result.pods.map((p) => `${p.labels['fleetgate.io/cluster']}/${p.namespace}/${p.name}`).sort()).toEqual(want());

    // A new gateway process: its resourceVersions are another space, so the informer relists (410) and converges.
    informer = startInformer(admin, { namespace: 'churn' });
    await informer.waitFor((s) => s.synced, 60_000);
    const old = gw;
    await old.close();
    gw = await startTestGateway({ controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath, exposed: EXPOSED, port: old.running.port, pki: old, extraYaml: INTAKE });
    await until(() => membersSynced(gw, members), 30_000, 'new gateway synced');
    const more = startChurn(members.map((m) => demo.fleet.member(m).cluster), { ratePerSecond: 200, namespace: 'churn', seed: 10, maxOps: 300, appPrefix: 'after' });
    await more.done;
    try {
      await informer.waitFor(inSync, 60_000);
    } catch (e) {
      const live = seen(informer.state);
      const names = want().map((x) => x.split('/').slice(1).join('/'));
      const missing = names.filter((n) => !live.get(n));
      const ep = await gw.endpointFor('admin', ['system:masters']);
      for (const n of missing.slice(0, 2)) {
        const [ns, name] = n.split('/');
        const got = await call(ep, 'GET', `/api/v1/namespaces/${ns}/pods/${name}`);
        console.log('DEBUG gateway has', n, got.status, got.status === 200 ? got.json().metadata.resourceVersion : got.text.slice(0, 200));
        console.log('DEBUG informer events for', n, JSON.stringify(informer.state.events.filter((e) => e.name === name)));
      }
      console.log('DEBUG missing', missing.slice(0, 5), 'extra', [...live.entries()].filter(([k, v]) => v && !names.includes(k)).slice(0, 5), 'requests', JSON.stringify(informer.state.requests.slice(-15)));
      throw e;
    }
    result = await informer.stop();
    expect(result.pods.map((p) => `${p.labels['fleetgate.io/cluster']}/${p.namespace}/${p.name}`).sort()).toEqual(want());
  }, 240_000);
});

describe('split deployment: a facade in front of a cache service', () => {
  let cacheSvc: TestGateway;
  let facade: TestGateway;
  let viaFacade: string;

  beforeAll(async () => {
    const cpKubeconfig = demo.fleet.member('control-plane').kubeconfigPath;
    cacheSvc = await startTestGateway({ controlPlaneKubeconfig: cpKubeconfig, exposed: EXPOSED, extraYaml: 'cache:\n  mode: cache\n  intakeWorkers: 1\n' });
    // The facade reaches the cache service with an identity the control plane lets impersonate.
    const facadeIdentity = await cacheSvc.kubeconfigFor('facade', ['system:masters'], join(dir, 'facade-to-cache.kubeconfig'));
    facade = await startTestGateway({ controlPlaneKubeconfig: cpKubeconfig, exposed: EXPOSED, extraYaml: `cache:\n  mode: facade\n  facade:\n    kubeconfig: ${facadeIdentity}\n` });
    viaFacade = await facade.kubeconfigFor('alice', ['dev'], join(dir, 'alice-facade.kubeconfig'));
    await until(() => membersSynced(cacheSvc, ['member-a', 'member-b', 'member-c']), 30_000, 'cache service synced');
  });

  afterAll(async () => {
    await facade?.close();
    await cacheSvc?.close();
  });

  it('serves merged pods through the facade, as the caller', async () => {
    const r = await kubectl('1.33', viaFacade, ['get', 'pods', '-n', 'demo']);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')[0]!.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
    expect(r.stdout).toMatch(/member-[abc]/);
    const who = JSON.parse((await kubectl('1.33', viaFacade, ['auth', 'whoami', '-o', 'json'])).stdout);
    expect(who.status.userInfo.username).toBe('alice');
    const denied = await kubectl('1.33', viaFacade, ['get', 'pods', '-n', 'kube-system']);
    expect(denied.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system"');
    const facadeReady = await call({ url: facade.url, caPem: facade.servingCA.certPem }, 'GET', '/readyz');
    expect(facadeReady.status).toBe(200);
  });
});
