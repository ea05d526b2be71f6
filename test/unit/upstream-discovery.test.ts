// Exposed resources and the discovery rewrite: only allowlisted resources (and pods/events) are listed, empty
// groups and versions disappear, untouched documents are left byte for byte, and changed aggregated documents
// get the ETag kube-apiserver would compute for them.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  aggregatedETag,
  discoveryExposed,
  discoveryPath,
  exposedResources,
  filterDiscovery,
  jsonOnlyAccept,
  newResourceNotFound,
} from '../../src/upstream/discovery.js';
import { statusBody } from '../../src/api/status.js';

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const exposed = exposedResources([{ group: 'apps', resources: ['deployments'] }, { group: 'kruise.io', resources: ['*'] }]);

describe('exposedResources', () => {
  it('always exposes pods and events, core and events.k8s.io, and the self-review APIs', () => {
    const none = exposedResources([]);
    expect(none.isExposed('', 'pods')).toBe(true);
    expect(none.isExposed('', 'events')).toBe(true);
    expect(none.isExposed('events.k8s.io', 'events')).toBe(true);
    expect(none.isExposed('authorization.k8s.io', 'selfsubjectaccessreviews')).toBe(true);
    expect(none.isExposed('authentication.k8s.io', 'selfsubjectreviews')).toBe(true);
    expect(none.isExposed('authorization.k8s.io', 'subjectaccessreviews')).toBe(false);
    expect(none.isExposed('', 'secrets')).toBe(false);
    expect(none.hasGroup('apps')).toBe(false);
  });

  it('lets subresources follow their parent and "*" open a whole group', () => {
    expect(exposed.isExposed('', 'pods/log')).toBe(true);
    expect(exposed.isExposed('', 'pods/exec')).toBe(true);
    expect(exposed.isExposed('apps', 'deployments/scale')).toBe(true);
    expect(exposed.isExposed('apps', 'statefulsets')).toBe(false);
    expect(exposed.isExposed('apps', 'statefulsets/scale')).toBe(false);
    expect(exposed.isExposed('kruise.io', 'clonesets/status')).toBe(true);
    expect(exposed.hasGroup('apps')).toBe(true);
    expect(exposed.hasGroup('batch')).toBe(false);
  });
});

describe('discovery paths', () => {
  it('recognises the five discovery documents and nothing else', () => {
    expect(discoveryPath('/api')).toEqual({ kind: 'api' });
    expect(discoveryPath('/api/')).toEqual({ kind: 'api' });
    expect(discoveryPath('/apis')).toEqual({ kind: 'apis' });
    expect(discoveryPath('/api/v1')).toEqual({ kind: 'groupVersion', group: '', version: 'v1' });
    expect(discoveryPath('/apis/apps')).toEqual({ kind: 'group', group: 'apps' });
    expect(discoveryPath('/apis/apps/v1/')).toEqual({ kind: 'groupVersion', group: 'apps', version: 'v1' });
    expect(discoveryPath('/api/v1/pods')).toBeNull();
    expect(discoveryPath('/apis/apps/v1/deployments')).toBeNull();
    expect(discoveryPath('/openapi/v3')).toBeNull();
  });

  it('says which documents exist for users', () => {
    expect(discoveryExposed('/apis/apps', exposed)).toBe(true);
    expect(discoveryExposed('/apis/batch/v1', exposed)).toBe(false);
    expect(discoveryExposed('/apis', exposed)).toBe(true);
  });
});

describe('filterDiscovery: legacy documents', () => {
  it('drops groups with nothing exposed from /apis, keeping Go escaping and the trailing newline', () => {
    const doc = {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [
        { name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }], preferredVersion: { groupVersion: 'apps/v1', version: 'v1' } },
        { name: 'batch', versions: [{ groupVersion: 'batch/v1', version: 'v1' }], preferredVersion: { groupVersion: 'batch/v1', version: 'v1' } },
        { name: 'events.k8s.io', versions: [{ groupVersion: 'events.k8s.io/v1', version: 'v1' }], preferredVersion: { groupVersion: 'events.k8s.io/v1', version: 'v1' }, serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: 'a<b>&c:6443' }] },
      ],
    };
    const out = filterDiscovery('/apis', 'application/json', Buffer.from(JSON.stringify(doc) + '\n'), exposed);
    expect(out).not.toBeNull();
    const text = out!.toString();
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('a\\u003cb\\u003e\\u0026c:6443');
    expect(JSON.parse(text).groups.map((g: any) => g.name)).toEqual(['apps', 'events.k8s.io']);
  });

  it('lists only exposed resources of /api/v1, subresources with their parent', () => {
    const doc = {
      kind: 'APIResourceList',
      groupVersion: 'v1',
      resources: [
        { name: 'configmaps', singularName: 'configmap', namespaced: true, kind: 'ConfigMap', verbs: ['get'] },
        { name: 'events', singularName: 'event', namespaced: true, kind: 'Event', verbs: ['get'] },
        { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get'] },
        { name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] },
        { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] },
        { name: 'secrets', singularName: 'secret', namespaced: true, kind: 'Secret', verbs: ['get'] },
      ],
    };
    const out = filterDiscovery('/api/v1', 'application/json', Buffer.from(JSON.stringify(doc)), exposed);
    expect(JSON.parse(out!.toString()).resources.map((r: any) => r.name)).toEqual(['events', 'pods', 'pods/eviction', 'pods/log']);
    expect(out!.toString().endsWith('\n')).toBe(false);
  });

  it('returns null when nothing changes, for documents it does not know, and for non-JSON bodies', () => {
    const apps = { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'apps/v1', resources: [{ name: 'deployments', kind: 'Deployment' }, { name: 'deployments/scale', kind: 'Scale', group: 'autoscaling', version: 'v1' }] };
    expect(filterDiscovery('/apis/apps/v1', 'application/json', Buffer.from(JSON.stringify(apps)), exposed)).toBeNull();
    const versions = { kind: 'APIVersions', versions: ['v1'] };
    expect(filterDiscovery('/api', 'application/json', Buffer.from(JSON.stringify(versions)), exposed)).toBeNull();
    expect(filterDiscovery('/api/v1', 'application/vnd.kubernetes.protobuf', Buffer.from('k8s\0...'), exposed)).toBeNull();
    expect(filterDiscovery('/api/v1', 'application/json', Buffer.from('not json'), exposed)).toBeNull();
  });
});

describe('filterDiscovery: aggregated documents', () => {
  const resource = (name: string, subresources?: string[]) => ({
    resource: name,
    responseKind: { group: '', version: 'v1', kind: name },
    scope: 'Namespaced',
    singularResource: name.replace(/s$/, ''),
    verbs: ['get', 'list'],
    ...(subresources ? { subresources: subresources.map((s) => ({ subresource: s, responseKind: { group: '', version: 'v1', kind: 'X' }, verbs: ['get'] })) } : {}),
  });
  const doc = {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: [
      { metadata: { name: 'apps', creationTimestamp: null }, versions: [{ version: 'v1', resources: [resource('deployments', ['scale', 'status']), resource('statefulsets', ['scale'])], freshness: 'Current' }] },
      { metadata: { name: 'autoscaling', creationTimestamp: null }, versions: [{ version: 'v2', resources: [resource('horizontalpodautoscalers')], freshness: 'Current' }, { version: 'v1', resources: [resource('horizontalpodautoscalers')], freshness: 'Current' }] },
      { metadata: { name: 'kruise.io', creationTimestamp: null }, versions: [{ version: 'v1beta1', resources: [resource('clonesets')], freshness: 'Current' }, { version: 'v1alpha1', resources: [resource('sidecarsets')], freshness: 'Current' }] },
    ],
  };

  it('drops hidden resources, then versions and groups left empty, and keeps subresources of what stays', () => {
    const out = filterDiscovery('/apis', V2, Buffer.from(JSON.stringify(doc)), exposedResources([{ group: 'apps', resources: ['deployments'] }, { group: 'kruise.io', resources: ['clonesets'] }]));
    const got = JSON.parse(out!.toString());
    expect(got.items.map((i: any) => i.metadata.name)).toEqual(['apps', 'kruise.io']);
    expect(got.items[0].versions[0].resources.map((r: any) => r.resource)).toEqual(['deployments']);
    expect(got.items[0].versions[0].resources[0].subresources.map((s: any) => s.subresource)).toEqual(['scale', 'status']);
    expect(got.items[1].versions.map((v: any) => v.version)).toEqual(['v1beta1']);
    expect(got.items[0].metadata).toEqual({ name: 'apps', creationTimestamp: null });
  });

  it('leaves a document with nothing hidden alone (its upstream ETag stays valid)', () => {
    const all = exposedResources([{ group: 'apps', resources: ['*'] }, { group: 'autoscaling', resources: ['*'] }, { group: 'kruise.io', resources: ['*'] }]);
    expect(filterDiscovery('/apis', V2, Buffer.from(JSON.stringify(doc)), all)).toBeNull();
  });

  it('filters the core document at /api as well', () => {
    const core = { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2beta1', metadata: {}, items: [{ metadata: { name: '' }, versions: [{ version: 'v1', resources: [resource('pods', ['log', 'exec']), resource('secrets')] }] }] };
    const out = filterDiscovery('/api', 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList', Buffer.from(JSON.stringify(core)), exposed);
    expect(JSON.parse(out!.toString()).items[0].versions[0].resources.map((r: any) => r.resource)).toEqual(['pods']);
  });

  it('computes the ETag as kube does: quoted upper-case hex SHA-512 of the JSON, without the trailing newline', () => {
    const json = '{"kind":"APIGroupDiscoveryList"}';
    const want = `"${createHash('sha512').update(json).digest('hex').toUpperCase()}"`;
    expect(aggregatedETag(Buffer.from(json))).toBe(want);
    expect(aggregatedETag(Buffer.from(json + '\n'))).toBe(want);
  });
});

describe('jsonOnlyAccept', () => {
  it('keeps JSON forms in order and drops what cannot be filtered', () => {
    expect(jsonOnlyAccept(undefined)).toBeUndefined();
    expect(jsonOnlyAccept(`${V2},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`))
      .toBe(`${V2},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`);
    expect(jsonOnlyAccept('application/vnd.kubernetes.protobuf, application/json')).toBe('application/json');
    expect(jsonOnlyAccept('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList')).toBe('application/json');
    expect(jsonOnlyAccept('application/yaml, */*')).toBe('*/*');
  });
});

describe('newResourceNotFound', () => {
  it('is the Status kube-apiserver answers for a resource it does not serve', () => {
    expect(statusBody(newResourceNotFound().status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}\n',
    );
  });
});
