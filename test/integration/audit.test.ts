// Audit in a real gateway in front of the simulated control plane, driven by kubectl. (Tunnels are covered by the
// unit test: pods, and so exec, now route to member clusters, which this test does not set up.) The gateway's own chain does
// not have the audit step yet (the lead inserts it), so this test serves the same steps the chain will have:
// request info -> (failed-authentication audit) -> authentication -> audit -> routing, on an HTTPS server with
// upgrades, built the way src/server/server.ts builds its request context.

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toStatus } from '../../src/api/status.js';
import {
  auditAuthenticationFailuresStep,
  auditStep,
  defaultPolicyPath,
  loadPolicyFile,
  newAuditor,
  type Auditor,
} from '../../src/audit/index.js';
import { authenticationStep } from '../../src/authn/filter.js';
import { parseConfig } from '../../src/config/index.js';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { requestInfoStep } from '../../src/request/filter.js';
import { compose, type Step } from '../../src/server/chain.js';
import type { RequestContext, Response } from '../../src/server/context.js';
import { newGateway, type Gateway } from '../../src/server/gateway.js';
import { isHealthPath } from '../../src/server/health.js';
import { writeStatus } from '../../src/server/respond.js';
import { routingStep } from '../../src/server/routes.js';
import { writeStatus as writeUpgradeStatus } from '../../src/upstream/upgrade.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';

const log = pino({ level: process.env.FLEETGATE_TEST_LOG ?? 'silent' });
let sim: SimFleet;
let g: Gateway;
let server: Server;
let dir: string;
let url: string;
let servingCA: CertKeyPem;
let clientCA: CertKeyPem;
let logPath: string;
let auditor: Auditor;
/** The audit steps in use; a test swaps them to run against an unwritable log. */
let steps: { failedAuthn: Step; audit: Step };
/** Every Audit-ID the server handed out, in order. */
const issued: string[] = [];
let admin: string;
let alice: string;

function useAuditor(a: Auditor): void {
  auditor = a;
  steps = { failedAuthn: auditAuthenticationFailuresStep(a), audit: auditStep(a) };
}

// Its own registry: the gateway already registered its auditor's metrics on g.metrics.registry.
function newTestAuditor(path: string, registry = new Registry()): Auditor {
  return newAuditor({ policy: loadPolicyFile(defaultPolicyPath()), log: { path }, maxRequestBodyBytes: g.config.server.maxRequestBodyBytes }, { log, registry });
}

async function kubeconfigFor(user: string, groups: string[]): Promise<string> {
  const c = await issueClientCert(clientCA, user, groups);
  const p = join(dir, `${user}.kubeconfig`);
  await writeFile(p, buildKubeconfig({ name: 'fleetgate', server: url, caPem: servingCA.certPem, user, clientCertPem: c.certPem, clientKeyPem: c.keyPem }), { mode: 0o600 });
  return p;
}

beforeAll(async () => {
  sim = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 0 });
  const cp = sim.member('control-plane').cluster;
  cp.create(cp.resourceFor('', 'namespaces')!, '', { metadata: { name: 'demo' } });
  cp.create(cp.resourceFor('rbac.authorization.k8s.io', 'rolebindings')!, 'demo', {
    metadata: { name: 'dev-edit', namespace: 'demo' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'dev' }],
  });
  cp.create(cp.resourceFor('apps', 'deployments')!, 'demo', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'demo' },
    spec: { replicas: 10, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'nginx' }] } } },
  });

  dir = await mkdtemp(join(tmpdir(), 'fleetgate-audit-it-'));
  logPath = join(dir, 'audit', 'audit.log');
  servingCA = await createCA('fleetgate-test-ca');
  clientCA = await createCA('fleetgate-test-client-ca');
  const serving = await issueServingCert(servingCA, ['127.0.0.1', 'localhost']);
  await writeFile(join(dir, 'serving.crt'), serving.certPem);
  await writeFile(join(dir, 'serving.key'), serving.keyPem, { mode: 0o600 });
  await writeFile(join(dir, 'client-ca.crt'), clientCA.certPem);
  const yaml = `
server:
  address: 127.0.0.1
  port: 0
  tls: {certFile: serving.crt, keyFile: serving.key, clientCAFile: client-ca.crt}
  requestTimeoutSeconds: 10
controlPlane:
  kubeconfig: ${sim.member('control-plane').kubeconfigPath}
resources:
  exposed:
    - group: ""
      resources: [configmaps, namespaces]
    - group: apps
      resources: [deployments]
logging:
  level: silent
`;
  const config = parseConfig(yaml, join(dir, 'fleetgate.yaml'));
  g = await newGateway(config, log);
  useAuditor(newTestAuditor(logPath));

  const chain = compose([
    requestInfoStep({ deadlineMs: config.server.requestTimeoutSeconds * 1000 }),
    (ctx, next) => steps.failedAuthn(ctx, next),
    authenticationStep({ authenticator: g.authenticator, anonymous: false, sar: g.sar, publicPaths: isHealthPath }),
    (ctx, next) => steps.audit(ctx, next),
    routingStep(g),
  ]);
  const newContext = (req: IncomingMessage, res: Response | undefined, upgrade?: { socket: Duplex; head: Buffer }): RequestContext => {
    const id = typeof req.headers['audit-id'] === 'string' ? req.headers['audit-id'] : randomUUID();
    issued.push(id);
    return { req, res: res!, url: new URL(req.url ?? '/', 'https://gateway.invalid'), auditID: id, log: log.child({ auditID: id }), upgrade } as RequestContext;
  };
  server = createServer({ key: serving.keyPem, cert: serving.certPem, ca: clientCA.certPem, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const ctx = newContext(req, res);
    res.setHeader('Audit-Id', ctx.auditID);
    chain(ctx).catch((e) => writeStatus(res, ctx.auditID, toStatus(e)));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const ctx = newContext(req, undefined, { socket, head });
    chain(ctx).catch((e) => writeUpgradeStatus(socket, ctx.auditID, toStatus(e)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  admin = await kubeconfigFor('admin', ['system:masters']);
  alice = await kubeconfigFor('alice', ['dev']);
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await auditor?.close();
  await g?.close();
  await sim?.close();
  await rm(dir, { recursive: true, force: true });
});

async function events(path = logPath): Promise<any[]> {
  await auditor.flush();
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trim() === '' ? [] : text.trim().split('\n').map((l) => JSON.parse(l));
}

/** Runs kubectl and returns it with the Audit-IDs of the requests it made. */
async function run(kubeconfig: string, args: string[], stdin?: string) {
  const from = issued.length;
  const r = await kubectl('1.33', kubeconfig, args, { stdin });
  return { ...r, ids: issued.slice(from) };
}

describe('audit through the gateway, with kubectl', () => {
  it('every request kubectl makes has exactly one ResponseComplete with its Audit-ID', async () => {
    const create = await run(alice, ['create', 'configmap', 'audited', '-n', 'demo', '--from-literal=k=v']);
    expect(create.stderr).toBe('');
    const get = await run(alice, ['get', 'configmaps', '-n', 'demo', '-o', 'name']);
    expect(get.stdout).toContain('configmap/audited');
    const del = await run(alice, ['delete', 'configmap', 'audited', '-n', 'demo']);
    expect(del.code).toBe(0);
    const ids = [...create.ids, ...get.ids, ...del.ids];
    expect(ids.length).toBeGreaterThanOrEqual(3);
    const evs = await events();
    for (const id of ids) {
      const complete = evs.filter((e) => e.auditID === id && e.stage === 'ResponseComplete');
      expect(complete, `Audit-ID ${id}`).toHaveLength(1);
    }
    const created = evs.find((e) => create.ids.includes(e.auditID) && e.verb === 'create' && e.stage === 'ResponseComplete');
    expect(created).toMatchObject({
      level: 'Metadata', // configmaps may hold secrets: the default policy keeps their bodies out
      user: { username: 'alice', groups: ['dev', 'system:authenticated'] },
      objectRef: { resource: 'configmaps', namespace: 'demo', name: 'audited', apiVersion: 'v1' },
      responseStatus: { metadata: {}, code: 201 },
      sourceIPs: ['127.0.0.1'],
    });
    expect(created.userAgent).toMatch(/^kubectl/);
    // kubectl 1.33 sends built-in kinds as protobuf: no requestObject (and none at Metadata anyway), but the name
    // above came out of the protobuf body.
    expect(created.requestObject).toBeUndefined();
    // The mutation's RequestReceived came first.
    const stages = evs.filter((e) => e.auditID === created.auditID).map((e) => e.stage);
    expect(stages).toEqual(['RequestReceived', 'ResponseComplete']);
  });

  it('kubectl scale is recorded in full: what was asked and the Scale it produced', async () => {
    const r = await run(admin, ['scale', 'deployment', 'web', '-n', 'demo', '--replicas=6']);
    expect(r.stderr).toBe('');
    const evs = (await events()).filter((e) => r.ids.includes(e.auditID) && e.objectRef?.subresource === 'scale');
    const complete = evs.find((e) => e.stage === 'ResponseComplete');
    expect(complete).toMatchObject({
      level: 'RequestResponse',
      objectRef: { resource: 'deployments', namespace: 'demo', name: 'web', apiGroup: 'apps', apiVersion: 'v1', subresource: 'scale' },
      responseStatus: { code: 200 },
      responseObject: { kind: 'Scale', spec: { replicas: 6 } },
    });
    expect(['patch', 'update']).toContain(complete.verb);
    expect(JSON.stringify(complete.requestObject)).toContain('"replicas":6');
  });

  it('impersonation: user is the impersonator, impersonatedUser who they acted as', async () => {
    const r = await run(admin, ['get', 'configmaps', '-n', 'demo', '--as=alice', '--as-group=dev']);
    expect(r.code).toBe(0);
    const e = (await events()).find((x) => r.ids.includes(x.auditID) && x.verb === 'list' && x.stage === 'ResponseComplete');
    expect(e.user.username).toBe('admin');
    expect(e.impersonatedUser).toEqual({ username: 'alice', groups: ['dev', 'system:authenticated'] });
  });

  it('a failed authentication is audited with what was tried', async () => {
    const r = await call({ url, caPem: servingCA.certPem, token: 'not-a-token' }, 'GET', '/api/v1/namespaces', { headers: { 'Audit-ID': 'unauth-1' } });
    expect(r.status).toBe(401);
    const evs = (await events()).filter((e) => e.auditID === 'unauth-1');
    expect(evs.map((e) => e.stage)).toEqual(['ResponseComplete']);
    expect(evs[0]).toMatchObject({ user: {}, responseStatus: { message: 'Authentication failed, attempted: bearer', code: 401 } });
  });

  it('with an unwritable audit log, mutations are refused and never applied, reads still work', async () => {
    const healthy = auditor;
    const broken = join(dir, 'broken.log');
    await mkdir(broken); // a directory: the log cannot be opened
    useAuditor(newTestAuditor(broken, new Registry()));
    try {
      const cp = sim.member('control-plane').cluster;
      const before = cp.get('apps', 'deployments', 'demo', 'web')!;
      const scale = await run(admin, ['scale', 'deployment', 'web', '-n', 'demo', '--replicas=3']);
      expect(scale.code).not.toBe(0);
      expect(scale.stderr).toContain('failed to store audit event');
      const create = await run(admin, ['create', 'configmap', 'never', '-n', 'demo']);
      expect(create.stderr).toContain('failed to store audit event');
      // The control plane shows no change.
      expect(cp.get('', 'configmaps', 'demo', 'never')).toBeUndefined();
      const after = cp.get('apps', 'deployments', 'demo', 'web')!;
      expect((after as any).spec.replicas).toBe((before as any).spec.replicas);
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      // Reads still work.
      const get = await run(admin, ['get', 'deployment', 'web', '-n', 'demo', '-o', 'jsonpath={.spec.replicas}']);
      expect(get.stdout).toBe(String((before as any).spec.replicas));
      expect((await auditor.metrics.rejected.get()).values[0]!.value).toBe(2);
    } finally {
      await auditor.close();
      useAuditor(healthy);
    }
  });
});
