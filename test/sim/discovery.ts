// Discovery documents of a simulated cluster, legacy and aggregated, built from its resource table. The shapes
// and Content-Types are the ones kube-api-surface.md §1 lists; client-go 1.27.0/1.27.1 reject any other type.

import { createHash } from 'node:crypto';
import type { SimResource } from './registry.js';

export interface ExtraResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  verbs: string[];
  namespaced: boolean;
}

export const AGGREGATED_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const AGGREGATED_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

/** Which aggregated version the Accept header asks for first, if any (1.33 servers no longer offer v2beta1). */
export function aggregatedVersion(accept: string | undefined): 'v2' | 'v2beta1' | null {
  if (!accept) return null;
  for (const part of accept.split(',')) {
    const p = part.replace(/\s+/g, '');
    if (!p.includes('as=APIGroupDiscoveryList') || !p.includes('g=apidiscovery.k8s.io')) continue;
    if (p.includes('v=v2beta1')) return 'v2beta1';
    if (p.includes('v=v2')) return 'v2';
  }
  return null;
}

interface GroupVersions {
  name: string;
  versions: string[];
}

function groupsOf(resources: readonly SimResource[], extra: readonly ExtraResource[]): GroupVersions[] {
  const groups = new Map<string, Set<string>>();
  for (const r of [...resources, ...extra]) {
    if (!groups.has(r.group)) groups.set(r.group, new Set());
    groups.get(r.group)!.add(r.version);
  }
  return [...groups.entries()].map(([name, vs]) => ({ name, versions: [...vs].sort(compareVersions) }));
}

/** Kubernetes version priority: GA > beta > alpha, higher numbers first (v1 before v1beta1). */
function compareVersions(a: string, b: string): number {
  const rank = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0];
    return [m[2] === 'alpha' ? 2 : m[2] === 'beta' ? 1 : 0, -Number(m[1]), -Number(m[3] ?? 0)];
  };
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return ra[i] - rb[i];
  return a < b ? -1 : a > b ? 1 : 0;
}

export function apiVersions(serverAddress: string): string {
  return JSON.stringify({
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  });
}

function apiGroup(g: GroupVersions): object {
  const versions = g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(resources: readonly SimResource[], extra: readonly ExtraResource[]): string {
  const groups = groupsOf(resources, extra).filter((g) => g.name !== '');
  return JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: groups.map(apiGroup) });
}

export function apiGroupDoc(group: string, resources: readonly SimResource[], extra: readonly ExtraResource[]): string | undefined {
  const g = groupsOf(resources, extra).find((x) => x.name === group);
  if (!g || group === '') return undefined;
  return JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) });
}

export function apiResourceList(group: string, version: string, resources: readonly SimResource[], extra: readonly ExtraResource[]): string | undefined {
  const rs = resources.filter((r) => r.group === group && r.version === version);
  const xs = extra.filter((r) => r.group === group && r.version === version);
  if (rs.length === 0 && xs.length === 0) return undefined;
  const out: object[] = [];
  for (const r of rs) {
    out.push(clean({
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      shortNames: r.shortNames,
      categories: r.categories,
      storageVersionHash: r.storageVersionHash ?? storageHash(r),
    }));
    for (const s of r.subresources ?? []) {
      out.push(clean({ name: `${r.resource}/${s.name}`, singularName: '', namespaced: r.namespaced, group: s.group, version: s.version, kind: s.kind, verbs: s.verbs }));
    }
  }
  for (const x of xs) out.push({ name: x.resource, singularName: '', namespaced: x.namespaced, kind: x.kind, verbs: x.verbs });
  out.sort((a: any, b: any) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return JSON.stringify({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources: out });
}

/** The aggregated document for /api (core only) or /apis (every other group). */
export function aggregatedDiscovery(core: boolean, v: 'v2' | 'v2beta1', resources: readonly SimResource[], extra: readonly ExtraResource[]): { body: string; etag: string } {
  const groups = groupsOf(resources, extra).filter((g) => (core ? g.name === '' : g.name !== ''));
  const items = groups.map((g) => ({
    metadata: { name: g.name, creationTimestamp: null },
    versions: g.versions.map((version) => ({
      version,
      resources: [
        ...resources
          .filter((r) => r.group === g.name && r.version === version)
          .sort((a, b) => (a.resource < b.resource ? -1 : 1))
          .map((r) =>
            clean({
              resource: r.resource,
              responseKind: { group: r.group, version: r.version, kind: r.kind },
              scope: r.namespaced ? 'Namespaced' : 'Cluster',
              singularResource: r.singular,
              verbs: r.verbs,
              shortNames: r.shortNames,
              categories: r.categories,
              subresources: r.subresources?.length
                ? r.subresources.map((s) => ({ subresource: s.name, responseKind: { group: s.group ?? r.group, version: s.version ?? r.version, kind: s.kind }, verbs: s.verbs }))
                : undefined,
            }),
          ),
        ...extra
          .filter((x) => x.group === g.name && x.version === version)
          .map((x) => ({ resource: x.resource, responseKind: { group: x.group, version: x.version, kind: x.kind }, scope: x.namespaced ? 'Namespaced' : 'Cluster', singularResource: x.resource.replace(/s$/, ''), verbs: x.verbs })),
      ],
      freshness: 'Current',
    })),
  }));
  const body = JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${v}`, metadata: {}, items });
  const etag = `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"`;
  return { body, etag };
}

function storageHash(r: SimResource): string {
  return createHash('sha256').update(`${r.group}/${r.version}/${r.kind}`).digest('base64').slice(0, 11) + '=';
}

function clean<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}
