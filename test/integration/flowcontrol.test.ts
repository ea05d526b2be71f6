// API Priority and Fairness in front of the simulated control plane. The gateway's chain does not run flow
// control yet, so this builds a tiny one with the real steps in the real order (request info -> caller -> flow
// control -> forward as the caller): one user flooding LISTs gets kube's 429s with Retry-After and the PF headers,
// while another user's LISTs keep completing.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toStatus } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { stableUID } from '../../src/flowcontrol/config.js';
import { flowControlStep, newFlowControl, type FlowControl } from '../../src/flowcontrol/index.js';
import { hashFlowID } from '../../src/flowcontrol/match.js';
import { dealIntoHand } from '../../src/flowcontrol/shufflesharding.js';
import { targetPath, requestInfoStep } from '../../src/request/filter.js';
import { compose, type Step } from '../../src/server/chain.js';
import type { RequestContext } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import { forward } from '../../src/upstream/forward.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';

const CONFIG = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: people}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 3
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 1, queueLengthLimit: 2}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: catch-all}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: people}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: people}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`;
const CONFIGMAPS = 300;

let sim: SimFleet;
let up: Upstream;
let fc: FlowControl;
let registry: Registry;
let server: Server;
let base: string;
let dir: string;
const agent = new Agent({ connections: 200 });

/** Stands in for authentication: the test names its caller, as a client certificate would. */
const callerStep: Step = async (ctx, next) => {
  const name = String(ctx.req.headers['x-test-user'] ?? 'nobody');
  ctx.user = { username: name, groups: ['dev', 'system:authenticated'] } satisfies UserInfo;
  await next();
};

const forwardStep: Step = async (ctx) => {
  await forward(up, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, path: targetPath(ctx), timeoutMs: ctx.deadline ? ctx.deadline - Date.now() : undefined });
};

beforeAll(async () => {
  sim = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 0 });
  const cp = sim.member('control-plane').cluster;
  cp.create(cp.resourceFor('', 'namespaces')!, '', { metadata: { name: 'demo' } });
  cp.create(cp.resourceFor('rbac.authorization.k8s.io', 'rolebindings')!, 'demo', {
    metadata: { name: 'dev-view', namespace: 'demo' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'dev' }],
  });
  const cms = cp.resourceFor('', 'configmaps')!;
  for (let i = 0; i < CONFIGMAPS; i++) cp.create(cms, 'demo', { metadata: { name: `cm-${i}` }, data: { payload: 'x'.repeat(200) } });
  up = upstreamFromKubeconfig(sim.member('control-plane').kubeconfigPath);

  dir = await mkdtemp(join(tmpdir(), 'fleetgate-fc-it-'));
  await writeFile(join(dir, 'flowcontrol.yaml'), CONFIG);
  registry = new Registry();
  // 40 seats: people get ceil(40 x 3/4) = 30, and a LIST of 300 objects takes 3 of them (its max is 5).
  fc = await newFlowControl({ configDir: dir, registry, log: pino({ level: 'silent' }), maxRequestsInflight: 30, maxMutatingRequestsInflight: 10 });
  const chain = compose([
    requestInfoStep({ deadlineMs: 60_000 }),
    callerStep,
    flowControlStep(fc, { estimateObjects: (ctx) => (ctx.info.resource === 'configmaps' ? CONFIGMAPS : undefined) }),
    forwardStep,
  ]);
  server = createServer((req, res) => {
    const auditID = `it-${Math.random().toString(16).slice(2)}`;
    res.setHeader('Audit-Id', auditID);
    const ctx = { req, res, url: new URL(req.url ?? '/', 'http://gw.invalid'), auditID, log: pino({ level: 'silent' }) } as RequestContext;
    chain(ctx).catch((e) => writeStatus(res, auditID, toStatus(e)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  fc?.close();
  await new Promise((r) => server?.close(r));
  await agent.close();
  await up?.close();
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

async function list(user: string): Promise<Answer> {
  const r = await request(`${base}/api/v1/namespaces/demo/configmaps`, { headers: { 'x-test-user': user }, dispatcher: agent });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
}

describe('flow control in front of the control plane', () => {
  it('turns a LIST flood away with 429s while another user is still served', async () => {
    // Different queues for the two flows (64 queues, hands of one): the flood cannot occupy bob's queue.
    expect(dealIntoHand(hashFlowID('people', 'mallory'), 64, 1, [])[0]).not.toBe(dealIntoHand(hashFlowID('people', 'bob'), 64, 1, [])[0]);

    const PEOPLE_FS = stableUID('FlowSchema/people');
    const PEOPLE_PL = stableUID('PriorityLevelConfiguration/people');
    const rejected: Answer[] = [];
    let floodOK = 0;
    let flooding = true;
    // Mallory keeps 40 LISTs in flight, ignoring Retry-After.
    const flood = Array.from({ length: 40 }, async () => {
      while (flooding) {
        const a = await list('mallory');
        if (a.status === 429) {
          rejected.push(a);
          await new Promise((r) => setTimeout(r, 5));
        } else {
          expect(a.status).toBe(200);
          floodOK++;
        }
      }
    });
    // Bob lists, one at a time, until mallory has been turned away plenty of times.
    const bob: Answer[] = [];
    const deadline = Date.now() + 30_000;
    while ((rejected.length < 50 || bob.length < 10) && Date.now() < deadline) bob.push(await list('bob'));
    flooding = false;
    await Promise.all(flood);

    expect(rejected.length).toBeGreaterThanOrEqual(50);
    expect(floodOK).toBeGreaterThan(0);
    for (const a of rejected) {
      expect(a.body).toBe('Too many requests, please try again later.\n');
      expect(a.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(a.headers['x-kubernetes-pf-flowschema-uid']).toBe(PEOPLE_FS);
      expect(a.headers['x-kubernetes-pf-prioritylevel-uid']).toBe(PEOPLE_PL);
      expect(a.headers['audit-id']).toMatch(/^it-/);
    }
    expect(bob.length).toBeGreaterThanOrEqual(10);
    for (const a of bob) {
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body).items).toHaveLength(CONFIGMAPS);
      expect(a.headers['x-kubernetes-pf-flowschema-uid']).toBe(PEOPLE_FS);
      expect(a.headers['x-kubernetes-pf-prioritylevel-uid']).toBe(PEOPLE_PL);
    }

    const metrics = await registry.metrics();
    const count = (re: RegExp) => Number(re.exec(metrics)?.[1] ?? 0);
    expect(count(/apiserver_flowcontrol_rejected_requests_total\{priority_level="people",flow_schema="people",reason="queue-full"\} (\d+)/)).toBe(rejected.length);
    expect(count(/apiserver_flowcontrol_dispatched_requests_total\{priority_level="people",flow_schema="people"\} (\d+)/)).toBe(floodOK + bob.length);
    expect(metrics).toContain('apiserver_flowcontrol_current_executing_requests{priority_level="people",flow_schema="people"} 0');
    expect(metrics).toContain('apiserver_flowcontrol_current_inqueue_requests{priority_level="people",flow_schema="people"} 0');
    // Every LIST was charged 3 seats.
    expect(count(/apiserver_flowcontrol_work_estimated_seats_bucket\{le="2",priority_level="people",flow_schema="people"\} (\d+)/)).toBe(0);
    expect(fc.controller.levels.get('people')!.qs!.totSeatsInUse).toBe(0);
  });
});
