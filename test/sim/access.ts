import type { KubeObject } from '../../src/api/meta.js';

/**
 * Read access to one simulated cluster's stored objects, for the parts of the sim that consult stored state
 * (RBAC reads Roles and Bindings, exec and logs read Pods) without depending on the storage layer.
 */
export interface SimResourceAccess {
  /** Current objects of a resource, optionally in one namespace, sorted by namespace/name. */
  list(group: string, resource: string, namespace?: string): KubeObject[];
  get(group: string, resource: string, namespace: string, name: string): KubeObject | undefined;
}
