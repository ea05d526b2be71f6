// apiserver_longrunning_requests counts a long-running request (a watch, logs, exec) from the moment its answer
// starts until it ends. One that ends before it was answered (a client that gives up on a forwarded watch whose
// upstream has not replied yet) was never counted, so it must not be taken off: the gauge went below zero.

import { createServer, type Server } from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, type ClusterEndpoint } from '../support/http.js';

let upstream: Server;
let dir: string;
let gw: TestGateway;
let admin: ClusterEndpoint;
const held: Array<() => void> = [];
let watchesSeen = 0;
let watchesClosed = 0;

beforeAll(async () => {
  // A control plane that allows every access review, holds watches without a word and has nothing else.
  const ca = await createCA('hanging-upstream-ca');
  const serving = await issueServingCert(ca, ['127.0.0.1']);
  upstream = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    if (/[?&]watch=(1|true)/.test(req.url ?? '')) {
      watchesSeen++;
      // The gateway cancels the upstream request when its client leaves, after its own accounting of that close.
      res.on('close', () => watchesClosed++);
      held.push(() => res.destroy());
      return;
    }
    if (req.method === 'POST' && (req.url ?? '').startsWith('/apis/authorization.k8s.io/v1/subjectaccessreviews')) {
      // The gateway asks before serving /metrics; the admin may read it.
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const review = JSON.parse(body);
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...review, status: { allowed: true, reason: 'test' } }));
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not here' }));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as { port: number }).port;
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-longrunning-'));
  const kubeconfig = join(dir, 'control-plane.kubeconfig');
  await writeFile(kubeconfig, buildKubeconfig({ name: 'control-plane', server: `https://127.0.0.1:${port}`, caPem: ca.certPem, user: 'gateway', token: 'gateway-token' }));
  gw = await startTestGateway({ controlPlaneKubeconfig: kubeconfig });
  admin = await gw.endpointFor('admin', ['system:masters']);
});

afterAll(async () => {
  for (const h of held) h();
  await gw?.close();
  await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The gauge's value for configmap watches, or undefined when the series does not exist. */
async function watchGauge(): Promise<number | undefined> {
  const r = await call(admin, 'GET', '/metrics');
  expect(r.status).toBe(200);
  const line = r.text.split('\n').find((l) => l.startsWith('apiserver_longrunning_requests{') && l.includes('resource="configmaps"') && l.includes('verb="WATCH"'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('apiserver_longrunning_requests', () => {
  it('does not go below zero for a watch its client gave up on before it was answered', async () => {
    expect(await watchGauge()).toBeUndefined();
    const ac = new AbortController();
    const agent = new Agent({ connect: { ca: admin.caPem, cert: admin.certPem, key: admin.keyPem } });
    const pending = request(new URL('/api/v1/namespaces/demo/configmaps?watch=1', admin.url), { dispatcher: agent, signal: ac.signal }).catch((e: Error) => e);
    const start = Date.now();
    while (watchesSeen === 0) {
      if (Date.now() - start > 10_000) throw new Error('the watch never reached the upstream');
      await new Promise((r) => setTimeout(r, 10));
    }
    ac.abort();
    expect(await pending).toBeInstanceOf(Error);
    await agent.close();
    while (watchesClosed === 0) {
      if (Date.now() - start > 10_000) throw new Error('the gateway never cancelled the upstream watch');
      await new Promise((r) => setTimeout(r, 10));
    }
    const value = await watchGauge();
    expect(value ?? 0).toBe(0);
  });
});
