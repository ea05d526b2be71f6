import { describe, expect, it } from 'vitest';
import { decodeRequestBody, dropManagedFields, eventJSON, eventUser, fillObjectRef, microTime, protobufObjectMeta, sourceIPs, statusFromBody, userAgentOf } from '../../src/audit/event.js';
import type { Request } from '../../src/server/context.js';
import type { Event } from '../../src/audit/types.js';
import { freezeUser } from '../../src/authn/group.js';

const req = (headers: Record<string, string>, remoteAddress = '192.168.1.9') => ({ headers, socket: { remoteAddress } }) as unknown as Request;

describe('audit event fields', () => {
  it('MicroTime: UTC with six fractional digits', () => {
    expect(microTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678) * 1000 + 9)).toBe('2024-01-02T03:04:05.678009Z');
    expect(microTime(Date.UTC(2024, 0, 2) * 1000)).toBe('2024-01-02T00:00:00.000000Z');
    // Across second, minute and year boundaries, each stamp against Date's own formatting.
    const base = Date.UTC(2024, 11, 31, 23, 59, 58) * 1000;
    for (const d of [0, 1, 999, 1000, 999_999, 1_000_000, 1_000_001, 1_999_999, 2_000_000, 2_123_456, 61_000_007]) {
      const t = base + d;
      expect(microTime(t)).toBe(new Date(Math.floor(t / 1000)).toISOString().slice(0, 23) + String(t % 1000).padStart(3, '0') + 'Z');
    }
  });

  it('sourceIPs as utilnet.SourceIPs: forwarded chain, X-Real-Ip once, then the peer unless it is last', () => {
    expect(sourceIPs(req({}))).toEqual(['192.168.1.9']);
    expect(sourceIPs(req({}, '::ffff:10.1.2.3'))).toEqual(['10.1.2.3']);
    expect(sourceIPs(req({ 'x-forwarded-for': ' 1.1.1.1 , junk,2001:DB8::1' }))).toEqual(['1.1.1.1', '2001:db8::1', '192.168.1.9']);
    expect(sourceIPs(req({ 'x-forwarded-for': '1.1.1.1', 'x-real-ip': '1.1.1.1' }))).toEqual(['1.1.1.1', '192.168.1.9']);
    expect(sourceIPs(req({ 'x-real-ip': '2.2.2.2' }))).toEqual(['2.2.2.2', '192.168.1.9']);
    expect(sourceIPs(req({ 'x-forwarded-for': '192.168.1.9' }))).toEqual(['192.168.1.9']);
  });

  it('a User-Agent over 1024 characters is truncated as kube does', () => {
    const ua = userAgentOf(req({ 'user-agent': 'a'.repeat(2000) }))!;
    expect(ua).toBe('a'.repeat(1024) + '...TRUNCATED');
    expect(userAgentOf(req({}))).toBeUndefined();
  });

  it('managedFields go from objects, list items and table rows', () => {
    const mf = [{ manager: 'kubectl' }];
    const obj = { metadata: { name: 'a', managedFields: mf } };
    const list = { kind: 'List', metadata: {}, items: [{ metadata: { name: 'b', managedFields: mf } }] };
    const table = { kind: 'Table', rows: [{ cells: [], object: { metadata: { name: 'c', managedFields: mf } } }] };
    for (const o of [obj, list, table]) dropManagedFields(o);
    expect(JSON.stringify([obj, list, table])).not.toContain('managedFields');
    expect(obj.metadata.name).toBe('a');
  });

  it('request bodies: JSON and YAML decoded, others left out', () => {
    expect(decodeRequestBody(Buffer.from('{"a":1}'), 'application/json; charset=utf-8')).toEqual({ a: 1 });
    expect(decodeRequestBody(Buffer.from('[{"op":"add"}]'), 'application/json-patch+json')).toEqual([{ op: 'add' }]);
    expect(decodeRequestBody(Buffer.from('a: 1'), 'application/apply-patch+yaml')).toEqual({ a: 1 });
    expect(decodeRequestBody(Buffer.from('k8s\0...'), 'application/vnd.kubernetes.protobuf')).toBeUndefined();
    expect(decodeRequestBody(Buffer.from('{bad'), 'application/json')).toBeUndefined();
  });

  it("a protobuf body's ObjectMeta identity is read without its schema", () => {
    const bytes = (n: number, v: Buffer | string) => {
      const b = Buffer.from(v);
      return Buffer.concat([Buffer.from([(n << 3) | 2, b.length]), b]);
    };
    const varintField = (n: number, v: number) => Buffer.from([(n << 3) | 0, v]);
    const meta = Buffer.concat([bytes(1, 'cm'), bytes(2, ''), bytes(3, 'demo'), varintField(7, 3), bytes(5, 'uid-1'), bytes(6, '42')]);
    const obj = Buffer.concat([bytes(1, meta), bytes(2, bytes(1, 'data'))]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'latin1'), bytes(1, bytes(1, 'v1')), bytes(2, obj), bytes(3, ''), bytes(4, '')]);
    expect(protobufObjectMeta(body, 'application/vnd.kubernetes.protobuf')).toEqual({ name: 'cm', namespace: 'demo', uid: 'uid-1', resourceVersion: '42' });
    expect(protobufObjectMeta(body, 'application/json')).toBeUndefined();
    expect(protobufObjectMeta(body.subarray(0, body.length - 20), 'application/vnd.kubernetes.protobuf')).toBeUndefined();
    expect(protobufObjectMeta(Buffer.from('k8s\0\xff', 'latin1'), 'application/vnd.kubernetes.protobuf')).toBeUndefined();
  });

  it('a Status body becomes the bounded responseStatus; other bodies do not', () => {
    const s = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'm', reason: 'NotFound', details: { name: 'x', kind: 'pods' }, code: 404 };
    expect(statusFromBody(s, 404)).toEqual({ metadata: {}, status: 'Failure', message: 'm', reason: 'NotFound', details: { name: 'x', kind: 'pods' }, code: 404 });
    expect(statusFromBody({ kind: 'Pod' }, 200)).toBeUndefined();
  });

  it('an event line is JSON.stringify of the event through every stage, with its kept parts made again when a field they hold changes', () => {
    const ev: Event = {
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      auditID: '2b8ff9a4-1c1b-4f6f-9d4e-0c55e3c1a001',
      stage: 'RequestReceived',
      requestURI: '/api/v1/namespaces/a/configmaps/b?x="q"\\u2028',
      verb: 'get',
      user: { username: 'alice', groups: ['dev', 'system:authenticated'] },
      impersonatedUser: undefined,
      sourceIPs: ['127.0.0.1'],
      userAgent: 'kubectl/v1.33.0 (linux/amd64) \u00e9\u0001',
      objectRef: { resource: 'configmaps', namespace: 'a', name: undefined, uid: undefined, apiGroup: undefined, apiVersion: 'v1', resourceVersion: undefined, subresource: undefined },
      responseStatus: undefined,
      requestObject: undefined,
      responseObject: undefined,
      requestReceivedTimestamp: '2026-11-28T10:00:00.000001Z',
      stageTimestamp: '2026-11-28T10:00:00.000001Z',
      annotations: undefined,
    };
    const lines: string[] = [];
    const check = () => {
      const line = eventJSON(ev);
      expect(line).toBe(JSON.stringify(ev));
      lines.push(line);
    };
    check();
    check(); // kept parts reused
    fillObjectRef(ev.objectRef, { metadata: { name: 'b', uid: 'u-1' } });
    ev.stage = 'ResponseStarted';
    ev.responseStatus = { metadata: {}, code: 200 };
    ev.stageTimestamp = '2026-11-28T10:00:00.000900Z';
    check();
    ev.stage = 'ResponseComplete';
    ev.annotations = { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': 'RBAC: "x"' };
    ev.requestObject = { kind: 'ConfigMap', data: { k: 'v\n' } };
    ev.responseObject = [1, null, 'x'];
    check();
    // Every field the kept parts were made from, changed in turn, shows in the next line.
    ev.level = 'RequestResponse';
    check();
    ev.auditID = 'other';
    check();
    ev.requestURI = '/apis';
    check();
    ev.verb = 'list';
    check();
    ev.user = { username: 'bob' };
    check();
    ev.impersonatedUser = { username: 'carol', extra: { scopes: ['a'] } };
    check();
    // A connection's frozen user: one EventUser, its JSON made once, for every event of its requests.
    const frozen = freezeUser({ username: 'dave "d"', uid: 'u', groups: ['g\u00e9'], extra: { 'k/x': ['v\t'] } });
    expect(eventUser(frozen)).toBe(eventUser(frozen));
    expect(Object.isFrozen(eventUser(frozen))).toBe(true);
    ev.user = eventUser(frozen);
    check();
    ev.impersonatedUser = eventUser(frozen);
    check();
    const thawed = { username: 'erin', groups: [] as string[] };
    expect(eventUser(thawed)).not.toBe(eventUser(thawed));
    // Strings JSON.stringify writes as they are, and ones it escapes (a quote, a backslash, DEL, a lone surrogate).
    ev.sourceIPs = ['10.0.0.1', '::1'];
    check();
    ev.sourceIPs = [];
    check();
    ev.auditID = 'a"b\\c\u007f\ud800';
    check();
    ev.sourceIPs = undefined;
    check();
    ev.userAgent = undefined;
    check();
    ev.objectRef = undefined;
    ev.stage = 'Panic';
    check();
    expect(lines[2]).toContain('"name":"b","uid":"u-1"');
    expect(new Set(lines).size).toBe(lines.length - 1);
  });
});
