// The resources a simulated cluster serves: the built-ins kubectl and client-go use in our tests and the demo, plus
// the ones CustomResourceDefinitions register at run time. Discovery, routing and storage all read this table.

import { eventFields, objectMetaFields, podFields, selectableFieldsFor } from '../../src/api/fields.js';
import * as eventConversions from '../../src/api/eventconv.js';
import type { KubeObject } from '../../src/api/meta.js';
import { printerFor, type Printer } from '../../src/api/printers/index.js';
import type { ResourceDescriptor, SubresourceDescriptor } from '../../src/api/resource.js';

export interface ScaleSpec {
  specReplicasPath: string[];
  statusReplicasPath: string[];
  labelSelectorPath?: string[];
}

export interface SimResource extends ResourceDescriptor {
  printer: Printer;
  fieldsOf: (obj: KubeObject) => Record<string, string>;
  /** The status subresource exists: the main resource ignores status changes and /status ignores the rest. */
  hasStatus: boolean;
  scale?: ScaleSpec;
  /** Resources that share stored data name one store ("events" core/v1 and events.k8s.io/v1). */
  storeName: string;
  /**
   * Set for a version served from another resource's data (events.k8s.io/v1 events from core/v1 events): a
   * mirror store follows the source store under the same resourceVersions, converted with fromStored, and
   * writes are converted with toStored and go to the source.
   */
  mirrorOf?: string;
  toStored?: (obj: KubeObject) => KubeObject;
  fromStored?: (obj: KubeObject) => KubeObject;
  /** For strategic merge patch; null for custom resources, which do not support it. */
  schema: { group: string; kind: string } | null;
  /** Bumps metadata.generation on spec changes. */
  generation: boolean;
  /** The CRD this resource comes from. */
  crd?: KubeObject;
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function builtin(
  d: Omit<SimResource, 'printer' | 'fieldsOf' | 'storeName' | 'schema' | 'listKind' | 'verbs' | 'hasStatus' | 'generation'> &
    Partial<Pick<SimResource, 'verbs' | 'hasStatus' | 'generation' | 'storeName' | 'fieldsOf'>>,
): SimResource {
  return {
    ...d,
    listKind: `${d.kind}List`,
    verbs: d.verbs ?? ALL_VERBS,
    printer: printerFor(d.group, d.resource),
    fieldsOf: d.fieldsOf ?? selectableFieldsFor(d.group, d.resource),
    storeName: d.storeName ?? `${d.group}/${d.resource}`,
    schema: { group: d.group, kind: d.kind },
    hasStatus: d.hasStatus ?? false,
    generation: d.generation ?? false,
  };
}

const podSubresources: SubresourceDescriptor[] = [
  { name: 'attach', kind: 'PodAttachOptions', verbs: ['create', 'get'] },
  { name: 'binding', kind: 'Binding', verbs: ['create'] },
  { name: 'ephemeralcontainers', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
  { name: 'eviction', kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
  { name: 'exec', kind: 'PodExecOptions', verbs: ['create', 'get'] },
  { name: 'log', kind: 'Pod', verbs: ['get'] },
  { name: 'portforward', kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
  { name: 'status', kind: 'Pod', verbs: ['get', 'patch', 'update'] },
];

export function builtinResources(): SimResource[] {
  const { coreToEventsV1, eventsV1ToCore } = eventConversions;
  return [
    builtin({ group: '', version: 'v1', resource: 'pods', singular: 'pod', kind: 'Pod', namespaced: true, shortNames: ['po'], categories: ['all'], subresources: podSubresources, hasStatus: true, storageVersionHash: 'xPOwRZ+Yhw8=', fieldsOf: podFields }),
    builtin({ group: '', version: 'v1', resource: 'events', singular: 'event', kind: 'Event', namespaced: true, shortNames: ['ev'], storageVersionHash: 'r2yiGXH7wu8=', fieldsOf: eventFields, storeName: 'events' }),
    builtin({ group: '', version: 'v1', resource: 'namespaces', singular: 'namespace', kind: 'Namespace', namespaced: false, shortNames: ['ns'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], hasStatus: true, subresources: [{ name: 'finalize', kind: 'Namespace', verbs: ['update'] }, { name: 'status', kind: 'Namespace', verbs: ['get', 'patch', 'update'] }], storageVersionHash: 'Q3oi5N2YM8M=' }),
    builtin({ group: '', version: 'v1', resource: 'configmaps', singular: 'configmap', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'], storageVersionHash: 'qFsyl6wFWjQ=' }),
    builtin({ group: '', version: 'v1', resource: 'secrets', singular: 'secret', kind: 'Secret', namespaced: true, storageVersionHash: 'S6u1pOWzb84=' }),
    builtin({ group: '', version: 'v1', resource: 'serviceaccounts', singular: 'serviceaccount', kind: 'ServiceAccount', namespaced: true, shortNames: ['sa'], storageVersionHash: 'pbx9ZvyFpBE=' }),
    builtin({ group: '', version: 'v1', resource: 'nodes', singular: 'node', kind: 'Node', namespaced: false, shortNames: ['no'], hasStatus: true, subresources: [{ name: 'status', kind: 'Node', verbs: ['get', 'patch', 'update'] }], storageVersionHash: 'XwShjMxG9Fs=' }),
    builtin({ group: 'apps', version: 'v1', resource: 'deployments', singular: 'deployment', kind: 'Deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'], hasStatus: true, generation: true, subresources: [{ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] }, { name: 'status', kind: 'Deployment', verbs: ['get', 'patch', 'update'] }], scale: { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] }, storageVersionHash: '8aSe+NMegvE=' }),
    builtin({ group: 'apps', version: 'v1', resource: 'replicasets', singular: 'replicaset', kind: 'ReplicaSet', namespaced: true, shortNames: ['rs'], categories: ['all'], hasStatus: true, generation: true, subresources: [{ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] }, { name: 'status', kind: 'ReplicaSet', verbs: ['get', 'patch', 'update'] }], scale: { specReplicasPath: ['spec', 'replicas'], statusReplicasPath: ['status', 'replicas'], labelSelectorPath: ['spec', 'selector'] }, storageVersionHash: 'P1RzHs8/mWQ=' }),
    {
      ...builtin({ group: 'events.k8s.io', version: 'v1', resource: 'events', singular: 'event', kind: 'Event', namespaced: true, shortNames: ['ev'], storageVersionHash: 'r2yiGXH7wu8=', fieldsOf: eventFields }),
      mirrorOf: 'events',
      toStored: eventsV1ToCore,
      fromStored: coreToEventsV1,
    },
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', singular: 'role', kind: 'Role', namespaced: true }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', singular: 'rolebinding', kind: 'RoleBinding', namespaced: true }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', singular: 'clusterrole', kind: 'ClusterRole', namespaced: false }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', singular: 'clusterrolebinding', kind: 'ClusterRoleBinding', namespaced: false }),
    builtin({ group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', singular: 'customresourcedefinition', kind: 'CustomResourceDefinition', namespaced: false, shortNames: ['crd', 'crds'], hasStatus: true, subresources: [{ name: 'status', kind: 'CustomResourceDefinition', verbs: ['get', 'patch', 'update'] }], storageVersionHash: 'jfWCUB31mvA=' }),
  ];
}

/** The resources one CRD serves, one per served version, all stored in one place. */
export function resourcesFromCRD(crd: KubeObject): SimResource[] {
  const spec = (crd as any).spec;
  const names = spec.names;
  const namespaced = spec.scope === 'Namespaced';
  return (spec.versions as any[])
    .filter((v) => v.served)
    .map((v) => {
      const sub = v.subresources ?? {};
      const subresources: SubresourceDescriptor[] = [];
      if (sub.scale) subresources.push({ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] });
      if (sub.status) subresources.push({ name: 'status', kind: names.kind, verbs: ['get', 'patch', 'update'] });
      const path = (p?: string) => (p ? p.replace(/^\./, '').split('.') : undefined);
      return {
        group: spec.group,
        version: v.name,
        resource: names.plural,
        singular: names.singular ?? names.kind.toLowerCase(),
        kind: names.kind,
        listKind: names.listKind ?? `${names.kind}List`,
        namespaced,
        verbs: ALL_VERBS,
        shortNames: names.shortNames,
        categories: names.categories,
        subresources,
        printer: printerFor(spec.group, names.plural, { additionalPrinterColumns: v.additionalPrinterColumns }),
        fieldsOf: (o: KubeObject) => objectMetaFields(o, namespaced),
        hasStatus: !!sub.status,
        scale: sub.scale
          ? { specReplicasPath: path(sub.scale.specReplicasPath)!, statusReplicasPath: path(sub.scale.statusReplicasPath)!, labelSelectorPath: path(sub.scale.labelSelectorPath) }
          : undefined,
        storeName: `${spec.group}/${names.plural}`,
        schema: null,
        generation: true,
        crd,
      } satisfies SimResource;
    });
}
