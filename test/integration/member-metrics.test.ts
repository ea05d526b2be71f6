// The member-cache metrics an operator alerts on (docs/operations.md): a member that cannot be watched shows as
// stale, recovers by itself, and the series of a member removed from the fleet go away.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startDemoFleet, type DemoFleet } from '../sim/demofleet.js';
import { FEDERATED_EXPOSED, startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, type ClusterEndpoint } from '../support/http.js';

let demo: DemoFleet;
let gw: TestGateway;
let dir: string;
let admin: ClusterEndpoint;

async function until(what: string, pred: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function metric(line: RegExp): Promise<boolean> {
  const m = await call(admin, 'GET', '/metrics');
  return line.test(m.text);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-member-metrics-'));
  demo = await startDemoFleet(join(dir, 'fleet'));
  gw = await startTestGateway({ controlPlaneKubeconfig: demo.fleet.member('control-plane').kubeconfigPath, exposed: FEDERATED_EXPOSED });
  admin = await gw.endpointFor('admin', ['system:masters']);
  await until('members synced', () => metric(/^fleetgate_member_cache_synced\{cluster="member-c"\} 1$/m));
});

afterAll(async () => {
  await gw?.close();
  await demo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("shows the cache's slab memory: live bytes of pods within the slabs that hold them", async () => {
  const text = (await call(admin, 'GET', '/metrics')).text;
  const value = (name: string, resource?: string) => {
    const m = new RegExp(`^${name}${resource ? `\\{resource="${resource.replace(/\./g, '\\.')}"\\}` : ''} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : NaN;
  };
  const slab = value('fleetgate_cache_slab_bytes', 'pods');
  const live = value('fleetgate_cache_live_bytes', 'pods');
  expect(live).toBeGreaterThan(0);
  expect(slab).toBeGreaterThanOrEqual(live);
  expect(value('fleetgate_cache_live_bytes', 'events')).toBeGreaterThan(0);
  expect(value('fleetgate_cache_slab_bytes', 'events.events.k8s.io')).toBeGreaterThanOrEqual(0);
  expect(value('fleetgate_cache_slabs_awaiting_collection_bytes')).toBeGreaterThanOrEqual(0);
});

it('shows the slabs the touch-ahead thread made resident ahead (cache.touchAheadBytes, on by default)', async () => {
  // Each new slab asks for the next ones: the pods' first slab has, so some are ready, held by the process.
  await until('slabs ready ahead', () => metric(/^fleetgate_cache_touch_ahead_held_bytes [1-9][0-9]*$/m));
  const text = (await call(admin, 'GET', '/metrics')).text;
  for (const outcome of ['taken', 'missed']) expect(text).toMatch(new RegExp(`^fleetgate_cache_touch_ahead_slabs_total\\{outcome="${outcome}"\\} [0-9]+$`, 'm'));
});

it('marks a member stale while it is down and clears it when it is back, in its metrics and in the Warnings of reads', async () => {
  const warningsOfList = async () => {
    const r = await call(admin, 'GET', '/api/v1/pods?limit=1');
    expect(r.status).toBe(200);
    return r.headers['warning'];
  };
  expect(await metric(/^fleetgate_member_cache_stale\{cluster="member-b"\} 0$/m)).toBe(true);
  expect(await warningsOfList()).toBeUndefined();
  await demo.fleet.member('member-b').stop();
  await until('member-b stale', () => metric(/^fleetgate_member_cache_stale\{cluster="member-b"\} 1$/m));
  expect(await metric(/^fleetgate_member_cache_stale\{cluster="member-a"\} 0$/m)).toBe(true);
  // Only the member that is down is named.
  expect(await warningsOfList()).toMatch(/^299 - "member cluster member-b is not in sync since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: its pods and events are the last known state"$/);
  await demo.fleet.member('member-b').start();
  await until('member-b fresh again', () => metric(/^fleetgate_member_cache_stale\{cluster="member-b"\} 0$/m));
  expect(await warningsOfList()).toBeUndefined();
}, 60_000);

it('drops the series of a member removed from the fleet', async () => {
  const cp = demo.fleet.member('control-plane').cluster;
  const clusters = cp.resourceFor('cluster.karmada.io', 'clusters')!;
  cp.delete(clusters, '', 'member-c');
  await until('member-c series gone', async () => !(await metric(/cluster="member-c"\}/)));
  expect(await metric(/^fleetgate_member_cached_objects\{cluster="member-a",resource="pods"\} [1-9]/m)).toBe(true);
}, 60_000);
