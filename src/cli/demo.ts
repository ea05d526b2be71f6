// `fleetgate demo [--port N] [--dir DIR]`: an in-memory federation (a control plane and members member-a/b/c)
// behind a real gateway on https://127.0.0.1:PORT, with kubeconfigs for a fleet admin and for alice (group dev,
// who may edit namespace demo only). The CA stays in DIR, so `fleetgate certs issue --dir DIR` adds users to the
// running demo. Runs until interrupted.

import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { parseConfig } from '../config/index.js';
import { startGateway } from '../server/server.js';
import { CERT_FILES, certsInit, certsIssue } from './certs.js';
import type { DemoOptions } from './main.js';

const DEFAULT_PORT = 6443;

export async function demo(opts: DemoOptions): Promise<void> {
  const dir = resolve(opts.dir ?? '.fleetgate-demo');
  const port = opts.port ?? DEFAULT_PORT;
  const quiet = { out: () => {}, err: (s: string) => process.stderr.write(s) };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Keep an existing CA: kubeconfigs issued for an earlier run of the demo keep working.
  if (!existsSync(join(dir, CERT_FILES.caCert))) await certsInit('demo', { dir, hosts: ['localhost', '127.0.0.1'], force: false }, quiet);

  // The simulated fleet is test code compiled alongside the gateway; load it only for the demo.
  const { startDemoFleet, DEMO_MEMBERS } = await import('../../test/sim/demofleet.js');
  const fleet = await startDemoFleet(join(dir, 'fleet'));

  const configPath = join(dir, 'fleetgate.yaml');
  const yaml = demoConfig(port, fleet.fleet.member('control-plane').kubeconfigPath);
  await writeFile(configPath, yaml);
  const config = parseConfig(yaml, configPath);
  const log = pino({ level: process.env.FLEETGATE_LOG_LEVEL ?? 'warn' });
  let gateway;
  try {
    gateway = await startGateway(config, log);
  } catch (e) {
    await fleet.close();
    throw e;
  }
  const server = gateway.url;
  const admin = join(dir, 'admin.kubeconfig');
  const alice = join(dir, 'alice.kubeconfig');
  await certsIssue('demo', { dir, user: 'admin', groups: ['system:masters'], server, out: admin, days: 30, force: true }, quiet);
  await certsIssue('demo', { dir, user: 'alice', groups: ['dev'], server, out: alice, days: 30, force: true }, quiet);

  process.stdout.write(
    [
      `fleetgate demo: gateway on ${server}, control plane and members ${DEMO_MEMBERS.join(', ')} simulated in memory.`,
      '',
      'Try:',
      `  export KUBECONFIG=${admin}`,
      '  kubectl get deploy,clonesets -n demo',
      '  kubectl get pods -n demo -o wide',
      '  kubectl scale deploy api -n demo --replicas=6',
      '  kubectl auth whoami',
      `  kubectl --kubeconfig ${alice} get configmaps -n demo`,
      `  kubectl --kubeconfig ${alice} get pods -n kube-system     # forbidden: alice may only use namespace demo`,
      `  fleetgate certs issue --dir ${dir} --user bob --group dev --server ${server} --out ${join(dir, 'bob.kubeconfig')}`,
      '',
      `Audit log: ${join(dir, 'audit.log')}. Deployment web is deletion-protected; scale-downs of more than half are refused.`,
      '',
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  await new Promise<void>((done) => {
    const stop = () => {
      process.stdout.write('stopping the demo\n');
      gateway!
        .close()
        .then(() => fleet.close())
        .finally(done);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function demoConfig(port: number, controlPlaneKubeconfig: string): string {
  return `# Written by fleetgate demo: the gateway's configuration for the in-memory demo fleet.
server:
  address: 127.0.0.1
  port: ${port}
  tls:
    certFile: ${CERT_FILES.servingCert}
    keyFile: ${CERT_FILES.servingKey}
    clientCAFile: ${CERT_FILES.clientCACert}
    # \`fleetgate certs revoke --dir <demo dir>\` writes it; the gateway picks it up without a restart.
    clientCRLFile: ${CERT_FILES.clientCRL}
controlPlane:
  kubeconfig: ${controlPlaneKubeconfig}
resources:
  exposed:
    - group: ""
      resources: [namespaces, configmaps, services, serviceaccounts]
    - group: apps
      resources: [deployments, replicasets]
    - group: apps.kruise.io
      resources: [clonesets]
    - group: cluster.karmada.io
      resources: [clusters]
    - group: rbac.authorization.k8s.io
      resources: [roles, rolebindings]
audit:
  log:
    path: audit.log
logging:
  level: warn
`;
}
