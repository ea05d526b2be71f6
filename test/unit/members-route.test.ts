// Writes through the merged view: body rewriting (label off, resourceVersions translated, in JSON, YAML, patches,
// DeleteOptions, Evictions and protobuf), member connections following the registry, and routeToMember between
// a gateway-like HTTP server and two recording fake members over plain HTTP.

import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { statusBody, toStatus } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { CLUSTER_LABEL, MergedCache } from '../../src/cache/merged.js';
import { objectOf } from '../../src/cache/store.js';
import { parseWriteBody } from '../../src/cache/writebody.js';
import { memberConnections, type MemberConnections, type MemberSource } from '../../src/members/connections.js';
import type { MemberSpec } from '../../src/members/member.js';
import { routesToMember, routeToMember } from '../../src/members/route.js';
import { requestInfoStep } from '../../src/request/filter.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';

const log = pino({ level: 'silent' });
const L = CLUSTER_LABEL;
const fail = (rv: string): string => {
  throw new Error(`unexpected translate(${rv})`);
};

// ---------------------------------------------------------------------------------------------------------------
// Protobuf, by hand: enough of the wire format to build and read kube envelopes.

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
function field(num: number, payload: Buffer | string): Buffer {
  const p = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  return Buffer.concat([varint(num * 8 + 2), varint(p.length), p]);
}
function varintField(num: number, v: number): Buffer {
  return Buffer.concat([varint(num * 8), varint(v)]);
}
const MAGIC = Buffer.from('k8s\0', 'latin1');
function envelope(kind: string, raw: Buffer): Buffer {
  return Buffer.concat([MAGIC, field(1, Buffer.concat([field(1, 'v1'), field(2, kind)])), field(2, raw), field(3, ''), field(4, '')]);
}
function readFields(b: Buffer): Array<{ num: number; data: Buffer | number }> {
  const out: Array<{ num: number; data: Buffer | number }> = [];
  let pos = 0;
  const rv = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const byte = b[pos++]!;
      v += (byte & 0x7f) * mul;
      if (byte < 0x80) return v;
      mul *= 128;
    }
  };
  while (pos < b.length) {
    const tag = rv();
    if (tag % 8 === 0) out.push({ num: tag >> 3, data: rv() });
    else {
      const len = rv();
      out.push({ num: tag >> 3, data: b.subarray(pos, pos + len) });
      pos += len;
    }
  }
  return out;
}
function sub(b: Buffer, num: number): Buffer {
  return readFields(b).find((f) => f.num === num)!.data as Buffer;
}

describe('write bodies', () => {
  it('take the label off an object, remember the cluster it names, and translate its resourceVersion', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', uid: 'u1', resourceVersion: '1099511627800', labels: { app: 'web', [L]: 'member-b' } }, spec: { x: 1 } };
    const wb = parseWriteBody('object', 'application/json', Buffer.from(JSON.stringify(pod)), L);
    expect(wb).toMatchObject({ cluster: 'member-b', resourceVersion: '1099511627800', uid: 'u1', name: 'web' });
    const out = wb.forMember((rv) => (rv === '1099511627800' ? '42' : fail(rv)));
    expect(out.contentType).toBe('application/json');
    expect(JSON.parse(out.body.toString())).toEqual({ ...pod, metadata: { name: 'web', uid: 'u1', resourceVersion: '42', labels: { app: 'web' } } });
  });

  it('drops labels left empty and sends YAML objects as JSON', () => {
    const yaml = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    ${L}: member-a\nspec: {}\n`;
    const wb = parseWriteBody('object', 'application/yaml', Buffer.from(yaml), L);
    expect(wb.cluster).toBe('member-a');
    const out = wb.forMember(fail);
    expect(out.contentType).toBe('application/json');
    expect(JSON.parse(out.body.toString())).toEqual({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: {} });
  });

  it('leaves a body with nothing to change byte for byte, and bodies it cannot read alone', () => {
    const raw = Buffer.from('{"metadata":{"name":"web","labels":{"app":"x"}},  "spec":{"n":1.0}}');
    expect(parseWriteBody('object', 'application/json', raw, L).forMember(fail).body).toBe(raw);
    const cbor = Buffer.from([0xd9, 0xd9, 0xf7, 0xa0]);
    const wb = parseWriteBody('object', 'application/cbor', cbor, L);
    expect(wb.cluster).toBeUndefined();
    expect(wb.forMember(fail)).toEqual({ body: cbor, contentType: 'application/cbor' });
  });

  it('merge and strategic patches: a label value names the cluster, a null removes nothing at the member', () => {
    const set = parseWriteBody('patch', 'application/merge-patch+json', Buffer.from(JSON.stringify({ metadata: { labels: { a: 'b', [L]: 'member-b' }, resourceVersion: '7' } })), L);
    expect(set).toMatchObject({ cluster: 'member-b', resourceVersion: '7' });
    expect(JSON.parse(set.forMember(() => '3').body.toString())).toEqual({ metadata: { labels: { a: 'b' }, resourceVersion: '3' } });
    const unset = parseWriteBody('patch', 'application/strategic-merge-patch+json', Buffer.from(JSON.stringify({ metadata: { labels: { [L]: null, a: null } } })), L);
    expect(unset.cluster).toBeUndefined();
    expect(JSON.parse(unset.forMember(fail).body.toString())).toEqual({ metadata: { labels: { a: null } } });
  });

  it('server-side apply patches stay YAML-typed (as JSON text)', () => {
    const wb = parseWriteBody('patch', 'application/apply-patch+yaml', Buffer.from(`apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    ${L}: member-b\n    app: web\n`), L);
    expect(wb.cluster).toBe('member-b');
    const out = wb.forMember(fail);
    expect(out.contentType).toBe('application/apply-patch+yaml');
    expect(JSON.parse(out.body.toString())).toEqual({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', labels: { app: 'web' } } });
  });

  it('JSON patches: operations on the label go, values carrying it lose it, resourceVersions are translated', () => {
    const ops = [
      { op: 'test', path: '/metadata/resourceVersion', value: '9' },
      { op: 'add', path: `/metadata/labels/fleetgate.io~1cluster`, value: 'member-a' },
      { op: 'replace', path: '/metadata/labels', value: { app: 'web', [L]: 'member-a' } },
      { op: 'remove', path: `/metadata/labels/fleetgate.io~1cluster` },
      { op: 'add', path: '/metadata/labels/tier', value: 'front' },
    ];
    const wb = parseWriteBody('patch', 'application/json-patch+json', Buffer.from(JSON.stringify(ops)), L);
    expect(wb).toMatchObject({ cluster: 'member-a', resourceVersion: '9' });
    expect(JSON.parse(wb.forMember((rv) => (rv === '9' ? '2' : fail(rv))).body.toString())).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: '2' },
      { op: 'replace', path: '/metadata/labels', value: { app: 'web' } },
      { op: 'add', path: '/metadata/labels/tier', value: 'front' },
    ]);
  });

  it('DeleteOptions and Evictions: preconditions name a uid and a resourceVersion to translate', () => {
    const del = parseWriteBody('deleteOptions', 'application/json', Buffer.from(JSON.stringify({ kind: 'DeleteOptions', preconditions: { uid: 'u2', resourceVersion: '11' } })), L);
    expect(del).toMatchObject({ uid: 'u2', resourceVersion: '11' });
    expect(JSON.parse(del.forMember(() => '5').body.toString()).preconditions).toEqual({ uid: 'u2', resourceVersion: '5' });
    const ev = parseWriteBody('eviction', 'application/json', Buffer.from(JSON.stringify({ kind: 'Eviction', metadata: { name: 'web', labels: { [L]: 'x' } }, deleteOptions: { preconditions: { resourceVersion: '12' } } })), L);
    // An Eviction's own metadata is not the pod's: its labels are none of our business.
    expect(ev.cluster).toBeUndefined();
    expect(JSON.parse(ev.forMember(() => '6').body.toString()).deleteOptions.preconditions.resourceVersion).toBe('6');
  });

  it('protobuf Pods: the label entry is cut and the resourceVersion rewritten, every other byte kept', () => {
    const entry = (k: string, v: string) => field(11, Buffer.concat([field(1, k), field(2, v)]));
    const meta = Buffer.concat([field(1, 'web'), field(3, 'demo'), field(5, 'uid-1'), field(6, '1099511627801'), varintField(7, 3), entry('app', 'web'), entry(L, 'member-b')]);
    const spec = field(2, Buffer.concat([field(1, 'opaque-spec-bytes')]));
    const body = envelope('Pod', Buffer.concat([field(1, meta), spec]));
    const wb = parseWriteBody('object', 'application/vnd.kubernetes.protobuf', body, L);
    expect(wb).toMatchObject({ cluster: 'member-b', resourceVersion: '1099511627801', uid: 'uid-1', name: 'web' });
    const out = wb.forMember((rv) => (rv === '1099511627801' ? '77' : fail(rv)));
    expect(out.contentType).toBe('application/vnd.kubernetes.protobuf');
    expect(out.body.subarray(0, 4)).toEqual(MAGIC);
    const raw = sub(out.body.subarray(4), 2);
    const fields = readFields(raw);
    expect(fields.map((f) => f.num)).toEqual([1, 2]);
    expect(fields[1]!.data).toEqual(sub(spec, 2));
    const m = readFields(fields[0]!.data as Buffer);
    expect(m.map((f) => f.num)).toEqual([1, 3, 5, 6, 7, 11]);
    expect((m[3]!.data as Buffer).toString()).toBe('77');
    expect(m[4]!.data).toBe(3);
    expect((sub(m[5]!.data as Buffer, 1)).toString()).toBe('app');
  });

  it('protobuf Evictions and DeleteOptions: preconditions are found and translated', () => {
    const pre = field(2, Buffer.concat([field(1, 'uid-9'), field(2, '500')]));
    const ev = envelope('Eviction', Buffer.concat([field(1, field(1, 'web')), field(2, Buffer.concat([varintField(1, 30), pre]))]));
    const wb = parseWriteBody('eviction', 'application/vnd.kubernetes.protobuf', ev, L);
    expect(wb).toMatchObject({ uid: 'uid-9', resourceVersion: '500' });
    const out = sub(sub(sub(sub(wb.forMember(() => '8').body.subarray(4), 2), 2), 2), 2);
    expect(out.toString()).toBe('8');
    const del = envelope('DeleteOptions', Buffer.concat([varintField(1, 0), pre]));
    expect(parseWriteBody('deleteOptions', 'application/vnd.kubernetes.protobuf', del, L)).toMatchObject({ uid: 'uid-9', resourceVersion: '500' });
    // A protobuf body without the label or a version is passed on as it came.
    const plain = envelope('Pod', field(1, field(1, 'web')));
    expect(parseWriteBody('object', 'application/vnd.kubernetes.protobuf', plain, L).forMember(fail).body).toBe(plain);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Member connections.

function specFor(name: string, url: string, extra: Partial<MemberSpec> = {}): MemberSpec {
  return { name, source: 'static', endpoint: { name, url, token: `token-${name}` }, fingerprint: url, ...extra };
}

function fakeSource(initial: MemberSpec[]) {
  let listener: Parameters<MemberSource['subscribe']>[0] = () => {};
  const source: MemberSource = {
    list: () => initial,
    subscribe(l) {
      listener = l;
      return () => {
        listener = () => {};
      };
    },
  };
  return { source, emit: (type: 'added' | 'changed' | 'removed', spec: MemberSpec) => listener({ type, spec }) };
}

describe('member connections', () => {
  it('follow the registry: added, changed (new upstreams, old closed), removed (closed), broken endpoints reported', async () => {
    const { source, emit } = fakeSource([specFor('member-a', 'http://127.0.0.1:1')]);
    const conns = memberConnections(source, { log });
    const a1 = conns.get('member-a')!;
    expect(a1.upstream.role).toBe('member cluster');
    expect(a1.impersonator).toBe(a1.upstream);
    emit('added', specFor('member-b', 'http://127.0.0.1:2', { impersonator: { name: 'member-b', url: 'http://127.0.0.1:2', token: 'imp' } }));
    const b = conns.get('member-b')!;
    expect(b.impersonator).not.toBe(b.upstream);
    expect(b.impersonator.authHeader).toBe('Bearer imp');
    expect(conns.names()).toEqual(['member-a', 'member-b']);

    // Same fingerprint: the same connection.
    emit('changed', specFor('member-a', 'http://127.0.0.1:1'));
    expect(conns.get('member-a')!.upstream).toBe(a1.upstream);
    let closed = false;
    const origClose = a1.upstream.close.bind(a1.upstream);
    a1.upstream.close = async () => {
      closed = true;
      await origClose();
    };
    emit('changed', specFor('member-a', 'http://127.0.0.1:3'));
    expect(conns.get('member-a')!.upstream.url.port).toBe('3');
    expect(closed).toBe(true);

    emit('changed', specFor('member-b', 'ftp://nope'));
    expect(conns.get('member-b')).toBeUndefined();
    expect(conns.problem('member-b')).toMatch(/must be https/);
    emit('removed', specFor('member-b', 'ftp://nope'));
    expect(conns.names()).toEqual(['member-a']);
    expect(conns.problem('member-b')).toBeUndefined();
    await conns.close();
    expect(conns.get('member-a')).toBeUndefined();
  });

  it("report the registry's own problems with a member", () => {
    const { source } = fakeSource([]);
    const conns = memberConnections({ ...source, problems: () => [{ name: 'member-c', source: 'karmada', error: 'secret karmada-cluster/member-c not found', since: 0 }] }, { log });
    expect(conns.get('member-c')).toBeUndefined();
    expect(conns.problem('member-c')).toBe('secret karmada-cluster/member-c not found');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Routing.

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

interface FakeMember {
  name: string;
  url: string;
  seen: Seen[];
  /** Answers the next requests; default: echo a Pod for writes. */
  handler: (s: Seen, res: ServerResponse) => void;
  server: Server;
}

const ALICE: UserInfo = { username: 'alice', uid: 'u-alice', groups: ['dev', 'system:authenticated'] };

let members: FakeMember[];
let cache: MergedCache;
let conns: MemberConnections;
let gw: Server;
let gwBase: string;

function member(name: string): FakeMember {
  return members.find((m) => m.name === name)!;
}

async function startMember(name: string): Promise<FakeMember> {
  const m: FakeMember = { name, url: '', seen: [], handler: () => {}, server: undefined as unknown as Server };
  m.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() };
      m.seen.push(s);
      m.handler(s, res);
    });
  });
  await new Promise<void>((r) => m.server.listen(0, '127.0.0.1', r));
  m.url = `http://127.0.0.1:${(m.server.address() as AddressInfo).port}`;
  return m;
}

function pod(name: string, rv: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'demo', uid: `uid-${name}-${rv}`, resourceVersion: rv, labels: { app: name } }, spec: {}, ...extra } as KubeObject;
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Reply like a kube-apiserver would after a write: the object at newRV; later, the watch brings it to the cache. */
function writesAs(m: FakeMember, newRV: string, watchDelayMs = 20) {
  m.handler = (s, res) => {
    const name = s.method === 'POST' ? JSON.parse(s.body).metadata.name : s.url.split('?')[0]!.split('/')[6]!;
    const o = pod(name, newRV);
    json(res, s.method === 'POST' ? 201 : 200, o);
    setTimeout(() => cache.sink(m.name, 'pods').apply('MODIFIED', structuredClone(o)), watchDelayMs);
  };
}

function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const h: Record<string, string> = { ...headers };
    if (payload !== undefined) {
      h['content-type'] ??= 'application/json';
      // Node sends a DELETE body unframed unless told its length.
      h['content-length'] = String(Buffer.byteLength(payload));
    }
    const req = request(`${gwBase}${path}`, { method, headers: h }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode!, json: parsed, text });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

beforeAll(async () => {
  members = [await startMember('member-a'), await startMember('member-b')];
  gw = createServer((req, res) => {
    const ctx = { req, res, url: new URL(req.url ?? '/', 'http://gw'), auditID: 'audit-1', log, user: ALICE } as RequestContext;
    requestInfoStep({ deadlineMs: 5000 })(ctx, async () => {
      if (!routesToMember(ctx)) throw new Error(`not routed to members: ${req.method} ${req.url}`);
      await routeToMember(ctx, { cache, members: conns, maxBodyBytes: 1 << 20, settleMs: 1000 });
    }).catch((e) => {
      const s = toStatus(e);
      if (!res.headersSent) res.writeHead(s.code, { 'content-type': 'application/json' });
      res.end(statusBody(s));
    });
  });
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  gwBase = `http://127.0.0.1:${(gw.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await conns?.close();
  for (const s of [gw, ...members.map((m) => m.server)]) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

beforeEach(() => {
  cache = new MergedCache({ instanceID: 'test', windowSize: 100, dropManagedFields: true, rvBase: 1000 });
  cache.sink('member-a', 'pods').replace([pod('web', '10'), pod('both', '11')], '11');
  cache.sink('member-b', 'pods').replace([pod('api', '20'), pod('both', '21')], '21');
  conns = memberConnections(fakeSource(members.map((m) => specFor(m.name, m.url))).source, { log });
  for (const m of members) {
    m.seen = [];
    m.handler = (_s, res) => json(res, 500, { kind: 'Status', code: 500, message: 'unexpected' });
  }
});

afterEach(async () => {
  await conns.close();
});

const gwRV = (cluster: string, name: string) => String(cache.owners('pods', 'demo', name).find((o) => o.cluster === cluster)!.stored.rv);

describe('routing through the merged view', () => {
  it('knows which requests are its own', () => {
    const ctx = (method: string, path: string, cluster?: string) => ({ cluster, info: newRequestInfo(method, path, new URLSearchParams()) });
    expect(routesToMember(ctx('GET', '/api/v1/namespaces/demo/pods/web'))).toBe(false);
    expect(routesToMember(ctx('GET', '/apis/events.k8s.io/v1/events'))).toBe(false);
    expect(routesToMember(ctx('GET', '/api/v1/namespaces/demo/pods/web/log'))).toBe(true);
    expect(routesToMember(ctx('DELETE', '/api/v1/namespaces/demo/pods/web'))).toBe(true);
    expect(routesToMember(ctx('POST', '/apis/events.k8s.io/v1/namespaces/demo/events'))).toBe(true);
    expect(routesToMember(ctx('GET', '/api/v1/namespaces/demo/configmaps'))).toBe(false);
    expect(routesToMember(ctx('GET', '/api/v1/namespaces/demo/configmaps', 'member-a'))).toBe(true);
  });

  it('updates go to the owner as the caller, label off and resourceVersion translated; the answer is labelled and in the gateway space', async () => {
    writesAs(member('member-a'), '15');
    const body = objectOf(cache.owners('pods', 'demo', 'web')[0]!.stored) as any;
    body.metadata.labels.tier = 'front';
    const r = await send('PUT', '/api/v1/namespaces/demo/pods/web?fieldManager=kubectl', body);
    expect(r.status).toBe(200);
    const seen = member('member-a').seen;
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/api/v1/namespaces/demo/pods/web?fieldManager=kubectl');
    expect(seen[0]!.headers['impersonate-user']).toBe('alice');
    expect(seen[0]!.headers['impersonate-group']).toBe('dev');
    expect(seen[0]!.headers.authorization).toBe('Bearer token-member-a');
    expect(seen[0]!.headers['audit-id']).toBe('audit-1');
    const sent = JSON.parse(seen[0]!.body);
    expect(sent.metadata.resourceVersion).toBe('10');
    expect(sent.metadata.labels).toEqual({ app: 'web', tier: 'front' });
    // The answer waited for the cache to hold version 15 and carries its gateway resourceVersion.
    expect(r.json.metadata.labels[L]).toBe('member-a');
    expect(r.json.metadata.resourceVersion).toBe(gwRV('member-a', 'web'));
    expect(cache.owners('pods', 'demo', 'web')[0]!.memberRV).toBe('15');
    expect(member('member-b').seen).toHaveLength(0);
  });

  it('a stale resourceVersion is the 409 the member would give, and nothing is sent', async () => {
    const body = objectOf(cache.owners('pods', 'demo', 'web')[0]!.stored) as any;
    body.metadata.resourceVersion = String(Number(body.metadata.resourceVersion) - 1);
    const r = await send('PUT', '/api/v1/namespaces/demo/pods/web', body);
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({
      reason: 'Conflict',
      message: 'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again',
      details: { name: 'web', kind: 'pods' },
    });
    expect(member('member-a').seen).toHaveLength(0);
  });

  it('a stale delete precondition is the storage layer\'s 409', async () => {
    const r = await send('DELETE', '/api/v1/namespaces/demo/pods/web', { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: '1' } });
    expect(r.status).toBe(409);
    expect(r.json.message).toBe(
      `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: /registry/pods/demo/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ${gwRV('member-a', 'web')}`,
    );
  });

  it('a name two members hold: 409 naming them, unless the label, a uid or a resourceVersion picks one', async () => {
    const r = await send('DELETE', '/api/v1/namespaces/demo/pods/both');
    expect(r.status).toBe(409);
    expect(r.json.reason).toBe('Conflict');
    expect(r.json.message).toContain('member-a, member-b');
    expect(r.json.message).toContain('/clusters/');

    writesAs(member('member-b'), '25');
    const byUid = await send('DELETE', '/api/v1/namespaces/demo/pods/both', { preconditions: { uid: 'uid-both-21' } });
    expect(byUid.status).toBe(200);
    expect(member('member-b').seen).toHaveLength(1);
    expect(JSON.parse(member('member-b').seen[0]!.body)).toEqual({ preconditions: { uid: 'uid-both-21' } });

    writesAs(member('member-a'), '16');
    const byLabel = await send('PATCH', '/api/v1/namespaces/demo/pods/both', { metadata: { labels: { [L]: 'member-a', x: 'y' } } }, { 'content-type': 'application/merge-patch+json' });
    expect(byLabel.status).toBe(200);
    expect(JSON.parse(member('member-a').seen[0]!.body)).toEqual({ metadata: { labels: { x: 'y' } } });
    expect(member('member-a').seen[0]!.headers['content-type']).toBe('application/merge-patch+json');

    const rv = gwRV('member-b', 'both');
    writesAs(member('member-b'), '26');
    const byRV = await send('PATCH', '/api/v1/namespaces/demo/pods/both', [{ op: 'test', path: '/metadata/resourceVersion', value: rv }], { 'content-type': 'application/json-patch+json' });
    expect(byRV.status).toBe(200);
    expect(JSON.parse(member('member-b').seen.at(-1)!.body)).toEqual([{ op: 'test', path: '/metadata/resourceVersion', value: '25' }]);
  });

  it('a label naming another member than the one holding the object, or no member at all, is 422', async () => {
    const moved = await send('PATCH', '/api/v1/namespaces/demo/pods/web', { metadata: { labels: { [L]: 'member-b' } } }, { 'content-type': 'application/merge-patch+json' });
    expect(moved.status).toBe(422);
    expect(moved.json.message).toBe(`Pod "web" is invalid: metadata.labels[${L}]: Invalid value: "member-b": field is immutable: the pod is in member cluster member-a`);
    const unknown = await send('POST', '/api/v1/namespaces/demo/pods', { metadata: { name: 'x', labels: { [L]: 'member-z' } } });
    expect(unknown.status).toBe(422);
    expect(unknown.json.message).toBe(`Pod "x" is invalid: metadata.labels[${L}]: Unsupported value: "member-z": supported values: "member-a", "member-b"`);
  });

  it('creation needs a member: 400 without one, the labelled member otherwise', async () => {
    const none = await send('POST', '/api/v1/namespaces/demo/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'new' }, spec: {} });
    expect(none.status).toBe(400);
    expect(none.json).toMatchObject({
      reason: 'BadRequest',
      message: `the member cluster to create the pod in is not known: set the label ${L} on the object to one of member-a, member-b, or send the request to /clusters/<cluster>/api/v1/namespaces/demo/pods`,
    });
    writesAs(member('member-b'), '30');
    const made = await send('POST', '/api/v1/namespaces/demo/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'new', labels: { [L]: 'member-b' } }, spec: {} });
    expect(made.status).toBe(201);
    expect(JSON.parse(member('member-b').seen[0]!.body).metadata).toEqual({ name: 'new' });
    expect(made.json.metadata.labels[L]).toBe('member-b');
    expect(made.json.metadata.resourceVersion).toBe(gwRV('member-b', 'new'));
    // Server-side apply of something that exists nowhere is a creation too.
    const apply = await send('PATCH', '/api/v1/namespaces/demo/pods/other?fieldManager=me', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: other\n', { 'content-type': 'application/apply-patch+yaml' });
    expect(apply.status).toBe(400);
  });

  it('a name no member holds is 404, and member errors come back as they are', async () => {
    const r = await send('DELETE', '/api/v1/namespaces/demo/pods/ghost');
    expect(r.status).toBe(404);
    expect(r.json.message).toBe('pods "ghost" not found');
    member('member-b').handler = (_s, res) => json(res, 403, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "api" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "demo"', reason: 'Forbidden', code: 403 });
    const denied = await send('DELETE', '/api/v1/namespaces/demo/pods/api');
    expect(denied.status).toBe(403);
    expect(denied.json.message).toContain('User "alice" cannot delete');
  });

  it('when the cache does not catch up in time the member\'s object comes back with the member\'s version', async () => {
    member('member-a').handler = (_s, res) => json(res, 200, pod('web', '99'));
    const started = Date.now();
    const r = await send('PATCH', '/api/v1/namespaces/demo/pods/web', { metadata: { labels: { a: 'b' } } }, { 'content-type': 'application/merge-patch+json' });
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(r.json.metadata.resourceVersion).toBe('99');
    expect(r.json.metadata.labels[L]).toBe('member-a');
  });

  it('logs stream from the owner', async () => {
    member('member-b').handler = (s, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`log of ${s.url}\n`);
    };
    const r = await send('GET', '/api/v1/namespaces/demo/pods/api/log?container=app&follow=true');
    expect(r.status).toBe(200);
    expect(r.text).toBe('log of /api/v1/namespaces/demo/pods/api/log?container=app&follow=true\n');
    expect(member('member-b').seen[0]!.headers['impersonate-user']).toBe('alice');
  });

  it('deletecollection goes to the members the label selector names, without that requirement', async () => {
    member('member-b').handler = (_s, res) => json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '40' }, items: [pod('api', '21')] });
    const r = await send('DELETE', `/api/v1/namespaces/demo/pods?labelSelector=${encodeURIComponent(`app=api,${L} in (member-b,member-z)`)}`);
    expect(r.status).toBe(200);
    expect(member('member-a').seen).toHaveLength(0);
    expect(member('member-b').seen[0]!.url).toBe('/api/v1/namespaces/demo/pods?labelSelector=app%3Dapi');
    expect(r.json.kind).toBe('PodList');
    expect(r.json.items.map((i: any) => i.metadata.labels[L])).toEqual(['member-b']);
  });
});

describe('routing events', () => {
  it('events.k8s.io creations go to the labelled member and come back labelled in the gateway space', async () => {
    member('member-a').handler = (s, res) => {
      const ev = { ...JSON.parse(s.body), metadata: { ...JSON.parse(s.body).metadata, namespace: 'demo', resourceVersion: '50' } };
      json(res, 201, ev);
      const core = { apiVersion: 'v1', kind: 'Event', metadata: ev.metadata, involvedObject: { kind: 'Pod', name: 'web', namespace: 'demo' }, reason: ev.reason };
      setTimeout(() => cache.sink('member-a', 'events').apply('ADDED', structuredClone(core)), 10);
    };
    const r = await send('POST', '/apis/events.k8s.io/v1/namespaces/demo/events', {
      apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'web.1', labels: { [L]: 'member-a' } }, reason: 'Tested', eventTime: '2026-11-22T10:00:00.000000Z', reportingController: 't', reportingInstance: 't', action: 'Test',
    });
    expect(r.status).toBe(201);
    expect(JSON.parse(member('member-a').seen[0]!.body).metadata).toEqual({ name: 'web.1' });
    expect(member('member-a').seen[0]!.url).toBe('/apis/events.k8s.io/v1/namespaces/demo/events');
    expect(r.json.metadata.labels[L]).toBe('member-a');
    expect(r.json.metadata.resourceVersion).toBe(String(cache.owners('events', 'demo', 'web.1')[0]!.stored.rv));
  });

  it('a member the registry cannot use is 503, not an unknown one', async () => {
    await conns.close();
    conns = memberConnections({ ...fakeSource(members.map((m) => specFor(m.name, m.url))).source, problems: () => [{ name: 'member-c', source: 'karmada', error: 'secret missing', since: 0 }] }, { log });
    const r = await send('GET', '/clusters/member-c/api/v1/namespaces');
    expect(r.status).toBe(503);
    expect(r.json.message).toBe('the member cluster "member-c" cannot be reached: secret missing');
  });
});

describe('routing under /clusters/<name>', () => {
  it('forwards anything to that member as the caller, raw', async () => {
    member('member-a').handler = (s, res) => json(res, 200, { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: '5' }, items: [], url: s.url });
    const r = await send('GET', '/clusters/member-a/api/v1/namespaces?limit=5');
    expect(r.status).toBe(200);
    expect(r.json.url).toBe('/api/v1/namespaces?limit=5');
    expect(member('member-a').seen[0]!.headers['impersonate-user']).toBe('alice');
    const missing = await send('GET', '/clusters/member-z/api/v1/namespaces');
    expect(missing.status).toBe(404);
    expect(missing.json.message).toBe('clusters.cluster.karmada.io "member-z" not found');
  });

  it('takes the label off pod bodies and refuses one naming another member', async () => {
    member('member-a').handler = (s, res) => json(res, 201, JSON.parse(s.body));
    const ok = await send('POST', '/clusters/member-a/api/v1/namespaces/demo/pods', { metadata: { name: 'p', labels: { [L]: 'member-a' } } });
    expect(ok.status).toBe(201);
    expect(JSON.parse(member('member-a').seen[0]!.body)).toEqual({ metadata: { name: 'p' } });
    const other = await send('POST', '/clusters/member-a/api/v1/namespaces/demo/pods', { metadata: { name: 'p', labels: { [L]: 'member-b' } } });
    expect(other.status).toBe(400);
  });
});
