// Starts a gateway in process for tests: its own PKI in a temp dir, a config pointing at a given control plane
// kubeconfig, and kubeconfigs for users issued by its client CA.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { startGateway, type RunningGateway } from '../../src/server/server.js';
import type { ClusterEndpoint } from './http.js';

export interface TestGateway {
  running: RunningGateway;
  url: string;
  dir: string;
  config: Config;
  servingCA: CertKeyPem;
  clientCA: CertKeyPem;
  /** A kubeconfig for user in groups, issued by the gateway's client CA (at path, or in the gateway's dir). */
  kubeconfigFor(user: string, groups: string[], path?: string): Promise<string>;
  /** An endpoint for raw calls as user in groups. */
  endpointFor(user: string, groups: string[]): Promise<ClusterEndpoint>;
  close(): Promise<void>;
}

/** The allowlist the federation tests expose: namespaces, ConfigMaps, Deployments, CloneSets (pods and events always). */
export const FEDERATED_EXPOSED = `    - group: ""
      resources: [configmaps, namespaces]
    - group: apps
      resources: [deployments]
    - group: apps.kruise.io
      resources: [clonesets]`;

export interface TestGatewayOptions {
  controlPlaneKubeconfig: string;
  extraYaml?: string;
  exposed?: string;
  /** A fixed port (a restarted gateway keeps its clients' kubeconfigs working). */
  port?: number;
  /** server.requestTimeoutSeconds (5 by default, so timeouts show quickly in tests). */
  requestTimeoutSeconds?: number;
  /** Reuse another test gateway's CAs, so its kubeconfigs stay valid. */
  pki?: { servingCA: CertKeyPem; clientCA: CertKeyPem };
  /** server.tls.clientCRLFile (absolute). */
  clientCRLFile?: string;
}

export async function startTestGateway(opts: TestGatewayOptions): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'fleetgate-gw-'));
  const servingCA = opts.pki?.servingCA ?? (await createCA('fleetgate-test-ca'));
  const clientCA = opts.pki?.clientCA ?? (await createCA('fleetgate-test-client-ca'));
  const serving = await issueServingCert(servingCA, ['127.0.0.1', 'localhost']);
  await writeFile(join(dir, 'serving.crt'), serving.certPem);
  await writeFile(join(dir, 'serving.key'), serving.keyPem, { mode: 0o600 });
  await writeFile(join(dir, 'client-ca.crt'), clientCA.certPem);
  const yaml = `
server:
  address: 127.0.0.1
  port: ${opts.port ?? 0}
  tls:
    certFile: serving.crt
    keyFile: serving.key
    clientCAFile: client-ca.crt${opts.clientCRLFile ? `\n    clientCRLFile: ${opts.clientCRLFile}` : ''}
  requestTimeoutSeconds: ${opts.requestTimeoutSeconds ?? 5}
  shutdownGracePeriodSeconds: 2
controlPlane:
  kubeconfig: ${opts.controlPlaneKubeconfig}
  timeoutSeconds: 5
resources:
  exposed:
${opts.exposed ?? `    - group: ""
      resources: [configmaps, namespaces]
    - group: apps
      resources: [deployments]`}
logging:
  level: silent
${opts.extraYaml ?? ''}
`;
  const configPath = join(dir, 'fleetgate.yaml');
  await writeFile(configPath, yaml);
  const config = parseConfig(yaml, configPath);
  const running = await startGateway(config, pino({ level: process.env.FLEETGATE_TEST_LOG ?? 'silent' }));
  const certs = new Map<string, CertKeyPem>();
  const certFor = async (user: string, groups: string[]) => {
    const key = `${user}|${groups.join(',')}`;
    let c = certs.get(key);
    if (!c) certs.set(key, (c = await issueClientCert(clientCA, user, groups)));
    return c;
  };
  return {
    running,
    url: running.url,
    dir,
    config,
    servingCA,
    clientCA,
    async kubeconfigFor(user, groups, path) {
      const c = await certFor(user, groups);
      const p = path ?? join(dir, `${user}-${groups.join('_') || 'none'}.kubeconfig`);
      await writeFile(p, buildKubeconfig({ name: 'fleetgate', server: running.url, caPem: servingCA.certPem, user, clientCertPem: c.certPem, clientKeyPem: c.keyPem }), { mode: 0o600 });
      return p;
    },
    async endpointFor(user, groups) {
      const c = await certFor(user, groups);
      return { url: running.url, caPem: servingCA.certPem, certPem: c.certPem, keyPem: c.keyPem };
    },
    async close() {
      await running.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
