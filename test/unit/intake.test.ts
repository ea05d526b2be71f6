// The per-object intake transform (src/cache/intake.ts): what is stored is exactly what JSON.stringify of the
// transformed object with its resourceVersion gives, for the main thread and the intake workers alike.

import { describe, expect, it } from 'vitest';
import { coreToEventsV1 } from '../../src/api/eventconv.js';
import { eventFields, podFields } from '../../src/api/fields.js';
import type { KubeObject } from '../../src/api/meta.js';
import { CLUSTER_LABEL, encodeList, encodeListBytes, encodeObjects, intakePaths, listMetadataOf, servedJSON, type IntakeTransform } from '../../src/cache/intake.js';

function pod(name: string, labels?: Record<string, string>): KubeObject {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: 'ns-ü',
      resourceVersion: '41',
      uid: `uid-${name}`,
      ...(labels ? { labels } : {}),
      managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: { 'f:status': {} } }],
    },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'img', args: ['"quoted"', 'tab\there', '\u2028'] }] },
    status: { phase: 'Running', podIP: '10.0.0.1' },
  } as KubeObject;
}

function event(name: string): KubeObject {
  return {
    kind: 'Event',
    apiVersion: 'v1',
    metadata: { name, namespace: 'default', resourceVersion: '7', labels: { 'app.kubernetes.io/名前': 'ünïcödé 🚀' } },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u' },
    reason: 'Scheduled',
    message: 'Successfully assigned default/p to node-1 ✓',
    source: { component: 'default-scheduler' },
    firstTimestamp: '2026-01-01T00:00:00Z',
    lastTimestamp: '2026-01-01T00:00:00Z',
    count: 1,
    type: 'Normal',
  } as KubeObject;
}

/** What Store.put stored before: the transformed object, its resourceVersion written in, stringified. */
function expected(obj: KubeObject, t: IntakeTransform, rv: string): { json: string; v1?: string } {
  const o = structuredClone(obj);
  if (t.dropManagedFields && o.metadata.managedFields !== undefined) o.metadata.managedFields = undefined;
  o.metadata.labels = { ...(o.metadata.labels ?? {}), [CLUSTER_LABEL]: t.cluster };
  o.metadata.resourceVersion = rv;
  return { json: JSON.stringify(o), v1: t.resource === 'events' ? JSON.stringify(coreToEventsV1(o)) : undefined };
}

describe('encodeObjects', () => {
  it('gives the bytes of JSON.stringify of the transformed pod, for any resourceVersion', () => {
    const t: IntakeTransform = { cluster: 'member-ä', resource: 'pods', dropManagedFields: true };
    const objs = [pod('a', { app: 'wéb', 'x/y': '日本' }), pod('b'), { metadata: {} } as KubeObject, pod('c', { app: 'z' })];
    const want = objs.map((o) => (o.metadata.name ? expected(o, t, '1099511627776') : undefined));
    const page = encodeObjects(objs, t);
    expect(page.count).toBe(3);
    expect(page.names).toEqual(['a', 'b', 'c']);
    expect(page.namespaces).toEqual(['ns-ü', 'ns-ü', 'ns-ü']);
    expect(page.memberRVs).toEqual(['41', '41', '41']);
    const stored = [0, 1, 2].map((i) => servedJSON(page, i, 0, '1099511627776').toString('utf8'));
    expect(stored).toEqual([want[0]!.json, want[1]!.json, want[3]!.json]);
    expect(JSON.parse(stored[0]).metadata.managedFields).toBeUndefined();
    expect(page.labels[0]).toEqual({ app: 'wéb', 'x/y': '日本', [CLUSTER_LABEL]: 'member-ä' });
    expect(page.fields[0]).toEqual(podFields(JSON.parse(stored[0])));
    expect(page.fields[0]['spec.nodeName']).toBe('node-1');
    // Another version, another length: the bytes around the digits stay right.
    expect(servedJSON(page, 1, 0, '5').toString('utf8')).toBe(expected(pod('b'), t, '5').json);
  });

  it('keeps managedFields when told to', () => {
    const t: IntakeTransform = { cluster: 'm', resource: 'pods', dropManagedFields: false };
    const page = encodeObjects([pod('a')], t);
    const json = servedJSON(page, 0, 0, '9').toString('utf8');
    expect(json).toBe(expected(pod('a'), t, '9').json);
    expect(JSON.parse(json).metadata.managedFields).toHaveLength(1);
  });

  it('gives events and their events.k8s.io/v1 view under one resourceVersion', () => {
    const t: IntakeTransform = { cluster: 'm1', resource: 'events', dropManagedFields: true };
    const want = expected(event('e1'), t, '123');
    const page = encodeObjects([event('e1')], t);
    expect(servedJSON(page, 0, 0, '123').toString('utf8')).toBe(want.json);
    expect(servedJSON(page, 0, 1, '123').toString('utf8')).toBe(want.v1);
    expect(page.fields[0]).toEqual(eventFields(JSON.parse(want.json)));
    expect(page.v1Fields[0]).toEqual(eventFields(JSON.parse(want.v1!)));
    expect(page.v1Fields[0]['involvedObject.name']).toBe('p');
  });

  it('leaves unserialized what the caller holds already, but still names it', () => {
    const t: IntakeTransform = { cluster: 'm', resource: 'pods', dropManagedFields: true };
    const page = encodeObjects([pod('a'), pod('b')], t, 0, (_ns, name) => name === 'a');
    expect(page.names).toEqual(['a', 'b']);
    expect(page.offsets[0]).toBe(page.offsets[3]);
    expect(servedJSON(page, 1, 0, '2').toString('utf8')).toBe(expected(pod('b'), t, '2').json);
  });
});

describe('encodeList', () => {
  it('sets kind and apiVersion on list items and carries the list metadata', () => {
    const t: IntakeTransform = { cluster: 'm', resource: 'pods', dropManagedFields: true };
    const item = pod('a') as Record<string, unknown>;
    delete item.kind;
    delete item.apiVersion;
    const text = JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '99', continue: 'tok' }, items: [item] });
    const page = encodeList(text, t);
    expect(page.listRV).toBe('99');
    expect(page.continue).toBe('tok');
    // First, as kube-apiserver writes them.
    const want = expected({ kind: 'Pod', apiVersion: 'v1', ...(item as KubeObject) }, t, '3').json;
    expect(servedJSON(page, 0, 0, '3').toString('utf8')).toBe(want);
    // The byte path writes the same bytes, and real pages take it.
    const taken = intakePaths.bytes;
    const fromBytes = encodeListBytes(Buffer.from(text + '\n'), t);
    expect(intakePaths.bytes).toBe(taken + 1);
    expect(fromBytes.listRV).toBe('99');
    expect(fromBytes.continue).toBe('tok');
    expect(servedJSON(fromBytes, 0, 0, '3').toString('utf8')).toBe(want);
    expect(fromBytes.fields[0]).toEqual(page.fields[0]);
    expect(fromBytes.labels[0]).toEqual(page.labels[0]);
  });
});

describe('listMetadataOf', () => {
  it('reads the metadata before the items, without parsing them', () => {
    const big = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '5', continue: 'c"x' }, items: Array.from({ length: 200 }, (_, i) => pod(`p${i}`)) };
    expect(listMetadataOf(Buffer.from(JSON.stringify(big)))).toEqual({ resourceVersion: '5', continue: 'c"x' });
    expect(listMetadataOf(Buffer.from('{"kind":"PodList","metadata":{"resourceVersion":"6"},"items":[]}'))).toEqual({ resourceVersion: '6', continue: '' });
  });
  it('says nothing when the metadata comes only after a long item list', () => {
    const big = { kind: 'PodList', items: Array.from({ length: 200 }, (_, i) => pod(`p${i}`)), metadata: { resourceVersion: '5' } };
    expect(listMetadataOf(Buffer.from(JSON.stringify(big)))).toBeUndefined();
  });
});
