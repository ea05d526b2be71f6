// The merged cache served over HTTPS (HTTP/2 with HTTP/1.1 fallback, like the gateway's listener) and read by
// real kubectl 1.27 and 1.33 and by raw requests: CLUSTER columns, one row per member for a shared name, 409 for a
// GET of such a name, selectors on the cluster label and pod fields, live watches, 410 for resourceVersions and
// continue tokens of another instance, consistent pages while objects change, gzip, Warning headers for stale
// members. Objects are fed through the reflector sinks, as the members' reflectors will.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { encodeContinue } from '../../src/api/resourceversion.js';
import { toStatus } from '../../src/api/status.js';
import { fleetReadAuthorizer } from '../../src/authz/cachedreads.js';
import { CLUSTER_LABEL, MergedCache } from '../../src/cache/merged.js';
import { isCachedRead, serveCached, type StaleMember } from '../../src/cache/serve.js';
import type { ActiveWatch } from '../../src/cache/watch.js';
import { createCA, issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { apiGroupDoc, apiGroupList, apiResourceList, apiVersions } from '../sim/discovery.js';
import { generatePod } from '../sim/podgen.js';
import { builtinResources } from '../sim/registry.js';
import { call, openWatch, type ClusterEndpoint } from '../support/http.js';
import { kubectl, kubectlPath, type KubectlVersion } from '../support/kubectl.js';

const log = pino({ level: 'silent' });
const RESOURCES = builtinResources().filter((r) => r.resource === 'pods' || r.resource === 'events');

interface CacheServer {
  url: string;
  cache: MergedCache;
  stale: StaleMember[];
  /** Usernames the fake control plane denies. */
  denied: Set<string>;
  watches: Set<ActiveWatch>;
  close(): Promise<void>;
}

let ca: { certPem: string; keyPem: string };
let serving: { certPem: string; keyPem: string };
let dir: string;

async function startCacheServer(instanceID: string, rvBase?: number): Promise<CacheServer> {
  const cache = new MergedCache({ instanceID, windowSize: 1000, dropManagedFields: true, rvBase });
  const stale: StaleMember[] = [];
  const denied = new Set<string>();
  const watches = new Set<ActiveWatch>();
  const authorize = fleetReadAuthorizer(async (a) => ({ allowed: !denied.has(a.user.username), reason: '' }));
  const server: Http2SecureServer = createSecureServer({ key: serving.keyPem, cert: serving.certPem, allowHTTP1: true }, async (req, res) => {
    const url = new URL(req.url ?? '/', 'https://cache.invalid');
    const auditID = randomUUID();
    res.setHeader('Audit-Id', auditID);
    const auth = String(req.headers.authorization ?? '');
    const ctx = {
      req,
      res,
      url,
      auditID,
      info: newRequestInfo(req.method ?? 'GET', url.pathname, url.searchParams),
      user: { username: auth.replace(/^Bearer /, '') || 'system:anonymous', groups: ['system:authenticated'] },
      log,
    } as RequestContext;
    try {
      const doc = discovery(url.pathname, `127.0.0.1:${port}`);
      if (doc) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(doc);
        return;
      }
      if (!isCachedRead(ctx.info)) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('404 page not found\n');
        return;
      }
      const allowedClusters = await authorize(ctx);
      await serveCached(ctx, cache, {
        stale: () => stale,
        allowedClusters,
        onWatch: (w) => {
          watches.add(w);
          void w.done.then(() => watches.delete(w));
        },
      });
    } catch (e) {
      writeStatus(res, auditID, toStatus(e));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    cache,
    stale,
    denied,
    watches,
    async close() {
      for (const w of watches) w.stop();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Discovery, and the namespaces kubectl looks up after a NotFound (the control plane's, in the gateway). */
function discovery(path: string, address: string): string | undefined {
  const ns = /^\/api\/v1\/namespaces\/(demo|kube-system|load)$/.exec(path);
  if (ns) return JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: ns[1] }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
  if (path === '/api') return apiVersions(address);
  if (path === '/apis') return apiGroupList(RESOURCES, []);
  if (path === '/api/v1') return apiResourceList('', 'v1', RESOURCES, []);
  if (path === '/apis/events.k8s.io') return apiGroupDoc('events.k8s.io', RESOURCES, []);
  if (path === '/apis/events.k8s.io/v1') return apiResourceList('events.k8s.io', 'v1', RESOURCES, []);
  return undefined;
}

let memberRV = 100;

function pod(namespace: string, name: string, node: string, index: number, phase: 'Running' | 'Pending' = 'Running'): any {
  const { pod: p, status } = generatePod({ namespace, app: name.split('-')[0]!, index, node, phase }, new Date(Date.now() - 3600_000));
  p.metadata.name = name;
  p.metadata.resourceVersion = String(memberRV++);
  (p as any).metadata.managedFields = [{ manager: 'kubelet', operation: 'Update' }];
  (p as any).status = status;
  return p;
}

function coreEvent(namespace: string, name: string, podName: string, message: string): any {
  const t = new Date(Date.now() - 30 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { namespace, name, resourceVersion: String(memberRV++), creationTimestamp: t },
    involvedObject: { kind: 'Pod', namespace, name: podName, apiVersion: 'v1' },
    reason: 'Started',
    message,
    source: { component: 'kubelet', host: 'node-1' },
    firstTimestamp: t,
    lastTimestamp: t,
    count: 1,
    type: 'Normal',
  };
}

let gw: CacheServer;
let other: CacheServer;
let kubeconfig: string;
let ep: ClusterEndpoint;

beforeAll(async () => {
  ca = await createCA('cache-test-ca');
  serving = await issueServingCert(ca, ['127.0.0.1']);
  dir = mkdtempSync(join(tmpdir(), 'cache-serve-'));
  gw = await startCacheServer('instance-1');
  other = await startCacheServer('instance-2');
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, buildKubeconfig({ name: 'gw', server: gw.url, caPem: ca.certPem, user: 'admin', token: 'admin' }));
  ep = { url: gw.url, caPem: ca.certPem, token: 'admin' };

  for (const s of [gw, other]) {
    s.cache.sink('member-a', 'pods').replace(
      [pod('demo', 'web', 'member-a-node-1', 1), pod('demo', 'only-a', 'member-a-node-2', 2), pod('kube-system', 'coredns-1', 'member-a-node-1', 3)],
      '500',
    );
    s.cache.sink('member-b', 'pods').replace([pod('demo', 'web', 'member-b-node-1', 4), pod('demo', 'only-b', 'member-b-node-1', 5, 'Pending')], '600');
    s.cache.sink('member-a', 'events').replace([coreEvent('demo', 'web.a1', 'web', 'Started container app in member-a')], '501');
    s.cache.sink('member-b', 'events').replace([coreEvent('demo', 'web.b1', 'web', 'Started container app in member-b')], '601');
  }
});

afterAll(async () => {
  await gw?.close();
  await other?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cells = (line: string) => line.trim().split(/\s{2,}/);

describe.each<KubectlVersion>(['1.27', '1.33'])('kubectl %s reading the merged cache', (v) => {
  it('get pods -A: CLUSTER before AGE, one row per member for a shared name', async () => {
    const r = await kubectl(v, kubeconfig, ['get', 'pods', '-A']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(cells(lines[0])).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
    const rows = lines.slice(1).map(cells);
    expect(rows.map((c) => [c[0], c[1], c[5]])).toEqual([
      ['demo', 'only-a', 'member-a'],
      ['demo', 'only-b', 'member-b'],
      ['demo', 'web', 'member-a'],
      ['demo', 'web', 'member-b'],
      ['kube-system', 'coredns-1', 'member-a'],
    ]);
    expect(rows[0]).toEqual(['demo', 'only-a', '2/2', 'Running', '0', 'member-a', '60m']);
    expect(rows[1].slice(2, 4)).toEqual(['0/2', 'ContainerCreating']);
  });

  it('get pods NAME: the object when one member has it, 409 naming the members when several do, 404 otherwise', async () => {
    const one = await kubectl(v, kubeconfig, ['get', 'pods', 'only-b', '-n', 'demo', '-o', 'json']);
    expect(one.stderr).toBe('');
    const obj = JSON.parse(one.stdout);
    expect(obj.metadata.labels[CLUSTER_LABEL]).toBe('member-b');
    expect(gw.cache.isOurRV(obj.metadata.resourceVersion)).toBe(true);
    expect(obj.metadata.managedFields).toBeUndefined();

    const both = await kubectl(v, kubeconfig, ['get', 'pods', 'web', '-n', 'demo']);
    expect(both.code).not.toBe(0);
    expect(both.stderr.trim()).toBe(
      'Error from server (Conflict): pods "web" is ambiguous: it exists in member clusters member-a, member-b; select one with the ' +
        'label selector fleetgate.io/cluster=<cluster> (e.g. -l fleetgate.io/cluster=member-a --field-selector metadata.name=web) or address it through /clusters/<cluster>/',
    );
    // The way the message suggests works.
    const picked = await kubectl(v, kubeconfig, ['get', 'pods', '-n', 'demo', '-l', `${CLUSTER_LABEL}=member-b`, '--field-selector', 'metadata.name=web', '-o', 'wide']);
    expect(picked.stdout.trim().split('\n').slice(1).map((l) => [cells(l)[0], cells(l)[4], cells(l)[7]])).toEqual([['web', 'member-b', 'member-b-node-1']]);

    const none = await kubectl(v, kubeconfig, ['get', 'pods', 'nope', '-n', 'demo']);
    expect(none.stderr.trim()).toBe('Error from server (NotFound): pods "nope" not found');
  });

  it('-o wide shows the wide columns after CLUSTER and AGE', async () => {
    const r = await kubectl(v, kubeconfig, ['get', 'pods', '-n', 'demo', '-o', 'wide']);
    const lines = r.stdout.trim().split('\n');
    expect(cells(lines[0])).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    expect(cells(lines[1])).toEqual(['only-a', '2/2', 'Running', '0', 'member-a', '60m', '10.0.0.2', 'member-a-node-2', '<none>', '<none>']);
  });

  it('selects by the cluster label and by pod fields', async () => {
    const byCluster = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '-l', `${CLUSTER_LABEL}=member-b`, '-o', 'name']);
    expect(byCluster.stdout.trim().split('\n')).toEqual(['pod/only-b', 'pod/web']);
    const notB = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '-l', `${CLUSTER_LABEL}!=member-b`, '-o', 'name']);
    expect(notB.stdout.trim().split('\n')).toEqual(['pod/only-a', 'pod/web', 'pod/coredns-1']);
    const byNode = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '--field-selector', 'spec.nodeName=member-a-node-1']);
    expect(byNode.stdout.trim().split('\n').slice(1).map((l) => cells(l)[1])).toEqual(['web', 'coredns-1']);
    const pending = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '--field-selector', 'status.phase=Pending', '-o', 'name']);
    expect(pending.stdout.trim()).toBe('pod/only-b');
    const bad = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '--field-selector', 'spec.bogus=x']);
    expect(bad.stderr).toContain('field label not supported: spec.bogus');
  });

  it('get events: CLUSTER first, before LAST SEEN, for core and events.k8s.io events', async () => {
    const r = await kubectl(v, kubeconfig, ['get', 'events', '-n', 'demo']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(cells(lines[0])).toEqual(['CLUSTER', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(lines.slice(1).map(cells)).toEqual([
      ['member-a', '30m', 'Normal', 'Started', 'pod/web', 'Started container app in member-a'],
      ['member-b', '30m', 'Normal', 'Started', 'pod/web', 'Started container app in member-b'],
    ]);
    const all = await kubectl(v, kubeconfig, ['get', 'events.v1.events.k8s.io', '-A']);
    expect(all.stderr).toBe('');
    const aLines = all.stdout.trim().split('\n');
    expect(cells(aLines[0])).toEqual(['NAMESPACE', 'CLUSTER', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(aLines.slice(1).map((l) => cells(l)[1])).toEqual(['member-a', 'member-b']);
    const wide = await kubectl(v, kubeconfig, ['get', 'events', '-n', 'demo', '-o', 'wide']);
    expect(cells(wide.stdout.split('\n')[0])).toEqual(['CLUSTER', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'SUBOBJECT', 'SOURCE', 'MESSAGE', 'FIRST SEEN', 'COUNT', 'NAME']);
  });

  it('pages through kubectl --chunk-size with the instance continue tokens', async () => {
    const r = await kubectl(v, kubeconfig, ['get', 'pods', '-A', '--chunk-size=2', '-o', 'name']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual(['pod/only-a', 'pod/only-b', 'pod/web', 'pod/web', 'pod/coredns-1']);
  });

  it('get pods -w shows a pod added through a member sink within a second', async () => {
    const child = spawn(kubectlPath(v), ['--kubeconfig', kubeconfig, 'get', 'pods', '-n', 'demo', '-w', '--request-timeout=0'], { env: { ...process.env, HOME: dir } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    try {
      await until(() => out.includes('only-b'), 15_000, () => `kubectl printed: ${out} ${err}`);
      // The watch is established once the server has it.
      await until(() => gw.watches.size > 0, 10_000, () => 'no watch arrived');
      const name = `live-${v.replace('.', '')}`;
      const added = Date.now();
      gw.cache.sink('member-a', 'pods').apply('ADDED', pod('demo', name, 'member-a-node-1', 9));
      await until(() => out.includes(name), 5_000, () => `kubectl printed: ${out} ${err}`);
      expect(Date.now() - added).toBeLessThan(1000);
      const line = out.split('\n').find((l) => l.startsWith(name))!;
      expect(cells(line)[4]).toBe('member-a');
      gw.cache.sink('member-a', 'pods').apply('DELETED', pod('demo', name, 'member-a-node-1', 9));
    } finally {
      child.kill();
    }
  });

  it('names stale members in a Warning', async () => {
    gw.stale.push({ cluster: 'member-b', since: Date.parse('2030-01-02T03:04:05Z') });
    try {
      const r = await kubectl(v, kubeconfig, ['get', 'pods', '-n', 'demo', '-o', 'name']);
      expect(r.stderr.trim()).toBe('Warning: member cluster member-b is not in sync since 2030-01-02T03:04:05Z: its pods and events are the last known state');
      expect(r.stdout.trim().split('\n')).toHaveLength(4);
    } finally {
      gw.stale.length = 0;
    }
  });

  it('refuses callers the control plane does not authorize, with kube-apiserver 403s', async () => {
    const kc = join(dir, `mallory-${v}`);
    writeFileSync(kc, buildKubeconfig({ name: 'gw', server: gw.url, caPem: ca.certPem, user: 'mallory', token: 'mallory' }));
    gw.denied.add('mallory');
    const r = await kubectl(v, kc, ['get', 'pods', '-n', 'demo']);
    expect(r.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "mallory" cannot list resource "pods" in API group "" in the namespace "demo"');
  });
});

describe('raw list and watch semantics', () => {
  it('a watch or list from a resourceVersion of another replica or an earlier process gets 410', async () => {
    // Another replica that started higher (its versions look like our future ones) and an earlier process that
    // started lower: both must be refused, not served from "now" or from a wrong point.
    const higher = await startCacheServer('replica-high', gw.cache.clock.current() + 1_000_000);
    const lower = await startCacheServer('process-low', gw.cache.rvBase - 1_000_000);
    try {
      for (const s of [higher, lower]) {
        s.cache.sink('member-a', 'pods').apply('ADDED', pod('demo', 'web', 'n', 1));
        const foreign = (await call({ ...ep, url: s.url }, 'GET', '/api/v1/pods')).json().metadata.resourceVersion;
        expect(gw.cache.isOurRV(foreign)).toBe(false);
        const w = await openWatch(ep, `/api/v1/pods?watch=1&resourceVersion=${foreign}`);
        await w.ended;
        expect(w.events).toEqual([
          {
            type: 'ERROR',
            object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${foreign} (${gw.cache.pods.oldestRV + 1})`, reason: 'Expired', code: 410 },
          },
        ]);
        const l = await call(ep, 'GET', `/api/v1/pods?resourceVersion=${foreign}&resourceVersionMatch=NotOlderThan`);
        expect(l.status).toBe(410);
        expect(l.json().message).toBe('The resourceVersion for the provided list is too old.');
      }
    } finally {
      await higher.close();
      await lower.close();
    }
    // One of ours replays exactly.
    const list = (await call(ep, 'GET', '/api/v1/namespaces/demo/pods')).json();
    const resumed = await openWatch(ep, `/api/v1/namespaces/demo/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}`);
    gw.cache.sink('member-b', 'pods').apply('ADDED', pod('demo', 'resumed', 'member-b-node-1', 11));
    const evs = await resumed.waitFor((e) => e.length >= 1);
    resumed.close();
    expect(evs.map((e) => [e.type, e.object.metadata.name, e.object.metadata.labels[CLUSTER_LABEL]])).toEqual([['ADDED', 'resumed', 'member-b']]);
    gw.cache.sink('member-b', 'pods').apply('DELETED', pod('demo', 'resumed', 'member-b-node-1', 11));
  });

  it('a continue token of another instance gets 410, garbage gets 400', async () => {
    const page = (await call({ ...ep, url: other.url }, 'GET', '/api/v1/pods?limit=2')).json();
    expect(page.metadata.continue).toBeTruthy();
    const r = await call(ep, 'GET', `/api/v1/pods?limit=2&continue=${page.metadata.continue}`);
    expect(r.status).toBe(410);
    expect(r.json()).toMatchObject({ reason: 'Expired', message: 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.' });
    // A plain apiserver-style token (no instance) is not ours either.
    const plain = encodeContinue(gw.cache.clock.current(), 'demo/web\u0000');
    expect((await call(ep, 'GET', `/api/v1/pods?limit=2&continue=${plain}`)).status).toBe(410);
    const bad = await call(ep, 'GET', '/api/v1/pods?limit=2&continue=%%%');
    expect(bad.status).toBe(400);
    expect(bad.json().message).toMatch(/^invalid continue token: continue key is not valid/);
  });

  it('limit/continue pages come from one snapshot while objects change', async () => {
    const cache = gw.cache;
    const before = [...cache.pods.values()].map((o) => `${o.namespace}/${o.name}@${o.labels[CLUSTER_LABEL]}`);
    const p1 = (await call(ep, 'GET', '/api/v1/pods?limit=2')).json();
    expect(p1.metadata.remainingItemCount).toBe(before.length - 2);
    // Changes between pages: a delete of an object still to come, an add, a modification.
    cache.sink('member-a', 'pods').apply('DELETED', pod('kube-system', 'coredns-1', 'member-a-node-1', 3));
    cache.sink('member-b', 'pods').apply('ADDED', pod('demo', 'aaa-new', 'member-b-node-1', 12));
    cache.sink('member-b', 'pods').apply('MODIFIED', pod('demo', 'web', 'member-b-node-2', 4));
    const items = [...p1.items];
    let token = p1.metadata.continue;
    while (token) {
      const p = (await call(ep, 'GET', `/api/v1/pods?limit=2&continue=${encodeURIComponent(token)}`)).json();
      expect(p.metadata.resourceVersion).toBe(p1.metadata.resourceVersion);
      items.push(...p.items);
      token = p.metadata.continue;
    }
    expect(items.map((o: any) => `${o.metadata.namespace}/${o.metadata.name}@${o.metadata.labels[CLUSTER_LABEL]}`)).toEqual(before);
    expect(items.find((o: any) => o.metadata.name === 'web' && o.metadata.labels[CLUSTER_LABEL] === 'member-b').spec.nodeName).toBe('member-b-node-1');
    // A fresh list sees the new state.
    const now = (await call(ep, 'GET', '/api/v1/pods')).json();
    expect(now.items.map((o: any) => o.metadata.name)).toEqual(['aaa-new', 'only-a', 'only-b', 'web', 'web']);
    // Restore.
    cache.sink('member-a', 'pods').apply('ADDED', pod('kube-system', 'coredns-1', 'member-a-node-1', 3));
    cache.sink('member-b', 'pods').apply('DELETED', pod('demo', 'aaa-new', 'member-b-node-1', 12));
  });

  it('removing a member sends DELETED for its objects to open watches', async () => {
    const s = await startCacheServer('instance-3');
    try {
      s.cache.sink('member-x', 'pods').replace([pod('demo', 'x1', 'n', 1), pod('demo', 'x2', 'n', 2)], '10');
      s.cache.sink('member-y', 'pods').replace([pod('demo', 'y1', 'n', 3)], '10');
      const rv = (await call({ ...ep, url: s.url }, 'GET', '/api/v1/pods')).json().metadata.resourceVersion;
      const w = await openWatch({ ...ep, url: s.url }, `/api/v1/pods?watch=1&resourceVersion=${rv}`);
      s.cache.removeCluster('member-x');
      const evs = await w.waitFor((e) => e.length >= 2);
      w.close();
      expect(evs.map((e) => [e.type, e.object.metadata.name])).toEqual([['DELETED', 'x1'], ['DELETED', 'x2']]);
    } finally {
      await s.close();
    }
  });

  it('sendInitialEvents streams the merged state, sorted, then the initial-events-end bookmark', async () => {
    const w = await openWatch(ep, '/api/v1/namespaces/demo/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true');
    const evs = await w.waitFor((e) => e.some((x) => x.type === 'BOOKMARK'));
    w.close();
    expect(evs.map((e) => [e.type, e.object.metadata.name, e.object.metadata.labels?.[CLUSTER_LABEL]])).toEqual([
      ['ADDED', 'only-a', 'member-a'],
      ['ADDED', 'only-b', 'member-b'],
      ['ADDED', 'web', 'member-a'],
      ['ADDED', 'web', 'member-b'],
      ['BOOKMARK', undefined, undefined],
    ]);
    expect(evs[4].object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
  });

  it('answers metadata clients with PartialObjectMetadataList and events.k8s.io GETs by name', async () => {
    const r = await call(ep, 'GET', '/api/v1/namespaces/demo/pods', { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' });
    const body = r.json();
    expect(body.kind).toBe('PartialObjectMetadataList');
    expect(body.items[0]).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'only-a', labels: { [CLUSTER_LABEL]: 'member-a' } } });
    const ev = await call(ep, 'GET', '/apis/events.k8s.io/v1/namespaces/demo/events/web.b1');
    expect(ev.status).toBe(200);
    expect(ev.json()).toMatchObject({ apiVersion: 'events.k8s.io/v1', note: 'Started container app in member-b', metadata: { labels: { [CLUSTER_LABEL]: 'member-b' } } });
    const t = await call(ep, 'GET', '/api/v1/namespaces/demo/pods/only-a?includeObject=Object', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    expect(t.json().rows[0].cells[4]).toBe('member-a');
    expect(t.json().rows[0].object.kind).toBe('Pod');
    expect(t.headers['cache-control']).toBe('no-cache, private');
  });

  it('concurrent large lists over HTTP/1.1 and HTTP/2 come out whole (list chunks are pooled, reused once written)', async () => {
    const s = await startCacheServer('instance-5');
    try {
      const pods = Array.from({ length: 1500 }, (_, i) => pod('load', `p-${String(i).padStart(5, '0')}`, 'n', i));
      // Objects larger than a list chunk (512 KiB) and than what is left of one, between ordinary ones.
      for (const [i, kb] of [[0, 300], [700, 600], [701, 300], [702, 200], [1499, 520]] as const) {
        (pods[i]!.metadata as { annotations?: Record<string, string> }).annotations = { big: 'x'.repeat(kb * 1024) };
      }
      s.cache.sink('big', 'pods').replace(pods, '1');
      const sep = { ...ep, url: s.url };
      const lists = await Promise.all([
        ...Array.from({ length: 6 }, () => rawGet(sep, '/api/v1/pods', {}).then((r) => r.body)),
        ...Array.from({ length: 2 }, () => h2Get(s.url, '/api/v1/pods', { authorization: 'Bearer admin' }).then((r) => r.body)),
      ]);
      const want = lists[0].toString();
      const names = (JSON.parse(want).items as KubeObject[]).map((o) => o.metadata.name);
      expect(names).toEqual(Array.from({ length: 1500 }, (_, i) => `p-${String(i).padStart(5, '0')}`));
      expect((JSON.parse(want).items as KubeObject[])[700]!.metadata.annotations!.big).toHaveLength(600 * 1024);
      // A page (an array of objects) and a page of the pods after the large ones.
      const page = JSON.parse((await rawGet(sep, '/api/v1/pods?limit=3', {})).body.toString());
      expect(page.items.map((o: KubeObject) => o.metadata.name)).toEqual(['p-00000', 'p-00001', 'p-00002']);
      expect(Buffer.byteLength(want)).toBeGreaterThan(20 * 64 * 1024);
      for (const body of lists) expect(body.toString() === want).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('gzips lists over 128 KiB for clients that accept it, and only those', async () => {
    const s = await startCacheServer('instance-4');
    try {
      s.cache.sink('big', 'pods').replace(Array.from({ length: 80 }, (_, i) => pod('load', `p-${i}`, 'n', i)), '1');
      const sep = { ...ep, url: s.url };
      const gz = await rawGet(sep, '/api/v1/pods', { 'accept-encoding': 'gzip' });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers.vary).toBe('Accept-Encoding');
      const unzipped = JSON.parse(gunzipSync(gz.body).toString());
      expect(unzipped.items).toHaveLength(80);
      expect(gz.body.length).toBeLessThan(Buffer.byteLength(JSON.stringify(unzipped)) / 4);
      const plain = await rawGet(sep, '/api/v1/pods', {});
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(plain.body.toString()).items).toHaveLength(80);
      // kubectl over HTTP/2 (Go asks for gzip by itself) reads the compressed stream.
      const kc = join(dir, 'kubeconfig-big');
      writeFileSync(kc, buildKubeconfig({ name: 'big', server: s.url, caPem: ca.certPem, user: 'admin', token: 'admin' }));
      const viaKubectl = await kubectl('1.33', kc, ['get', 'pods', '-A', '-o', 'json', '--chunk-size=0']);
      expect(JSON.parse(viaKubectl.stdout).items).toHaveLength(80);
      const h2 = await h2Get(s.url, '/api/v1/pods', { 'accept-encoding': 'gzip', authorization: 'Bearer admin' });
      expect(h2.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(gunzipSync(h2.body).toString()).items).toHaveLength(80);
      const small = await rawGet(sep, '/api/v1/pods?limit=2', { 'accept-encoding': 'gzip' });
      expect(small.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(small.body.toString()).items).toHaveLength(2);
    } finally {
      await s.close();
    }
  });
});

async function rawGet(e: ClusterEndpoint, path: string, headers: Record<string, string>): Promise<{ headers: Record<string, any>; body: Buffer }> {
  const { Agent } = await import('undici');
  const res = await request(new URL(path, e.url), {
    headers: { ...headers, authorization: `Bearer ${e.token}` },
    dispatcher: new Agent({ connect: { ca: e.caPem } }),
  });
  return { headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

async function h2Get(url: string, path: string, headers: Record<string, string>): Promise<{ headers: Record<string, any>; body: Buffer }> {
  const session = connect(url, { ca: ca.certPem });
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ':path': path, ...headers });
      const chunks: Buffer[] = [];
      let head: Record<string, any> = {};
      req.on('response', (h) => (head = h));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ headers: head, body: Buffer.concat(chunks) }));
      req.on('error', reject);
    });
  } finally {
    session.close();
  }
}

async function until(cond: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
