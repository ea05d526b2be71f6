// Differential tests: the same objects and requests against a real kube-apiserver member and against a simulated
// one must give the same answers. Where they disagree, the real apiserver is right and the sim (or the shared
// rules in src/api it uses) is what gets fixed.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { UserInfo } from '../../src/api/user.js';
import { attributesOf } from '../../src/authz/cachedreads.js';
import { createCA, issueClientCert } from '../../src/pki/index.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import { upstreamFromEndpoint } from '../../src/upstream/client.js';
import { subjectAccessReview } from '../../src/upstream/forward.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call, openWatch, type ClusterEndpoint } from '../support/http.js';
import { kubectl, withoutAge, type KubectlVersion } from '../support/kubectl.js';
import { intermediateCA } from '../support/pki.js';
import { startRealFleet, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';
import { seedMember } from './seed.js';

const NS = 'diff';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

interface Side {
  name: 'real' | 'sim';
  ep: ClusterEndpoint;
  kubeconfig: string;
}

describe.skipIf(!requireGo())('the sim answers like a real kube-apiserver', () => {
  let real: RealFleet;
  let sim: SimFleet;
  let sides: [Side, Side];

  beforeAll(async () => {
    [real, sim] = await Promise.all([
      startRealFleet({ members: ['member-a'] }),
      startSimFleet({ clusters: ['member-a'], nodesPerCluster: 0 }),
    ]);
    const r = real.members[0];
    const s = sim.member('member-a');
    const simEp: ClusterEndpoint = { url: s.url, caPem: sim.servingCA.certPem, token: sim.adminToken };
    sides = [
      { name: 'real', ep: r.endpoint, kubeconfig: r.kubeconfigPath },
      { name: 'sim', ep: simEp, kubeconfig: s.kubeconfigPath },
    ];
    const now = new Date();
    await Promise.all([
      seedMember({ name: 'member-a', url: r.url, caPem: r.caPem, endpoint: r.endpoint }, { namespace: NS, now }),
      seedMember({ name: 'member-a', url: s.url, caPem: sim.servingCA.certPem, endpoint: simEp }, { namespace: NS, now }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([real?.stop(), sim?.close()]);
  });

  /** Runs fn on both sides and returns [real, sim]. */
  const both = <T>(fn: (s: Side) => Promise<T>): Promise<[T, T]> => Promise.all([fn(sides[0]), fn(sides[1])]) as Promise<[T, T]>;

  describe.each<KubectlVersion>(['1.27', '1.33'])('kubectl %s prints the same', (v) => {
    const cases: Array<[string, string[]]> = [
      ['get pods -o wide', ['get', 'pods', '-n', NS, '-o', 'wide']],
      ['get events', ['get', 'events', '-n', NS]],
      ['get events -o wide', ['get', 'events', '-n', NS, '-o', 'wide']],
      ['get pods -l app=web', ['get', 'pods', '-n', NS, '-l', 'app=web']],
      ['get pods --field-selector status.phase=Running', ['get', 'pods', '-n', NS, '--field-selector', 'status.phase=Running']],
      ['get pods --show-labels', ['get', 'pods', '-n', NS, '--show-labels']],
    ];
    it.each(cases)('%s', async (_label, args) => {
      const [r, s] = await both((side) => kubectl(v, side.kubeconfig, args));
      expect(r.code).toBe(0);
      expect(r.stdout.trim().split('\n').length).toBeGreaterThan(1);
      expect({ code: s.code, stderr: s.stderr, stdout: withoutAge(s.stdout) }).toEqual({ code: r.code, stderr: r.stderr, stdout: withoutAge(r.stdout) });
    });
  });

  describe('server-side tables', () => {
    for (const [label, path] of [
      ['pods', `/api/v1/namespaces/${NS}/pods`],
      ['events', `/api/v1/namespaces/${NS}/events`],
      ['events.k8s.io events', `/apis/events.k8s.io/v1/namespaces/${NS}/events`],
    ] as const) {
      it(`${label}: same columns, cells and row conditions`, async () => {
        const [r, s] = await both((side) => call(side.ep, 'GET', path, { accept: TABLE }));
        expect(r.status).toBe(200);
        const rt = r.json();
        const st = s.json();
        expect(st.columnDefinitions).toEqual(rt.columnDefinitions);
        const timeCols = new Set(
          rt.columnDefinitions.map((c: any, i: number) => (['Age', 'Last Seen', 'First Seen'].includes(c.name) ? i : -1)).filter((i: number) => i >= 0),
        );
        const norm = (rows: any[]) =>
          rows.map((row) => ({
            cells: row.cells.map((c: unknown, i: number) => (timeCols.has(i) ? '<time>' : typeof c === 'string' ? c.replace(/\((\d+[smhd])+ ago\)/, '(<t> ago)') : c)),
            conditions: row.conditions,
            objectKind: row.object?.kind,
          }));
        expect(norm(st.rows)).toEqual(norm(rt.rows));
      });
    }
  });

  describe('label selectors', () => {
    const selectors = [
      'app=web',
      'app==web',
      'app!=web',
      'app in (web,api)',
      'app notin (web)',
      'tier',
      '!tier',
      'app=web,tier=frontend',
      'app in (web),!tier',
      'x in (a,)',
      'app=',
      // invalid
      'app==',
      'app in web',
      '!!app',
      'app=web=x',
      'Bad Key=1',
      'app notin ()',
      'a'.repeat(64) + '=x',
      'app=' + 'v'.repeat(64),
    ];
    it.each(selectors)('%s', async (sel) => {
      const q = `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(sel)}`;
      const [r, s] = await both((side) => call(side.ep, 'GET', q));
      expect(s.status).toBe(r.status);
      if (r.status === 200) {
        const names = (x: any) => x.json().items.map((p: any) => p.metadata.name);
        expect(names(s)).toEqual(names(r));
      } else {
        expect(s.json()).toEqual(r.json());
      }
    });
  });

  describe('field selectors', () => {
    const cases: Array<[string, string]> = [
      ['pods', 'status.phase=Running'],
      ['pods', 'status.phase!=Running'],
      ['pods', 'spec.nodeName=member-a-node-1'],
      ['pods', 'spec.nodeName='],
      ['pods', 'metadata.name=web-running'],
      ['pods', 'spec.restartPolicy=Always,status.phase=Running'],
      ['pods', 'spec.schedulerName=default-scheduler'],
      ['pods', 'spec.serviceAccountName=default'],
      ['pods', 'status.podIP=10.244.1.11'],
      ['pods', 'spec.host=member-a-node-2'],
      ['pods', 'spec.bogus=x'],
      ['pods', 'status.phase'],
      ['pods', 'metadata.labels=x'],
      ['events', 'involvedObject.kind=Pod'],
      ['events', 'type=Warning'],
      ['events', 'reason=BackOff'],
      ['events', 'involvedObject.name=web-running,reason=Started'],
      ['events', 'source=kubelet'],
      ['events', 'reportingComponent=kubelet'],
      ['events', 'involvedObject.fieldPath=spec.containers{app}'],
      ['events', 'message=x'],
    ];
    it.each(cases)('%s: %s', async (resource, sel) => {
      const q = `/api/v1/namespaces/${NS}/${resource}?fieldSelector=${encodeURIComponent(sel)}`;
      const [r, s] = await both((side) => call(side.ep, 'GET', q));
      expect(s.status).toBe(r.status);
      if (r.status === 200) {
        const names = (x: any) => x.json().items.map((p: any) => p.metadata.name);
        expect(names(s)).toEqual(names(r));
      } else {
        expect(s.json()).toEqual(r.json());
      }
    });
  });

  describe('Status errors', () => {
    const pod = (name: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, ...extra },
      spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
    });

    it('404 for a missing pod', async () => {
      const [r, s] = await both((side) => call(side.ep, 'GET', `/api/v1/namespaces/${NS}/pods/nope`));
      expect(r.status).toBe(404);
      expect(s.json()).toEqual(r.json());
    });

    it('404 for a missing namespace on create', async () => {
      const [r, s] = await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/no-such-ns/pods`, { body: pod('x') }));
      expect(r.status).toBe(404);
      expect(s.json()).toEqual(r.json());
    });

    it('409 AlreadyExists', async () => {
      await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: { metadata: { name: 'dup' } } }));
      const [r, s] = await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: { metadata: { name: 'dup' } } }));
      expect(r.status).toBe(409);
      expect(s.json()).toEqual(r.json());
    });

    it('409 Conflict on a stale resourceVersion', async () => {
      const [r, s] = await both(async (side) => {
        const created = (await call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: { metadata: { name: 'stale' }, data: { a: '1' } } })).json();
        await call(side.ep, 'PUT', `/api/v1/namespaces/${NS}/configmaps/stale`, { body: { ...created, data: { a: '2' } } });
        return call(side.ep, 'PUT', `/api/v1/namespaces/${NS}/configmaps/stale`, { body: { ...created, data: { a: '3' } } });
      });
      expect(r.status).toBe(409);
      expect(s.json()).toEqual(r.json());
    });

    it('422 Invalid for a bad name', async () => {
      const [r, s] = await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: { metadata: { name: 'Bad_Name' } } }));
      expect(r.status).toBe(422);
      expect(s.json()).toEqual(r.json());
    });

    it('422 Invalid for a missing name', async () => {
      const [r, s] = await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: { metadata: {} } }));
      expect(r.status).toBe(422);
      expect(s.json()).toEqual(r.json());
    });

    it('400 for malformed JSON, same code and reason', async () => {
      const [r, s] = await both((side) => call(side.ep, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { body: '{"metadata": {"name": "x"', contentType: 'application/json' }));
      expect(r.status).toBe(400);
      expect([s.status, s.json().reason, s.json().kind]).toEqual([r.status, r.json().reason, r.json().kind]);
    });

    it('404 for an unknown resource, same code and reason', async () => {
      const [r, s] = await both((side) => call(side.ep, 'GET', `/api/v1/namespaces/${NS}/widgets`));
      expect(r.status).toBe(404);
      expect(s.json()).toEqual(r.json());
    });

    it('404 for an unknown group', async () => {
      const [r, s] = await both((side) => call(side.ep, 'GET', `/apis/widgets.example.com/v1/widgets`));
      expect([s.status, s.text]).toEqual([r.status, r.text]);
    });

    it('400 for a garbage continue token', async () => {
      const [r, s] = await both((side) => call(side.ep, 'GET', `/api/v1/namespaces/${NS}/pods?limit=2&continue=garbage`));
      expect(r.status).toBe(400);
      expect(s.json()).toEqual(r.json());
    });

    it('a watch from resourceVersion 1 replays the whole history', async () => {
      // Neither server has compacted yet: the real one replays from etcd, the sim from its event window.
      const [r, s] = await both(async (side) => {
        const w = await openWatch(side.ep, `/api/v1/namespaces/${NS}/pods?watch=1&resourceVersion=1`);
        let n = -1;
        while (n !== w.events.length) {
          n = w.events.length;
          await new Promise((res) => setTimeout(res, 1000));
        }
        w.close();
        return w.events.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.deletionTimestamp ? 'deleting' : ''}`).sort();
      });
      expect(r.length).toBeGreaterThan(10);
      expect(s).toEqual(r);
    });

    it('405 for an unsupported verb on a subresource', async () => {
      const [r, s] = await both((side) => call(side.ep, 'DELETE', `/api/v1/namespaces/${NS}/pods/web-running/status`));
      expect([s.status, s.json().reason]).toEqual([r.status, r.json().reason]);
    });
  });

  it('watch event sequences under selectors', async () => {
    const [r, s] = await both(async (side) => {
      const base = `/api/v1/namespaces/${NS}/pods`;
      const list = (await call(side.ep, 'GET', `${base}?labelSelector=watched%3Dyes`)).json();
      const w = await openWatch(side.ep, `${base}?watch=1&labelSelector=watched%3Dyes&resourceVersion=${list.metadata.resourceVersion}`);
      const merge = (labels: Record<string, string | null>) =>
        call(side.ep, 'PATCH', `${base}/w1`, { body: { metadata: { labels } }, contentType: 'application/merge-patch+json' });
      await call(side.ep, 'POST', base, { body: { metadata: { name: 'w1', labels: { watched: 'yes' } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
      await merge({ watched: 'no' });
      await merge({ watched: 'yes' });
      await merge({ extra: 'x' });
      await call(side.ep, 'DELETE', `${base}/w1?gracePeriodSeconds=0`);
      await call(side.ep, 'POST', base, { body: { metadata: { name: 'w2', labels: { watched: 'no' } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
      await call(side.ep, 'DELETE', `${base}/w2?gracePeriodSeconds=0`);
      const evs = await w.waitFor((e) => e.filter((x) => x.type === 'DELETED').length >= 2, 10_000);
      w.close();
      return evs.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.labels?.watched ?? ''}${e.object.metadata.deletionTimestamp ? ' deleting' : ''}`);
    });
    // A pod's delete is graceful even at grace period 0: an update that sets deletionTimestamp, then the removal.
    expect(r).toEqual(['ADDED w1 yes', 'DELETED w1 yes', 'ADDED w1 yes', 'MODIFIED w1 yes', 'MODIFIED w1 yes deleting', 'DELETED w1 yes deleting']);
    expect(s).toEqual(r);
  });

  describe('list pagination', () => {
    for (const [label, query] of [
      ['all pods, limit 3', 'limit=3'],
      ['with a label selector, limit 2', 'limit=2&labelSelector=app%3Dweb'],
      ['with a field selector, limit 4', 'limit=4&fieldSelector=status.phase%3DRunning'],
    ] as const) {
      it(label, async () => {
        const pages = await both(async (side) => {
          const out: Array<{ names: string[]; more: boolean; remaining?: number; sameRV: boolean }> = [];
          let token = '';
          let firstRV = '';
          for (let i = 0; i < 50; i++) {
            const res = await call(side.ep, 'GET', `/api/v1/namespaces/${NS}/pods?${query}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
            expect(res.status).toBe(200);
            const body = res.json();
            firstRV ||= body.metadata.resourceVersion;
            out.push({
              names: body.items.map((p: any) => p.metadata.name),
              more: !!body.metadata.continue,
              remaining: body.metadata.remainingItemCount,
              sameRV: body.metadata.resourceVersion === firstRV,
            });
            token = body.metadata.continue ?? '';
            if (!token) break;
          }
          return out;
        });
        expect(pages[0].length).toBeGreaterThan(1);
        expect(pages[1]).toEqual(pages[0]);
      });
    }
  });

  it('a SubjectAccessReview with selectors, as the gateway sends one for a cached read, is decided alike (real: accepted, not a 400)', async () => {
    const reviews = await both(async (side) => {
      const up = upstreamFromEndpoint({ name: side.name, ...side.ep });
      try {
        const decide = (u: UserInfo, query: string) => subjectAccessReview(up, attributesOf(u, newRequestInfo('GET', `/api/v1/namespaces/${NS}/pods`, new URLSearchParams(query))));
        const query = 'fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase!%3DFailed&labelSelector=app+in+(web%2Capi)%2Ctier!%3Dx%2C!old%2Cteam';
        return [await decide({ username: 'admin', groups: ['system:masters', 'system:authenticated'] }, query), await decide({ username: 'nobody', groups: ['system:authenticated'] }, query)];
      } finally {
        await up.close();
      }
    });
    expect(reviews[0].map((d) => d.allowed)).toEqual([true, false]);
    expect(reviews[1].map((d) => d.allowed)).toEqual(reviews[0].map((d) => d.allowed));
  });

  it('an upgraded request is counted as the gateway counts one: a WebSocket watch of the real kube-apiserver is code "0" in apiserver_request_total', async () => {
    // src/server/server.ts countUpgrade counts a WebSocket watch it served, and an exec it tunnelled, with code "0",
    // because this is what kube-apiserver does: its 101 goes out on the hijacked connection.
    const r = real.members[0];
    const metric = async () => {
      const text = (await call(r.endpoint, 'GET', '/metrics')).text;
      const line = text.split('\n').find((l) => l.startsWith('apiserver_request_total{') && l.includes('resource="configmaps"') && l.includes('verb="WATCH"') && l.includes('code="0"') && l.includes('scope="namespace"'));
      return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
    };
    const before = await metric();
    await new Promise<void>((resolve, reject) => {
      // kube-apiserver's WebSocket handshake refuses a request without an Origin (golang.org/x/net/websocket).
      const ws = new WebSocket(`${r.url.replace('https://', 'wss://')}/api/v1/namespaces/${NS}/configmaps?watch=1`, { ca: r.caPem, headers: { Authorization: `Bearer ${r.adminToken}`, Origin: 'https://fleetgate.test' } });
      ws.once('open', () => ws.close());
      ws.once('close', () => resolve());
      ws.once('error', reject);
    });
    let after = await metric();
    for (const until = Date.now() + 10_000; after === before && Date.now() < until; after = await metric()) await new Promise((res) => setTimeout(res, 100));
    expect(after).toBe(before + 1);
  });

  it('an intermediate CA in the client CA file without its root vouches for its clients, as the gateway trusts it (src/server/tlsreload.ts)', async () => {
    const r = real.members[0];
    const file = join(r.dir, 'pki', 'client-ca.crt');
    const root = await createCA('partial-root');
    const inter = await intermediateCA(root, 'partial-intermediate');
    const frank = await issueClientCert(inter, 'frank', ['system:masters']);
    // A fresh endpoint object each time: a new connection, verified against the file as it is then.
    const status = async () => (await call({ url: r.url, caPem: r.caPem, certPem: frank.certPem, keyPem: frank.keyPem }, 'GET', '/api')).status;
    expect(await status()).toBe(401);
    // kube-apiserver reloads --client-ca-file when it changes (fsnotify, and a resync every minute).
    writeFileSync(file, r.clientCaPem + inter.certPem);
    try {
      let got = await status();
      for (const until = Date.now() + 90_000; got === 401 && Date.now() < until; got = await status()) await new Promise((res) => setTimeout(res, 200));
      expect(got).toBe(200);
    } finally {
      writeFileSync(file, r.clientCaPem);
    }
  }, 120_000);
});
