// Decoding of the Kubernetes protobuf request bodies the sim must understand. client-go 1.32+ typed clients (so
// kubectl 1.32+ `create <kind>`, `auth can-i`, `auth whoami`, drain's evictions) send built-in objects as
// application/vnd.kubernetes.protobuf; a real apiserver decodes them, and client-go does not retry them as JSON
// after a 415.
// Wire format: the 4-byte magic "k8s\0", then a runtime.Unknown {typeMeta{apiVersion, kind}, raw, ...} whose raw
// bytes are the object's message. Field numbers are those of k8s.io/api's and apimachinery's generated.proto.
//
// The output is the JSON a client would have sent for the same Go object. gogo-protobuf writes every non-pointer
// field, so presence on the wire says nothing about omitempty; each scalar therefore carries the JSON rule of its
// Go field: lower-case codes drop zero values (omitempty), upper-case codes keep whatever is on the wire (pointer
// fields, which are written only when set, and fields without omitempty). Messages on the wire are always emitted,
// as encoding/json emits struct fields. Fields not in the tables are skipped.

/**
 * s/S string, i/I integer (int32/int64, two's complement), b/B bool, y bytes as base64, t metav1.Time (the zero
 * time is left out, as apimachinery 1.34's omitzero does; older clients wrote null), q resource.Quantity, x intstr.IntOrString, F metav1.FieldsV1 (raw JSON),
 * [s] [i] repeated scalars, {s} {y} {q} maps of string/bytes/Quantity, {[s]} map of string lists (authz ExtraValue).
 */
type Code = 's' | 'S' | 'i' | 'I' | 'b' | 'B' | 'y' | 't' | 'q' | 'x' | 'F' | '[s]' | '[i]' | '{s}' | '{y}' | '{q}' | '{[s]}';
/**
 * A field: its JSON name ('' for an embedded Go struct, whose fields are inlined), its type (a code, a message, or
 * [message] when repeated), and 'null' for a pointer, slice or map without omitempty, which JSON writes as null when
 * unset (and protobuf then leaves off the wire).
 */
type Field = readonly [name: string, type: Code | Msg | readonly [Msg], absent?: 'null'];
type Msg = { readonly [field: number]: Field };

// ---- meta/v1, intstr, resource ----
const ownerReference: Msg = { 5: ['apiVersion', 'S'], 1: ['kind', 'S'], 3: ['name', 'S'], 4: ['uid', 'S'], 6: ['controller', 'B'], 7: ['blockOwnerDeletion', 'B'] };
const managedFieldsEntry: Msg = { 1: ['manager', 's'], 2: ['operation', 's'], 3: ['apiVersion', 's'], 4: ['time', 't'], 6: ['fieldsType', 's'], 7: ['fieldsV1', 'F'], 8: ['subresource', 's'] };
const objectMeta: Msg = {
  1: ['name', 's'], 2: ['generateName', 's'], 3: ['namespace', 's'], 4: ['selfLink', 's'], 5: ['uid', 's'], 6: ['resourceVersion', 's'],
  7: ['generation', 'i'], 8: ['creationTimestamp', 't'], 9: ['deletionTimestamp', 't'], 10: ['deletionGracePeriodSeconds', 'I'],
  11: ['labels', '{s}'], 12: ['annotations', '{s}'], 13: ['ownerReferences', [ownerReference]], 14: ['finalizers', '[s]'],
  17: ['managedFields', [managedFieldsEntry]],
};
const labelSelectorRequirement: Msg = { 1: ['key', 'S'], 2: ['operator', 'S'], 3: ['values', '[s]'] };
const labelSelector: Msg = { 1: ['matchLabels', '{s}'], 2: ['matchExpressions', [labelSelectorRequirement]] };
const fieldSelectorRequirement: Msg = { 1: ['key', 'S'], 2: ['operator', 'S'], 3: ['values', '[s]'] };
const preconditions: Msg = { 1: ['uid', 'S'], 2: ['resourceVersion', 'S'] };
const deleteOptions: Msg = {
  1: ['gracePeriodSeconds', 'I'], 2: ['preconditions', preconditions], 3: ['orphanDependents', 'B'], 4: ['propagationPolicy', 'S'],
  5: ['dryRun', '[s]'], 6: ['ignoreStoreReadErrorWithClusterBreakingPotential', 'B'],
};

// ---- core/v1 ----
const localObjectReference: Msg = { 1: ['name', 's'] };
const objectReference: Msg = { 1: ['kind', 's'], 2: ['namespace', 's'], 3: ['name', 's'], 4: ['uid', 's'], 5: ['apiVersion', 's'], 6: ['resourceVersion', 's'], 7: ['fieldPath', 's'] };
const keyToPath: Msg = { 1: ['key', 'S'], 2: ['path', 'S'], 3: ['mode', 'I'] };
const objectFieldSelector: Msg = { 1: ['apiVersion', 's'], 2: ['fieldPath', 'S'] };
const resourceFieldSelector: Msg = { 1: ['containerName', 's'], 2: ['resource', 'S'], 3: ['divisor', 'q'] };
const keySelector: Msg = { 1: ['', localObjectReference], 2: ['key', 'S'], 3: ['optional', 'B'] };
const envVar: Msg = {
  1: ['name', 'S'], 2: ['value', 's'],
  3: ['valueFrom', { 1: ['fieldRef', objectFieldSelector], 2: ['resourceFieldRef', resourceFieldSelector], 3: ['configMapKeyRef', keySelector], 4: ['secretKeyRef', keySelector] }],
};
const envSource: Msg = { 1: ['', localObjectReference], 2: ['optional', 'B'] };
const envFromSource: Msg = { 1: ['prefix', 's'], 2: ['configMapRef', envSource], 3: ['secretRef', envSource] };
const resourceRequirements: Msg = { 1: ['limits', '{q}'], 2: ['requests', '{q}'], 3: ['claims', [{ 1: ['name', 'S'], 2: ['request', 's'] }]] };
const containerPort: Msg = { 1: ['name', 's'], 2: ['hostPort', 'i'], 3: ['containerPort', 'I'], 4: ['protocol', 's'], 5: ['hostIP', 's'] };
const volumeMount: Msg = { 1: ['name', 'S'], 2: ['readOnly', 'b'], 7: ['recursiveReadOnly', 'S'], 3: ['mountPath', 'S'], 4: ['subPath', 's'], 5: ['mountPropagation', 'S'], 6: ['subPathExpr', 's'] };
const execAction: Msg = { 1: ['command', '[s]'] };
const httpGetAction: Msg = { 1: ['path', 's'], 2: ['port', 'x'], 3: ['host', 's'], 4: ['scheme', 's'], 5: ['httpHeaders', [{ 1: ['name', 'S'], 2: ['value', 'S'] }]] };
const tcpSocketAction: Msg = { 1: ['port', 'x'], 2: ['host', 's'] };
const probe: Msg = {
  1: ['', { 1: ['exec', execAction], 2: ['httpGet', httpGetAction], 3: ['tcpSocket', tcpSocketAction], 4: ['grpc', { 1: ['port', 'I'], 2: ['service', 'S', 'null'] }] }],
  2: ['initialDelaySeconds', 'i'], 3: ['timeoutSeconds', 'i'], 4: ['periodSeconds', 'i'], 5: ['successThreshold', 'i'], 6: ['failureThreshold', 'i'],
  7: ['terminationGracePeriodSeconds', 'I'],
};
const lifecycleHandler: Msg = { 1: ['exec', execAction], 2: ['httpGet', httpGetAction], 3: ['tcpSocket', tcpSocketAction], 4: ['sleep', { 1: ['seconds', 'I'] }] };
const seLinuxOptions: Msg = { 1: ['user', 's'], 2: ['role', 's'], 3: ['type', 's'], 4: ['level', 's'] };
const windowsOptions: Msg = { 1: ['gmsaCredentialSpecName', 'S'], 2: ['gmsaCredentialSpec', 'S'], 3: ['runAsUserName', 'S'], 4: ['hostProcess', 'B'] };
const profile: Msg = { 1: ['type', 'S'], 2: ['localhostProfile', 'S'] };
const securityContext: Msg = {
  1: ['capabilities', { 1: ['add', '[s]'], 2: ['drop', '[s]'] }], 2: ['privileged', 'B'], 3: ['seLinuxOptions', seLinuxOptions], 10: ['windowsOptions', windowsOptions],
  4: ['runAsUser', 'I'], 8: ['runAsGroup', 'I'], 5: ['runAsNonRoot', 'B'], 6: ['readOnlyRootFilesystem', 'B'], 7: ['allowPrivilegeEscalation', 'B'],
  9: ['procMount', 'S'], 11: ['seccompProfile', profile], 12: ['appArmorProfile', profile],
};
const container: Msg = {
  1: ['name', 'S'], 2: ['image', 's'], 3: ['command', '[s]'], 4: ['args', '[s]'], 5: ['workingDir', 's'], 6: ['ports', [containerPort]],
  19: ['envFrom', [envFromSource]], 7: ['env', [envVar]], 8: ['resources', resourceRequirements],
  23: ['resizePolicy', [{ 1: ['resourceName', 'S'], 2: ['restartPolicy', 'S'] }]], 24: ['restartPolicy', 'S'],
  9: ['volumeMounts', [volumeMount]], 21: ['volumeDevices', [{ 1: ['name', 'S'], 2: ['devicePath', 'S'] }]],
  10: ['livenessProbe', probe], 11: ['readinessProbe', probe], 22: ['startupProbe', probe],
  12: ['lifecycle', { 1: ['postStart', lifecycleHandler], 2: ['preStop', lifecycleHandler], 3: ['stopSignal', 'S'] }],
  13: ['terminationMessagePath', 's'], 20: ['terminationMessagePolicy', 's'], 14: ['imagePullPolicy', 's'], 15: ['securityContext', securityContext],
  16: ['stdin', 'b'], 17: ['stdinOnce', 'b'], 18: ['tty', 'b'],
};
const downwardAPIVolumeFile: Msg = { 1: ['path', 'S'], 2: ['fieldRef', objectFieldSelector], 3: ['resourceFieldRef', resourceFieldSelector], 4: ['mode', 'I'] };
const volumeSource: Msg = {
  1: ['hostPath', { 1: ['path', 'S'], 2: ['type', 'S'] }],
  2: ['emptyDir', { 1: ['medium', 's'], 2: ['sizeLimit', 'q'] }],
  6: ['secret', { 1: ['secretName', 's'], 2: ['items', [keyToPath]], 3: ['defaultMode', 'I'], 4: ['optional', 'B'] }],
  10: ['persistentVolumeClaim', { 1: ['claimName', 'S'], 2: ['readOnly', 'b'] }],
  16: ['downwardAPI', { 1: ['items', [downwardAPIVolumeFile]], 2: ['defaultMode', 'I'] }],
  19: ['configMap', { 1: ['', localObjectReference], 2: ['items', [keyToPath]], 3: ['defaultMode', 'I'], 4: ['optional', 'B'] }],
  26: ['projected', {
    1: ['sources', [{
      1: ['secret', { 1: ['', localObjectReference], 2: ['items', [keyToPath]], 4: ['optional', 'B'] }],
      2: ['downwardAPI', { 1: ['items', [downwardAPIVolumeFile]] }],
      3: ['configMap', { 1: ['', localObjectReference], 2: ['items', [keyToPath]], 4: ['optional', 'B'] }],
      4: ['serviceAccountToken', { 1: ['audience', 's'], 2: ['expirationSeconds', 'I'], 3: ['path', 'S'] }],
    }], 'null'],
    2: ['defaultMode', 'I'],
  }],
};
const nodeSelectorTerm: Msg = { 1: ['matchExpressions', [labelSelectorRequirement]], 2: ['matchFields', [labelSelectorRequirement]] };
const podAffinityTerm: Msg = {
  1: ['labelSelector', labelSelector], 2: ['namespaces', '[s]'], 3: ['topologyKey', 'S'], 4: ['namespaceSelector', labelSelector],
  5: ['matchLabelKeys', '[s]'], 6: ['mismatchLabelKeys', '[s]'],
};
const podAffinity: Msg = { 1: ['requiredDuringSchedulingIgnoredDuringExecution', [podAffinityTerm]], 2: ['preferredDuringSchedulingIgnoredDuringExecution', [{ 1: ['weight', 'I'], 2: ['podAffinityTerm', podAffinityTerm] }]] };
const affinity: Msg = {
  1: ['nodeAffinity', {
    1: ['requiredDuringSchedulingIgnoredDuringExecution', { 1: ['nodeSelectorTerms', [nodeSelectorTerm], 'null'] }],
    2: ['preferredDuringSchedulingIgnoredDuringExecution', [{ 1: ['weight', 'I'], 2: ['preference', nodeSelectorTerm] }]],
  }],
  2: ['podAffinity', podAffinity], 3: ['podAntiAffinity', podAffinity],
};
const podSecurityContext: Msg = {
  1: ['seLinuxOptions', seLinuxOptions], 8: ['windowsOptions', windowsOptions], 2: ['runAsUser', 'I'], 6: ['runAsGroup', 'I'], 3: ['runAsNonRoot', 'B'],
  4: ['supplementalGroups', '[i]'], 12: ['supplementalGroupsPolicy', 'S'], 5: ['fsGroup', 'I'], 7: ['sysctls', [{ 1: ['name', 'S'], 2: ['value', 'S'] }]],
  9: ['fsGroupChangePolicy', 'S'], 10: ['seccompProfile', profile], 11: ['appArmorProfile', profile], 13: ['seLinuxChangePolicy', 'S'],
};
const podSpec: Msg = {
  1: ['volumes', [{ 1: ['name', 'S'], 2: ['', volumeSource] }]], 20: ['initContainers', [container]], 2: ['containers', [container], 'null'],
  3: ['restartPolicy', 's'], 4: ['terminationGracePeriodSeconds', 'I'], 5: ['activeDeadlineSeconds', 'I'], 6: ['dnsPolicy', 's'],
  7: ['nodeSelector', '{s}'], 8: ['serviceAccountName', 's'], 9: ['serviceAccount', 's'], 21: ['automountServiceAccountToken', 'B'],
  10: ['nodeName', 's'], 11: ['hostNetwork', 'b'], 12: ['hostPID', 'b'], 13: ['hostIPC', 'b'], 27: ['shareProcessNamespace', 'B'],
  14: ['securityContext', podSecurityContext], 15: ['imagePullSecrets', [localObjectReference]], 16: ['hostname', 's'], 17: ['subdomain', 's'],
  18: ['affinity', affinity], 19: ['schedulerName', 's'],
  22: ['tolerations', [{ 1: ['key', 's'], 2: ['operator', 's'], 3: ['value', 's'], 4: ['effect', 's'], 5: ['tolerationSeconds', 'I'] }]],
  23: ['hostAliases', [{ 1: ['ip', 'S'], 2: ['hostnames', '[s]'] }]], 24: ['priorityClassName', 's'], 25: ['priority', 'I'],
  26: ['dnsConfig', { 1: ['nameservers', '[s]'], 2: ['searches', '[s]'], 3: ['options', [{ 1: ['name', 's'], 2: ['value', 'S'] }]] }],
  28: ['readinessGates', [{ 1: ['conditionType', 'S'] }]], 29: ['runtimeClassName', 'S'], 30: ['enableServiceLinks', 'B'], 31: ['preemptionPolicy', 'S'],
  32: ['overhead', '{q}'],
  33: ['topologySpreadConstraints', [{
    1: ['maxSkew', 'I'], 2: ['topologyKey', 'S'], 3: ['whenUnsatisfiable', 'S'], 4: ['labelSelector', labelSelector], 5: ['minDomains', 'I'],
    6: ['nodeAffinityPolicy', 'S'], 7: ['nodeTaintsPolicy', 'S'], 8: ['matchLabelKeys', '[s]'],
  }]],
  35: ['setHostnameAsFQDN', 'B'], 36: ['os', { 1: ['name', 'S'] }], 37: ['hostUsers', 'B'], 38: ['schedulingGates', [{ 1: ['name', 'S'] }]],
  40: ['resources', resourceRequirements], 41: ['hostnameOverride', 'S'],
};
const podTemplateSpec: Msg = { 1: ['metadata', objectMeta], 2: ['spec', podSpec] };
const servicePort: Msg = { 1: ['name', 's'], 2: ['protocol', 's'], 6: ['appProtocol', 'S'], 3: ['port', 'I'], 4: ['targetPort', 'x'], 5: ['nodePort', 'i'] };
const serviceSpec: Msg = {
  1: ['ports', [servicePort]], 2: ['selector', '{s}'], 3: ['clusterIP', 's'], 18: ['clusterIPs', '[s]'], 4: ['type', 's'], 5: ['externalIPs', '[s]'],
  7: ['sessionAffinity', 's'], 8: ['loadBalancerIP', 's'], 9: ['loadBalancerSourceRanges', '[s]'], 10: ['externalName', 's'],
  11: ['externalTrafficPolicy', 's'], 12: ['healthCheckNodePort', 'i'], 13: ['publishNotReadyAddresses', 'b'],
  14: ['sessionAffinityConfig', { 1: ['clientIP', { 1: ['timeoutSeconds', 'I'] }] }], 19: ['ipFamilies', '[s]'], 17: ['ipFamilyPolicy', 'S'],
  20: ['allocateLoadBalancerNodePorts', 'B'], 21: ['loadBalancerClass', 'S'], 22: ['internalTrafficPolicy', 'S'], 23: ['trafficDistribution', 'S'],
};
// Status messages are decoded only as far as a client creating an object fills them: zero values.
const emptyStatus: Msg = {};
const loadBalancerStatus: Msg = { 1: ['loadBalancer', { 1: ['ingress', [{ 1: ['ip', 's'], 2: ['hostname', 's'], 3: ['ipMode', 'S'] }]] }] };

// ---- apps, batch, rbac, policy, autoscaling ----
const deploymentSpec: Msg = {
  1: ['replicas', 'I'], 2: ['selector', labelSelector, 'null'], 3: ['template', podTemplateSpec],
  4: ['strategy', { 1: ['type', 's'], 2: ['rollingUpdate', { 1: ['maxUnavailable', 'x'], 2: ['maxSurge', 'x'] }] }],
  5: ['minReadySeconds', 'i'], 6: ['revisionHistoryLimit', 'I'], 7: ['paused', 'b'], 9: ['progressDeadlineSeconds', 'I'],
};
const jobSpec: Msg = {
  1: ['parallelism', 'I'], 2: ['completions', 'I'], 3: ['activeDeadlineSeconds', 'I'], 7: ['backoffLimit', 'I'], 12: ['backoffLimitPerIndex', 'I'],
  13: ['maxFailedIndexes', 'I'], 4: ['selector', labelSelector], 5: ['manualSelector', 'B'], 6: ['template', podTemplateSpec],
  8: ['ttlSecondsAfterFinished', 'I'], 9: ['completionMode', 'S'], 10: ['suspend', 'B'], 14: ['podReplacementPolicy', 'S'], 15: ['managedBy', 'S'],
};
const cronJobSpec: Msg = {
  1: ['schedule', 'S'], 8: ['timeZone', 'S'], 2: ['startingDeadlineSeconds', 'I'], 3: ['concurrencyPolicy', 's'], 4: ['suspend', 'B'],
  5: ['jobTemplate', { 1: ['metadata', objectMeta], 2: ['spec', jobSpec] }], 6: ['successfulJobsHistoryLimit', 'I'], 7: ['failedJobsHistoryLimit', 'I'],
};
const policyRule: Msg = { 1: ['verbs', '[s]', 'null'], 2: ['apiGroups', '[s]'], 3: ['resources', '[s]'], 4: ['resourceNames', '[s]'], 5: ['nonResourceURLs', '[s]'] };
const roleRef: Msg = { 1: ['apiGroup', 'S'], 2: ['kind', 'S'], 3: ['name', 'S'] };
const subject: Msg = { 1: ['kind', 'S'], 2: ['apiGroup', 's'], 3: ['name', 'S'], 4: ['namespace', 's'] };
const ingressBackend: Msg = {
  4: ['service', { 1: ['name', 'S'], 2: ['port', { 1: ['name', 's'], 2: ['number', 'i'] }] }],
  3: ['resource', { 1: ['apiGroup', 'S', 'null'], 2: ['kind', 'S'], 3: ['name', 'S'] }],
};
const ingressSpec: Msg = {
  4: ['ingressClassName', 'S'], 1: ['defaultBackend', ingressBackend], 2: ['tls', [{ 1: ['hosts', '[s]'], 2: ['secretName', 's'] }]],
  3: ['rules', [{ 1: ['host', 's'], 2: ['', { 1: ['http', { 1: ['paths', [{ 1: ['path', 's'], 3: ['pathType', 'S', 'null'], 2: ['backend', ingressBackend] }], 'null'] }] }] }]],
};

// ---- authentication, authorization ----
const resourceAttributes: Msg = {
  1: ['namespace', 's'], 2: ['verb', 's'], 3: ['group', 's'], 4: ['version', 's'], 5: ['resource', 's'], 6: ['subresource', 's'], 7: ['name', 's'],
  8: ['fieldSelector', { 1: ['rawSelector', 's'], 2: ['requirements', [fieldSelectorRequirement]] }],
  9: ['labelSelector', { 1: ['rawSelector', 's'], 2: ['requirements', [labelSelectorRequirement]] }],
};
const nonResourceAttributes: Msg = { 1: ['path', 's'], 2: ['verb', 's'] };
const ssarSpec: Msg = { 1: ['resourceAttributes', resourceAttributes], 2: ['nonResourceAttributes', nonResourceAttributes] };
const sarSpec: Msg = { ...ssarSpec, 3: ['user', 's'], 4: ['groups', '[s]'], 5: ['extra', '{[s]}'], 6: ['uid', 's'] };

const meta = (fields: Msg): Msg => ({ 1: ['metadata', objectMeta], ...fields });

/** The kinds we decode, by apiVersion and kind as the envelope's TypeMeta names them. */
const SCHEMAS: Record<string, Msg> = {
  'v1/ConfigMap': meta({ 4: ['immutable', 'B'], 2: ['data', '{s}'], 3: ['binaryData', '{y}'] }),
  'v1/Secret': meta({ 5: ['immutable', 'B'], 2: ['data', '{y}'], 4: ['stringData', '{s}'], 3: ['type', 's'] }),
  'v1/Namespace': meta({ 2: ['spec', { 1: ['finalizers', '[s]'] }], 3: ['status', { 1: ['phase', 's'] }] }),
  'v1/ServiceAccount': meta({ 2: ['secrets', [objectReference]], 3: ['imagePullSecrets', [localObjectReference]], 4: ['automountServiceAccountToken', 'B'] }),
  'v1/Service': meta({ 2: ['spec', serviceSpec], 3: ['status', loadBalancerStatus] }),
  'v1/Pod': meta({ 2: ['spec', podSpec], 3: ['status', emptyStatus] }),
  'v1/ResourceQuota': meta({
    2: ['spec', { 1: ['hard', '{q}'], 2: ['scopes', '[s]'], 3: ['scopeSelector', { 1: ['matchExpressions', [{ 1: ['scopeName', 'S'], 2: ['operator', 'S'], 3: ['values', '[s]'] }]] }] }],
    3: ['status', emptyStatus],
  }),
  'apps/v1/Deployment': meta({ 2: ['spec', deploymentSpec], 3: ['status', emptyStatus] }),
  'batch/v1/Job': meta({ 2: ['spec', jobSpec], 3: ['status', emptyStatus] }),
  'batch/v1/CronJob': meta({ 2: ['spec', cronJobSpec], 3: ['status', emptyStatus] }),
  'rbac.authorization.k8s.io/v1/Role': meta({ 2: ['rules', [policyRule], 'null'] }),
  'rbac.authorization.k8s.io/v1/ClusterRole': meta({ 2: ['rules', [policyRule], 'null'], 3: ['aggregationRule', { 1: ['clusterRoleSelectors', [labelSelector]] }] }),
  'rbac.authorization.k8s.io/v1/RoleBinding': meta({ 2: ['subjects', [subject]], 3: ['roleRef', roleRef] }),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': meta({ 2: ['subjects', [subject]], 3: ['roleRef', roleRef] }),
  'policy/v1/Eviction': meta({ 2: ['deleteOptions', deleteOptions] }),
  'policy/v1/PodDisruptionBudget': meta({
    2: ['spec', { 1: ['minAvailable', 'x'], 2: ['selector', labelSelector], 3: ['maxUnavailable', 'x'], 4: ['unhealthyPodEvictionPolicy', 'S'] }],
    3: ['status', { 1: ['observedGeneration', 'i'], 3: ['disruptionsAllowed', 'I'], 4: ['currentHealthy', 'I'], 5: ['desiredHealthy', 'I'], 6: ['expectedPods', 'I'] }],
  }),
  'scheduling.k8s.io/v1/PriorityClass': meta({ 2: ['value', 'I'], 3: ['globalDefault', 'b'], 4: ['description', 's'], 5: ['preemptionPolicy', 'S'] }),
  'networking.k8s.io/v1/Ingress': meta({ 2: ['spec', ingressSpec], 3: ['status', loadBalancerStatus] }),
  'autoscaling/v1/Scale': meta({ 2: ['spec', { 1: ['replicas', 'i'] }], 3: ['status', { 1: ['replicas', 'I'], 2: ['selector', 's'] }] }),
  'authentication.k8s.io/v1/TokenRequest': meta({
    2: ['spec', {
      1: ['audiences', '[s]', 'null'], 4: ['expirationSeconds', 'I', 'null'],
      3: ['boundObjectRef', { 1: ['kind', 's'], 2: ['apiVersion', 's'], 3: ['name', 's'], 4: ['uid', 's'] }, 'null'],
    }],
    3: ['status', emptyStatus],
  }),
  'authentication.k8s.io/v1/SelfSubjectReview': meta({ 2: ['status', emptyStatus] }),
  'authorization.k8s.io/v1/SelfSubjectAccessReview': meta({ 2: ['spec', ssarSpec], 3: ['status', emptyStatus] }),
  'authorization.k8s.io/v1/SubjectAccessReview': meta({ 2: ['spec', sarSpec], 3: ['status', emptyStatus] }),
  'authorization.k8s.io/v1/LocalSubjectAccessReview': meta({ 2: ['spec', sarSpec], 3: ['status', emptyStatus] }),
  'authorization.k8s.io/v1/SelfSubjectRulesReview': meta({ 2: ['spec', { 1: ['namespace', 's'] }], 3: ['status', emptyStatus] }),
};

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const UNKNOWN: Msg = { 1: ['typeMeta', { 1: ['apiVersion', 's'], 2: ['kind', 's'] }] };

/** The kinds decodeProtobufObject understands, as "apiVersion/kind" ("v1/ConfigMap", "apps/v1/Deployment"). */
export const protobufKinds: readonly string[] = [...Object.keys(SCHEMAS), '*/DeleteOptions'];

/**
 * Decodes a protobuf body into the JSON form a client would have sent, or returns undefined when its kind is not
 * one we know (the caller answers 415). Throws on a body that is not a well-formed Kubernetes protobuf message.
 */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> | undefined {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw new Error('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  const envelope = body.subarray(4);
  const tm = (decodeMessage(envelope, UNKNOWN).typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  // DeleteOptions is registered in every group version; clients encode it under the one they talk to.
  const schema = tm.kind === 'DeleteOptions' ? deleteOptions : SCHEMAS[`${tm.apiVersion}/${tm.kind}`];
  if (!schema) return undefined;
  const raw = rawOf(envelope);
  return { apiVersion: tm.apiVersion, kind: tm.kind, ...decodeMessage(raw, schema) };
}

/** runtime.Unknown field 2 (raw bytes), which the generic table cannot express without copying. */
function rawOf(envelope: Buffer): Buffer {
  const r = new Reader(envelope);
  let raw: Buffer = Buffer.alloc(0);
  while (!r.done()) {
    const tag = r.varint();
    if (tag === 0x12) raw = r.bytes();
    else r.skip(tag & 7);
  }
  return raw;
}

class Reader {
  i = 0;
  constructor(readonly buf: Buffer) {}
  done(): boolean {
    return this.i >= this.buf.length;
  }
  /** A varint as a JS number; int32/int64 negatives arrive as 64-bit two's complement and come back negative. */
  varint(): number {
    const b = this.buf;
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      if (this.i >= b.length) throw new Error('unexpected EOF');
      const byte = b[this.i++];
      // Seven bytes (49 bits) add up exactly in a double; longer ones are negatives or huge uint64s.
      if (shift === 49) return this.varintTail(result, byte);
      result += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return result;
    }
  }
  private varintTail(low: number, byte: number): number {
    let v = BigInt(low);
    for (let shift = 49n; ; shift += 7n) {
      if (shift >= 70n) throw new Error('proto: integer overflow');
      v |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return Number(BigInt.asIntN(64, v));
      if (this.i >= this.buf.length) throw new Error('unexpected EOF');
      byte = this.buf[this.i++];
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    if (len < 0 || this.i + len > this.buf.length) throw new Error('unexpected EOF');
    const out = this.buf.subarray(this.i, this.i + len);
    this.i += len;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 2) this.bytes();
    else if (wire === 1) this.i += 8;
    else if (wire === 5) this.i += 4;
    else throw new Error(`proto: illegal wireType ${wire}`);
    if (this.i > this.buf.length) throw new Error('unexpected EOF');
  }
}

function decodeMessage(buf: Buffer, schema: Msg): Record<string, any> {
  const out: Record<string, any> = {};
  const r = new Reader(buf);
  while (!r.done()) {
    const tag = r.varint();
    const wire = tag & 7;
    const def = schema[Math.floor(tag / 8)];
    if (!def) {
      r.skip(wire);
      continue;
    }
    const [name, type] = def;
    if (typeof type === 'string') {
      decodeScalar(r, wire, out, name, type);
      continue;
    }
    if (wire !== 2) throw new Error(`proto: wrong wireType ${wire} for field ${name}`);
    if (Array.isArray(type)) (out[name] ??= []).push(decodeMessage(r.bytes(), type[0]));
    else if (name === '') Object.assign(out, decodeMessage(r.bytes(), type as Msg));
    else out[name] = decodeMessage(r.bytes(), type as Msg);
  }
  for (const name of nullWhenAbsent(schema)) if (out[name] === undefined) out[name] = null;
  return out;
}

const nullFields = new WeakMap<Msg, string[]>();

function nullWhenAbsent(schema: Msg): string[] {
  let names = nullFields.get(schema);
  if (!names) {
    names = Object.values(schema).filter((f) => f[2] === 'null').map((f) => f[0]);
    nullFields.set(schema, names);
  }
  return names;
}

function decodeScalar(r: Reader, wire: number, out: Record<string, any>, name: string, code: Code): void {
  switch (code) {
    case 's':
    case 'S': {
      const v = r.bytes().toString('utf8');
      if (v !== '' || code === 'S') out[name] = v;
      return;
    }
    case 'i':
    case 'I':
    case 'b':
    case 'B': {
      if (wire !== 0) throw new Error(`proto: wrong wireType ${wire} for field ${name}`);
      const n = r.varint();
      const v = code === 'b' || code === 'B' ? n !== 0 : n;
      if (n !== 0 || code === 'I' || code === 'B') out[name] = v;
      return;
    }
    case 'y':
      out[name] = r.bytes().toString('base64');
      return;
    case 't': {
      const t = timeJson(r.bytes());
      if (t !== null) out[name] = t;
      return;
    }
    case 'q':
      out[name] = quantityJson(r.bytes());
      return;
    case 'x':
      out[name] = intOrStringJson(r.bytes());
      return;
    case 'F': {
      const raw = new Reader(r.bytes());
      let value: unknown = {};
      while (!raw.done()) {
        const tag = raw.varint();
        if (tag === 0x0a) value = JSON.parse(raw.bytes().toString('utf8'));
        else raw.skip(tag & 7);
      }
      out[name] = value;
      return;
    }
    case '[s]':
      (out[name] ??= []).push(r.bytes().toString('utf8'));
      return;
    case '[i]': {
      const list: number[] = (out[name] ??= []);
      if (wire === 0) list.push(r.varint());
      else {
        // packed
        const p = new Reader(r.bytes());
        while (!p.done()) list.push(p.varint());
      }
      return;
    }
    case '{s}':
    case '{y}':
    case '{q}':
    case '{[s]}': {
      const [k, v] = mapEntry(r.bytes(), code);
      (out[name] ??= {})[k] = v;
      return;
    }
  }
}

function mapEntry(buf: Buffer, code: '{s}' | '{y}' | '{q}' | '{[s]}'): [string, unknown] {
  const r = new Reader(buf);
  let key = '';
  let value: unknown = code === '{s}' ? '' : code === '{y}' ? '' : code === '{q}' ? '0' : [];
  while (!r.done()) {
    const tag = r.varint();
    if (tag === 0x0a) key = r.bytes().toString('utf8');
    else if (tag === 0x12) {
      const b = r.bytes();
      if (code === '{s}') value = b.toString('utf8');
      else if (code === '{y}') value = b.toString('base64');
      else if (code === '{q}') value = quantityJson(b);
      else value = decodeMessage(b, { 1: ['items', '[s]'] }).items ?? [];
    } else r.skip(tag & 7);
  }
  return [key, value];
}

/** metav1.Time marshals as RFC3339 in UTC with whole seconds; null for the zero time. */
function timeJson(buf: Buffer): string | null {
  const t = decodeMessage(buf, { 1: ['seconds', 'i'], 2: ['nanos', 'i'] });
  const seconds: number = t.seconds ?? 0;
  if (seconds === 0 && !t.nanos) return null;
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function quantityJson(buf: Buffer): string {
  return (decodeMessage(buf, { 1: ['string', 'S'] }).string as string | undefined) ?? '0';
}

/** intstr: type 0 is an int (intVal), type 1 a string (strVal). */
function intOrStringJson(buf: Buffer): number | string {
  const v = decodeMessage(buf, { 1: ['type', 'i'], 2: ['intVal', 'i'], 3: ['strVal', 's'] });
  return v.type === 1 ? (v.strVal ?? '') : (v.intVal ?? 0);
}
