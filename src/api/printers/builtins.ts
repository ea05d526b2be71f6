// Table printers of the simpler built-in kinds, ported from k8s.io/kubernetes pkg/printers/internalversion
// (printers.go, 1.34), plus the pieces every printer shares. The printers read the v1 JSON a server returns; where
// Go reads an internal field that conversion fills from another v1 field, the mapping is noted.

import { translateTimestampSince, humanDuration } from '../duration.js';
import { selectorFromLabelSelector } from '../labels.js';
import { toRfc3339 } from '../meta.js';
import type { Printer, TableColumnDefinition } from './index.js';

export function col(name: string, type: string, description: string, priority = 0, format = ''): TableColumnDefinition {
  return { name, type, format, description, priority };
}

// metav1.ObjectMeta{}.SwaggerDoc()["name"] and ["creationTimestamp"].
export const NAME_DESC =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
export const CREATION_DESC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

/** Go's zero time.Time (0001-01-01T00:00:00Z) in epoch milliseconds. */
export const ZERO_TIME = -62135596800000;

export const NAME_COL = col('Name', 'string', NAME_DESC, 0, 'name');
export const AGE_COL = col('Age', 'string', CREATION_DESC);
const CONTAINERS_COL = col('Containers', 'string', 'Names of each container in the template.', 1);
const IMAGES_COL = col('Images', 'string', 'Images referenced by each container in the template.', 1);

export function nameOf(obj: any): string {
  return obj?.metadata?.name ?? '';
}

/** translateTimestampSince(obj.CreationTimestamp). */
export function age(obj: any, nowMs: number): string {
  return translateTimestampSince(obj?.metadata?.creationTimestamp, nowMs);
}

function count(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  return v && typeof v === 'object' ? Object.keys(v).length : 0;
}

/** layoutContainerCells: names and images, comma-joined. */
export function layoutContainerCells(containers: any[] | undefined): [string, string] {
  if (!containers || containers.length === 0) return ['', ''];
  let names = '';
  let images = '';
  for (let i = 0; i < containers.length; i++) {
    if (i > 0) {
      names += ',';
      images += ',';
    }
    names += containers[i]?.name ?? '';
    images += containers[i]?.image ?? '';
  }
  return [names, images];
}

/** labels.FormatLabels: "k=v" pairs sorted as strings (not by key), "<none>" when empty. */
export function formatLabels(m: Record<string, string> | undefined | null): string {
  if (!m) return '<none>';
  const pairs = Object.keys(m).map((k) => `${k}=${m[k]}`);
  if (pairs.length === 0) return '<none>';
  return pairs.sort().join(',');
}

/** metav1.FormatLabelSelector: "<none>" for nil or empty selectors, "<error>" for invalid ones. */
export function formatLabelSelector(sel: any): string {
  let s: string;
  try {
    s = selectorFromLabelSelector(sel).toString();
  } catch {
    return '<error>';
  }
  return s === '' ? '<none>' : s;
}

/** LabelSelectorAsSelector(...).String() as printDeployment uses it: "" for nil/empty, "<invalid>" on error. */
function selectorString(sel: any): string {
  try {
    return selectorFromLabelSelector(sel).toString();
  } catch {
    return '<invalid>';
  }
}

function podTemplateContainers(template: any): [string, string] {
  return layoutContainerCells(template?.spec?.containers);
}

// ---------------------------------------------------------------------------------------------------------------

const NAMESPACE: Printer = {
  columns: [NAME_COL, col('Status', 'string', 'The status of the namespace'), AGE_COL],
  cells: (o, now) => [nameOf(o), o?.status?.phase ?? '', age(o, now)],
};

const CONFIGMAP: Printer = {
  columns: [
    NAME_COL,
    col('Data', 'string', "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
    AGE_COL,
  ],
  cells: (o, now) => [nameOf(o), count(o?.data) + count(o?.binaryData), age(o, now)],
};

// v1 stringData is merged into the internal Data on conversion (stored objects never carry it).
function secretDataCount(o: any): number {
  const data = o?.data;
  const sd = o?.stringData;
  if (!sd || typeof sd !== 'object') return count(data);
  const keys = new Set([...Object.keys(data ?? {}), ...Object.keys(sd)]);
  return keys.size;
}

const SECRET: Printer = {
  columns: [
    NAME_COL,
    col('Type', 'string', 'Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types'),
    col('Data', 'string', "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE_COL,
  ],
  cells: (o, now) => [nameOf(o), o?.type ?? '', secretDataCount(o), age(o, now)],
};

const SERVICE_ACCOUNT: Printer = {
  columns: [
    NAME_COL,
    col('Secrets', 'string', 'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The "kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret'),
    AGE_COL,
  ],
  cells: (o, now) => [nameOf(o), count(o?.secrets), age(o, now)],
};

// Internal replica counts are plain int32s: a nil v1 pointer converts to 0 (stored objects are defaulted anyway).
const DEPLOYMENT: Printer = {
  columns: [
    NAME_COL,
    col('Ready', 'string', 'Number of the pod with ready state'),
    col('Up-to-date', 'string', 'Total number of non-terminating pods targeted by this deployment that have the desired template spec.'),
    col('Available', 'string', 'Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.'),
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    col('Selector', 'string', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', 1),
  ],
  cells(o, now) {
    const spec = o?.spec;
    const st = o?.status;
    const [names, images] = podTemplateContainers(spec?.template);
    return [
      nameOf(o),
      `${st?.readyReplicas ?? 0}/${spec?.replicas ?? 0}`,
      st?.updatedReplicas ?? 0,
      st?.availableReplicas ?? 0,
      age(o, now),
      names,
      images,
      selectorString(spec?.selector),
    ];
  },
};

const REPLICA_SET: Printer = {
  columns: [
    NAME_COL,
    col('Desired', 'integer', 'Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset'),
    col('Current', 'integer', 'Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset'),
    col('Ready', 'integer', 'The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.'),
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    col('Selector', 'string', 'Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors', 1),
  ],
  cells(o, now) {
    const [names, images] = podTemplateContainers(o?.spec?.template);
    return [
      nameOf(o),
      o?.spec?.replicas ?? 0,
      o?.status?.replicas ?? 0,
      o?.status?.readyReplicas ?? 0,
      age(o, now),
      names,
      images,
      formatLabelSelector(o?.spec?.selector),
    ];
  },
};

const STATEFUL_SET: Printer = {
  columns: [NAME_COL, col('Ready', 'string', 'Number of the pod with ready state'), AGE_COL, CONTAINERS_COL, IMAGES_COL],
  cells(o, now) {
    const [names, images] = podTemplateContainers(o?.spec?.template);
    return [nameOf(o), `${o?.status?.readyReplicas ?? 0}/${o?.spec?.replicas ?? 0}`, age(o, now), names, images];
  },
};

const DAEMON_SET: Printer = {
  columns: [
    NAME_COL,
    col('Desired', 'integer', 'The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/'),
    col('Current', 'integer', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/'),
    col('Ready', 'integer', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.'),
    col('Up-to-date', 'integer', 'The total number of nodes that are running updated daemon pod'),
    col('Available', 'integer', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)'),
    col('Node Selector', 'string', "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    col('Selector', 'string', 'A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors', 1),
  ],
  cells(o, now) {
    const st = o?.status;
    const [names, images] = podTemplateContainers(o?.spec?.template);
    return [
      nameOf(o),
      st?.desiredNumberScheduled ?? 0,
      st?.currentNumberScheduled ?? 0,
      st?.numberReady ?? 0,
      st?.updatedNumberScheduled ?? 0,
      st?.numberAvailable ?? 0,
      formatLabels(o?.spec?.template?.spec?.nodeSelector),
      age(o, now),
      names,
      images,
      formatLabelSelector(o?.spec?.selector),
    ];
  },
};

const JOB_SELECTOR_DESC =
  'A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors';

/** hasJobCondition: the first condition of the type decides. */
function hasJobCondition(conditions: any[] | undefined, type: string): boolean {
  for (const c of conditions ?? []) if (c?.type === type) return c.status === 'True';
  return false;
}

function jobStatus(o: any): string {
  const conds = o?.status?.conditions;
  if (hasJobCondition(conds, 'Complete')) return 'Complete';
  if (hasJobCondition(conds, 'Failed')) return 'Failed';
  if (o?.metadata?.deletionTimestamp) return 'Terminating';
  if (hasJobCondition(conds, 'Suspended')) return 'Suspended';
  if (hasJobCondition(conds, 'FailureTarget')) return 'FailureTarget';
  return 'Running';
}

function jobCompletions(o: any): string {
  const succeeded = o?.status?.succeeded ?? 0;
  const completions = o?.spec?.completions;
  if (completions !== undefined && completions !== null) return `${succeeded}/${completions}`;
  const parallelism = o?.spec?.parallelism ?? 0;
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

function jobDuration(o: any, now: number): string {
  const start = o?.status?.startTime;
  if (!start) return '';
  const completion = o?.status?.completionTime;
  return humanDuration((completion ? Date.parse(completion) : now) - Date.parse(start));
}

const JOB: Printer = {
  columns: [
    NAME_COL,
    col('Status', 'string', 'Status of the job.'),
    col('Completions', 'string', 'The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.'),
    col('Duration', 'string', 'Time required to complete the job.'),
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    col('Selector', 'string', JOB_SELECTOR_DESC, 1),
  ],
  cells(o, now) {
    const [names, images] = podTemplateContainers(o?.spec?.template);
    return [nameOf(o), jobStatus(o), jobCompletions(o), jobDuration(o, now), age(o, now), names, images,
      formatLabelSelector(o?.spec?.selector)];
  },
};

/** printBoolPtr. */
function boolPtr(v: unknown): string {
  if (v === undefined || v === null) return '<unset>';
  return v ? 'True' : 'False';
}

const CRON_JOB: Printer = {
  columns: [
    NAME_COL,
    col('Schedule', 'string', 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.'),
    col('Timezone', 'string', 'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones'),
    col('Suspend', 'boolean', 'This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.'),
    col('Active', 'integer', 'A list of pointers to currently running jobs.'),
    col('Last Schedule', 'string', 'Information when was the last time the job was successfully scheduled.'),
    AGE_COL,
    CONTAINERS_COL,
    IMAGES_COL,
    col('Selector', 'string', JOB_SELECTOR_DESC, 1),
  ],
  cells(o, now) {
    const spec = o?.spec;
    const jobSpec = spec?.jobTemplate?.spec;
    const [names, images] = podTemplateContainers(jobSpec?.template);
    const last = o?.status?.lastScheduleTime;
    return [
      nameOf(o),
      spec?.schedule ?? '',
      spec?.timeZone ?? '<none>',
      boolPtr(spec?.suspend),
      count(o?.status?.active),
      last ? translateTimestampSince(last, now) : '<none>',
      age(o, now),
      names,
      images,
      formatLabelSelector(jobSpec?.selector),
    ];
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Node

const NODE_ADDRESSES_DESC =
  "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

function nodeStatus(o: any): string {
  // Only NodeReady is shown; a later condition of the same type wins, as in the Go map.
  let ready: string | undefined;
  for (const c of o?.status?.conditions ?? []) if (c?.type === 'Ready') ready = c.status === 'True' ? 'Ready' : 'NotReady';
  const status = ready ?? 'Unknown';
  return o?.spec?.unschedulable ? `${status},SchedulingDisabled` : status;
}

const ROLE_PREFIX = 'node-role.kubernetes.io/';

function nodeRoles(o: any): string {
  const roles = new Set<string>();
  const labels = o?.metadata?.labels ?? {};
  for (const k of Object.keys(labels)) {
    if (k.startsWith(ROLE_PREFIX)) {
      const role = k.slice(ROLE_PREFIX.length);
      if (role.length > 0) roles.add(role);
    } else if (k === 'kubernetes.io/role' && labels[k] !== '') {
      roles.add(labels[k]);
    }
  }
  return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
}

function nodeAddress(o: any, type: string): string {
  for (const a of o?.status?.addresses ?? []) if (a?.type === type) return a.address ?? '';
  return '<none>';
}

const NODE: Printer = {
  columns: [
    NAME_COL,
    col('Status', 'string', 'The status of the node'),
    col('Roles', 'string', 'The roles of the node'),
    AGE_COL,
    col('Version', 'string', 'Kubelet Version reported by the node.'),
    col('Internal-IP', 'string', NODE_ADDRESSES_DESC, 1),
    col('External-IP', 'string', NODE_ADDRESSES_DESC, 1),
    col('OS-Image', 'string', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', 1),
    col('Kernel-Version', 'string', "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
    col('Container-Runtime', 'string', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', 1),
  ],
  cells(o, now) {
    const info = o?.status?.nodeInfo;
    return [
      nameOf(o),
      nodeStatus(o),
      nodeRoles(o),
      age(o, now),
      info?.kubeletVersion ?? '',
      nodeAddress(o, 'InternalIP'),
      nodeAddress(o, 'ExternalIP'),
      info?.osImage || '<unknown>',
      info?.kernelVersion || '<unknown>',
      info?.containerRuntimeVersion || '<unknown>',
    ];
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Service

/** loadBalancerStatusStringer with wide=true (the server always prints wide, so nothing is clipped). */
function loadBalancerIngress(status: any): string {
  const seen = new Set<string>();
  for (const i of status?.loadBalancer?.ingress ?? []) {
    if (i?.ip) seen.add(i.ip);
    else if (i?.hostname) seen.add(i.hostname);
  }
  return [...seen].sort().join(',');
}

function serviceExternalIP(o: any): string {
  const spec = o?.spec;
  const externalIPs: string[] = spec?.externalIPs ?? [];
  switch (spec?.type) {
    case 'ClusterIP':
    case 'NodePort':
      return externalIPs.length > 0 ? externalIPs.join(',') : '<none>';
    case 'LoadBalancer': {
      const lb = loadBalancerIngress(o?.status);
      if (externalIPs.length > 0) return [...(lb ? lb.split(',') : []), ...externalIPs].join(',');
      return lb.length > 0 ? lb : '<pending>';
    }
    case 'ExternalName':
      return spec.externalName ?? '';
  }
  return '<unknown>';
}

function servicePorts(ports: any[] | undefined): string {
  if (!ports || ports.length === 0) return '<none>';
  return ports
    .map((p) => (p?.nodePort > 0 ? `${p.port ?? 0}:${p.nodePort}/${p?.protocol ?? ''}` : `${p?.port ?? 0}/${p?.protocol ?? ''}`))
    .join(',');
}

const SERVICE: Printer = {
  columns: [
    NAME_COL,
    col('Type', 'string', 'type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. "LoadBalancer" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. "ExternalName" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types'),
    col('Cluster-IP', 'string', 'clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are "None", empty string (""), or a valid IP address. Setting this to "None" makes a "headless service" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies'),
    col('External-IP', 'string', 'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.'),
    col('Port(s)', 'string', 'The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies'),
    AGE_COL,
    col('Selector', 'string', 'Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/', 1),
  ],
  cells(o, now) {
    const spec = o?.spec;
    // The internal type has only ClusterIPs; v1 conversion keeps clusterIP and clusterIPs[0] in step.
    const clusterIP = spec?.clusterIPs?.[0] || spec?.clusterIP || '<none>';
    return [nameOf(o), spec?.type ?? '', clusterIP, serviceExternalIP(o), servicePorts(spec?.ports), age(o, now),
      formatLabels(spec?.selector)];
  },
};

// ---------------------------------------------------------------------------------------------------------------

/** k8s.io/apiserver registry/rest defaultTableConvertor: Name and the creation time as RFC 3339 in UTC. */
export const DEFAULT_PRINTER: Printer = {
  columns: [NAME_COL, col('Created At', 'date', CREATION_DESC)],
  cells(o) {
    const ts = o?.metadata?.creationTimestamp;
    const t = ts ? Date.parse(ts) : NaN;
    return [nameOf(o), toRfc3339(new Date(Number.isNaN(t) ? ZERO_TIME : t))];
  },
};

export const BUILTIN_PRINTERS: Record<string, Printer> = {
  '/namespaces': NAMESPACE,
  '/configmaps': CONFIGMAP,
  '/secrets': SECRET,
  '/serviceaccounts': SERVICE_ACCOUNT,
  '/nodes': NODE,
  '/services': SERVICE,
  'apps/deployments': DEPLOYMENT,
  'apps/replicasets': REPLICA_SET,
  'apps/statefulsets': STATEFUL_SET,
  'apps/daemonsets': DAEMON_SET,
  'batch/jobs': JOB,
  'batch/cronjobs': CRON_JOB,
};
