// The gateway in front of a REAL control plane (kube-apiserver v1.34.4): kubectl 1.27, 1.30 and 1.33 work through
// it as they do directly, as the caller (impersonated), and a control plane outage is a 503 that heals itself.

import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueClientCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call } from '../support/http.js';
import { kubectl, kubectlPath, type KubectlVersion } from '../support/kubectl.js';
import { GATEWAY_USER, startRealFleet, type RealCluster, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';
import { seedControlPlane } from './seed.js';

describe.skipIf(!requireGo())('the gateway in front of a real control plane', () => {
  let real: RealFleet;
  let cp: RealCluster;
  let gw: TestGateway;
  let admin: string;
  let alice: string;
  let aliceDirect: string;

  beforeAll(async () => {
    real = await startRealFleet({ members: ['member-a'] });
    cp = real.controlPlane;
    const m = real.members[0]!;
    await seedControlPlane(
      { name: cp.name, url: cp.url, caPem: cp.caPem, endpoint: cp.endpoint },
      [{ name: m.name, url: m.url, caPem: m.caPem, endpoint: m.endpoint, gatewayToken: m.gatewayToken }],
    );
    // Group dev may edit namespace demo, nothing else. (The aggregated "edit" ClusterRole is empty here: its
    // rules are filled in by kube-controller-manager, which this control plane does not run.)
    const role = await call(cp.endpoint, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/demo/roles', {
      body: {
        metadata: { name: 'dev-editor' },
        rules: [{ apiGroups: ['', 'apps', 'apps.kruise.io'], resources: ['configmaps', 'deployments', 'deployments/scale', 'clonesets', 'clonesets/scale', 'pods'], verbs: ['*'] }],
      },
    });
    expect(role.status).toBe(201);
    const rb = await call(cp.endpoint, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/demo/rolebindings', {
      body: {
        metadata: { name: 'dev-edit' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'dev-editor' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'dev' }],
      },
    });
    expect(rb.status).toBe(201);
    // The gateway reaches the control plane with its own identity (a token bound to cluster-admin).
    const gwKubeconfig = join(real.dir, 'gateway-identity.kubeconfig');
    writeFileSync(gwKubeconfig, buildKubeconfig({ name: 'control-plane', server: cp.url, caPem: cp.caPem, user: GATEWAY_USER, token: cp.gatewayToken }), { mode: 0o600 });
    gw = await startTestGateway({
      controlPlaneKubeconfig: gwKubeconfig,
      exposed: `    - group: ""
      resources: [configmaps, namespaces]
    - group: apps
      resources: [deployments]
    - group: apps.kruise.io
      resources: [clonesets]`,
    });
    admin = await gw.kubeconfigFor('admin', ['system:masters']);
    alice = await gw.kubeconfigFor('alice', ['dev']);
    const aliceCert = await issueClientCert(cp.clientCa, 'alice', ['dev']);
    aliceDirect = join(real.dir, 'alice-direct.kubeconfig');
    writeFileSync(aliceDirect, buildKubeconfig({ name: 'cp', server: cp.url, caPem: cp.caPem, user: 'alice', clientCertPem: aliceCert.certPem, clientKeyPem: aliceCert.keyPem }), { mode: 0o600 });
  });

  afterAll(async () => {
    await gw?.close();
    await real?.stop();
  });

  describe.each<KubectlVersion>(['1.27', '1.30', '1.33'])('kubectl %s', (v) => {
    const tag = v.replace('.', '-');

    it('api-resources lists the exposed resources', async () => {
      const r = await kubectl(v, admin, ['api-resources', '--no-headers', '-o', 'name']);
      expect(r.code).toBe(0);
      const names = r.stdout.trim().split('\n');
      for (const n of ['configmaps', 'deployments.apps', 'clonesets.apps.kruise.io', 'pods', 'events']) expect(names).toContain(n);
      expect(names).not.toContain('secrets');
    });

    it('explain works (OpenAPI passes through)', async () => {
      const r = await kubectl(v, admin, ['explain', 'deployment.spec.replicas']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('replicas');
      const c = await kubectl(v, admin, ['explain', 'clonesets.spec']);
      expect(c.code).toBe(0);
    });

    it('whoami shows the caller; can-i agrees with the control plane', async () => {
      const who = JSON.parse((await kubectl(v, alice, ['auth', 'whoami', '-o', 'json'])).stdout);
      expect(who.status.userInfo.username).toBe('alice');
      for (const args of [
        ['create', 'configmaps', '-n', 'demo'],
        ['delete', 'deployments', '-n', 'demo'],
        ['list', 'configmaps', '-n', 'kube-system'],
        ['create', 'namespaces'],
        ['patch', 'clonesets.apps.kruise.io', '-n', 'demo'],
      ]) {
        const through = await kubectl(v, alice, ['auth', 'can-i', ...args]);
        const direct = await kubectl(v, aliceDirect, ['auth', 'can-i', ...args]);
        expect(through.stdout.trim(), args.join(' ')).toBe(direct.stdout.trim());
      }
    });

    it('create, get, patch, edit, apply, delete a ConfigMap as alice', async () => {
      const name = `cm-${tag}`;
      const created = await kubectl(v, alice, ['create', 'configmap', name, '-n', 'demo', '--from-literal=a=1']);
      expect({ out: created.stdout.trim(), err: created.stderr }).toEqual({ out: `configmap/${name} created`, err: '' });
      expect((await kubectl(v, alice, ['patch', 'configmap', name, '-n', 'demo', '-p', '{"data":{"b":"2"}}'])).stdout.trim()).toBe(`configmap/${name} patched`);
      const editor = join(gw.dir, `edit-${tag}.sh`);
      writeFileSync(editor, `#!/bin/sh\nsed -i 's/^  b: "2"/  b: "3"/' "$1"\n`);
      chmodSync(editor, 0o755);
      const edited = await kubectl(v, alice, ['edit', 'configmap', name, '-n', 'demo'], { env: { KUBE_EDITOR: editor, EDITOR: editor } });
      expect(edited.stdout.trim()).toBe(`configmap/${name} edited`);
      const file = join(gw.dir, `${name}.yaml`);
      writeFileSync(file, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}-applied\n  namespace: demo\ndata:\n  x: "1"\n`);
      expect((await kubectl(v, alice, ['apply', '-f', file])).stdout.trim()).toBe(`configmap/${name}-applied created`);
      expect((await kubectl(v, alice, ['apply', '-f', file])).stdout.trim()).toBe(`configmap/${name}-applied unchanged`);
      const got = JSON.parse((await kubectl(v, alice, ['get', 'configmap', name, '-n', 'demo', '-o', 'json'])).stdout);
      expect(got.data).toEqual({ a: '1', b: '3' });
      expect((await kubectl(v, alice, ['delete', 'configmap', name, `${name}-applied`, '-n', 'demo'])).code).toBe(0);
    });

    it('Deployments: apply, scale, patch, delete', async () => {
      const name = `dep-${tag}`;
      const file = join(gw.dir, `${name}.yaml`);
      writeFileSync(
        file,
        `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n  namespace: demo\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n      - {name: a, image: "nginx:1.27"}\n      - {name: b, image: "busybox:1.36"}\n`,
      );
      const applied = await kubectl(v, alice, ['apply', '-f', file]);
      expect({ out: applied.stdout.trim(), err: applied.stderr }).toEqual({ out: `deployment.apps/${name} created`, err: '' });
      expect((await kubectl(v, alice, ['scale', 'deployment', name, '-n', 'demo', '--replicas=4'])).stdout.trim()).toBe(`deployment.apps/${name} scaled`);
      expect((await kubectl(v, alice, ['set', 'image', `deployment/${name}`, '-n', 'demo', 'a=nginx:1.28'])).code).toBe(0);
      const d = JSON.parse((await kubectl(v, alice, ['get', 'deploy', name, '-n', 'demo', '-o', 'json'])).stdout);
      expect(d.spec.replicas).toBe(4);
      expect(d.spec.template.spec.containers.map((c: any) => c.image)).toEqual(['nginx:1.28', 'busybox:1.36']);
      const table = await kubectl(v, alice, ['get', 'deploy', name, '-n', 'demo']);
      expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE/);
      expect((await kubectl(v, alice, ['delete', 'deploy', name, '-n', 'demo'])).stdout.trim()).toBe(`deployment.apps "${name}" deleted`);
    });

    it('CloneSets: get, scale, patch', async () => {
      const list = await kubectl(v, alice, ['get', 'clonesets', '-n', 'demo']);
      expect(list.code).toBe(0);
      const first = list.stdout.trim().split('\n')[1]!.split(/\s+/)[0]!;
      expect((await kubectl(v, alice, ['scale', 'cloneset', first, '-n', 'demo', '--replicas=5'])).stdout.trim()).toBe(`cloneset.apps.kruise.io/${first} scaled`);
      const patched = await kubectl(v, alice, ['patch', 'cloneset', first, '-n', 'demo', '--type=merge', '-p', `{"metadata":{"labels":{"patched":"${tag}"}}}`]);
      expect(patched.stdout.trim()).toBe(`cloneset.apps.kruise.io/${first} patched`);
      const c = JSON.parse((await kubectl(v, alice, ['get', 'cloneset', first, '-n', 'demo', '-o', 'json'])).stdout);
      expect(c.spec.replicas).toBe(5);
      expect(c.metadata.labels.patched).toBe(tag);
    });

    it('get -w shows a new ConfigMap as it is created', async () => {
      const name = `watched-${tag}`;
      await kubectl(v, admin, ['create', 'configmap', `before-${tag}`, '-n', 'demo']);
      const child = spawn(kubectlPath(v), ['--kubeconfig', admin, 'get', 'configmaps', '-n', 'demo', '-w', '--no-headers'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      try {
        // The initial list is printed (and the watch opened) once the existing ConfigMap shows up.
        await until(() => out.includes(`before-${tag}`), 15_000);
        await kubectl(v, admin, ['create', 'configmap', name, '-n', 'demo']);
        await until(() => out.includes(name), 10_000);
      } finally {
        child.kill();
      }
    });
  });

  it('an outage of the control plane is a 503 within the timeout, and /readyz recovers by itself', async () => {
    const ep = await gw.endpointFor('admin', ['system:masters']);
    await cp.stopApiserver();
    try {
      const t0 = Date.now();
      const r = await call(ep, 'GET', '/api/v1/namespaces');
      expect(r.status).toBe(503);
      expect(r.json()).toMatchObject({ kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
      expect(r.json().message).toContain('control-plane');
      expect(r.text).not.toContain(cp.gatewayToken);
      expect(Date.now() - t0).toBeLessThan(gw.config.server.requestTimeoutSeconds * 1000 + 1000);
      const ready = await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz?verbose');
      expect(ready.status).toBe(500);
      expect(ready.text).toContain('[-]control-plane failed: reason withheld');
    } finally {
      await cp.restart();
    }
    await until(async () => (await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz')).status === 200, 30_000);
    expect((await call(ep, 'GET', '/api/v1/namespaces')).status).toBe(200);
  });
});

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
