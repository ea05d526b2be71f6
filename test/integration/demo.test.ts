// `fleetgate demo` as a user runs it: the built command starts the simulated federation and a gateway, writes
// kubeconfigs, and kubectl works through it; alice is confined to namespace demo; scaling a Deployment on the
// control plane moves pods into the members; Ctrl-C stops everything.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ensureBuilt, ROOT } from '../support/build.js';
import { kubectl } from '../support/kubectl.js';

describe('fleetgate demo', () => {
  let child: ChildProcess;
  let dir: string;
  let out = '';
  let exited: Promise<number | null>;

  beforeAll(async () => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-demo-'));
    child = spawn(process.execPath, [BIN, 'demo', '--port', '0', '--dir', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    exited = new Promise((r) => child.once('exit', (code) => r(code)));
    const end = Date.now() + 60_000;
    while (!out.includes('Press Ctrl-C to stop.')) {
      if (Date.now() > end || child.exitCode !== null) throw new Error(`demo did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the demo namespace to the fleet admin', async () => {
    const r = await kubectl('1.33', join(dir, 'admin.kubeconfig'), ['get', 'deploy', '-n', 'demo']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^api\s+3\/3\s+3\s+3\s+/m);
    expect(r.stdout).toMatch(/^web\s+6\/6\s+6\s+6\s+/m);
    const cs = await kubectl('1.27', join(dir, 'admin.kubeconfig'), ['get', 'clonesets', '-n', 'demo', '-o', 'name']);
    expect(cs.stdout.trim()).toBe('cloneset.apps.kruise.io/worker');
  });

  it('confines alice to namespace demo', async () => {
    const alice = join(dir, 'alice.kubeconfig');
    const ok = await kubectl('1.33', alice, ['get', 'configmaps', '-n', 'demo', '-o', 'name']);
    expect(ok.stdout).toContain('configmap/web-config');
    const no = await kubectl('1.33', alice, ['get', 'pods', '-n', 'kube-system']);
    expect(no.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system"');
  });

  it('propagates a scale-up to the members', async () => {
    const r = await kubectl('1.33', join(dir, 'admin.kubeconfig'), ['scale', 'deploy', 'api', '-n', 'demo', '--replicas=6']);
    expect(r.stdout.trim()).toBe('deployment.apps/api scaled');
    const count = async () => {
      let n = 0;
      for (const m of ['member-a', 'member-b', 'member-c']) {
        const p = await kubectl('1.33', join(dir, 'fleet', `${m}.kubeconfig`), ['get', 'pods', '-n', 'demo', '-l', 'app=api', '-o', 'name']);
        n += p.stdout.trim() ? p.stdout.trim().split('\n').length : 0;
      }
      return n;
    };
    const end = Date.now() + 10_000;
    while ((await count()) !== 6) {
      if (Date.now() > end) throw new Error(`expected 6 api pods across the members, have ${await count()}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  });

  it('stops cleanly on Ctrl-C', async () => {
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
