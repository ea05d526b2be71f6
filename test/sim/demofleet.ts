// The demo's federation: a simulated control plane and three member clusters, with what a Karmada-managed fleet
// has: the Cluster and CloneSet CRDs, Cluster objects and their secrets, namespace demo with Deployments (web is
// deletion-protected), a CloneSet and ConfigMaps, RBAC that lets group dev edit namespace demo only, and the
// controllers that run the workloads' pods in the members.

import type { KubeObject } from '../../src/api/meta.js';
import { objectOf } from '../../src/cache/store.js';
import { cloneSetCRD, karmadaClusterCRD } from './crds.js';
import { startSimFleet, type SimFleet } from './fleet.js';
import { startPropagation, type Propagation } from './propagation.js';

export const DEMO_MEMBERS = ['member-a', 'member-b', 'member-c'];
export const DELETION_PROTECTION_LABEL = 'fleetgate.io/deletion-protection';

export interface DemoFleet {
  fleet: SimFleet;
  propagation: Propagation;
  close(): Promise<void>;
}

export async function startDemoFleet(dir: string): Promise<DemoFleet> {
  const fleet = await startSimFleet({
    clusters: ['control-plane', ...DEMO_MEMBERS],
    nodesPerCluster: 3,
    dir,
    // Pods being deleted leave after a moment, as kubelets would let them.
    cluster: { kubeletDeleteAfterMs: 2000 },
  });
  try {
    seedControlPlane(fleet);
  } catch (e) {
    await fleet.close();
    throw e;
  }
  const cp = fleet.member('control-plane').cluster;
  const propagation = startPropagation(
    cp,
    DEMO_MEMBERS.map((m) => fleet.member(m).cluster),
  );
  await propagation.idle();
  return {
    fleet,
    propagation,
    async close() {
      propagation.stop();
      await fleet.close();
    },
  };
}

function seedControlPlane(fleet: SimFleet): void {
  const cp = fleet.member('control-plane').cluster;
  const res = (group: string, resource: string) => {
    const r = cp.resourceFor(group, resource);
    if (!r) throw new Error(`the simulated control plane has no ${resource}.${group}`);
    return r;
  };
  const create = (group: string, resource: string, namespace: string, obj: object) => cp.create(res(group, resource), namespace, structuredClone(obj));

  create('apiextensions.k8s.io', 'customresourcedefinitions', '', karmadaClusterCRD);
  create('apiextensions.k8s.io', 'customresourcedefinitions', '', cloneSetCRD);
  for (const ns of ['demo', 'karmada-cluster']) create('', 'namespaces', '', { metadata: { name: ns } });

  // Members as Karmada knows them: an endpoint, and a secret with the token and CA to reach it.
  for (const name of DEMO_MEMBERS) {
    const m = fleet.member(name);
    create('', 'secrets', 'karmada-cluster', {
      metadata: { name, namespace: 'karmada-cluster' },
      type: 'Opaque',
      data: { token: Buffer.from(fleet.adminToken).toString('base64'), caBundle: Buffer.from(fleet.servingCA.certPem).toString('base64') },
    });
    const cluster = create('cluster.karmada.io', 'clusters', '', {
      metadata: { name },
      spec: { syncMode: 'Push', apiEndpoint: m.url, secretRef: { namespace: 'karmada-cluster', name }, impersonatorSecretRef: { namespace: 'karmada-cluster', name } },
    });
    const clusterObj = objectOf(cluster);
    cp.update(res('cluster.karmada.io', 'clusters'), '', name, { ...clusterObj, status: { kubernetesVersion: 'v1.34.4', conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads', lastTransitionTime: clusterObj.metadata.creationTimestamp }] } } as KubeObject, { subresource: 'status' });
  }

  // Group dev edits namespace demo, and nothing else.
  create('rbac.authorization.k8s.io', 'rolebindings', 'demo', {
    metadata: { name: 'dev-edit', namespace: 'demo' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'dev' }],
  });

  const deployment = (name: string, replicas: number, image: string, labels: Record<string, string> = {}) => ({
    metadata: { name, namespace: 'demo', labels: { app: name, ...labels } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image, ports: [{ containerPort: 8080 }], resources: { requests: { cpu: '100m', memory: '128Mi' } } }] },
      },
    },
  });
  create('apps', 'deployments', 'demo', deployment('web', 6, 'nginx:1.27', { [DELETION_PROTECTION_LABEL]: 'Always' }));
  create('apps', 'deployments', 'demo', deployment('api', 3, 'registry.example.com/demo/api:2.4.1'));
  create('apps.kruise.io', 'clonesets', 'demo', {
    metadata: { name: 'worker', namespace: 'demo', labels: { app: 'worker' } },
    spec: {
      replicas: 4,
      selector: { matchLabels: { app: 'worker' } },
      template: { metadata: { labels: { app: 'worker' } }, spec: { containers: [{ name: 'worker', image: 'registry.example.com/demo/worker:1.9.0' }] } },
      updateStrategy: { type: 'InPlaceIfPossible', maxUnavailable: '20%' },
    },
  });
  create('', 'configmaps', 'demo', { metadata: { name: 'web-config', namespace: 'demo' }, data: { 'nginx.conf': 'server { listen 8080; }\n', LOG_LEVEL: 'info' } });
  create('', 'configmaps', 'demo', { metadata: { name: 'feature-flags', namespace: 'demo' }, data: { newCheckout: 'true', darkMode: 'false' } });
}
