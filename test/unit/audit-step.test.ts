// The audit step in a small chain on a plain HTTP server: request info, a stand-in for authentication (the user
// comes from test headers), the audit steps, and a last step each test chooses.

import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newForbidden, newUnauthorized, toStatus } from '../../src/api/status.js';
import {
  addAuditAnnotation,
  annotateAuthorization,
  auditAuthenticationFailuresStep,
  auditStep,
  compilePolicy,
  newAuditor,
  parsePolicy,
  type Auditor,
} from '../../src/audit/index.js';
import { readBody } from '../../src/request/body.js';
import { requestInfoStep } from '../../src/request/filter.js';
import { compose, type Step } from '../../src/server/chain.js';
import type { RequestContext } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { writeStatus as writeUpgradeStatus } from '../../src/upstream/upgrade.js';

const log = pino({ level: 'silent' });
let dir: string;
let logPath: string;
let server: Server;
let base: string;
let auditor: Auditor;
let registry: Registry;
let last: Step;
let applied: string[];

const POLICY = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: None
  nonResourceURLs: ["/healthz*"]
- level: RequestResponse
  resources: [{group: apps, resources: ["deployments", "deployments/scale"]}]
- level: Request
  verbs: [create, update, patch, delete]
- level: Metadata
  omitStages: [RequestReceived]
`;

function fakeAuthn(): Step {
  return async (ctx, next) => {
    const u = ctx.req.headers['x-user'];
    if (!u) throw newUnauthorized();
    ctx.user = { username: String(u), groups: ['dev', 'system:authenticated'] };
    const imp = ctx.req.headers['x-impersonator'];
    if (imp) ctx.impersonator = { username: String(imp), uid: 'u-1', groups: ['system:masters'], extra: { scopes: ['a'] } };
    addAuditAnnotation(ctx, 'authentication.fleetgate.io/method', 'test');
    await next();
  };
}

async function start(opts: { failOpen?: boolean; logPathOverride?: string } = {}): Promise<void> {
  registry = new Registry();
  auditor = newAuditor(
    { policy: compilePolicy(parsePolicy(POLICY)), log: { path: opts.logPathOverride ?? logPath, flushIntervalMs: 60_000 }, failOpen: opts.failOpen, maxRequestBodyBytes: 1024 * 1024, maxResponseObjectBytes: 4096 },
    { log, registry },
  );
  const chain = compose([requestInfoStep({ deadlineMs: 5000 }), auditAuthenticationFailuresStep(auditor), fakeAuthn(), auditStep(auditor), (ctx, next) => last(ctx, next)]);
  server = createServer((req, res) => {
    const auditID = String(req.headers['audit-id'] ?? 'generated');
    res.setHeader('Audit-Id', auditID);
    const ctx = { req, res, url: new URL(req.url ?? '/', 'http://x'), auditID, log } as RequestContext;
    chain(ctx).catch((e) => writeStatus(res, auditID, toStatus(e)));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const auditID = String(req.headers['audit-id'] ?? 'generated');
    const ctx = { req, res: undefined, url: new URL(req.url ?? '/', 'http://x'), auditID, log, upgrade: { socket, head } } as unknown as RequestContext;
    chain(ctx).catch((e) => writeUpgradeStatus(socket, auditID, toStatus(e)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-audit-step-'));
  logPath = join(dir, 'audit.log');
  applied = [];
  last = async (ctx) => {
    applied.push(`${ctx.req.method} ${ctx.url.pathname}`);
    const body = ctx.body ?? (['POST', 'PUT', 'PATCH'].includes(ctx.req.method!) ? await readBody(ctx, 1 << 20) : undefined);
    ctx.res.writeHead(200, { 'Content-Type': 'application/json' });
    const echo = body && ctx.req.headers['content-type'] === 'application/json' ? JSON.parse(body.toString()) : null;
    ctx.res.end(JSON.stringify({ kind: 'Deployment', metadata: { name: 'd', managedFields: [{ manager: 'x' }] }, echo }));
  };
});
afterEach(async () => {
  await new Promise((r) => server.close(r));
  await auditor.close();
  await rm(dir, { recursive: true, force: true });
});

function send(method: string, path: string, o: { body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'x-user': 'alice', 'user-agent': 'kubectl/v1.33.0 (test)', ...o.headers };
    if (o.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = String(Buffer.byteLength(o.body));
    }
    const req = httpRequest(base + path, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

async function events(): Promise<any[]> {
  await auditor.flush();
  const text = await readFile(logPath, 'utf8').catch(() => '');
  return text.trim() === '' ? [] : text.trim().split('\n').map((l) => JSON.parse(l));
}
const byID = (evs: any[], id: string) => evs.filter((e) => e.auditID === id);

async function until(pred: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((a, v) => a + v.value, 0);
}

describe('audit step', () => {
  it('a read at Metadata: one ResponseComplete with every metadata field', async () => {
    await start();
    const r = await send('GET', '/api/v1/namespaces/demo/pods?limit=500', { headers: { 'audit-id': 'read-1', 'x-forwarded-for': '10.0.0.1, bogus, 10.0.0.2' } });
    expect(r.status).toBe(200);
    const evs = byID(await events(), 'read-1');
    expect(evs).toHaveLength(1);
    const e = evs[0];
    expect(Object.keys(e)).toEqual([
      'kind', 'apiVersion', 'level', 'auditID', 'stage', 'requestURI', 'verb', 'user', 'sourceIPs', 'userAgent', 'objectRef', 'responseStatus',
      'requestReceivedTimestamp', 'stageTimestamp', 'annotations',
    ]);
    expect(e).toMatchObject({
      kind: 'Event',
      apiVersion: 'audit.k8s.io/v1',
      level: 'Metadata',
      stage: 'ResponseComplete',
      requestURI: '/api/v1/namespaces/demo/pods?limit=500',
      verb: 'list',
      user: { username: 'alice', groups: ['dev', 'system:authenticated'] },
      sourceIPs: ['10.0.0.1', '10.0.0.2', '127.0.0.1'],
      userAgent: 'kubectl/v1.33.0 (test)',
      objectRef: { resource: 'pods', namespace: 'demo', apiVersion: 'v1' },
      responseStatus: { metadata: {}, code: 200 },
      annotations: { 'authentication.fleetgate.io/method': 'test' },
    });
    expect(e.requestReceivedTimestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(e.stageTimestamp >= e.requestReceivedTimestamp).toBe(true);
    expect(e.requestObject).toBeUndefined();
    expect(e.responseObject).toBeUndefined();
    expect(await metric('apiserver_audit_level_total', { level: 'Metadata' })).toBe(1);
  });

  it('level None writes nothing', async () => {
    await start();
    await send('GET', '/healthz', { headers: { 'audit-id': 'h' } });
    expect(await events()).toEqual([]);
    expect(await metric('apiserver_audit_level_total', { level: 'None' })).toBe(1);
  });

  it('a mutation: RequestReceived is stored before the request goes on; requestObject at Request level', async () => {
    await start();
    let seenBeforeApply: any[] = [];
    last = async (ctx) => {
      // What a crash at this point would leave behind: the record is already in the file.
      seenBeforeApply = (await readFile(logPath, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
      ctx.res.writeHead(201, { 'Content-Type': 'application/json' });
      ctx.res.end('{"kind":"ConfigMap","metadata":{"name":"cm","uid":"u"}}');
    };
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'demo', managedFields: [{ manager: 'kubectl' }] }, data: { a: 'b' } });
    const r = await send('POST', '/api/v1/namespaces/demo/configmaps', { body, headers: { 'audit-id': 'create-1' } });
    expect(r.status).toBe(201);
    expect(seenBeforeApply.map((e) => [e.auditID, e.stage])).toEqual([['create-1', 'RequestReceived']]);
    expect(seenBeforeApply[0].requestObject).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'demo' }, data: { a: 'b' } });
    expect(seenBeforeApply[0].objectRef).toEqual({ resource: 'configmaps', namespace: 'demo', name: 'cm', apiVersion: 'v1' });
    const evs = byID(await events(), 'create-1');
    expect(evs.map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    expect(evs[1].level).toBe('Request');
    expect(evs[1].responseStatus).toEqual({ metadata: {}, code: 201 });
    expect(evs[1].responseObject).toBeUndefined();
    expect(evs[0].stageTimestamp).toBe(evs[0].requestReceivedTimestamp);
  });

  it('RequestResponse keeps the response (managedFields dropped) and YAML apply bodies as objects', async () => {
    await start();
    const yamlBody = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 3\n';
    await send('PATCH', '/apis/apps/v1/namespaces/demo/deployments/d?fieldManager=kubectl', { body: yamlBody, headers: { 'audit-id': 'apply-1', 'content-type': 'application/apply-patch+yaml' } });
    const [rr, rc] = byID(await events(), 'apply-1');
    expect(rr.stage).toBe('RequestReceived');
    expect(rr.requestObject).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 3 } });
    expect(rc.level).toBe('RequestResponse');
    expect(rc.verb).toBe('patch');
    expect(rc.responseObject).toEqual({ kind: 'Deployment', metadata: { name: 'd' }, echo: null });
  });

  it('bodies that routing streams are left unread; bodies a later step reads are logged at the end', async () => {
    await start();
    let streamed = '';
    last = async (ctx) => {
      if (ctx.info.subresource === 'eviction') {
        // As a forward without a body does: the request stream itself.
        for await (const c of ctx.req as AsyncIterable<Buffer>) streamed += c.toString();
      } else {
        await readBody(ctx, 1 << 20);
      }
      ctx.res.writeHead(201, { 'Content-Type': 'application/json' });
      ctx.res.end('{}');
    };
    const eviction = '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}';
    expect((await send('POST', '/api/v1/namespaces/demo/pods/p/eviction', { body: eviction, headers: { 'audit-id': 'evict' } })).status).toBe(201);
    expect(streamed).toBe(eviction);
    await send('DELETE', '/api/v1/namespaces/demo/configmaps/c', { body: '{"kind":"DeleteOptions","propagationPolicy":"Foreground"}', headers: { 'audit-id': 'del-body' } });
    const evs = await events();
    const evictRC = byID(evs, 'evict').find((e) => e.stage === 'ResponseComplete');
    expect(evictRC.requestObject).toBeUndefined();
    const [rr, rc] = byID(evs, 'del-body');
    expect(rr.requestObject).toBeUndefined();
    expect(rc.requestObject).toEqual({ kind: 'DeleteOptions', propagationPolicy: 'Foreground' });
  });

  it('a RequestResponse body over the limit is left out and says so; gzip responses are read', async () => {
    await start();
    last = async (ctx) => {
      ctx.res.writeHead(200, { 'Content-Type': 'application/json' });
      const res = ctx.res as ServerResponse;
      res.write('{"kind":"Deployment","pad":"');
      res.write('x'.repeat(5000));
      ctx.res.end('"}');
    };
    await send('GET', '/apis/apps/v1/namespaces/demo/deployments/big', { headers: { 'audit-id': 'big' } });
    last = async (ctx) => {
      ctx.res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      ctx.res.end(gzipSync('{"kind":"Deployment","metadata":{"name":"z"}}'));
    };
    await send('GET', '/apis/apps/v1/namespaces/demo/deployments/z', { headers: { 'audit-id': 'gz' } });
    const evs = await events();
    const big = byID(evs, 'big').find((e) => e.stage === 'ResponseComplete');
    expect(big.responseObject).toBeUndefined();
    expect(big.annotations['audit.fleetgate.io/response-object-omitted']).toBe('larger than 4096 bytes');
    expect(byID(evs, 'gz').find((e) => e.stage === 'ResponseComplete').responseObject).toEqual({ kind: 'Deployment', metadata: { name: 'z' } });
  });

  it('an unwritable log refuses mutations with 503 before they are applied, and reads still work', async () => {
    await mkdir(logPath); // the log path is a directory: every write fails
    await start();
    const m = await send('DELETE', '/api/v1/namespaces/demo/configmaps/cm', { headers: { 'audit-id': 'del-1' } });
    expect(m.status).toBe(503);
    expect(JSON.parse(m.text)).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'ServiceUnavailable', message: 'failed to store audit event', code: 503 });
    expect(m.headers['audit-id']).toBe('del-1');
    const p = await send('POST', '/api/v1/namespaces/demo/configmaps', { body: '{"metadata":{"name":"x"}}' });
    expect(p.status).toBe(503);
    expect(applied).toEqual([]);
    const r = await send('GET', '/api/v1/namespaces/demo/configmaps');
    expect(r.status).toBe(200);
    expect(applied).toEqual(['GET /api/v1/namespaces/demo/configmaps']);
    await auditor.flush();
    expect(await metric('apiserver_audit_requests_rejected_total')).toBe(2);
    // Both mutations' RequestReceived and ResponseComplete, and the read's ResponseComplete, were lost and counted.
    expect(await metric('apiserver_audit_error_total', { plugin: 'log' })).toBe(5);
  });

  it('failOpen lets the mutation through unaudited', async () => {
    await mkdir(logPath);
    await start({ failOpen: true });
    const m = await send('DELETE', '/api/v1/namespaces/demo/configmaps/cm');
    expect(m.status).toBe(200);
    expect(applied).toEqual(['DELETE /api/v1/namespaces/demo/configmaps/cm']);
    expect(await metric('apiserver_audit_requests_rejected_total')).toBe(1);
  });

  it('errors from later steps: the Status is the responseStatus, and annotations from any step are kept', async () => {
    await start();
    last = async (ctx) => {
      annotateAuthorization(ctx, { allowed: false, reason: 'no RBAC policy matched' });
      addAuditAnnotation(ctx, 'authorization.k8s.io/decision', 'allow'); // a second value is ignored
      throw newForbidden({ group: 'apps', resource: 'deployments' }, 'd', 'User "alice" cannot delete resource');
    };
    const r = await send('DELETE', '/apis/apps/v1/namespaces/demo/deployments/d', { headers: { 'audit-id': 'forbid' } });
    expect(r.status).toBe(403);
    const [, rc] = byID(await events(), 'forbid');
    expect(rc.responseStatus).toEqual({
      metadata: {},
      status: 'Failure',
      message: JSON.parse(r.text).message,
      reason: 'Forbidden',
      details: { name: 'd', group: 'apps', kind: 'deployments' },
      code: 403,
    });
    expect(rc.responseObject).toEqual(JSON.parse(r.text));
    expect(rc.annotations).toMatchObject({ 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': 'no RBAC policy matched' });
  });

  it('a Status written by a later step (not thrown) fills responseStatus at Metadata level', async () => {
    await start();
    last = async (ctx) => writeStatus(ctx.res, ctx.auditID, toStatus(newForbidden({ group: '', resource: 'pods' }, '', 'nope')));
    await send('GET', '/api/v1/pods', { headers: { 'audit-id': 'written' } });
    const [e] = byID(await events(), 'written');
    expect(e.responseStatus).toMatchObject({ status: 'Failure', reason: 'Forbidden', code: 403 });
    expect(e.responseObject).toBeUndefined();
  });

  it('an unexpected error is a Panic event, then the ResponseComplete of the 500', async () => {
    await start();
    last = async () => {
      throw new TypeError('boom');
    };
    const r = await send('GET', '/api/v1/pods', { headers: { 'audit-id': 'panic' } });
    expect(r.status).toBe(500);
    const evs = byID(await events(), 'panic');
    expect(evs.map((e) => e.stage)).toEqual(['Panic', 'ResponseComplete']);
    expect(evs[0].responseStatus).toEqual({ metadata: {}, status: 'Failure', message: "APIServer panic'd: boom", reason: 'InternalError', code: 500 });
    expect(evs[1].responseStatus).toMatchObject({ code: 500, reason: 'InternalError' });
  });

  it('long-running requests: ResponseStarted when the head goes out, ResponseComplete when the stream ends', async () => {
    await start();
    let release!: () => void;
    const headSent = new Promise<void>((r) => (release = r));
    last = async (ctx) => {
      ctx.res.writeHead(200, { 'Content-Type': 'application/json' });
      (ctx.res as ServerResponse).write('{"type":"ADDED","object":{}}\n');
      release();
      await new Promise((r) => setTimeout(r, 50));
      ctx.res.end();
    };
    const done = send('GET', '/api/v1/namespaces/demo/pods?watch=true', { headers: { 'audit-id': 'watch-1' } });
    await headSent;
    await auditor.flush();
    expect(byID(await events(), 'watch-1').map((e) => e.stage)).toEqual(['ResponseStarted']);
    await done;
    const evs = byID(await events(), 'watch-1');
    expect(evs.map((e) => [e.stage, e.verb, e.responseStatus.code])).toEqual([
      ['ResponseStarted', 'watch', 200],
      ['ResponseComplete', 'watch', 200],
    ]);
    expect(evs[1].responseObject).toBeUndefined();
  });

  it('tunnels: ResponseStarted with the 101, ResponseComplete when the socket closes; a refused upgrade is one event', async () => {
    await start();
    let closeTunnel!: () => void;
    last = async (ctx) => {
      const socket = ctx.upgrade!.socket;
      if (ctx.req.headers['x-refuse']) throw newForbidden({ group: '', resource: 'pods' }, 'api', 'no exec');
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      closeTunnel = () => socket.destroy();
    };
    const upgrade = (id: string, extra: Record<string, string> = {}) =>
      new Promise<{ status: number; socket?: Duplex }>((resolve, reject) => {
        const req = httpRequest(base + '/api/v1/namespaces/demo/pods/api/exec?command=sh', {
          headers: { 'x-user': 'alice', 'audit-id': id, connection: 'Upgrade', upgrade: 'websocket', ...extra },
        });
        req.on('upgrade', (res, socket) => resolve({ status: res.statusCode!, socket }));
        req.on('response', (res) => {
          res.resume();
          resolve({ status: res.statusCode! });
        });
        req.on('error', reject);
        req.end();
      });
    const open = await upgrade('tunnel');
    expect(open.status).toBe(101);
    await until(async () => byID(await events(), 'tunnel').length === 1);
    expect(byID(await events(), 'tunnel').map((e) => [e.stage, e.responseStatus.code])).toEqual([['ResponseStarted', 101]]);
    const closed = new Promise((r) => open.socket!.once('close', r));
    closeTunnel();
    await closed;
    await until(async () => byID(await events(), 'tunnel').length === 2);
    expect(byID(await events(), 'tunnel').map((e) => [e.stage, e.verb, e.responseStatus.code])).toEqual([
      ['ResponseStarted', 'get', 101],
      ['ResponseComplete', 'get', 101],
    ]);
    open.socket!.destroy();

    const refused = await upgrade('refused', { 'x-refuse': '1' });
    expect(refused.status).toBe(403);
    const evs = byID(await events(), 'refused');
    expect(evs.map((e) => [e.stage, e.responseStatus.code, e.responseStatus.reason])).toEqual([
      ['ResponseStarted', 403, 'Forbidden'],
      ['ResponseComplete', 403, 'Forbidden'],
    ]);
  });

  it('impersonation: user is who asked, impersonatedUser who they acted as; the policy sees the impersonator', async () => {
    await start();
    await send('GET', '/api/v1/namespaces/demo/pods/p', { headers: { 'audit-id': 'imp', 'x-impersonator': 'admin' } });
    const [e] = byID(await events(), 'imp');
    expect(e.user).toEqual({ username: 'admin', uid: 'u-1', groups: ['system:masters'], extra: { scopes: ['a'] } });
    expect(e.impersonatedUser).toEqual({ username: 'alice', groups: ['dev', 'system:authenticated'] });
  });

  it('failed authentication is audited with no user and what was tried', async () => {
    await start();
    const r = await send('GET', '/api/v1/pods', { headers: { 'audit-id': 'anon', 'x-user': '', authorization: 'Bearer abc' } });
    expect(r.status).toBe(401);
    const evs = byID(await events(), 'anon');
    expect(evs).toHaveLength(1);
    expect(evs[0]).toMatchObject({ stage: 'ResponseComplete', user: {}, responseStatus: { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 } });
  });

  it('a client that goes away before any answer: "Connection closed early"', async () => {
    await start();
    let gone!: () => void;
    const clientGone = new Promise<void>((r) => (gone = r));
    last = async (ctx) => {
      await new Promise((r) => ctx.res.once('close', r));
      gone();
    };
    const req = httpRequest(base + '/api/v1/pods', { headers: { 'x-user': 'alice', 'audit-id': 'early' } });
    req.on('error', () => {});
    req.end();
    setTimeout(() => req.destroy(), 50);
    await clientGone;
    await until(async () => byID(await events(), 'early').length > 0);
    const [e] = byID(await events(), 'early');
    expect(e.responseStatus).toEqual({ metadata: {}, status: 'Success', message: 'Connection closed early', code: 200 });
  });

  it('exactly one ResponseComplete per request under concurrency', async () => {
    await start();
    const n = 40;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        i % 2 === 0
          ? send('GET', `/api/v1/namespaces/demo/pods/p${i}`, { headers: { 'audit-id': `c-${i}` } })
          : send('PUT', `/api/v1/namespaces/demo/configmaps/c${i}`, { body: `{"metadata":{"name":"c${i}"}}`, headers: { 'audit-id': `c-${i}` } }),
      ),
    );
    // close() is the graceful shutdown: whatever is still queued reaches the file.
    await auditor.close();
    const all = (await readFile(logPath, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    for (let i = 0; i < n; i++) expect(all.filter((e) => e.auditID === `c-${i}` && e.stage === 'ResponseComplete')).toHaveLength(1);
  });
});
