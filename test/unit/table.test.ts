import { describe, expect, it } from 'vitest';
import { printerFor, withClusterColumn } from '../../src/api/printers/index.js';
import {
  parseAcceptForTable,
  parseIncludeObject,
  partialObjectMetadataJson,
  tableHeadJson,
  tableJson,
  tableRowFromJson,
  tableRowJson,
} from '../../src/api/table.js';
import { StatusError } from '../../src/api/status.js';

// What k8s.io/apiserver 1.34.4's NegotiateMediaTypeOptions answers for a built-in resource endpoint (its
// RequestScope restrictions, legacyscheme serializers), recorded by running the Go code over these headers.
const GOLDEN_ACCEPT: [string, { acceptable: boolean; as?: string; mediaType?: string; version?: string }][] = [
  ["application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1"}],
  ["application/json;as=Table;v=v1beta1;g=meta.k8s.io", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1beta1"}],
  ["application/json;as=Table;g=meta.k8s.io;v=v1, application/json", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1"}],
  ["application/json", {"acceptable":true,"mediaType":"application/json"}],
  ["*/*", {"acceptable":true,"mediaType":"application/json"}],
  ["application/*", {"acceptable":true,"mediaType":"application/json"}],
  ["", {"acceptable":true,"mediaType":"application/json"}],
  ["application/vnd.kubernetes.protobuf,application/json", {"acceptable":true,"mediaType":"application/vnd.kubernetes.protobuf"}],
  ["application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", {"acceptable":true,"as":"PartialObjectMetadataList","mediaType":"application/vnd.kubernetes.protobuf","version":"v1"}],
  ["application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", {"acceptable":true,"as":"PartialObjectMetadata","mediaType":"application/json","version":"v1"}],
  ["application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", {"acceptable":false}],
  ["application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", {"acceptable":true,"mediaType":"application/json"}],
  ["application/yaml;as=Table;v=v1;g=meta.k8s.io", {"acceptable":true,"as":"Table","mediaType":"application/yaml","version":"v1"}],
  ["text/html", {"acceptable":false}],
  ["text/html,application/xhtml+xml,*/*;q=0.8", {"acceptable":true,"mediaType":"application/json"}],
  ["application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1"}],
  ["application/json;as=Table;v=v1", {"acceptable":false}],
  ["application/json;as=Table;g=meta.k8s.io;v=v2", {"acceptable":false}],
  ["application/json;as=Widget;g=meta.k8s.io;v=v1", {"acceptable":false}],
  ["application/json;as=Table;g=example.com;v=v1", {"acceptable":false}],
  ["application/json;stream=watch", {"acceptable":true,"mediaType":"application/json"}],
  ["application/yaml;stream=watch", {"acceptable":false}],
  ["application/vnd.kubernetes.protobuf;stream=watch", {"acceptable":true,"mediaType":"application/vnd.kubernetes.protobuf"}],
  ["application/json;stream=other", {"acceptable":false}],
  ["application/json;sv=v1", {"acceptable":true,"mediaType":"application/json"}],
  ["application/json;sv=v2", {"acceptable":false}],
  ["application/json;charset=utf-8", {"acceptable":true,"mediaType":"application/json"}],
  ["application/json; as=Table; v=v1; g=meta.k8s.io", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1"}],
  ["application/cbor", {"acceptable":false}],
  ["application/json;q=0,text/plain", {"acceptable":true,"mediaType":"application/json"}],
  ["*/*;as=Table;g=meta.k8s.io;v=v1", {"acceptable":true,"as":"Table","mediaType":"application/json","version":"v1"}],
  ["application", {"acceptable":false}],
  ["application/json/extra,application/yaml", {"acceptable":true,"mediaType":"application/yaml"}],];

describe('parseAcceptForTable (golden: apiserver negotiation)', () => {
  it.each(GOLDEN_ACCEPT)('%j', (accept, want) => {
    const got = parseAcceptForTable(accept);
    expect(got.acceptable).toBe(want.acceptable);
    if (!want.acceptable) return;
    expect(got.as).toBe(want.as ?? null);
    expect(got.version).toBe(want.version ?? 'v1');
    expect(got.json).toBe(want.mediaType === 'application/json');
  });

  it('an absent Accept header is plain JSON', () => {
    expect(parseAcceptForTable(undefined)).toEqual({ as: null, version: 'v1', json: true, acceptable: true });
  });
});

const NOW = Date.parse('2025-01-01T12:00:00Z');
const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web',
    namespace: 'default',
    uid: 'u-1',
    resourceVersion: '12',
    creationTimestamp: '2025-01-01T11:55:00Z',
    labels: { app: 'web' },
    annotations: { note: '<b>&' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'rs', controller: true }],
    managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1' }],
  },
  spec: { containers: [{ name: 'a', image: 'nginx' }] },
  status: { phase: 'Succeeded' },
};
const podJson = JSON.stringify(pod);

describe('Table rows', () => {
  const p = printerFor('', 'pods');

  it('includeObject=Metadata embeds PartialObjectMetadata with the full metadata', () => {
    const row = JSON.parse(tableRowJson(p, pod, podJson, 'Metadata', NOW));
    expect(row.object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: pod.metadata });
    expect(row.cells).toEqual(['web', '0/1', 'Succeeded', '0', '5m', '<none>', '<none>', '<none>', '<none>']);
    expect(row.conditions).toEqual([{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }]);
  });

  it('Metadata follows the negotiated meta.k8s.io version', () => {
    expect(JSON.parse(tableRowJson(p, pod, podJson, 'Metadata', NOW, 'v1beta1')).object.apiVersion).toBe('meta.k8s.io/v1beta1');
  });

  it('includeObject=Object embeds the pre-serialized object verbatim, None embeds null', () => {
    const marker = '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"},"x":"verbatim"}';
    expect(tableRowJson(p, pod, marker, 'Object', NOW).endsWith(`,"object":${marker}}`)).toBe(true);
    expect(JSON.parse(tableRowJson(p, pod, podJson, 'None', NOW)).object).toBeNull();
  });

  it('rows without conditions omit the field, and HTML characters are escaped as Go does', () => {
    const running = { ...pod, status: { phase: 'Running' } };
    const row = tableRowJson(p, running, '', 'Metadata', NOW);
    expect(row).not.toContain('"conditions"');
    expect(row).toContain('"\\u003cnone\\u003e"');
    expect(row).toContain('"note":"\\u003cb\\u003e\\u0026"');
  });

  it('partialObjectMetadataJson', () => {
    expect(JSON.parse(partialObjectMetadataJson(pod))).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: pod.metadata });
  });
});

describe('Table rows from stored JSON', () => {
  const clusterOf = (o: any) => o.metadata?.labels?.['fleetgate.io/cluster'] ?? '';
  const printers = {
    pods: withClusterColumn(printerFor('', 'pods'), clusterOf),
    plainPods: printerFor('', 'pods'),
    events: withClusterColumn(printerFor('', 'events'), clusterOf),
    configmaps: printerFor('', 'configmaps'),
  };
  const labels = { 'fleetgate.io/cluster': 'east', '10': 'ten', '9': 'nine', app: 'web' };
  const objects: Record<string, any> = {
    pod: { ...pod, metadata: { ...pod.metadata, labels } },
    // What the projection leaves out and what it counts, in every shape the printer may meet.
    odd: {
      metadata: { name: 'o', creationTimestamp: '2025-01-01T11:00:00Z', deletionTimestamp: '2025-01-01T11:59:00Z', annotations: { a: 'x\u2028 \u2029 </script>', e: '\u{1f600}é' } },
      spec: { containers: [{ name: 'a', args: ['"]}'] }, { name: 'b' }], initContainers: [{ name: 'i', restartPolicy: 'Always' }], readinessGates: [{ conditionType: 'g' }], nodeName: 'n<1>' },
      status: { phase: 'Running', initContainerStatuses: [{ name: 'i', started: true, ready: true, restartCount: 2, lastState: { terminated: { finishedAt: '2025-01-01T11:30:00Z' } }, state: { running: {} } }], conditions: [{ type: 'g', status: 'True' }] },
    },
    nullMetadata: { metadata: null, spec: { containers: null }, status: null },
    noMetadata: { spec: [], status: { phase: 'Failed' } },
    event: { metadata: { name: 'e', namespace: 'd', labels }, involvedObject: { kind: 'Pod', name: 'web' }, reason: 'Pulled', message: '<ok> & done', count: 2, source: { component: 'kubelet' }, lastTimestamp: '2025-01-01T11:00:00Z' },
    configmap: { metadata: { name: 'c', creationTimestamp: '2025-01-01T11:00:00Z' }, data: { a: '1', b: '<2>' } },
  };

  it('writes the same bytes as tableRowJson of the parsed object, for every include form and meta version', () => {
    let compared = 0;
    for (const [pname, p] of Object.entries(printers)) {
      for (const [oname, obj] of Object.entries(objects)) {
        const text = JSON.stringify(obj);
        for (const include of ['Metadata', 'None', 'Object'] as const) {
          for (const version of ['v1', 'v1beta1'] as const) {
            const want = tableRowJson(p, JSON.parse(text), text, include, NOW, version);
            const where = `${pname} ${oname} ${include} ${version}`;
            expect(tableRowFromJson(p, text, include, NOW, version), where).toBe(want);
            expect(tableRowFromJson(p, Buffer.from(text), include, NOW, version), where).toBe(want);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(4 * 6 * 3 * 2);
  });

  it('embeds the metadata as stored, Go-escaped, in the object key order', () => {
    const text = JSON.stringify(objects.odd);
    const row = tableRowFromJson(printers.pods, Buffer.from(text), 'Metadata', NOW);
    expect(row).toContain('"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"o","creationTimestamp"');
    expect(row).toContain(String.raw`\u2028 \u2029 \u003c/script\u003e`);
    expect(row).toContain(String.raw`"n\u003c1\u003e"`);
    expect(JSON.parse(row).object.metadata).toEqual(objects.odd.metadata);
    expect(JSON.parse(row).cells).toEqual(['o', '1/3', 'Terminating', '2 (30m ago)', '', '60m', '<none>', 'n<1>', '<none>', '1/1']);
    // Raw U+2028 and U+2029 in stored text come out escaped, as Go writes them.
    const raw = JSON.stringify({ metadata: { name: 'r', annotations: { s: '\u2028\u2029' } }, spec: {}, status: {} });
    expect(tableRowFromJson(printers.pods, raw, 'Metadata', NOW)).toContain('"s":"\\u2028\\u2029"');
  });

  it('writes cells with the escapes Go adds, for strings that need them', () => {
    const p = printerFor('x.io', 'things', { additionalPrinterColumns: [{ name: 'A', type: 'string', jsonPath: '.spec.a' }, { name: 'N', type: 'integer', jsonPath: '.spec.n' }] });
    for (const a of ['plain', '<none>', 'a<b', 'q"uote', 'back\\slash', 'tab\t', '\u2028', '\u{1f600}', '\ud800 lone', 'é&']) {
      const obj = { metadata: { name: 'x' }, spec: { a, n: 3 } };
      const text = JSON.stringify(obj);
      expect(tableRowFromJson(p, text, 'None', NOW)).toBe(tableRowJson(p, obj, text, 'None', NOW));
      expect(JSON.parse(tableRowFromJson(p, text, 'None', NOW)).cells).toEqual(['x', a, 3]);
    }
  });
});

describe('Table heads and whole tables', () => {
  const p = printerFor('', 'configmaps');
  const cm = { metadata: { name: 'c', creationTimestamp: '2025-01-01T11:00:00Z' }, data: { a: '1' } };

  it('streams rows between prefix and suffix', () => {
    const { prefix, suffix } = tableHeadJson(p, { resourceVersion: '99', continue: 'tok', remainingItemCount: 3 });
    const body = prefix + [tableRowJson(p, cm, '', 'None', NOW), tableRowJson(p, cm, '', 'None', NOW)].join(',') + suffix;
    const t = JSON.parse(body);
    expect(t.kind).toBe('Table');
    expect(t.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.metadata).toEqual({ resourceVersion: '99', continue: 'tok', remainingItemCount: 3 });
    expect(t.columnDefinitions.map((c: any) => c.name)).toEqual(['Name', 'Data', 'Age']);
    expect(t.rows).toHaveLength(2);
    expect(t.rows[0].cells).toEqual(['c', 1, '60m']);
  });

  it('noHeaders sends columnDefinitions null (watch events after the first), metadata stays an object', () => {
    const { prefix, suffix } = tableHeadJson(p, {}, true, 'v1beta1');
    const t = JSON.parse(prefix + suffix);
    expect(t).toEqual({ kind: 'Table', apiVersion: 'meta.k8s.io/v1beta1', metadata: {}, columnDefinitions: null, rows: [] });
    expect(prefix.indexOf('"metadata"')).toBeLessThan(prefix.indexOf('"columnDefinitions"'));
  });

  it('tableJson assembles a small table; Object rows default to the object JSON', () => {
    const t = JSON.parse(tableJson(p, [{ obj: cm }], { resourceVersion: '5' }, 'Object', NOW));
    expect(t.rows[0].object).toEqual(cm);
    expect(t.metadata).toEqual({ resourceVersion: '5' });
  });
});

describe('includeObject parameter', () => {
  it('accepts the three values and empty', () => {
    expect(parseIncludeObject(undefined)).toBe('Metadata');
    expect(parseIncludeObject('')).toBe('Metadata');
    expect(parseIncludeObject('None')).toBe('None');
    expect(parseIncludeObject('Object')).toBe('Object');
  });

  it('rejects anything else with the apiserver 400', () => {
    let err: unknown;
    try {
      parseIncludeObject('All');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status.code).toBe(400);
    expect((err as StatusError).status.message).toBe(
      `Unable to convert to Table as requested: includeObject: Invalid value: "All": must be 'Metadata', 'Object', 'None', or empty`,
    );
  });
});

describe('withClusterColumn', () => {
  const clusterOf = (o: any) => o.metadata.annotations?.cluster ?? '?';

  it('goes before Age for pods', () => {
    const p = withClusterColumn(printerFor('', 'pods'), clusterOf);
    expect(p.columns.map((c) => c.name)).toEqual(['Name', 'Ready', 'Status', 'Restarts', 'Cluster', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates']);
    expect(p.columns[4]).toEqual({ name: 'Cluster', type: 'string', format: '', description: 'The member cluster that holds this object', priority: 0 });
    const pod2 = { ...pod, metadata: { ...pod.metadata, annotations: { cluster: 'east' } } };
    expect(p.cells(pod2, NOW)).toEqual(['web', '0/1', 'Succeeded', '0', 'east', '5m', '<none>', '<none>', '<none>', '<none>']);
    expect(p.conditions?.(pod2)).toHaveLength(1);
  });

  it('leads event tables (before Last Seen)', () => {
    const p = withClusterColumn(printerFor('', 'events'), clusterOf);
    expect(p.columns.slice(0, 2).map((c) => c.name)).toEqual(['Cluster', 'Last Seen']);
    expect(p.cells({ metadata: { name: 'e', annotations: { cluster: 'west' } }, involvedObject: {}, source: {} }, NOW)[0]).toBe('west');
  });

  it('goes before Created At in the default table and last for CRDs without an age column', () => {
    expect(withClusterColumn(printerFor('x.io', 'things'), clusterOf).columns.map((c) => c.name)).toEqual(['Name', 'Cluster', 'Created At']);
    const crd = printerFor('x.io', 'things', { additionalPrinterColumns: [{ name: 'Phase', type: 'string', jsonPath: '.status.phase' }] });
    const p = withClusterColumn(crd, clusterOf);
    expect(p.columns.map((c) => c.name)).toEqual(['Name', 'Phase', 'Cluster']);
    expect(p.cells({ metadata: { name: 't', annotations: { cluster: 'c1' } }, status: { phase: 'Up' } }, NOW)).toEqual(['t', 'Up', 'c1']);
  });

  it('does not change the wrapped printer and reuses the wrapper', () => {
    const base = printerFor('', 'configmaps');
    const a = withClusterColumn(base, clusterOf);
    expect(withClusterColumn(base, clusterOf)).toBe(a);
    expect(base.columns.map((c) => c.name)).toEqual(['Name', 'Data', 'Age']);
  });
});
