import { describe, expect, it } from 'vitest';
import {
  FieldSelectorError,
  convertFieldSelector,
  escapeValue,
  eventFields,
  everythingFields,
  objectMetaFields,
  oneTermEqualSelector,
  parseFieldSelector,
  podFields,
  selectableFieldsFor,
  unescapeValue,
  validateFieldSelector,
} from '../../src/api/fields.js';
import { StatusError } from '../../src/api/status.js';

function statusOf(fn: () => unknown): { code: number; reason?: string; message?: string } {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    const s = (e as StatusError).status;
    return { code: s.code, reason: s.reason, message: s.message };
  }
  throw new Error('expected a StatusError');
}

// apimachinery/pkg/fields/selector_test.go
describe('parse (apimachinery cases)', () => {
  it.each(['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=a||y\\=b', 'x=a\\=\\=b'])('good %j restrings identically', (s) =>
    expect(parseFieldSelector(s).toString()).toBe(s),
  );
  it.each(['x=a||y=b', 'x==a==b', 'x=a,b', 'x in (a)', 'x in (a,b,c)', 'x'])('bad %j', (s) =>
    expect(() => parseFieldSelector(s)).toThrow(FieldSelectorError),
  );

  it('is deterministic and prints == as =', () => {
    expect(parseFieldSelector('x=a,a=x').toString()).toBe(parseFieldSelector('a=x,x=a').toString());
    expect(parseFieldSelector('b==v').toString()).toBe('b=v');
  });

  it.each([
    ['x==a==b', 'invalid field selector: unescaped character in value: 61'],
    ['x=a||y=b', 'invalid field selector: unescaped character in value: 61'],
    ['x=a,b', "invalid selector: 'x=a,b'; can't understand 'b'"],
    ['x in (a)', "invalid selector: 'x in (a)'; can't understand 'x in (a)'"],
    ['k=\\a', 'invalid field selector: invalid escape sequence: \\a'],
    ['k=v\\', 'invalid field selector: invalid escape sequence: \\'],
  ])('error for %j', (s, msg) => expect(() => parseFieldSelector(s)).toThrow(msg));

  it('splits on unescaped commas only and sorts raw terms', () => {
    const sel = parseFieldSelector('k2=v2,k=\\,');
    // Raw terms sort bytewise: "k2=v2" < "k=\\,".
    expect(sel.requirements).toEqual([
      { field: 'k2', operator: '=', value: 'v2' },
      { field: 'k', operator: '=', value: ',' },
    ]);
    expect(parseFieldSelector('k=\\\\,k2=v2').requirements[1]).toEqual({ field: 'k', operator: '=', value: '\\' });
    expect(parseFieldSelector('함=수,목=록').requirements.map((r) => r.field).sort()).toEqual(['목', '함']);
    expect(parseFieldSelector('a=a,').requirements).toHaveLength(1);
    expect(parseFieldSelector(',a=a').requirements).toHaveLength(1);
  });

  it('splits each term at the first operator; the left side is not unescaped', () => {
    expect(parseFieldSelector('a!b=c').requirements[0]).toEqual({ field: 'a!b', operator: '=', value: 'c' });
    expect(parseFieldSelector('c!=v').requirements[0]).toEqual({ field: 'c', operator: '!=', value: 'v' });
    expect(parseFieldSelector('=v').requirements[0]).toEqual({ field: '', operator: '=', value: 'v' });
    expect(parseFieldSelector('metadata.name = x').requirements[0]).toEqual({ field: 'metadata.name ', operator: '=', value: ' x' });
  });
});

describe('escaping', () => {
  it.each([
    ['', ''],
    ['a', 'a'],
    ['=', '\\='],
    [',', '\\,'],
    ['\\', '\\\\'],
    ['\\=\\,\\', '\\\\\\=\\\\\\,\\\\'],
  ])('%j <-> %j', (raw, escaped) => {
    expect(escapeValue(raw)).toBe(escaped);
    expect(unescapeValue(escaped)).toBe(raw);
  });
  it.each(['\\', '\\\\\\', '\\a'])('rejects %j', (v) => expect(() => unescapeValue(v)).toThrow('invalid escape sequence'));
});

describe('matching', () => {
  const set = { foo: 'bar', baz: 'blah', complex: '=value\\,\\' };
  it.each([
    ['', { x: 'y' }, true],
    ['x=y', { x: 'y' }, true],
    ['x=y,z=w', { x: 'y', z: 'w' }, true],
    ['x!=y,z!=w', { x: 'z', z: 'a' }, true],
    ['notin=in', { notin: 'in' }, true],
    ['x=y', { x: 'z' }, false],
    ['x=y,z=w', { x: 'w', z: 'w' }, false],
    ['x!=y,z!=w', { x: 'z', z: 'w' }, false],
    ['foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\', set, true],
    ['foo=bar,foobar=bar,baz=blah', set, false],
    ['missing=', {}, true],
    ['missing!=', {}, false],
  ])('%j against %j -> %s', (s, fields, want) => expect(parseFieldSelector(s).matches(fields as Record<string, string>)).toBe(want));

  it('exact() follows RequiresExactMatch', () => {
    expect(parseFieldSelector('metadata.name=x,status.phase=Running').exact('metadata.name')).toBe('x');
    expect(parseFieldSelector('metadata.name!=x').exact('metadata.name')).toBeUndefined();
    expect(parseFieldSelector('metadata.name=').exact('metadata.name')).toBe('');
    expect(parseFieldSelector('metadata.name=b,metadata.name=a').exact('metadata.name')).toBe('a');
    expect(everythingFields().exact('x')).toBeUndefined();
    expect(oneTermEqualSelector('x', 'y').matches({ x: 'y' })).toBe(true);
    expect(oneTermEqualSelector('x', 'y').matches({ x: 'z' })).toBe(false);
  });
});

describe('field label conversion (what the list handler answers)', () => {
  it.each([
    ['', 'pods', 'spec.nodeName=n1,status.phase=Running,status.podIPs=x,spec.hostNetwork=true'],
    ['', 'events', 'involvedObject.name=x,reason=Started,reportingComponent=kubelet,source=kubelet,type=Normal'],
    ['', 'namespaces', 'status.phase=Active,metadata.name=x'],
    ['', 'secrets', 'type=Opaque'],
    ['', 'nodes', 'spec.unschedulable=false'],
    ['', 'services', 'spec.type=ClusterIP,spec.clusterIP=None'],
    ['', 'replicationcontrollers', 'status.replicas=1'],
    ['batch', 'jobs', 'status.successful=1'],
    ['certificates.k8s.io', 'certificatesigningrequests', 'spec.signerName=kubernetes.io/kubelet-serving'],
    ['apps', 'deployments', 'metadata.name=x,metadata.namespace=y'],
    ['rbac.authorization.k8s.io', 'clusterroles', 'metadata.namespace=y'],
  ])('%s/%s accepts %j', (group, resource, sel) => {
    expect(() => validateFieldSelector(parseFieldSelector(sel), group, 'v1', resource)).not.toThrow();
  });

  it.each([
    ['', 'pods', 'spec.containers=x', 'field label not supported: spec.containers'],
    ['', 'pods', 'metadata.name =x', 'field label not supported: metadata.name '],
    ['', 'namespaces', 'metadata.namespace=x', 'field label not supported: metadata.namespace'],
    ['', 'nodes', 'metadata.namespace=x', 'field label not supported: metadata.namespace'],
    ['', 'events', 'regarding.name=x', 'field label not supported: regarding.name'],
    ['events.k8s.io', 'events', 'involvedObject.name=x', 'field label not supported: involvedObject.name'],
    ['', 'configmaps', 'data.x=y', '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'],
    ['apps', 'deployments', 'spec.replicas=1', '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'],
    ['batch', 'jobs', 'status.succeeded=1', 'field label "status.succeeded" not supported for batchv1.Job'],
  ])('%s/%s rejects %j with 400', (group, resource, sel, message) => {
    expect(statusOf(() => validateFieldSelector(parseFieldSelector(sel), group, 'v1', resource))).toEqual({
      code: 400,
      reason: 'BadRequest',
      message,
    });
  });

  it('renames legacy and events.k8s.io labels onto the selectable field names', () => {
    expect(convertFieldSelector(parseFieldSelector('spec.host=n1'), '', 'v1', 'pods').toString()).toBe('spec.nodeName=n1');
    const ev = convertFieldSelector(parseFieldSelector('regarding.name=x,reportingController=c'), 'events.k8s.io', 'v1', 'events');
    expect(ev.toString()).toBe('involvedObject.name=x,reportingComponent=c');
  });

  it('custom resources: name always, namespace when namespaced, plus selectableFields', () => {
    const crd = { namespaced: false, selectableFields: ['spec.color'] };
    expect(() => validateFieldSelector(parseFieldSelector('spec.color=red,metadata.name=x'), 'x.io', 'v1', 'widgets', crd)).not.toThrow();
    expect(statusOf(() => validateFieldSelector(parseFieldSelector('metadata.namespace=a'), 'x.io', 'v1', 'widgets', crd)).message).toBe(
      'field label not supported: metadata.namespace',
    );
  });
});

describe('selectable fields', () => {
  const pod = {
    metadata: { name: 'p', namespace: 'ns' },
    spec: { nodeName: 'n1', restartPolicy: 'Always', schedulerName: 'default-scheduler', serviceAccountName: 'default', hostNetwork: true },
    status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.2' }, { ip: 'fd00::2' }], nominatedNodeName: '' },
  };

  it('pods (pod.ToSelectableFields)', () => {
    expect(podFields(pod)).toEqual({
      'metadata.name': 'p',
      'metadata.namespace': 'ns',
      'spec.nodeName': 'n1',
      'spec.restartPolicy': 'Always',
      'spec.schedulerName': 'default-scheduler',
      'spec.serviceAccountName': 'default',
      'spec.hostNetwork': 'true',
      'status.phase': 'Running',
      'status.podIP': '10.0.0.2',
      'status.nominatedNodeName': '',
    });
    expect(podFields({ metadata: { name: 'q' }, status: { podIP: '1.2.3.4' } })['status.podIP']).toBe('1.2.3.4');
    expect(podFields({ metadata: { name: 'q' } })['spec.hostNetwork']).toBe('false');
    // Matching a converted selector against the field set, end to end.
    const sel = convertFieldSelector(parseFieldSelector('spec.host=n1,status.phase!=Pending'), '', 'v1', 'pods');
    expect(sel.matches(selectableFieldsFor('', 'pods')(pod))).toBe(true);
    // status.podIPs is accepted but never populated upstream, so only the empty value matches.
    expect(parseFieldSelector('status.podIPs=10.0.0.2').matches(podFields(pod))).toBe(false);
  });

  it('events in both API shapes', () => {
    const core = {
      metadata: { name: 'e', namespace: 'ns' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'ns', uid: 'u1', apiVersion: 'v1', fieldPath: 'spec.containers{c}' },
      reason: 'Started',
      source: { component: 'kubelet', host: 'n1' },
      type: 'Normal',
    };
    expect(eventFields(core)).toMatchObject({
      'involvedObject.kind': 'Pod',
      'involvedObject.uid': 'u1',
      'involvedObject.fieldPath': 'spec.containers{c}',
      'involvedObject.resourceVersion': '',
      source: 'kubelet',
      reportingComponent: '',
      'metadata.namespace': 'ns',
    });
    const v1 = {
      metadata: { name: 'e', namespace: 'ns' },
      regarding: { kind: 'Pod', name: 'p' },
      reportingController: 'ctrl',
      reason: 'X',
      type: 'Warning',
    };
    expect(eventFields(v1)).toMatchObject({ 'involvedObject.name': 'p', reportingComponent: 'ctrl', source: 'ctrl', type: 'Warning' });
  });

  it('everything else carries metadata only', () => {
    const f = selectableFieldsFor('apps', 'deployments')({ metadata: { name: 'd', namespace: 'ns' } });
    expect(f).toEqual({ 'metadata.name': 'd', 'metadata.namespace': 'ns' });
    expect(objectMetaFields({ metadata: { name: 'n' } }, false)).toEqual({ 'metadata.name': 'n' });
    expect(selectableFieldsFor('', 'namespaces')({ metadata: { name: 'a' }, status: { phase: 'Active' } })['status.phase']).toBe('Active');
    expect(selectableFieldsFor('', 'secrets')({ metadata: { name: 's' }, type: 'Opaque' }).type).toBe('Opaque');
    expect(selectableFieldsFor('', 'nodes')({ metadata: { name: 'n' }, spec: { unschedulable: true } })['spec.unschedulable']).toBe('true');
  });
});
