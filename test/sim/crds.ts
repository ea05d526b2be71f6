// CustomResourceDefinitions of the federation world, shared by the real-cluster seeding and the simulated control
// plane of the demo: Karmada's Cluster (cluster.karmada.io/v1alpha1) and OpenKruise's CloneSet (apps.kruise.io/v1alpha1).

const preserve = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** Karmada's Cluster (cluster.karmada.io/v1alpha1), cluster-scoped, with the fields a gateway reads. */
export const karmadaClusterCRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clusters.cluster.karmada.io' },
  spec: {
    group: 'cluster.karmada.io',
    scope: 'Cluster',
    names: { plural: 'clusters', singular: 'cluster', kind: 'Cluster', listKind: 'ClusterList' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'VERSION', type: 'string', jsonPath: '.status.kubernetesVersion' },
          { name: 'MODE', type: 'string', jsonPath: '.spec.syncMode' },
          { name: 'READY', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
          { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            required: ['spec'],
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                properties: {
                  id: { type: 'string', maxLength: 128 },
                  syncMode: { type: 'string', enum: ['Push', 'Pull'] },
                  apiEndpoint: { type: 'string' },
                  secretRef: { type: 'object', required: ['namespace', 'name'], properties: { namespace: { type: 'string' }, name: { type: 'string' } } },
                  impersonatorSecretRef: { type: 'object', required: ['namespace', 'name'], properties: { namespace: { type: 'string' }, name: { type: 'string' } } },
                  insecureSkipTLSVerification: { type: 'boolean' },
                  proxyURL: { type: 'string' },
                  provider: { type: 'string' },
                  region: { type: 'string' },
                  zone: { type: 'string' },
                  taints: { type: 'array', items: preserve },
                },
              },
              status: {
                type: 'object',
                properties: {
                  kubernetesVersion: { type: 'string' },
                  apiEnablements: { type: 'array', items: preserve },
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
                      properties: {
                        type: { type: 'string' },
                        status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
                        lastTransitionTime: { type: 'string', format: 'date-time' },
                        reason: { type: 'string' },
                        message: { type: 'string' },
                        observedGeneration: { type: 'integer', format: 'int64' },
                      },
                    },
                  },
                  nodeSummary: preserve,
                  resourceSummary: preserve,
                },
              },
            },
          },
        },
      },
    ],
  },
};

/** OpenKruise's CloneSet (apps.kruise.io/v1alpha1) with its printer columns and scale/status subresources. */
export const cloneSetCRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clonesets.apps.kruise.io' },
  spec: {
    group: 'apps.kruise.io',
    scope: 'Namespaced',
    names: { plural: 'clonesets', singular: 'cloneset', kind: 'CloneSet', listKind: 'CloneSetList', shortNames: ['clone'] },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: {
          status: {},
          scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.labelSelector' },
        },
        additionalPrinterColumns: [
          { name: 'DESIRED', type: 'integer', description: 'The desired number of pods.', jsonPath: '.spec.replicas' },
          { name: 'UPDATED', type: 'integer', description: 'The number of pods updated.', jsonPath: '.status.updatedReplicas' },
          { name: 'UPDATED_READY', type: 'integer', description: 'The number of pods updated and ready.', jsonPath: '.status.updatedReadyReplicas' },
          { name: 'READY', type: 'integer', description: 'The number of pods ready.', jsonPath: '.status.readyReplicas' },
          { name: 'TOTAL', type: 'integer', description: 'The number of currently all pods.', jsonPath: '.status.replicas' },
          { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          { name: 'CONTAINERS', type: 'string', priority: 1, description: 'The containers of currently cloneset.', jsonPath: '.spec.template.spec.containers[*].name' },
          { name: 'IMAGES', type: 'string', priority: 1, description: 'The images of currently cloneset.', jsonPath: '.spec.template.spec.containers[*].image' },
          { name: 'SELECTOR', type: 'string', priority: 1, description: 'The selector of currently cloneset.', jsonPath: '.status.labelSelector' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                required: ['selector', 'template'],
                properties: {
                  replicas: { type: 'integer', format: 'int32' },
                  selector: preserve,
                  template: preserve,
                  volumeClaimTemplates: { type: 'array', items: preserve },
                  scaleStrategy: preserve,
                  updateStrategy: preserve,
                  revisionHistoryLimit: { type: 'integer', format: 'int32' },
                  minReadySeconds: { type: 'integer', format: 'int32' },
                  lifecycle: preserve,
                },
              },
              status: {
                type: 'object',
                properties: {
                  observedGeneration: { type: 'integer', format: 'int64' },
                  replicas: { type: 'integer', format: 'int32' },
                  readyReplicas: { type: 'integer', format: 'int32' },
                  availableReplicas: { type: 'integer', format: 'int32' },
                  updatedReplicas: { type: 'integer', format: 'int32' },
                  updatedReadyReplicas: { type: 'integer', format: 'int32' },
                  expectedUpdatedReplicas: { type: 'integer', format: 'int32' },
                  updateRevision: { type: 'string' },
                  currentRevision: { type: 'string' },
                  collisionCount: { type: 'integer', format: 'int32' },
                  labelSelector: { type: 'string' },
                  conditions: { type: 'array', items: preserve },
                },
              },
            },
          },
        },
      },
    ],
  },
};
