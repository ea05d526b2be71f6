import { describe, expect, it } from 'vitest';
import { decodeRequestBody, dropManagedFields, microTime, protobufObjectMeta, sourceIPs, statusFromBody, userAgentOf } from '../../src/audit/event.js';
import type { Request } from '../../src/server/context.js';

const req = (headers: Record<string, string>, remoteAddress = '192.168.1.9') => ({ headers, socket: { remoteAddress } }) as unknown as Request;

describe('audit event fields', () => {
  it('MicroTime: UTC with six fractional digits', () => {
    expect(microTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678) * 1000 + 9)).toBe('2024-01-02T03:04:05.678009Z');
    expect(microTime(Date.UTC(2024, 0, 2) * 1000)).toBe('2024-01-02T00:00:00.000000Z');
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
});
