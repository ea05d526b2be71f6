// kubectl 1.33's typed clients send protobuf bodies (create <kind>, auth can-i, auth reconcile); the sim decodes
// them and stores what a JSON client would have stored.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { kubectl } from '../support/kubectl.js';

let fleet: SimFleet;
let kc: string;

const run = (args: string[]) => kubectl('1.33', kc, args);
const getJson = async (args: string[]) => {
  const r = await run(['get', ...args, '-o', 'json']);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout);
};

beforeAll(async () => {
  fleet = await startSimFleet({ clusters: ['member-a'], nodesPerCluster: 1 });
  kc = fleet.member('member-a').kubeconfigPath;
  const ns = await run(['create', 'namespace', 'pb']);
  expect(ns.stderr).toBe('');
});
afterAll(async () => {
  await fleet?.close();
});

describe('kubectl 1.33 writes with protobuf bodies', () => {
  it('creates a namespace', async () => {
    const list = await getJson(['namespaces']);
    const ns = list.items.find((n: any) => n.metadata.name === 'pb');
    expect(ns.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('creates a ConfigMap with text and binary data, then deletes it', async () => {
    const bin = join(fleet.dir, 'blob.bin');
    await writeFile(bin, Buffer.from([0x00, 0xff, 0xfe, 0x01]));
    const created = await run(['create', 'configmap', 'settings', '-n', 'pb', '--from-literal=mode=fast', `--from-file=blob=${bin}`]);
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe('configmap/settings created');
    const cm = await getJson(['configmap', 'settings', '-n', 'pb']);
    expect(cm.data).toEqual({ mode: 'fast' });
    expect(cm.binaryData).toEqual({ blob: 'AP/+AQ==' });

    const del = await run(['delete', 'configmap', 'settings', '-n', 'pb']);
    expect(del.stdout.trim()).toBe('configmap "settings" deleted');
    const left = await run(['get', 'configmaps', '-n', 'pb', '-o', 'name']);
    expect(left.stdout.split('\n')).not.toContain('configmap/settings');
  });

  it('creates a generic Secret with base64 data', async () => {
    const r = await run(['create', 'secret', 'generic', 'creds', '-n', 'pb', '--from-literal=password=hunter2']);
    expect(r.stderr).toBe('');
    const s = await getJson(['secret', 'creds', '-n', 'pb']);
    expect(s.type).toBe('Opaque');
    expect(s.data).toEqual({ password: Buffer.from('hunter2').toString('base64') });
  });

  it('creates a Deployment with its pod template', async () => {
    const r = await run(['create', 'deployment', 'web', '-n', 'pb', '--image=nginx', '--replicas=2']);
    expect(r.stderr).toBe('');
    const d = await getJson(['deployment', 'web', '-n', 'pb']);
    expect(d.metadata.labels).toEqual({ app: 'web' });
    expect(d.metadata.generation).toBe(1);
    expect(d.spec.replicas).toBe(2);
    expect(d.spec.selector).toEqual({ matchLabels: { app: 'web' } });
    expect(d.spec.template.metadata.labels).toEqual({ app: 'web' });
    expect(d.spec.template.spec.containers).toEqual([expect.objectContaining({ name: 'nginx', image: 'nginx', resources: {} })]);
    const table = await run(['get', 'deployment', 'web', '-n', 'pb']);
    expect(table.stdout.split('\n')[1]).toMatch(/^web\s+\d\/2\s/);
  });

  it('creates a ServiceAccount, a Role and a RoleBinding that RBAC then honours', async () => {
    expect((await run(['create', 'serviceaccount', 'robot', '-n', 'pb'])).stderr).toBe('');
    expect((await run(['create', 'role', 'cm-reader', '-n', 'pb', '--verb=get,list', '--resource=configmaps'])).stderr).toBe('');
    expect((await run(['create', 'rolebinding', 'cm-reader', '-n', 'pb', '--role=cm-reader', '--user=alice', '--serviceaccount=pb:robot'])).stderr).toBe('');

    expect((await getJson(['serviceaccount', 'robot', '-n', 'pb'])).metadata.name).toBe('robot');
    const role = await getJson(['role', 'cm-reader', '-n', 'pb']);
    expect(role.rules).toEqual([{ verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'] }]);
    const rb = await getJson(['rolebinding', 'cm-reader', '-n', 'pb']);
    expect(rb.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' });
    expect(rb.subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
      { kind: 'ServiceAccount', name: 'robot', namespace: 'pb' },
    ]);

    // auth can-i posts a protobuf SelfSubjectAccessReview, here impersonating the bound subjects.
    expect((await run(['auth', 'can-i', 'list', 'configmaps', '-n', 'pb', '--as=alice'])).stdout.trim()).toBe('yes');
    expect((await run(['auth', 'can-i', 'get', 'configmaps', '-n', 'pb', '--as=system:serviceaccount:pb:robot'])).stdout.trim()).toBe('yes');
    const no = await run(['auth', 'can-i', 'delete', 'configmaps', '-n', 'pb', '--as=alice']);
    expect(no.stdout.trim()).toBe('no');
    expect(no.code).toBe(1);
  });

  it('updates with a protobuf PUT (auth reconcile)', async () => {
    const file = join(fleet.dir, 'reconcile.yaml');
    const role = (verbs: string) =>
      `apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reconciled, namespace: pb, labels: {team: x}}\nrules:\n- {apiGroups: [""], resources: [pods], verbs: [${verbs}]}\n`;
    await writeFile(file, role('get'));
    expect((await run(['auth', 'reconcile', '-f', file])).stdout.trim()).toBe('role.rbac.authorization.k8s.io/reconciled reconciled');
    const first = await getJson(['role', 'reconciled', '-n', 'pb']);
    await writeFile(file, role('get, watch'));
    expect((await run(['auth', 'reconcile', '-f', file])).stdout.trim()).toBe('role.rbac.authorization.k8s.io/reconciled reconciled');
    const second = await getJson(['role', 'reconciled', '-n', 'pb']);
    expect(second.metadata.uid).toBe(first.metadata.uid);
    expect(second.metadata.labels).toEqual({ team: 'x' });
    expect(Number(second.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion));
    expect(second.rules.flatMap((r: any) => r.verbs).sort()).toEqual(['get', 'watch']);
  });

  it('answers 415 for a protobuf body of a kind it cannot decode', async () => {
    // runtime.Unknown{typeMeta{apiVersion: "storage.k8s.io/v1", kind: "StorageClass"}, raw: ""}
    const tm = Buffer.concat([Buffer.from([0x0a, 17]), Buffer.from('storage.k8s.io/v1'), Buffer.from([0x12, 12]), Buffer.from('StorageClass')]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x0a, tm.length]), tm, Buffer.from([0x12, 0])]);
    const m = fleet.member('member-a');
    const agent = new Agent({ connect: { ca: fleet.servingCA.certPem } });
    try {
      const res = await request(`${m.url}/api/v1/namespaces/pb/configmaps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fleet.adminToken}`, 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
        body,
        dispatcher: agent,
      });
      const status = (await res.body.json()) as any;
      expect(res.statusCode).toBe(415);
      expect(status.reason).toBe('UnsupportedMediaType');
    } finally {
      await agent.close();
    }
  });
});
