// Realistic state for real clusters (and, through podFixtures/eventFixtures, for the in-memory sim): pods in
// every state kubectl prints differently, the events about them, and on the control plane the Karmada Cluster
// and OpenKruise CloneSet CRDs with objects. There is no scheduler or kubelet, so pods are created with
// spec.nodeName already set and their status is written through the status subresource, as a kubelet would.

import { createHash } from 'node:crypto';
import { cloneSetCRD, karmadaClusterCRD } from '../sim/crds.js';
import { call, type ClusterEndpoint, type RawResponse } from '../support/http.js';

/** What seeding needs of a cluster: its admin endpoint and identity (RealCluster satisfies it). */
export interface SeedTarget {
  name: string;
  url: string;
  caPem: string;
  endpoint: ClusterEndpoint;
  gatewayToken?: string;
}

export type PodRole =
  | 'running'
  | 'unschedulable'
  | 'container-creating'
  | 'crashloop'
  | 'completed'
  | 'init'
  | 'terminating'
  | 'multi-container';

export interface PodFixture {
  /** The create body (spec.nodeName already set for scheduled pods). */
  pod: any;
  /** The status to write through pods/status after the create. */
  status: any;
  role: PodRole;
  /** The pod carries a finalizer and is DELETEd after its status is written, so it stays Terminating. */
  terminating?: boolean;
  /** What `kubectl get pods` prints for it (READY, STATUS, RESTARTS without the "(3m ago)" part). */
  expect: { ready: string; status: string; restarts: string };
}

export interface FixtureOptions {
  /** Prefix for pod names (several seedings in one namespace). */
  prefix?: string;
  /** The moment the fixtures pretend it is; times in statuses and events are relative to it. */
  now?: Date;
  /** Two node names the scheduled pods are spread over. */
  nodes?: [string, string];
}

const DEFAULT_NODES: [string, string] = ['node-1', 'node-2'];

function hex(seed: string, len: number): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, len);
}

/** metav1.Time: RFC 3339 with whole seconds. */
function ago(now: Date, seconds: number): string {
  return new Date(Math.floor(now.getTime() / 1000) * 1000 - seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microAgo(now: Date, seconds: number): string {
  return new Date(now.getTime() - seconds * 1000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const IMAGES: Record<string, string> = {
  web: 'docker.io/library/nginx:1.27.3',
  api: 'registry.example.com/shop/api:2.14.1',
  worker: 'registry.example.com/shop/worker:2.14.1',
  migrate: 'registry.example.com/shop/migrate:2.14.1',
  'log-shipper': 'docker.io/fluent/fluent-bit:3.2.4',
  'init-config': 'docker.io/library/busybox:1.37',
  'wait-db': 'docker.io/library/busybox:1.37',
};

function imageOf(container: string): string {
  return IMAGES[container] ?? 'docker.io/library/busybox:1.37';
}

function container(name: string, port?: number, extra: Record<string, unknown> = {}): any {
  return {
    name,
    image: imageOf(name),
    ...(port ? { ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }] } : {}),
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
    ...extra,
  };
}

function containerIds(pod: string, c: string): { containerID: string; imageID: string } {
  const image = imageOf(c);
  return {
    containerID: `containerd://${hex(`${pod}/${c}`, 64)}`,
    imageID: `${image.split(':')[0]}@sha256:${hex(image, 64)}`,
  };
}

function runningStatus(pod: string, c: string, startedAt: string, ready: boolean, restartCount = 0): any {
  return { name: c, image: imageOf(c), ...containerIds(pod, c), ready, restartCount, started: true, state: { running: { startedAt } } };
}

function cond(type: string, status: 'True' | 'False', at: string, reason?: string, message?: string): any {
  return { type, status, lastProbeTime: null, lastTransitionTime: at, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}

function podIPs(i: number, node: number): { podIP: string; podIPs: any[]; hostIP: string; hostIPs: any[] } {
  const podIP = `10.244.${node + 1}.${10 + i}`;
  const hostIP = `172.18.0.${node + 2}`;
  return { podIP, podIPs: [{ ip: podIP }], hostIP, hostIPs: [{ ip: hostIP }] };
}

function podMeta(namespace: string, name: string, labels: Record<string, string>, extra: Record<string, unknown> = {}): any {
  return { name, namespace, labels, ...extra };
}

/**
 * Pods in every state `kubectl get pods` prints differently: Running 1/1, Pending unscheduled, ContainerCreating,
 * CrashLoopBackOff with 5 restarts, Completed, Init:1/2, Terminating and a 1/2-ready two-container pod.
 */
export function podFixtures(namespace: string, opts: FixtureOptions = {}): PodFixture[] {
  const p = opts.prefix ?? '';
  const now = opts.now ?? new Date();
  const nodes = opts.nodes ?? DEFAULT_NODES;
  const fixtures: PodFixture[] = [];

  const running = (name: string, app: string, tier: string, i: number, node: number, role: PodRole, extraMeta: Record<string, unknown> = {}): PodFixture => {
    const port = app === 'web' ? 80 : 8080;
    return {
      role,
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app, tier }, extraMeta),
        spec: { nodeName: nodes[node], containers: [container(app, port)] },
      },
      status: {
        phase: 'Running',
        conditions: [
          cond('PodReadyToStartContainers', 'True', ago(now, 590)),
          cond('Initialized', 'True', ago(now, 595)),
          cond('Ready', 'True', ago(now, 580)),
          cond('ContainersReady', 'True', ago(now, 580)),
          cond('PodScheduled', 'True', ago(now, 598)),
        ],
        ...podIPs(i, node),
        startTime: ago(now, 597),
        containerStatuses: [runningStatus(name, app, ago(now, 585), true)],
        qosClass: 'Burstable',
      },
      expect: { ready: '1/1', status: 'Running', restarts: '0' },
    };
  };

  fixtures.push(running(`${p}web-1`, 'web', 'frontend', 1, 0, 'running'));
  fixtures.push(running(`${p}web-2`, 'web', 'frontend', 2, 1, 'running'));

  {
    const name = `${p}api-crashloop`;
    fixtures.push({
      role: 'crashloop',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'api', tier: 'backend' }),
        spec: { nodeName: nodes[0], containers: [container('api', 8080)] },
      },
      status: {
        phase: 'Running',
        conditions: [
          cond('PodReadyToStartContainers', 'True', ago(now, 590)),
          cond('Initialized', 'True', ago(now, 595)),
          cond('Ready', 'False', ago(now, 180), 'ContainersNotReady', 'containers with unready status: [api]'),
          cond('ContainersReady', 'False', ago(now, 180), 'ContainersNotReady', 'containers with unready status: [api]'),
          cond('PodScheduled', 'True', ago(now, 598)),
        ],
        ...podIPs(3, 0),
        startTime: ago(now, 597),
        containerStatuses: [
          {
            name: 'api',
            image: imageOf('api'),
            ...containerIds(name, 'api'),
            ready: false,
            restartCount: 5,
            started: false,
            state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off 2m40s restarting failed container=api pod=${name}_${namespace}` } },
            lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: ago(now, 190), finishedAt: ago(now, 180), ...containerIds(`${name}#5`, 'api') } },
          },
        ],
        qosClass: 'Burstable',
      },
      expect: { ready: '0/1', status: 'CrashLoopBackOff', restarts: '5' },
    });
  }

  {
    const name = `${p}api-multi`;
    fixtures.push({
      role: 'multi-container',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'api', tier: 'backend' }),
        spec: { nodeName: nodes[1], containers: [container('api', 8080), container('log-shipper', 2020)] },
      },
      status: {
        phase: 'Running',
        conditions: [
          cond('PodReadyToStartContainers', 'True', ago(now, 590)),
          cond('Initialized', 'True', ago(now, 595)),
          cond('Ready', 'False', ago(now, 560), 'ContainersNotReady', 'containers with unready status: [log-shipper]'),
          cond('ContainersReady', 'False', ago(now, 560), 'ContainersNotReady', 'containers with unready status: [log-shipper]'),
          cond('PodScheduled', 'True', ago(now, 598)),
        ],
        ...podIPs(4, 1),
        startTime: ago(now, 597),
        containerStatuses: [runningStatus(name, 'api', ago(now, 585), true), runningStatus(name, 'log-shipper', ago(now, 584), false)],
        qosClass: 'Burstable',
      },
      expect: { ready: '1/2', status: 'Running', restarts: '0' },
    });
  }

  {
    const name = `${p}worker-unschedulable`;
    fixtures.push({
      role: 'unschedulable',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'worker', tier: 'batch' }),
        spec: { containers: [container('worker', undefined, { resources: { requests: { cpu: '64', memory: '1Gi' } } })] },
      },
      status: {
        phase: 'Pending',
        conditions: [
          cond(
            'PodScheduled',
            'False',
            ago(now, 598),
            'Unschedulable',
            '0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.',
          ),
        ],
        qosClass: 'Burstable',
      },
      expect: { ready: '0/1', status: 'Pending', restarts: '0' },
    });
  }

  {
    const name = `${p}worker-creating`;
    fixtures.push({
      role: 'container-creating',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'worker', tier: 'batch' }),
        spec: { nodeName: nodes[1], containers: [container('worker')] },
      },
      status: {
        phase: 'Pending',
        conditions: [
          cond('PodReadyToStartContainers', 'False', ago(now, 30)),
          cond('Initialized', 'True', ago(now, 30)),
          cond('Ready', 'False', ago(now, 30), 'ContainersNotReady', 'containers with unready status: [worker]'),
          cond('ContainersReady', 'False', ago(now, 30), 'ContainersNotReady', 'containers with unready status: [worker]'),
          cond('PodScheduled', 'True', ago(now, 30)),
        ],
        hostIP: '172.18.0.3',
        hostIPs: [{ ip: '172.18.0.3' }],
        startTime: ago(now, 30),
        containerStatuses: [
          { name: 'worker', image: imageOf('worker'), imageID: '', ready: false, restartCount: 0, started: false, state: { waiting: { reason: 'ContainerCreating' } } },
        ],
        qosClass: 'Burstable',
      },
      expect: { ready: '0/1', status: 'ContainerCreating', restarts: '0' },
    });
  }

  {
    const name = `${p}migrate-completed`;
    fixtures.push({
      role: 'completed',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'migrate', tier: 'batch', 'batch.kubernetes.io/job-name': `${p}migrate` }),
        spec: { nodeName: nodes[0], restartPolicy: 'Never', containers: [container('migrate')] },
      },
      status: {
        phase: 'Succeeded',
        conditions: [
          cond('PodReadyToStartContainers', 'False', ago(now, 500)),
          cond('Initialized', 'True', ago(now, 595)),
          cond('Ready', 'False', ago(now, 500), 'PodCompleted'),
          cond('ContainersReady', 'False', ago(now, 500), 'PodCompleted'),
          cond('PodScheduled', 'True', ago(now, 598)),
        ],
        ...podIPs(5, 0),
        startTime: ago(now, 597),
        containerStatuses: [
          {
            name: 'migrate',
            image: imageOf('migrate'),
            ...containerIds(name, 'migrate'),
            ready: false,
            restartCount: 0,
            started: false,
            state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: ago(now, 590), finishedAt: ago(now, 500), ...containerIds(name, 'migrate') } },
          },
        ],
        qosClass: 'Burstable',
      },
      expect: { ready: '0/1', status: 'Completed', restarts: '0' },
    });
  }

  {
    const name = `${p}web-init`;
    fixtures.push({
      role: 'init',
      pod: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: podMeta(namespace, name, { app: 'web', tier: 'frontend' }),
        spec: {
          nodeName: nodes[1],
          initContainers: [container('init-config'), container('wait-db')],
          containers: [container('web', 80)],
        },
      },
      status: {
        phase: 'Pending',
        conditions: [
          cond('PodReadyToStartContainers', 'True', ago(now, 120)),
          cond('Initialized', 'False', ago(now, 120), 'ContainersNotInitialized', 'containers with incomplete status: [wait-db]'),
          cond('Ready', 'False', ago(now, 120), 'ContainersNotReady', 'containers with unready status: [web]'),
          cond('ContainersReady', 'False', ago(now, 120), 'ContainersNotReady', 'containers with unready status: [web]'),
          cond('PodScheduled', 'True', ago(now, 121)),
        ],
        ...podIPs(6, 1),
        startTime: ago(now, 120),
        initContainerStatuses: [
          {
            name: 'init-config',
            image: imageOf('init-config'),
            ...containerIds(name, 'init-config'),
            ready: true,
            restartCount: 0,
            started: false,
            state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: ago(now, 118), finishedAt: ago(now, 117), ...containerIds(name, 'init-config') } },
          },
          runningStatus(name, 'wait-db', ago(now, 116), false),
        ],
        containerStatuses: [
          { name: 'web', image: imageOf('web'), imageID: '', ready: false, restartCount: 0, started: false, state: { waiting: { reason: 'PodInitializing' } } },
        ],
        qosClass: 'Burstable',
      },
      expect: { ready: '0/1', status: 'Init:1/2', restarts: '0' },
    });
  }

  {
    const f = running(`${p}web-terminating`, 'web', 'frontend', 7, 0, 'terminating', { finalizers: ['fleetgate.test/hold'] });
    f.terminating = true;
    f.expect = { ready: '1/1', status: 'Terminating', restarts: '0' };
    fixtures.push(f);
  }

  return fixtures;
}

/**
 * core/v1 Events about the named pods, as the scheduler and kubelet write them. Pods from podFixtures (same
 * namespace and options) get events matching their state: FailedScheduling, BackOff (count > 1), a readiness
 * probe event with a series, Killing; any other name gets Scheduled/Pulled/Created/Started.
 * involvedObject.uid is left out: seedMember fills it from the created pod.
 */
export function eventFixtures(namespace: string, pods: string[], opts: FixtureOptions = {}): any[] {
  const now = opts.now ?? new Date();
  const nodes = opts.nodes ?? DEFAULT_NODES;
  const byName = new Map(podFixtures(namespace, opts).map((f) => [f.pod.metadata.name as string, f]));
  const events: any[] = [];

  for (const pod of pods) {
    const f = byName.get(pod);
    const role: PodRole = f?.role ?? 'running';
    const node: string = f?.pod.spec.nodeName ?? nodes[0];
    const mainContainer: string = f?.pod.spec.containers[0].name ?? 'app';
    const image = imageOf(mainContainer);
    const involved = (fieldPath?: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace, name: pod, ...(fieldPath ? { fieldPath } : {}) });
    const legacy = (
      reason: string,
      type: 'Normal' | 'Warning',
      message: string,
      component: string,
      firstAgo: number,
      lastAgo: number,
      count: number,
      fieldPath?: string,
    ) => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${pod}.${hex(`${pod}/${reason}/${firstAgo}`, 16)}`, namespace },
      involvedObject: involved(fieldPath),
      reason,
      message,
      type,
      source: component === 'kubelet' ? { component, host: node } : { component },
      firstTimestamp: ago(now, firstAgo),
      lastTimestamp: ago(now, lastAgo),
      count,
      reportingComponent: component,
      reportingInstance: component === 'kubelet' ? node : '',
    });
    const cpath = `spec.containers{${mainContainer}}`;

    if (role === 'unschedulable') {
      events.push(
        legacy('FailedScheduling', 'Warning', f?.status.conditions[0].message ?? '0/2 nodes are available.', 'default-scheduler', 598, 60, 3),
      );
      continue;
    }
    events.push(legacy('Scheduled', 'Normal', `Successfully assigned ${namespace}/${pod} to ${node}`, 'default-scheduler', 598, 598, 1));
    if (role === 'container-creating') {
      events.push(legacy('Pulling', 'Normal', `Pulling image "${image}"`, 'kubelet', 29, 29, 1, cpath));
      continue;
    }
    events.push(legacy('Pulled', 'Normal', `Container image "${image}" already present on machine`, 'kubelet', 590, role === 'crashloop' ? 190 : 590, role === 'crashloop' ? 6 : 1, cpath));
    events.push(legacy('Created', 'Normal', `Created container: ${mainContainer}`, 'kubelet', 589, role === 'crashloop' ? 190 : 589, role === 'crashloop' ? 6 : 1, cpath));
    events.push(legacy('Started', 'Normal', `Started container ${mainContainer}`, 'kubelet', 588, role === 'crashloop' ? 189 : 588, role === 'crashloop' ? 6 : 1, cpath));
    if (role === 'crashloop') {
      events.push(legacy('BackOff', 'Warning', `Back-off restarting failed container ${mainContainer} in pod ${pod}_${namespace}`, 'kubelet', 540, 20, 23, cpath));
    }
    if (role === 'multi-container') {
      // Written the events.k8s.io way (eventTime + series), as newer components report repeats.
      events.push({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${pod}.${hex(`${pod}/Unhealthy`, 16)}`, namespace },
        involvedObject: involved('spec.containers{log-shipper}'),
        reason: 'Unhealthy',
        message: 'Readiness probe failed: HTTP probe failed with statuscode: 503',
        type: 'Warning',
        source: {},
        eventTime: microAgo(now, 560),
        series: { count: 14, lastObservedTime: microAgo(now, 15) },
        action: 'Probe',
        reportingComponent: 'kubelet',
        reportingInstance: node,
        firstTimestamp: null,
        lastTimestamp: null,
      });
    }
    if (role === 'terminating') {
      events.push(legacy('Killing', 'Normal', `Stopping container ${mainContainer}`, 'kubelet', 5, 5, 1, cpath));
    }
  }
  return events;
}

// ---- writing -------------------------------------------------------------------------------------------------

async function must(ep: ClusterEndpoint, method: string, path: string, body: unknown, ok: number[], what: string): Promise<RawResponse> {
  const r = await call(ep, method, path, body === undefined ? {} : { body });
  if (!ok.includes(r.status)) throw new Error(`seed ${what}: ${method} ${path}: HTTP ${r.status}: ${r.text.slice(0, 2000)}`);
  return r;
}

async function ensureNamespace(ep: ClusterEndpoint, name: string): Promise<void> {
  await must(ep, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, [201, 409], `namespace ${name}`);
}

async function ensureNodes(c: SeedTarget, nodes: [string, string], now: Date): Promise<void> {
  for (const [i, name] of nodes.entries()) {
    const r = await must(
      c.endpoint,
      'POST',
      '/api/v1/nodes',
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' } },
        spec: { podCIDR: `10.244.${i + 1}.0/24`, podCIDRs: [`10.244.${i + 1}.0/24`] },
      },
      [201, 409],
      `node ${name}`,
    );
    if (r.status === 409) continue;
    const node = r.json();
    node.status = {
      capacity: { cpu: '4', memory: '16374584Ki', pods: '110', 'ephemeral-storage': '102625208Ki' },
      allocatable: { cpu: '4', memory: '16272184Ki', pods: '110', 'ephemeral-storage': '94580335255' },
      conditions: [
        { type: 'MemoryPressure', status: 'False', lastHeartbeatTime: ago(now, 10), lastTransitionTime: ago(now, 86_400), reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
        { type: 'DiskPressure', status: 'False', lastHeartbeatTime: ago(now, 10), lastTransitionTime: ago(now, 86_400), reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
        { type: 'PIDPressure', status: 'False', lastHeartbeatTime: ago(now, 10), lastTransitionTime: ago(now, 86_400), reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
        { type: 'Ready', status: 'True', lastHeartbeatTime: ago(now, 10), lastTransitionTime: ago(now, 86_390), reason: 'KubeletReady', message: 'kubelet is posting ready status' },
      ],
      addresses: [
        { type: 'InternalIP', address: `172.18.0.${i + 2}` },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        machineID: hex(`${name}/machine`, 32),
        systemUUID: hex(`${name}/uuid`, 32),
        bootID: hex(`${name}/boot`, 32),
        kernelVersion: '6.1.0-31-amd64',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        containerRuntimeVersion: 'containerd://2.0.2',
        kubeletVersion: 'v1.34.4',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    };
    await must(c.endpoint, 'PUT', `/api/v1/nodes/${name}/status`, node, [200], `node ${name} status`);
  }
}

/** The two nodes seedMember creates on a cluster and spreads the fixture pods over. */
export function memberNodes(clusterName: string): [string, string] {
  return [`${clusterName}-node-1`, `${clusterName}-node-2`];
}

/** Seeds nodes, the fixture pods with their statuses (one left Terminating) and events into one namespace. */
export async function seedMember(c: SeedTarget, opts: { namespace: string; prefix?: string; now?: Date }): Promise<void> {
  const now = opts.now ?? new Date();
  const nodes = memberNodes(c.name);
  const fopts: FixtureOptions = { prefix: opts.prefix, now, nodes };
  const ns = opts.namespace;
  await ensureNamespace(c.endpoint, ns);
  await ensureNodes(c, nodes, now);

  const uids = new Map<string, string>();
  const fixtures = podFixtures(ns, fopts);
  await Promise.all(
    fixtures.map(async (f) => {
      const base = `/api/v1/namespaces/${ns}/pods`;
      const created = (await must(c.endpoint, 'POST', base, f.pod, [201], `pod ${f.pod.metadata.name}`)).json();
      // Keep what the server defaulted (qosClass is computed at create) and lay the kubelet's view over it.
      created.status = { ...created.status, ...f.status };
      const updated = (await must(c.endpoint, 'PUT', `${base}/${created.metadata.name}/status`, created, [200], `pod ${created.metadata.name} status`)).json();
      uids.set(updated.metadata.name, updated.metadata.uid);
      if (f.terminating) {
        await must(c.endpoint, 'DELETE', `${base}/${created.metadata.name}`, undefined, [200, 202], `delete pod ${created.metadata.name}`);
      }
    }),
  );

  const events = eventFixtures(
    ns,
    fixtures.map((f) => f.pod.metadata.name),
    fopts,
  );
  await Promise.all(
    events.map((e) => {
      e.involvedObject.uid = uids.get(e.involvedObject.name);
      return must(c.endpoint, 'POST', `/api/v1/namespaces/${ns}/events`, e, [201], `event ${e.metadata.name}`);
    }),
  );
}

// ---- control plane -------------------------------------------------------------------------------------------

export { cloneSetCRD, karmadaClusterCRD };

async function installCRD(ep: ClusterEndpoint, crd: any, timeoutMs = 30_000): Promise<void> {
  const name = crd.metadata.name;
  await must(ep, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd, [201, 409], `CRD ${name}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await must(ep, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`, undefined, [200], `CRD ${name}`);
    const conds: any[] = r.json().status?.conditions ?? [];
    if (conds.some((c) => c.type === 'Established' && c.status === 'True')) break;
    if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within ${timeoutMs} ms: ${JSON.stringify(conds)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // Established means the API is served, but discovery and the handler can trail it by a moment: wait until a
  // list answers, so callers can use the resource at once.
  const { group, versions, names, scope } = crd.spec;
  const path = `/apis/${group}/${versions[0].name}/${names.plural}`;
  for (;;) {
    const r = await call(ep, 'GET', path);
    if (r.status === 200) return;
    if (Date.now() > deadline) throw new Error(`CRD ${name} (${scope}) established but ${path} answers ${r.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function podTemplate(app: string, image: string, port: number): any {
  return {
    metadata: { labels: { app } },
    spec: { containers: [{ name: app, image, ports: [{ containerPort: port, protocol: 'TCP' }] }] },
  };
}

interface Workload {
  namespace: string;
  name: string;
  replicas: number;
  ready: number;
  image: string;
  port: number;
}

const CLONESETS: Workload[] = [
  { namespace: 'demo', name: 'web', replicas: 3, ready: 3, image: 'docker.io/library/nginx:1.27.3', port: 80 },
  { namespace: 'demo', name: 'api', replicas: 2, ready: 1, image: 'registry.example.com/shop/api:2.14.1', port: 8080 },
  { namespace: 'apps', name: 'worker', replicas: 4, ready: 4, image: 'registry.example.com/shop/worker:2.14.1', port: 9090 },
];

const DEPLOYMENTS: Workload[] = [
  { namespace: 'demo', name: 'frontend', replicas: 2, ready: 2, image: 'docker.io/library/nginx:1.27.3', port: 80 },
  { namespace: 'apps', name: 'cache', replicas: 1, ready: 1, image: 'docker.io/library/redis:7.4', port: 6379 },
];

async function createCloneSet(ep: ClusterEndpoint, w: Workload): Promise<void> {
  const base = `/apis/apps.kruise.io/v1alpha1/namespaces/${w.namespace}/clonesets`;
  const created = (
    await must(
      ep,
      'POST',
      base,
      {
        apiVersion: 'apps.kruise.io/v1alpha1',
        kind: 'CloneSet',
        metadata: { name: w.name, namespace: w.namespace, labels: { app: w.name } },
        spec: {
          replicas: w.replicas,
          selector: { matchLabels: { app: w.name } },
          template: podTemplate(w.name, w.image, w.port),
          updateStrategy: { type: 'ReCreate', partition: 0, maxUnavailable: '20%' },
          revisionHistoryLimit: 10,
        },
      },
      [201],
      `CloneSet ${w.namespace}/${w.name}`,
    )
  ).json();
  const revision = `${w.name}-${hex(w.image, 10)}`;
  created.status = {
    observedGeneration: created.metadata.generation,
    replicas: w.replicas,
    readyReplicas: w.ready,
    availableReplicas: w.ready,
    updatedReplicas: w.replicas,
    updatedReadyReplicas: w.ready,
    expectedUpdatedReplicas: w.replicas,
    updateRevision: revision,
    currentRevision: revision,
    collisionCount: 0,
    labelSelector: `app=${w.name}`,
  };
  await must(ep, 'PUT', `${base}/${w.name}/status`, created, [200], `CloneSet ${w.namespace}/${w.name} status`);
}

async function createDeployment(ep: ClusterEndpoint, w: Workload, now: Date): Promise<void> {
  const base = `/apis/apps/v1/namespaces/${w.namespace}/deployments`;
  const created = (
    await must(
      ep,
      'POST',
      base,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: w.name, namespace: w.namespace, labels: { app: w.name } },
        spec: { replicas: w.replicas, selector: { matchLabels: { app: w.name } }, template: podTemplate(w.name, w.image, w.port) },
      },
      [201],
      `Deployment ${w.namespace}/${w.name}`,
    )
  ).json();
  created.status = {
    observedGeneration: created.metadata.generation,
    replicas: w.replicas,
    updatedReplicas: w.replicas,
    readyReplicas: w.ready,
    availableReplicas: w.ready,
    conditions: [
      { type: 'Available', status: 'True', lastUpdateTime: ago(now, 300), lastTransitionTime: ago(now, 300), reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' },
      {
        type: 'Progressing',
        status: 'True',
        lastUpdateTime: ago(now, 290),
        lastTransitionTime: ago(now, 310),
        reason: 'NewReplicaSetAvailable',
        message: `ReplicaSet "${w.name}-${hex(w.image, 10)}" has successfully progressed.`,
      },
    ],
  };
  await must(ep, 'PUT', `${base}/${w.name}/status`, created, [200], `Deployment ${w.namespace}/${w.name} status`);
}

export const KARMADA_CLUSTER_NAMESPACE = 'karmada-cluster';

/**
 * The control plane as a Karmada host: the Cluster and CloneSet CRDs (Established), one Cluster per member with
 * its Secrets in karmada-cluster (keys token and caBundle: the member's gateway token and serving CA), and a few
 * CloneSets and Deployments with realistic status in namespaces demo and apps.
 */
export async function seedControlPlane(cp: SeedTarget, members: SeedTarget[], opts: { now?: Date } = {}): Promise<void> {
  const now = opts.now ?? new Date();
  const ep = cp.endpoint;
  await Promise.all([installCRD(ep, karmadaClusterCRD), installCRD(ep, cloneSetCRD)]);
  await Promise.all([KARMADA_CLUSTER_NAMESPACE, 'demo', 'apps'].map((n) => ensureNamespace(ep, n)));

  for (const m of members) {
    if (!m.gatewayToken) throw new Error(`seedControlPlane: member ${m.name} has no gateway token`);
    const secret = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: KARMADA_CLUSTER_NAMESPACE },
      type: 'Opaque',
      data: { token: Buffer.from(m.gatewayToken!).toString('base64'), caBundle: Buffer.from(m.caPem).toString('base64') },
    });
    await must(ep, 'POST', `/api/v1/namespaces/${KARMADA_CLUSTER_NAMESPACE}/secrets`, secret(m.name), [201], `secret ${m.name}`);
    await must(ep, 'POST', `/api/v1/namespaces/${KARMADA_CLUSTER_NAMESPACE}/secrets`, secret(`${m.name}-impersonator`), [201], `secret ${m.name}-impersonator`);
    const base = '/apis/cluster.karmada.io/v1alpha1/clusters';
    const created = (
      await must(
        ep,
        'POST',
        base,
        {
          apiVersion: 'cluster.karmada.io/v1alpha1',
          kind: 'Cluster',
          metadata: { name: m.name },
          spec: {
            id: hex(`${m.name}/id`, 8) + '-' + hex(`${m.name}/id2`, 4),
            syncMode: 'Push',
            apiEndpoint: m.url,
            secretRef: { namespace: KARMADA_CLUSTER_NAMESPACE, name: m.name },
            impersonatorSecretRef: { namespace: KARMADA_CLUSTER_NAMESPACE, name: `${m.name}-impersonator` },
            insecureSkipTLSVerification: false,
          },
        },
        [201],
        `Cluster ${m.name}`,
      )
    ).json();
    created.status = {
      kubernetesVersion: 'v1.34.4',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: ago(now, 3600), reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads' }],
    };
    await must(ep, 'PUT', `${base}/${m.name}/status`, created, [200], `Cluster ${m.name} status`);
  }

  await Promise.all([...CLONESETS.map((w) => createCloneSet(ep, w)), ...DEPLOYMENTS.map((w) => createDeployment(ep, w, now))]);
}
