// A fleet of simulated clusters in one process, each on its own HTTPS port on 127.0.0.1, sharing one serving CA
// and one client CA, with an admin kubeconfig per cluster. Used by integration tests, `npm run sim`, the demo
// and the benchmarks.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/meta.js';
import type { UserInfo } from '../../src/api/user.js';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { SimCluster, type ClusterOptions } from './cluster.js';
import { generatePod } from './podgen.js';
import { bootstrapRbacObjects } from './rbac.js';
import { startSimServer, type SimServer } from './server.js';
import type { WatchSettings } from '../../src/cache/watch.js';

export interface SimFleetOptions {
  /** Cluster names, e.g. ['member-a', 'member-b']. */
  clusters: string[];
  /** Generated pods per cluster (namespace "load"), for scale. */
  podsPerCluster?: number;
  /** Nodes per cluster, named <cluster>-node-<i>. */
  nodesPerCluster?: number;
  /** Where kubeconfigs and PKI go; a temp dir by default (removed on close). */
  dir?: string;
  cluster?: ClusterOptions;
  watch?: Partial<WatchSettings>;
  /** Fixed ports, in cluster order; 0 or absent picks a free one. */
  ports?: number[];
}

export interface SimMember {
  name: string;
  cluster: SimCluster;
  server: SimServer;
  url: string;
  kubeconfigPath: string;
  /** Stops the member's apiserver (its state stays): clients see connections refused. */
  stop(): Promise<void>;
  /** Starts it again on the same port with the same state; open watches were cut by stop(). */
  start(): Promise<void>;
}

export interface SimFleet {
  dir: string;
  servingCA: CertKeyPem;
  clientCA: CertKeyPem;
  members: SimMember[];
  member(name: string): SimMember;
  /** A kubeconfig for user (CN) in groups (O) against one cluster. */
  kubeconfigFor(cluster: string, user: string, groups: string[], path?: string): Promise<string>;
  /** The bearer token that authenticates as the admin on every cluster. */
  adminToken: string;
  close(): Promise<void>;
}

export async function startSimFleet(opts: SimFleetOptions): Promise<SimFleet> {
  const ownDir = !opts.dir;
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'fleetgate-sim-')));
  await mkdir(dir, { recursive: true });
  const servingCA = await createCA('fleetgate-sim-serving-ca');
  const clientCA = await createCA('fleetgate-sim-client-ca');
  const serving = await issueServingCert(servingCA, ['127.0.0.1', 'localhost']);
  const admin = await issueClientCert(clientCA, 'admin', ['system:masters']);
  const adminToken = `sim-admin-${Math.random().toString(36).slice(2)}`;
  const tokens = new Map<string, UserInfo>([[adminToken, { username: 'admin', uid: 'admin', groups: ['system:masters', 'system:authenticated'] }]]);

  const members: SimMember[] = [];
  try {
    for (const [i, name] of opts.clusters.entries()) {
      const cluster = new SimCluster(name, opts.cluster);
      bootstrap(cluster, name, opts.nodesPerCluster ?? 3);
      if (opts.podsPerCluster) seedPods(cluster, name, opts.podsPerCluster, opts.nodesPerCluster ?? 3);
      const server = await startSimServer({
        cluster,
        tls: { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: clientCA.certPem },
        tokens,
        watch: opts.watch,
        port: opts.ports?.[i],
      });
      const kubeconfigPath = join(dir, `${name}.kubeconfig`);
      await writeFile(kubeconfigPath, buildKubeconfig({ name, server: server.url, caPem: servingCA.certPem, user: 'admin', clientCertPem: admin.certPem, clientKeyPem: admin.keyPem }), { mode: 0o600 });
      const tls = { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: clientCA.certPem };
      let running: SimServer | undefined = server;
      const m: SimMember = {
        name,
        cluster,
        server,
        url: server.url,
        kubeconfigPath,
        async stop() {
          await running?.close();
          running = undefined;
        },
        async start() {
          if (running) return;
          running = await startSimServer({ cluster, tls, tokens, watch: opts.watch, port: server.port });
          m.server = running;
        },
      };
      members.push(m);
    }
  } catch (e) {
    await Promise.all(members.map((m) => m.server.close()));
    throw e;
  }

  const member = (name: string): SimMember => {
    const m = members.find((x) => x.name === name);
    if (!m) throw new Error(`no simulated cluster ${name}`);
    return m;
  };
  return {
    dir,
    servingCA,
    clientCA,
    members,
    adminToken,
    member,
    async kubeconfigFor(cluster, user, groups, path) {
      const m = member(cluster);
      const cert = await issueClientCert(clientCA, user, groups);
      const p = path ?? join(dir, `${cluster}-${user}.kubeconfig`);
      await writeFile(p, buildKubeconfig({ name: cluster, server: m.url, caPem: servingCA.certPem, user, clientCertPem: cert.certPem, clientKeyPem: cert.keyPem }), { mode: 0o600 });
      return p;
    },
    async close() {
      await Promise.all(members.map((m) => m.stop()));
      for (const m of members) m.cluster.close();
      if (ownDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** What a fresh kube-apiserver has: system namespaces, bootstrap RBAC, and (as kubelets would) nodes. */
function bootstrap(cluster: SimCluster, name: string, nodes: number): void {
  const ns = cluster.resourceFor('', 'namespaces')!;
  for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    cluster.load(ns, { metadata: { name: n } } as KubeObject);
  }
  for (const o of bootstrapRbacObjects()) {
    const plural = `${o.kind!.toLowerCase()}s`;
    const r = cluster.resourceFor('rbac.authorization.k8s.io', plural);
    if (r) cluster.load(r, structuredClone(o));
  }
  const nodeRes = cluster.resourceFor('', 'nodes')!;
  for (let i = 1; i <= nodes; i++) {
    const nodeName = `${name}-node-${i}`;
    cluster.load(nodeRes, {
      metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName, 'kubernetes.io/os': 'linux', 'node-role.kubernetes.io/worker': '' } },
      spec: {},
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }], nodeInfo: { kubeletVersion: 'v1.34.4', osImage: 'fleetgate sim', containerRuntimeVersion: 'containerd://2.0.0', architecture: 'amd64', operatingSystem: 'linux' } },
    } as KubeObject);
  }
}

export function seedPods(cluster: SimCluster, name: string, count: number, nodes: number): void {
  const ns = cluster.resourceFor('', 'namespaces')!;
  const pods = cluster.resourceFor('', 'pods')!;
  const apps = ['web', 'api', 'worker', 'cache', 'batch'];
  const namespaces = ['load', 'load-2', 'load-3'];
  for (const n of namespaces) cluster.load(ns, { metadata: { name: n } } as KubeObject);
  const created = new Date(Date.now() - 3600_000);
  for (let i = 0; i < count; i++) {
    const phase = i % 50 === 0 ? 'Pending' : i % 97 === 0 ? 'Failed' : 'Running';
    const { pod, status } = generatePod({ namespace: namespaces[i % namespaces.length], app: apps[i % apps.length], index: i, node: `${name}-node-${(i % nodes) + 1}`, phase }, created);
    (pod as any).status = status;
    cluster.load(pods, pod);
  }
}
