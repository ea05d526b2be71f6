// Forwarding to the in-memory control plane through a tiny gateway (a local HTTP server that calls forward(),
// forwardDiscovery() and forwardUpgrade() with a fixed caller): the upstream sees the caller through
// impersonation, RBAC applies to the caller, watches flow, discovery shows only exposed resources, exec works
// over a raw tunnel.

import { createHash } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { statusBody, toStatus } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import { exposedResources, forwardDiscovery, isDiscoveryPath } from '../../src/upstream/discovery.js';
import { forward, requestJSON, subjectAccessReview } from '../../src/upstream/forward.js';
import { forwardUpgrade } from '../../src/upstream/upgrade.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call, type ClusterEndpoint } from '../support/http.js';

let fleet: SimFleet;
let up: Upstream;
let gw: Server;
let base: string;
let admin: ClusterEndpoint;

const ALICE: UserInfo = { username: 'alice', uid: 'u-alice', groups: ['dev', 'system:authenticated'], extra: { 'example.com/Team': ['blue', 'green'] } };
const OPS: UserInfo = { username: 'ops', groups: ['system:masters', 'system:authenticated'] };
const exposed = exposedResources([{ group: 'apps', resources: ['deployments'] }]);
const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

function callerOf(req: IncomingMessage): UserInfo {
  const h = req.headers['x-test-user'];
  return typeof h === 'string' ? JSON.parse(h) : ALICE;
}

function writeError(res: ServerResponse, e: unknown): void {
  const s = toStatus(e);
  res.writeHead(s.code, { 'content-type': 'application/json' });
  res.end(statusBody(s));
}

beforeAll(async () => {
  fleet = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 1 });
  admin = { url: fleet.member('control-plane').url, caPem: fleet.servingCA.certPem, token: fleet.adminToken };
  up = upstreamFromKubeconfig(fleet.member('control-plane').kubeconfigPath, undefined, 'control-plane');
  gw = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://gw').pathname;
    const work = isDiscoveryPath(path)
      ? forwardDiscovery(up, req, res, 'audit-gw', exposed, { impersonate: callerOf(req) })
      : forward(up, req, res, 'audit-gw', { impersonate: callerOf(req) });
    work.catch((e) => writeError(res, e));
  });
  gw.on('upgrade', (req, socket, head) => forwardUpgrade(up, req, socket, head, 'audit-gw', callerOf(req)));
  await new Promise<void>((resolve) => gw.listen(0, '127.0.0.1', resolve));
  base = `127.0.0.1:${(gw.address() as AddressInfo).port}`;

  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: { nodeName: 'control-plane-node-1', containers: [{ name: 'app', image: 'busybox' }] },
  };
  const r = await call(admin, 'POST', '/api/v1/namespaces/default/pods', { body: pod });
  expect(r.status).toBe(201);
});

afterAll(async () => {
  gw?.closeAllConnections();
  await new Promise<void>((resolve) => (gw ? gw.close(() => resolve()) : resolve()));
  await up?.close();
  await fleet?.close();
});

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  json(): any;
}

function send(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`http://${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body: b, text: b.toString(), json: () => JSON.parse(b.toString()) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const as = (u: UserInfo) => ({ 'x-test-user': JSON.stringify(u) });

describe('impersonation', () => {
  it('makes the upstream see the caller: whoami through the gateway answers with the caller, not the gateway', async () => {
    const r = await send('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { 'content-type': 'application/json', authorization: `Bearer ${fleet.adminToken}` },
      JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }));
    expect(r.status).toBe(201);
    expect(r.json().status.userInfo).toEqual({
      username: 'alice',
      uid: 'u-alice',
      groups: ['dev', 'system:authenticated'],
      extra: { 'example.com/Team': ['blue', 'green'] },
    });
  });

  it("applies the upstream's RBAC to the caller and passes its refusal through unchanged", async () => {
    const denied = await send('GET', '/api/v1/namespaces/default/secrets', as({ username: 'bob', groups: ['system:authenticated'] }));
    expect(denied.status).toBe(403);
    expect(denied.json()).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      message: 'secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "default"',
      code: 403,
    });
    const allowed = await send('GET', '/api/v1/namespaces/default/secrets', as(OPS));
    expect(allowed.status).toBe(200);
    expect(allowed.json().kind).toBe('SecretList');
  });
});

describe('requests the gateway makes itself', () => {
  const attrs = (user: UserInfo, verb: string, resource: string) => ({
    user, verb, isResourceRequest: true, path: '', namespace: 'default', apiGroup: '', apiVersion: 'v1', resource, subresource: '', name: '',
  });

  it('asks the upstream for access decisions with SubjectAccessReview', async () => {
    const bob = { username: 'bob', groups: ['system:authenticated'] };
    expect(await subjectAccessReview(up, attrs(bob, 'list', 'secrets'))).toEqual({ allowed: false, reason: '' });
    expect((await subjectAccessReview(up, attrs(OPS, 'list', 'secrets'))).allowed).toBe(true);
    const nonResource = await subjectAccessReview(up, { ...attrs(bob, 'get', ''), isResourceRequest: false, path: '/version' });
    expect(nonResource.allowed).toBe(true);
  });

  it('sends small JSON requests as the gateway or as someone', async () => {
    const self = await requestJSON(up, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    expect(self.status).toBe(201);
    expect(self.body.status.userInfo.username).toBe('admin');
    const asAlice = await requestJSON(up, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }, ALICE);
    expect(asAlice.body.status.userInfo.username).toBe('alice');
    const missing = await requestJSON(up, 'GET', '/api/v1/namespaces/default/configmaps/absent');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'configmaps "absent" not found' });
  });
});

describe('watch', () => {
  it('delivers each event as the upstream sends it', async () => {
    const list = await send('GET', '/api/v1/namespaces/default/configmaps', as(OPS));
    const rv = list.json().metadata.resourceVersion;
    const events: any[] = [];
    let notify = () => {};
    const ac = new AbortController();
    const opened = new Promise<void>((resolve, reject) => {
      const req = request(`http://${base}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}`, { headers: as(OPS), signal: ac.signal }, (res) => {
        expect(res.statusCode).toBe(200);
        let buf = '';
        res.on('data', (c: Buffer) => {
          buf += c.toString();
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            events.push(JSON.parse(buf.slice(0, i)));
            buf = buf.slice(i + 1);
          }
          notify();
        });
        res.on('error', () => {});
        resolve();
      });
      req.on('error', (e) => (ac.signal.aborted ? undefined : reject(e)));
      req.end();
    });
    await opened; // headers arrived before any event: the gateway flushed them
    const seen = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`only ${events.length} events`)), 3000);
        notify = () => {
          if (events.length >= n) {
            clearTimeout(t);
            resolve();
          }
        };
        notify();
      });
    for (const [i, name] of ['one', 'two'].entries()) {
      const r = await call(admin, 'POST', '/api/v1/namespaces/default/configmaps', { body: { metadata: { name }, data: { i: String(i) } } });
      expect(r.status).toBe(201);
      await seen(i + 1); // each event arrives while the stream stays open
      expect(events[i]).toMatchObject({ type: 'ADDED', object: { metadata: { name } } });
    }
    ac.abort();
  });
});

describe('discovery', () => {
  it('lists only exposed groups and resources in aggregated discovery, with a recomputed ETag and 304s', async () => {
    const r = await send('GET', '/apis', { accept: `${V2},application/json` });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe(V2);
    const doc = r.json();
    expect(doc.items.map((i: any) => i.metadata.name).sort()).toEqual(['apps', 'authentication.k8s.io', 'authorization.k8s.io', 'events.k8s.io']);
    const apps = doc.items.find((i: any) => i.metadata.name === 'apps');
    expect(apps.versions.flatMap((v: any) => v.resources.map((x: any) => x.resource))).toEqual(['deployments']);
    const etag = `"${createHash('sha512').update(r.body).digest('hex').toUpperCase()}"`;
    expect(r.headers.etag).toBe(etag);
    expect(r.headers.vary).toBe('Accept');

    const direct = await call(admin, 'GET', '/apis', { accept: V2 });
    expect(direct.headers.etag).not.toBe(etag);

    const again = await send('GET', '/apis', { accept: `${V2},application/json`, 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(etag);
    expect(again.body.length).toBe(0);
    const stale = await send('GET', '/apis', { accept: `${V2},application/json`, 'if-none-match': direct.headers.etag as string });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(r.body)).toBe(true);
  });

  it('filters the legacy documents and answers 404 for groups that have nothing exposed', async () => {
    const core = await send('GET', '/api/v1');
    expect(core.status).toBe(200);
    expect(core.headers['content-type']).toBe('application/json');
    const names = core.json().resources.map((r: any) => r.name);
    expect(names).toContain('pods');
    expect(names).toContain('pods/exec');
    expect(names).toContain('events');
    expect(names).not.toContain('secrets');
    expect(names.every((n: string) => n === 'pods' || n === 'events' || n.startsWith('pods/'))).toBe(true);

    const groups = await send('GET', '/apis');
    expect(groups.json().groups.map((g: any) => g.name).sort()).toEqual(['apps', 'authentication.k8s.io', 'authorization.k8s.io', 'events.k8s.io']);

    const hidden = await send('GET', '/apis/rbac.authorization.k8s.io/v1');
    expect(hidden.status).toBe(404);
    expect(hidden.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(hidden.text).toBe('404 page not found\n');

    const versions = await send('GET', '/api');
    const direct = await call(admin, 'GET', '/api');
    expect(versions.text).toBe(direct.text);
  });
});

describe('exec over a raw upgrade tunnel', () => {
  interface Session {
    frames: Buffer[];
    closed: Promise<number>;
  }

  function exec(query: string, user: UserInfo, headers: Record<string, string> = {}): Promise<Session | { status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://${base}/api/v1/namespaces/default/pods/web/exec?${query}`, ['v5.channel.k8s.io'], { headers: { ...as(user), ...headers } });
      const frames: Buffer[] = [];
      ws.on('message', (d: Buffer) => frames.push(Buffer.from(d)));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      ws.on('error', (e) => reject(e));
      ws.on('open', () => {
        expect(ws.protocol).toBe('v5.channel.k8s.io');
        resolve({ frames, closed: new Promise((r) => ws.on('close', (code) => r(code))) });
      });
    });
  }

  it("runs the command in the upstream's pod and ends with the exit status", async () => {
    const s = await exec('command=echo&command=hello&stdout=true&stderr=true', OPS, { authorization: 'Bearer caller-secret' });
    if (!('frames' in s)) throw new Error(`upgrade refused: ${s.status} ${s.body}`);
    expect(await s.closed).toBe(1000);
    const stdout = s.frames.filter((f) => f[0] === 1).map((f) => f.subarray(1).toString()).join('');
    expect(stdout).toBe('hello\n');
    const status = s.frames.find((f) => f[0] === 3);
    expect(JSON.parse(status!.subarray(1).toString())).toMatchObject({ status: 'Success' });
  });

  it("relays the upstream's refusal as it is, for a caller without the right", async () => {
    const s = await exec('command=ls&stdout=true', { username: 'bob', groups: ['system:authenticated'] });
    expect('status' in s && s.status).toBe(403);
    const body = JSON.parse((s as { body: string }).body);
    expect(body).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
    expect(body.message).toContain('User "bob" cannot');
  });
});
