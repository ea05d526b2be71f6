// Realistic pods for scale: the shape a Deployment's pod has on a busy node (owner references, probes, env,
// volumes, conditions, container statuses), about 4 KB of JSON each. Deterministic for a given index.

import type { KubeObject } from '../../src/api/meta.js';

export interface PodSpecOptions {
  namespace: string;
  /** The app label; pods of one app share labels as a ReplicaSet's do. */
  app: string;
  index: number;
  node: string;
  /** Phase mix: most Running, a few Pending / Failed as on a real fleet. */
  phase?: 'Running' | 'Pending' | 'Succeeded' | 'Failed';
}

const HEX = '0123456789abcdef';

function hash(n: number, len: number): string {
  let s = '';
  let x = Math.imul(n, 2654435761 | 0) >>> 0;
  for (let i = 0; i < len; i++) {
    // Math.imul keeps the low bits a plain multiply would lose past 2^53.
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    s += HEX[x & 15];
  }
  return s;
}

export function generatePod(o: PodSpecOptions, createdAt = new Date()): { pod: KubeObject; status: any } {
  const rsHash = hash(o.app.length * 7919 + o.app.charCodeAt(0), 10);
  // The suffix is the index in base 36: unique per index, shaped like a ReplicaSet's random suffix.
  const name = `${o.app}-${rsHash}-${o.index.toString(36).padStart(5, '0')}`;
  const ip = `10.${(o.index >> 16) & 255}.${(o.index >> 8) & 255}.${o.index & 255}`;
  const started = createdAt.toISOString().replace(/\.\d+Z$/, 'Z');
  const labels = { app: o.app, 'pod-template-hash': rsHash, tier: o.index % 3 === 0 ? 'frontend' : 'backend', release: 'stable' };
  // The app's container carries env and probes; the sidecar (a log shipper, say) only its image, resources and
  // mounts, as most do. Together with the sim's metadata a pod comes to about 4 KB as a list serves it.
  const image = (cname: string) => `registry.example.com/${o.app}/${cname}:1.${o.index % 7}.${o.index % 13}`;
  // A function, so that the two containers do not share one object a caller might edit.
  const serviceAccountMount = () => ({ name: 'kube-api-access', readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' });
  // What kube-apiserver defaults on every container, last in its order.
  const defaulted = { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent' };
  const container = (cname: string, port: number) => ({
    name: cname,
    image: image(cname),
    ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
    env: [
      { name: 'APP_NAME', value: o.app },
      { name: 'LOG_LEVEL', value: 'info' },
      { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    ],
    resources: { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
    livenessProbe: { httpGet: { path: '/healthz', port, scheme: 'HTTP' }, initialDelaySeconds: 10, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
    readinessProbe: { httpGet: { path: '/ready', port, scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 5, successThreshold: 1, failureThreshold: 3 },
    volumeMounts: [{ name: 'config', mountPath: '/etc/app' }, serviceAccountMount()],
    ...defaulted,
  });
  const sidecar = (cname: string) => ({
    name: cname,
    image: image(cname),
    resources: { limits: { memory: '64Mi' }, requests: { cpu: '10m', memory: '32Mi' } },
    volumeMounts: [serviceAccountMount()],
    ...defaulted,
  });
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace,
      creationTimestamp: started,
      labels,
      annotations: { 'kubectl.kubernetes.io/default-container': 'app', 'prometheus.io/scrape': 'true' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${o.app}-${rsHash}`, uid: `${hash(o.app.length, 8)}-${hash(1, 4)}-${hash(2, 4)}-${hash(3, 4)}-${hash(4, 12)}`, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      containers: [container('app', 8080), sidecar('sidecar')],
      volumes: [
        { name: 'config', configMap: { name: `${o.app}-config`, defaultMode: 420 } },
        { name: 'kube-api-access', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }, { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } }] } },
      ],
      nodeName: o.node,
      serviceAccountName: 'default',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    },
  };
  const phase = o.phase ?? 'Running';
  const running = phase === 'Running';
  const cond = (type: string, status: boolean) => ({ type, status: status ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: started });
  const cstatus = (cname: string) => ({
    name: cname,
    state: running ? { running: { startedAt: started } } : phase === 'Pending' ? { waiting: { reason: 'ContainerCreating' } } : { terminated: { exitCode: phase === 'Succeeded' ? 0 : 1, reason: phase === 'Succeeded' ? 'Completed' : 'Error', startedAt: started, finishedAt: started } },
    lastState: {},
    ready: running,
    restartCount: running && o.index % 11 === 0 ? 1 : 0,
    image: image(cname),
    imageID: `registry.example.com/${o.app}/${cname}@sha256:${hash(o.index + cname.length, 64)}`,
    containerID: running ? `containerd://${hash(o.index * 31 + cname.length, 64)}` : undefined,
    started: running,
  });
  const status = {
    phase,
    conditions: [cond('PodReadyToStartContainers', phase !== 'Pending'), cond('Initialized', true), cond('Ready', running), cond('ContainersReady', running), cond('PodScheduled', true)],
    hostIP: `192.168.${(o.index >> 8) & 255}.${o.index & 255}`,
    hostIPs: [{ ip: `192.168.${(o.index >> 8) & 255}.${o.index & 255}` }],
    podIP: phase === 'Pending' ? undefined : ip,
    podIPs: phase === 'Pending' ? undefined : [{ ip }],
    startTime: started,
    containerStatuses: [cstatus('app'), cstatus('sidecar')],
    qosClass: 'Burstable',
  };
  return { pod, status: JSON.parse(JSON.stringify(status)) };
}
