// What a server needs to know about one API resource to serve it: discovery facts, how its objects print as a
// Table, and which fields it can be selected by. The sim's registry and the gateway's cache both describe the
// resources they serve with this.

export interface SubresourceDescriptor {
  name: string;
  kind: string;
  /** Set when the subresource's kind lives in another group/version (pods/eviction is policy/v1 Eviction). */
  group?: string;
  version?: string;
  verbs: string[];
}

export interface ResourceDescriptor {
  group: string;
  version: string;
  /** Plural name, as in the URL. */
  resource: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: SubresourceDescriptor[];
  storageVersionHash?: string;
}

export function groupVersion(d: { group: string; version: string }): string {
  return d.group ? `${d.group}/${d.version}` : d.version;
}

/** The group/resource pair in the form errors and RBAC use ("pods", "deployments.apps"). */
export function qualifiedResource(d: { group: string; resource: string }): string {
  return d.group ? `${d.resource}.${d.group}` : d.resource;
}
