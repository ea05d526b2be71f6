// kubectl (oldest and newest installed) against the in-memory fleet: the everyday commands work end to end.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { kubectl, type KubectlVersion } from '../support/kubectl.js';

let fleet: SimFleet;
let kc: string;

beforeAll(async () => {
  fleet = await startSimFleet({ clusters: ['member-a', 'member-b'], podsPerCluster: 30, nodesPerCluster: 2 });
  kc = fleet.member('member-a').kubeconfigPath;
});
afterAll(async () => {
  await fleet?.close();
});

describe.each<KubectlVersion>(['1.27', '1.33'])('kubectl %s against a simulated cluster', (v) => {
  it('lists pods across namespaces with the server-side table', async () => {
    const r = await kubectl(v, kc, ['get', 'pods', '-A']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0].split(/\s{2,}/)).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(lines).toHaveLength(31);
    expect(r.stdout).toMatch(/web-\w+-\w+\s+2\/2\s+Running\s+0\s+60m/);
  });

  it('prints wide columns with -o wide', async () => {
    const r = await kubectl(v, kc, ['get', 'pods', '-n', 'load', '-o', 'wide']);
    expect(r.stdout.split('\n')[0].split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    expect(r.stdout).toContain('member-a-node-1');
  });

  it('filters with label and field selectors', async () => {
    const byLabel = await kubectl(v, kc, ['get', 'pods', '-A', '-l', 'app=web', '-o', 'name']);
    const names = byLabel.stdout.trim().split('\n');
    expect(names.length).toBe(6);
    expect(names.every((n) => n.startsWith('pod/web-'))).toBe(true);
    const pending = await kubectl(v, kc, ['get', 'pods', '-A', '--field-selector', 'status.phase=Pending', '-o', 'name']);
    expect(pending.stdout.trim().split('\n')).toHaveLength(1);
    const bad = await kubectl(v, kc, ['get', 'pods', '-A', '--field-selector', 'spec.bogus=x']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('field label not supported: spec.bogus');
  });

  it('creates, patches, labels and deletes a ConfigMap', async () => {
    const name = `cm-${v.replace('.', '-')}`;
    expect((await kubectl(v, kc, ['create', 'configmap', name, '-n', 'default', '--from-literal=a=1'])).code).toBe(0);
    expect((await kubectl(v, kc, ['label', 'configmap', name, '-n', 'default', 'team=x'])).code).toBe(0);
    expect((await kubectl(v, kc, ['patch', 'configmap', name, '-n', 'default', '-p', '{"data":{"b":"2"}}'])).code).toBe(0);
    expect((await kubectl(v, kc, ['patch', 'configmap', name, '-n', 'default', '--type=json', '-p', '[{"op":"add","path":"/data/c","value":"3"}]'])).code).toBe(0);
    const got = JSON.parse((await kubectl(v, kc, ['get', 'configmap', name, '-n', 'default', '-o', 'json'])).stdout);
    expect(got.data).toEqual({ a: '1', b: '2', c: '3' });
    expect(got.metadata.labels).toEqual({ team: 'x' });
    const table = await kubectl(v, kc, ['get', 'configmap', name, '-n', 'default']);
    expect(table.stdout.split('\n')[1]).toMatch(new RegExp(`^${name}\\s+3\\s+\\d+s`));
    const del = await kubectl(v, kc, ['delete', 'configmap', name, '-n', 'default']);
    expect(del.stdout.trim()).toBe(`configmap "${name}" deleted`);
    const gone = await kubectl(v, kc, ['get', 'configmap', name, '-n', 'default']);
    expect(gone.stderr.trim()).toBe(`Error from server (NotFound): configmaps "${name}" not found`);
  });

  it('applies a Deployment from a file and scales it', async () => {
    const name = `app-${v.replace('.', '-')}`;
    const file = join(fleet.dir, `${name}.yaml`);
    await writeFile(
      file,
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n  namespace: default\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n`,
    );
    const applied = await kubectl(v, kc, ['apply', '-f', file]);
    expect(applied.stderr).toBe('');
    expect(applied.stdout.trim()).toBe(`deployment.apps/${name} created`);
    const again = await kubectl(v, kc, ['apply', '-f', file]);
    expect(again.stdout.trim()).toBe(`deployment.apps/${name} unchanged`);
    const scaled = await kubectl(v, kc, ['scale', 'deployment', name, '-n', 'default', '--replicas=5']);
    expect(scaled.stdout.trim()).toBe(`deployment.apps/${name} scaled`);
    const d = JSON.parse((await kubectl(v, kc, ['get', 'deploy', name, '-n', 'default', '-o', 'json'])).stdout);
    expect(d.spec.replicas).toBe(5);
    expect(d.metadata.generation).toBe(2);
  });

  it('answers whoami and can-i for a restricted user', async () => {
    const who = await kubectl(v, kc, ['auth', 'whoami', '-o', 'json']);
    expect(JSON.parse(who.stdout).status.userInfo.username).toBe('admin');
    const alice = await fleet.kubeconfigFor('member-a', 'alice', ['dev'], join(fleet.dir, `alice-${v}.kubeconfig`));
    const can = await kubectl(v, alice, ['auth', 'can-i', 'list', 'pods', '-n', 'kube-system']);
    expect(can.stdout.trim()).toBe('no');
    const denied = await kubectl(v, alice, ['get', 'pods', '-n', 'kube-system']);
    expect(denied.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system"');
  });
});
