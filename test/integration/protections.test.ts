// Issue 5's protections through the whole gateway in front of the demo federation: deletion and scale-down
// admission with kubectl, the audit trail (exactly one ResponseComplete per request, mutations refused when the
// log cannot be written), and flow control under a flood.

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoFleet, type DemoFleet } from '../sim/demofleet.js';
import { FEDERATED_EXPOSED, startTestGateway, type TestGateway } from '../support/gateway.js';
import { connect } from 'node:http2';
import { call, type ClusterEndpoint } from '../support/http.js';
import { kubectl, type KubectlVersion } from '../support/kubectl.js';

const EXPOSED = FEDERATED_EXPOSED;

let dir: string;
let demo: DemoFleet;
let gw: TestGateway;
let admin: string;
let auditLog: string;

const cp = () => demo.fleet.member('control-plane').cluster;
const replicas = (name: string) => (cp().get('apps', 'deployments', 'demo', name) as any)?.spec?.replicas;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-protect-'));
  demo = await startDemoFleet(join(dir, 'fleet'));
  auditLog = join(dir, 'audit.log');
  gw = await startTestGateway({ controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath, exposed: EXPOSED, extraYaml: `audit:\n  log:\n    path: ${auditLog}\n` });
  admin = await gw.kubeconfigFor('admin', ['system:masters'], join(dir, 'admin.kubeconfig'));
});

afterAll(async () => {
  await gw?.close();
  await demo?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each<KubectlVersion>(['1.27', '1.33'])('admission with kubectl %s', (v) => {
  const tag = v.replace('.', '-');
  const deploy = (name: string, n: number, protectedLabel = false) =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n  namespace: demo\n  labels:\n    app: ${name}\n${protectedLabel ? '    fleetgate.io/deletion-protection: Always\n' : ''}spec:\n  replicas: ${n}\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n      - {name: c, image: "nginx:1.27"}\n`;

  it('refuses deleting a protected Deployment, with the rule; deletes an unprotected one', async () => {
    const r = await kubectl(v, admin, ['delete', 'deploy', 'web', '-n', 'demo']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('deletion protection');
    expect(r.stderr).toContain('fleetgate.io/deletion-protection=Always');
    expect(replicas('web')).toBe(6);
    const file = join(dir, `tmp-${tag}.yaml`);
    await writeFile(file, deploy(`tmp-${tag}`, 1));
    expect((await kubectl(v, admin, ['apply', '-f', file])).code).toBe(0);
    expect((await kubectl(v, admin, ['delete', 'deploy', `tmp-${tag}`, '-n', 'demo'])).stdout.trim()).toBe(`deployment.apps "tmp-${tag}" deleted`);
  });

  it('delete --all in a namespace holding a protected Deployment deletes nothing', async () => {
    const before = cp().list('apps', 'deployments', 'demo').map((d) => d.metadata.name).sort();
    const r = await kubectl(v, admin, ['delete', 'deploy', '--all', '-n', 'demo']);
    expect(r.code).not.toBe(0);
    expect(cp().list('apps', 'deployments', 'demo').map((d) => d.metadata.name).sort()).toEqual(before);
  });

  it('with 10 replicas: scale to 1 and 0 refused, to 6 allowed; patch, apply and edit that shrink too much refused', async () => {
    const name = `big-${tag}`;
    const file = join(dir, `${name}.yaml`);
    await writeFile(file, deploy(name, 10));
    expect((await kubectl(v, admin, ['apply', '-f', file])).code).toBe(0);
    for (const n of ['1', '0']) {
      const r = await kubectl(v, admin, ['scale', 'deploy', name, '-n', 'demo', `--replicas=${n}`]);
      expect(r.code, `scale to ${n}`).not.toBe(0);
      expect(r.stderr).toContain('scale-down protection');
      expect(replicas(name)).toBe(10);
    }
    const patch = await kubectl(v, admin, ['patch', 'deploy', name, '-n', 'demo', '-p', '{"spec":{"replicas":2}}']);
    expect(patch.code).not.toBe(0);
    await writeFile(file, deploy(name, 3));
    const apply = await kubectl(v, admin, ['apply', '-f', file]);
    expect(apply.code).not.toBe(0);
    const editor = join(dir, `edit-${tag}.sh`);
    await writeFile(editor, `#!/bin/sh\nsed -i 's/^  replicas: 10$/  replicas: 2/' "$1"\n`, { mode: 0o755 });
    const edit = await kubectl(v, admin, ['edit', 'deploy', name, '-n', 'demo'], { env: { KUBE_EDITOR: editor } });
    expect(edit.code).not.toBe(0);
    expect(replicas(name)).toBe(10);
    const ok = await kubectl(v, admin, ['scale', 'deploy', name, '-n', 'demo', '--replicas=6']);
    expect(ok.stdout.trim()).toBe(`deployment.apps/${name} scaled`);
    expect(replicas(name)).toBe(6);
  });
});

describe('deletion protection of pods in the members', () => {
  // Pods are served from the cache and deleted in their members: the checks must look where routing deletes.
  const member = () => demo.fleet.member('member-a').cluster;
  const podNames = () => member().list('', 'pods', 'guard').filter((p: any) => !p.metadata.deletionTimestamp).map((p: any) => p.metadata.name).sort();

  beforeAll(async () => {
    const m = member();
    m.create(m.resourceFor('', 'namespaces')!, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'guard' } } as any);
    for (const [name, labels] of [['protected-1', { app: 'g', 'fleetgate.io/deletion-protection': 'Always' }], ['plain-1', { app: 'g' }]] as const) {
      m.create(m.resourceFor('', 'pods')!, 'guard', { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'guard', labels }, spec: { nodeName: 'member-a-node-1', containers: [{ name: 'c', image: 'busybox' }] } } as any);
    }
    const ep = await gw.endpointFor('admin', ['system:masters']);
    const end = Date.now() + 20_000;
    while ((await call(ep, 'GET', '/api/v1/namespaces/guard/pods')).json().items?.length !== 2) {
      if (Date.now() > end) throw new Error('the cache did not see the pods');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it('kubectl delete --all (its LIST is answered by the cache) deletes nothing when a pod is protected', async () => {
    const r = await kubectl('1.33', admin, ['delete', 'pods', '--all', '-n', 'guard']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('deletion protection');
    expect(podNames()).toEqual(['plain-1', 'protected-1']);
  });

  it('a collection picked by fleetgate.io/cluster is looked at in that member, without the label it does not carry', async () => {
    const ep = await gw.endpointFor('admin', ['system:masters']);
    const r = await call(ep, 'DELETE', '/api/v1/namespaces/guard/pods?labelSelector=' + encodeURIComponent('fleetgate.io/cluster=member-a'));
    expect(r.status).toBe(403);
    expect(r.json().message).toContain('"protected-1" (fleetgate.io/deletion-protection=Always), so nothing is deleted');
    expect(podNames()).toEqual(['plain-1', 'protected-1']);
  });
});

describe('audit', () => {
  it('writes exactly one ResponseComplete per request, under its Audit-ID', async () => {
    const ep = await gw.endpointFor('admin', ['system:masters']);
    const ids = ['audit-check-1', 'audit-check-2', 'audit-check-3'];
    await call(ep, 'GET', '/apis/apps/v1/namespaces/demo/deployments', { headers: { 'Audit-ID': ids[0]! } });
    await call(ep, 'POST', '/api/v1/namespaces/demo/configmaps', { body: { metadata: { name: 'audited' } }, headers: { 'Audit-ID': ids[1]! } });
    await call(ep, 'GET', '/api/v1/namespaces/demo/pods', { headers: { 'Audit-ID': ids[2]! } });
    await gw.running.gateway.auditor.flush();
    const events = (await readFile(auditLog, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    for (const id of ids) {
      const complete = events.filter((e) => e.auditID === id && e.stage === 'ResponseComplete');
      expect(complete, id).toHaveLength(1);
    }
    const create = events.find((e) => e.auditID === ids[1] && e.stage === 'ResponseComplete');
    expect(create).toMatchObject({ verb: 'create', user: { username: 'admin' }, objectRef: { resource: 'configmaps', namespace: 'demo', name: 'audited' }, responseStatus: { code: 201 } });
  });

  it('refuses mutations when the audit log cannot be written, and the control plane shows no change; reads still work', async () => {
    const bad = join(dir, 'not-a-file');
    await mkdir(bad);
    const g2 = await startTestGateway({ controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath, exposed: EXPOSED, extraYaml: `audit:\n  log:\n    path: ${bad}\n` });
    try {
      const ep = await g2.endpointFor('admin', ['system:masters']);
      const w = await call(ep, 'POST', '/api/v1/namespaces/demo/configmaps', { body: { metadata: { name: 'unaudited' } } });
      expect(w.status).toBe(503);
      expect(w.json()).toMatchObject({ kind: 'Status', code: 503 });
      expect(cp().get('', 'configmaps', 'demo', 'unaudited')).toBeUndefined();
      const r = await call(ep, 'GET', '/api/v1/namespaces/demo/configmaps');
      expect(r.status).toBe(200);
    } finally {
      await g2.close();
    }
  });
});

describe('flow control', () => {
  it('a user flooding LISTs gets 429s with Retry-After and PF headers while another user still gets answers', async () => {
    // The shipped flow schemas with short queues for people (global-default), so a flood overflows them.
    const fcDir = join(dir, 'flowcontrol');
    await mkdir(fcDir, { recursive: true });
    const shipped = join(import.meta.dirname, '../../config/flowcontrol');
    await writeFile(join(fcDir, 'flow-schemas.yaml'), await readFile(join(shipped, 'flow-schemas.yaml')));
    const levels = (await readFile(join(shipped, 'priority-levels.yaml'), 'utf8')).replace(
      /(name: global-default[\s\S]*?queuing:\s*\n\s*queues: )128(\s*\n\s*handSize: )6(\s*\n\s*queueLengthLimit: )50/,
      '$18$22$32',
    );
    expect(levels).toContain('queueLengthLimit: 2');
    await writeFile(join(fcDir, 'priority-levels.yaml'), levels);
    const g3 = await startTestGateway({
      controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath,
      exposed: EXPOSED,
      // Queue waits are a quarter of the request timeout: long enough that a loaded machine does not time out the
      // calm user, short queues still overflow for the flood.
      requestTimeoutSeconds: 60,
      extraYaml: `flowControl:\n  configDir: ${fcDir}\n  maxRequestsInflight: 2\n  maxMutatingRequestsInflight: 1\n`,
    });
    try {
      const flood = await g3.endpointFor('flooder', ['dev']);
      const calm = await g3.endpointFor('calm', ['dev']);
      // Both are in group dev, which may read namespace demo (the demo's RBAC).
      // All at once on one HTTP/2 connection, as a client-go program with many goroutines would send them.
      const floodP = h2Burst(flood, '/api/v1/namespaces/demo/pods', 200);
      await new Promise((r) => setTimeout(r, 20));
      // The other user asks one thing at a time, as a person at kubectl does.
      const calmP = (async () => {
        const out = [];
        for (let i = 0; i < 5; i++) out.push(await call(calm, 'GET', '/api/v1/namespaces/demo/pods'));
        return out;
      })();
      const [results, calmResults] = await Promise.all([floodP, calmP]);
      const rejected = results.filter((r) => r.status === 429);
      expect(rejected.length).toBeGreaterThan(0);
      for (const r of rejected) {
        expect(r.text.trim()).toBe('Too many requests, please try again later.');
        expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
        expect(r.headers['x-kubernetes-pf-flowschema-uid']).toBeTruthy();
        expect(r.headers['x-kubernetes-pf-prioritylevel-uid']).toBeTruthy();
      }
      expect(calmResults.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    } finally {
      await g3.close();
    }
  });
});

/** n GETs sent at once on one HTTP/2 connection; resolves with status, headers and body text of each. */
async function h2Burst(ep: ClusterEndpoint, path: string, n: number): Promise<Array<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>> {
  const session = connect(ep.url, { ca: ep.caPem, cert: ep.certPem, key: ep.keyPem });
  try {
    return await Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
            const req = session.request({ ':path': path, ':method': 'GET' });
            let headers: Record<string, string | string[] | undefined> = {};
            let text = '';
            req.on('response', (h) => (headers = h as Record<string, string | string[] | undefined>));
            req.setEncoding('utf8');
            req.on('data', (d) => (text += d));
            req.on('end', () => resolve({ status: Number(headers[':status']), headers, text }));
            req.on('error', reject);
            req.end();
          }),
      ),
    );
  } finally {
    session.close();
  }
}
