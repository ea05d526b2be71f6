// controlPlane.timeoutSeconds bounds every request to the control plane that is not long-running, even when the
// caller's own deadline (server.requestTimeoutSeconds) is longer: a hung control plane costs callers that long,
// and they get a 504 Status that says who did not answer.

import { createServer, type Server } from 'node:https';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCA, issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call } from '../support/http.js';

let hung: Server;
let gw: TestGateway;
const held: Array<{ destroy(): void }> = [];

beforeAll(async () => {
  const ca = await createCA('hung-ca');
  const serving = await issueServingCert(ca, ['127.0.0.1']);
  // Accepts every request and never answers.
  hung = createServer({ key: serving.keyPem, cert: serving.certPem }, (req) => void held.push(req.socket));
  await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
  const port = (hung.address() as { port: number }).port;
  const kc = join(mkdtempSync(join(tmpdir(), 'fleetgate-hung-')), 'cp.kubeconfig');
  await writeFile(kc, buildKubeconfig({ name: 'hung', server: `https://127.0.0.1:${port}`, caPem: ca.certPem, user: 'gw', token: 'x' }));
  gw = await startTestGateway({ controlPlaneKubeconfig: kc, requestTimeoutSeconds: 60, extraYaml: 'flowControl:\n  enabled: false\n' });
  // startTestGateway writes controlPlane.timeoutSeconds: 5.
  expect(gw.config.controlPlane.timeoutSeconds).toBe(5);
});

afterAll(async () => {
  for (const s of held) s.destroy();
  await gw?.close();
  await new Promise((r) => hung.close(r));
});

it('answers a forwarded request with 504 after controlPlane.timeoutSeconds, not the longer request timeout', async () => {
  const ep = await gw.endpointFor('alice', ['dev']);
  const started = Date.now();
  const r = await call(ep, 'GET', '/api/v1/namespaces/demo/configmaps/x');
  const took = Date.now() - started;
  expect(r.status).toBe(504);
  expect(r.json()).toMatchObject({ kind: 'Status', reason: 'Timeout', code: 504 });
  expect(r.json().message).toContain('did not respond within 5s');
  expect(took).toBeGreaterThanOrEqual(4_900);
  expect(took).toBeLessThan(30_000);
}, 40_000);
