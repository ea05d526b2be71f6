// The simulated control plane's controllers: Deployments and CloneSets on the control plane are propagated to the
// member clusters the way Karmada divides replicas (equal weights: an even split, the remainder to the first
// members), and each member runs the pods its share asks for, with a kubelet's status and events. When replicas
// change, pods appear in or leave the members; the control plane object's status sums what the members run.

import { randomUUID } from 'node:crypto';
import type { KubeObject } from '../../src/api/meta.js';
import { metadataOf, objectOf } from '../../src/cache/store.js';
import type { SimCluster } from './cluster.js';

interface Workload {
  group: string;
  resource: string;
  kind: string;
  apiVersion: string;
}

const WORKLOADS: Workload[] = [
  { group: 'apps', resource: 'deployments', kind: 'Deployment', apiVersion: 'apps/v1' },
  { group: 'apps.kruise.io', resource: 'clonesets', kind: 'CloneSet', apiVersion: 'apps.kruise.io/v1alpha1' },
];

export interface Propagation {
  stop(): void;
  /** Resolves once every queued reconcile has run (tests). */
  idle(): Promise<void>;
}

/** Karmada's divided scheduling with equal weights. */
export function divideReplicas(replicas: number, members: number): number[] {
  const base = Math.floor(replicas / members);
  const extra = replicas % members;
  return Array.from({ length: members }, (_, i) => base + (i < extra ? 1 : 0));
}

export function startPropagation(cp: SimCluster, members: SimCluster[]): Propagation {
  const queue = new Map<string, { w: Workload; namespace: string; name: string }>();
  const unsubscribe: Array<() => void> = [];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let idleWaiters: Array<() => void> = [];

  const schedule = () => {
    if (!timer && !stopped) timer = setTimeout(drain, 10);
  };
  const drain = () => {
    timer = undefined;
    const items = [...queue.values()];
    queue.clear();
    for (const it of items) {
      try {
        reconcile(cp, members, it.w, it.namespace, it.name);
      } catch (e) {
        // A member refusing a write (a namespace being deleted, say) is retried on the next change.
        process.emitWarning(`propagation of ${it.w.kind} ${it.namespace}/${it.name}: ${(e as Error).message}`);
      }
    }
    if (queue.size === 0) {
      for (const w of idleWaiters) w();
      idleWaiters = [];
    }
  };

  const watchWorkload = (w: Workload) => {
    const r = cp.resourceFor(w.group, w.resource);
    if (!r) return false;
    const store = cp.store(r);
    unsubscribe.push(
      store.subscribe((ev) => {
        const o = ev.object;
        queue.set(`${w.resource}/${o.key}`, { w, namespace: o.namespace, name: o.name });
        schedule();
      }),
    );
    for (const o of store.values()) queue.set(`${w.resource}/${o.key}`, { w, namespace: o.namespace, name: o.name });
    schedule();
    return true;
  };

  // Like a ReplicaSet controller: a member pod deleted by hand is replaced.
  for (const m of members) {
    const pods = m.store(m.resourceFor('', 'pods')!);
    unsubscribe.push(
      pods.subscribe((ev) => {
        if (ev.type !== 'DELETED') return;
        const owner = ev.object.labels['fleetgate.io/workload'];
        const w = owner && WORKLOADS.find((x) => owner.startsWith(`${x.resource}.`));
        if (!w) return;
        const name = owner.slice(w.resource.length + 1);
        queue.set(`${w.resource}/${ev.object.namespace}/${name}`, { w, namespace: ev.object.namespace, name });
        schedule();
      }),
    );
  }

  const pending = new Set(WORKLOADS);
  const tryWatch = () => {
    for (const w of [...pending]) if (watchWorkload(w)) pending.delete(w);
  };
  tryWatch();
  // CloneSets exist only once their CRD is installed: look again when CRDs change.
  const crds = cp.resourceFor('apiextensions.k8s.io', 'customresourcedefinitions')!;
  unsubscribe.push(cp.store(crds).subscribe(() => setImmediate(tryWatch)));

  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      for (const u of unsubscribe) u();
    },
    idle() {
      if (queue.size === 0 && !timer) return Promise.resolve();
      return new Promise((r) => idleWaiters.push(r));
    },
  };
}

function reconcile(cp: SimCluster, members: SimCluster[], w: Workload, namespace: string, name: string): void {
  const obj = cp.get(w.group, w.resource, namespace, name) as any;
  const gone = !obj || !!obj.metadata.deletionTimestamp;
  const shares = divideReplicas(gone ? 0 : Number(obj.spec?.replicas ?? 1), members.length);
  let ready = 0;
  members.forEach((m, i) => {
    ready += reconcileMember(m, w, namespace, name, gone ? undefined : obj, gone ? 0 : shares[i]!);
  });
  if (gone) return;
  const status = { ...obj.status };
  const want = { replicas: ready, readyReplicas: ready, availableReplicas: ready, updatedReplicas: ready, observedGeneration: obj.metadata.generation };
  if (w.kind === 'CloneSet') Object.assign(want, { updatedReadyReplicas: ready });
  if (Object.entries(want).every(([k, v]) => status[k] === v)) return;
  const r = cp.resourceFor(w.group, w.resource)!;
  const next = structuredClone(obj);
  next.status = { ...status, ...want };
  cp.update(r, namespace, name, next, { subresource: r.hasStatus ? 'status' : '' });
}

/** Makes member m run `share` pods of the workload; returns how many run. */
function reconcileMember(m: SimCluster, w: Workload, namespace: string, name: string, obj: any, share: number): number {
  const pods = m.resourceFor('', 'pods')!;
  const owned = m.list('', 'pods', namespace).filter((p: any) => p.metadata.labels?.['fleetgate.io/workload'] === `${w.resource}.${name}` && !p.metadata.deletionTimestamp);
  if (share > 0 && !m.get('', 'namespaces', '', namespace)) m.create(m.resourceFor('', 'namespaces')!, '', { metadata: { name: namespace } });
  if (w.kind === 'Deployment') propagateObject(m, w, namespace, name, obj, share);
  for (const p of owned.slice(share)) m.delete(pods, namespace, p.metadata.name!, {});
  for (let i = owned.length; i < share; i++) startPod(m, w, namespace, name, obj);
  return share;
}

/** The member's copy of the workload, with its share of the replicas (what Karmada's execution controller writes). */
function propagateObject(m: SimCluster, w: Workload, namespace: string, name: string, obj: any, share: number): void {
  const r = m.resourceFor(w.group, w.resource);
  if (!r) return;
  const existing = m.get(w.group, w.resource, namespace, name) as any;
  if (!obj || share === 0) {
    if (existing) m.delete(r, namespace, name, {});
    return;
  }
  const status = { replicas: share, readyReplicas: share, availableReplicas: share, updatedReplicas: share, observedGeneration: 1 };
  if (!existing) {
    const spec = { ...structuredClone(obj.spec), replicas: share };
    const labels = { ...(obj.metadata.labels ?? {}), 'propagationpolicy.karmada.io/name': name };
    const created = m.create(r, namespace, { metadata: { name, namespace, labels }, spec });
    m.update(r, namespace, name, { ...objectOf(created), status }, { subresource: 'status' });
    return;
  }
  if (existing.spec?.replicas !== share || JSON.stringify(existing.spec?.template) !== JSON.stringify(obj.spec?.template)) {
    const next = structuredClone(existing);
    next.spec = { ...structuredClone(obj.spec), replicas: share };
    const updated = m.update(r, namespace, name, next);
    const current = objectOf(updated);
    m.update(r, namespace, name, { ...current, status: { ...status, observedGeneration: current.metadata.generation } }, { subresource: 'status' });
  }
}

const SUFFIX = 'bcdfghjklmnpqrstvwxz2456789';

function startPod(m: SimCluster, w: Workload, namespace: string, name: string, obj: any): void {
  const template = obj.spec?.template ?? {};
  const hash = templateHash(JSON.stringify(template.spec ?? {}));
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += SUFFIX[Math.floor(Math.random() * SUFFIX.length)];
  const podName = w.kind === 'Deployment' ? `${name}-${hash}-${suffix}` : `${name}-${suffix}`;
  const nodes = m.list('', 'nodes').map((n) => n.metadata.name!);
  const node = nodes.length ? nodes[Math.floor(Math.random() * nodes.length)]! : `${m.name}-node-1`;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const containers = (template.spec?.containers ?? [{ name: 'app', image: 'nginx:1.27' }]) as any[];
  const ip = `10.${m.name.charCodeAt(m.name.length - 1) % 250}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`;
  const pod: any = {
    metadata: {
      name: podName,
      namespace,
      labels: { ...(template.metadata?.labels ?? {}), ...(w.kind === 'Deployment' ? { 'pod-template-hash': hash } : {}), 'fleetgate.io/workload': `${w.resource}.${name}` },
      ownerReferences: [{ apiVersion: w.kind === 'Deployment' ? 'apps/v1' : w.apiVersion, kind: w.kind === 'Deployment' ? 'ReplicaSet' : w.kind, name: w.kind === 'Deployment' ? `${name}-${hash}` : name, uid: randomUUID(), controller: true, blockOwnerDeletion: true }],
    },
    spec: { ...(template.spec ?? {}), containers, nodeName: node },
    status: {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now })),
      hostIP: `192.168.0.${(node.charCodeAt(node.length - 1) % 200) + 10}`,
      podIP: ip,
      podIPs: [{ ip }],
      startTime: now,
      containerStatuses: containers.map((c) => ({ name: c.name, state: { running: { startedAt: now } }, lastState: {}, ready: true, restartCount: 0, image: c.image, imageID: `${c.image}@sha256:${templateHash(c.image ?? '').repeat(6).slice(0, 64)}`, containerID: `containerd://${randomUUID().replace(/-/g, '')}`, started: true })),
      qosClass: 'BestEffort',
    },
  };
  const stored = m.load(m.resourceFor('', 'pods')!, pod);
  const events = m.resourceFor('', 'events')!;
  const involved = { kind: 'Pod', namespace, name: podName, uid: metadataOf(stored).uid, apiVersion: 'v1', resourceVersion: String(stored.rv) };
  const mk = (reason: string, message: string, component: string, fieldPath?: string) => ({
    metadata: { name: `${podName}.${randomUUID().slice(0, 8)}`, namespace },
    involvedObject: fieldPath ? { ...involved, fieldPath } : involved,
    reason,
    message,
    source: component === 'default-scheduler' ? { component } : { component, host: node },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    type: 'Normal',
    reportingComponent: component,
    reportingInstance: component === 'default-scheduler' ? '' : node,
  });
  m.load(events, mk('Scheduled', `Successfully assigned ${namespace}/${podName} to ${node}`, 'default-scheduler') as KubeObject);
  for (const c of containers) {
    const fp = `spec.containers{${c.name}}`;
    m.load(events, mk('Pulled', `Container image "${c.image}" already present on machine`, 'kubelet', fp) as KubeObject);
    m.load(events, mk('Created', `Created container: ${c.name}`, 'kubelet', fp) as KubeObject);
    m.load(events, mk('Started', `Started container ${c.name}`, 'kubelet', fp) as KubeObject);
  }
}

/** A pod-template-hash-like 10-character name part. */
function templateHash(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  const chars = SUFFIX;
  let out = '';
  let x = h >>> 0;
  for (let i = 0; i < 10; i++) {
    out += chars[x % chars.length];
    x = Math.floor(x / chars.length) + (i * 7919) % 97;
  }
  return out;
}
