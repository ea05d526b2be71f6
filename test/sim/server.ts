// The HTTPS front of one simulated cluster: authentication, impersonation, RBAC, then discovery, CRUD, LIST,
// WATCH, subresources (status, scale, log, exec, eviction) on the cluster's stores. It answers like a
// kube-apiserver to kubectl and client-go; every error is a Status built by src/api.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { parseListOptions } from '../../src/api/listoptions.js';
import type { PatchType } from '../../src/api/patch.js';
import {
  newBadRequest,
  newMethodNotSupported,
  newNotAcceptable,
  newNotFound,
  newResourceNotFound,
  newRequestEntityTooLarge,
  newUnauthorized,
  newUnsupportedMediaType,
  newForbiddenAttributes,
  statusBody,
  toStatus,
  type Status,
} from '../../src/api/status.js';
import { parseAcceptForTable, partialObjectMetadataJson, tableHeadJson } from '../../src/api/table.js';
import type { Attributes, UserInfo } from '../../src/api/user.js';
import { listPage, tableRowOf, writeList, type ListTarget, type ResponseForm } from '../../src/cache/list.js';
import { metadataOf, objectOf, type StoredObject } from '../../src/cache/store.js';
import { defaultWatchSettings, serveWatch, type ActiveWatch, type WatchSettings } from '../../src/cache/watch.js';
import { attributesOf } from '../../src/authz/cachedreads.js';
import { authorizeImpersonation, impersonationHeadersOf, requestedImpersonation } from '../../src/authn/impersonation.js';
import { newRequestInfo, type RequestInfo } from '../../src/request/requestinfo.js';
import { authApiResources, handleAuthApi } from './authapis.js';
import { authenticate } from './authn.js';
import type { SimCluster } from './cluster.js';
import { aggregatedDiscovery, aggregatedVersion, apiGroupDoc, apiGroupList, apiResourceList, apiVersions, AGGREGATED_V2, AGGREGATED_V2BETA1 } from './discovery.js';
import { handleExecUpgrade } from './exec.js';
import { serveOpenAPIV2, serveOpenAPIV3 } from './openapi.js';
import { servePodLog } from './podlog.js';
import { decodeProtobufObject } from './protobuf.js';
import { rbacAuthorize } from './rbac.js';
import type { SimResource } from './registry.js';
import { SERVER_CIPHER_OPTIONS } from '../../src/pki/ciphers.js';

export interface SimServerOptions {
  cluster: SimCluster;
  tls: { certPem: string; keyPem: string; clientCaPem: string };
  tokens?: Map<string, UserInfo>;
  allowAnonymous?: boolean;
  watch?: Partial<WatchSettings>;
  /** Largest request body, as kube-apiserver's 3 MiB. */
  maxBodyBytes?: number;
  port?: number;
  gitVersion?: string;
}

export interface SimServer {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json';
const PATCH_TYPES = new Set<string>([
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
]);

export async function startSimServer(opts: SimServerOptions): Promise<SimServer> {
  const watches = new Set<ActiveWatch>();
  const ctx: Ctx = {
    ...opts,
    tokens: opts.tokens ?? new Map(),
    allowAnonymous: opts.allowAnonymous ?? true,
    watchSettings: { ...defaultWatchSettings, ...opts.watch },
    maxBodyBytes: opts.maxBodyBytes ?? 3 * 1024 * 1024,
    watches,
    address: '',
  };
  const server = createServer(
    // The suites in kube-apiserver's (Go's) order, as the gateway's listener has them.
    { cert: opts.tls.certPem, key: opts.tls.keyPem, ca: opts.tls.clientCaPem, requestCert: true, rejectUnauthorized: false, keepAlive: true, ...SERVER_CIPHER_OPTIONS },
    (req, res) => {
      handle(ctx, req, res).catch((e) => writeStatus(res, toStatus(e)));
    },
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgrade(ctx, req, socket, head).catch((e) => {
      const s = toStatus(e);
      socket.end(`HTTP/1.1 ${s.code} ${s.reason}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${statusBody(s)}`);
    });
  });
  const sockets = new Set<Socket>();
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  ctx.address = `127.0.0.1:${port}`;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    server,
    async close() {
      for (const w of watches) w.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

interface Ctx extends SimServerOptions {
  tokens: Map<string, UserInfo>;
  allowAnonymous: boolean;
  watchSettings: WatchSettings;
  maxBodyBytes: number;
  watches: Set<ActiveWatch>;
  address: string;
}

// ---- the chain ----

/** The caller, and the identity it impersonates if RBAC lets it (the gateway's implementation of the filter). */
async function identify(ctx: Ctx, req: IncomingMessage): Promise<UserInfo> {
  const user = authenticate(req, { tokens: ctx.tokens, allowAnonymous: ctx.allowAnonymous });
  if (!user) throw newUnauthorized();
  const headers = impersonationHeadersOf(req);
  const wanted = headers ? requestedImpersonation(headers) : null;
  if (!wanted) return user;
  return authorizeImpersonation(user, wanted, async (a) => rbacAuthorize(ctx.cluster, a));
}

function authorizeRequest(ctx: Ctx, user: UserInfo, info: RequestInfo): void {
  const attrs = attributesOf(user, info);
  const d = rbacAuthorize(ctx.cluster, attrs);
  if (!d.allowed) throw newForbiddenAttributes(attrs, d.reason);
}

async function handle(ctx: Ctx, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.setHeader('Audit-Id', typeof req.headers['audit-id'] === 'string' ? req.headers['audit-id'] : randomUUID());
  const url = new URL(req.url ?? '/', 'https://sim');
  const info = newRequestInfo(req.method ?? 'GET', url.pathname, url.searchParams);
  const user = await identify(ctx, req);
  authorizeRequest(ctx, user, info);
  if (!info.isResourceRequest) return nonResource(ctx, req, res, url);

  const body = ['POST', 'PUT', 'PATCH'].includes(req.method ?? '') ? await readBody(req, ctx.maxBodyBytes) : undefined;
  if (info.apiGroup === 'authentication.k8s.io' || info.apiGroup === 'authorization.k8s.io') {
    const parsed = body !== undefined ? parseJsonBody(req, body) : undefined;
    const out = handleAuthApi(info, parsed, user, (a) => rbacAuthorize(ctx.cluster, a), ctx.cluster);
    if (out) return writeJson(res, out.code, JSON.stringify(out.body));
  }
  const r = ctx.cluster.resource(info.apiGroup, info.apiVersion, info.resource);
  if (!r) {
    // An unknown group/version never reaches an API handler: the mux's plain-text 404.
    const served = ctx.cluster.servesGroupVersion(info.apiGroup, info.apiVersion) || authApiResources().some((x) => x.group === info.apiGroup && x.version === info.apiVersion);
    if (!served) return pageNotFound(res);
    throw newResourceNotFound();
  }
  // Cluster-scoped resources have no namespaced paths; namespaced ones are reachable across namespaces only
  // for list, watch and deletecollection.
  // (RequestInfo names a namespace's own namespace after itself, as the apiserver does.)
  if (!r.namespaced && info.namespace && !(r.group === '' && r.resource === 'namespaces')) throw newResourceNotFound();
  if (r.namespaced && !info.namespace && (info.name || info.verb === 'create')) throw newResourceNotFound();
  if (info.subresource) return subresource(ctx, req, res, r, info, url, body);

  const q = url.searchParams;
  const dryRun = q.getAll('dryRun').includes('All');
  switch (info.verb) {
    case 'get': {
      const o = getOr404(ctx, r, info);
      return writeObject(req, res, r, 200, o, q);
    }
    case 'list': {
      const opts = parseListOptions(q, { group: r.group, version: r.version, resource: r.resource });
      const form = negotiate(req, q);
      const target = listTarget(r, info.namespace);
      const page = await listPage(ctx.cluster.store(r), target, opts);
      return writeList(res, target, page, form);
    }
    case 'watch': {
      const opts = parseListOptions(q, { group: r.group, version: r.version, resource: r.resource });
      const form = negotiate(req, q);
      const w = serveWatch(res, ctx.cluster.store(r), listTarget(r, info.namespace), opts, form, ctx.watchSettings);
      ctx.watches.add(w);
      void w.done.then(() => ctx.watches.delete(w));
      return;
    }
    case 'create': {
      const obj = parseJsonBody(req, body!);
      const stored = ctx.cluster.create(r, info.namespace, obj, { dryRun });
      return writeObject(req, res, r, 201, stored, q);
    }
    case 'update': {
      const obj = parseJsonBody(req, body!);
      const stored = ctx.cluster.update(r, info.namespace, info.name, obj, { dryRun });
      return writeObject(req, res, r, 200, stored, q);
    }
    case 'patch': {
      const stored = ctx.cluster.patch(r, info.namespace, info.name, body!.toString('utf8'), patchType(req), { dryRun });
      return writeObject(req, res, r, 200, stored, q);
    }
    case 'delete': {
      const opts = deleteOptions(req, q, body);
      const stored = ctx.cluster.delete(r, info.namespace, info.name, { ...opts, dryRun: dryRun || opts.dryRun });
      return writeDeleted(req, res, r, stored, q);
    }
    case 'deletecollection': {
      const opts = parseListOptions(q, { group: r.group, version: r.version, resource: r.resource });
      const del = deleteOptions(req, q, body);
      const ls = opts.labelSelector;
      const fs = opts.fieldSelector;
      const gone = ctx.cluster.deleteCollection(r, info.namespace, (o) => ls.matches(o.labels) && fs.matches(o.fields), { ...del, dryRun: dryRun || del.dryRun });
      const target = listTarget(r, info.namespace);
      return writeList(res, target, { rv: ctx.cluster.clock.current(), items: gone, continueToken: '' }, { as: 'object' });
    }
    default:
      throw newMethodNotSupported(r, info.verb);
  }
}


function listTarget(r: SimResource, namespace: string): ListTarget {
  return { desc: r, printer: r.printer, namespace };
}

function getOr404(ctx: Ctx, r: SimResource, info: RequestInfo): StoredObject {
  const key = r.namespaced ? `${info.namespace}/${info.name}` : info.name;
  const o = ctx.cluster.store(r).get(key);
  if (!o) throw newNotFound(r, info.name);
  return o;
}

// ---- subresources ----

async function subresource(ctx: Ctx, req: IncomingMessage, res: ServerResponse, r: SimResource, info: RequestInfo, url: URL, body?: Buffer): Promise<void> {
  const sub = r.subresources?.find((s) => s.name === info.subresource);
  if (!sub) throw newResourceNotFound();
  const q = url.searchParams;
  const dryRun = q.getAll('dryRun').includes('All');
  const isPods = r.group === '' && r.resource === 'pods';
  if (info.subresource === 'status') {
    if (info.verb === 'get') return writeObject(req, res, r, 200, getOr404(ctx, r, info), q);
    if (info.verb === 'update') {
      const stored = ctx.cluster.update(r, info.namespace, info.name, parseJsonBody(req, body!), { subresource: 'status', dryRun });
      return writeObject(req, res, r, 200, stored, q);
    }
    if (info.verb === 'patch') {
      const stored = ctx.cluster.patch(r, info.namespace, info.name, body!.toString('utf8'), patchType(req), { subresource: 'status', dryRun });
      return writeObject(req, res, r, 200, stored, q);
    }
  }
  if (info.subresource === 'scale' && r.scale) {
    const scaleOf = (o: StoredObject) => toScale(r, o);
    if (info.verb === 'get') return writeJson(res, 200, JSON.stringify(scaleOf(getOr404(ctx, r, info))));
    if (info.verb === 'update' || info.verb === 'patch') {
      const current = getOr404(ctx, r, info);
      let scale: any;
      if (info.verb === 'update') scale = parseJsonBody(req, body!);
      else {
        const { applyPatch } = await import('../../src/api/patch.js');
        scale = applyPatch(scaleOf(current), body!.toString('utf8'), patchType(req), { group: 'autoscaling', kind: 'Scale' });
      }
      // replicas is omitempty in autoscaling/v1: absent means 0.
      const replicas = scale?.spec?.replicas ?? 0;
      if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
        throw newBadRequest('spec.replicas must be a whole number >= 0');
      }
      const next = objectOf(current) as any;
      setPath(next, r.scale.specReplicasPath, replicas);
      if (scale.metadata?.resourceVersion) next.metadata.resourceVersion = scale.metadata.resourceVersion;
      const stored = ctx.cluster.update(r, info.namespace, info.name, next, { dryRun });
      return writeJson(res, 200, JSON.stringify(scaleOf(stored)));
    }
  }
  if (isPods && info.subresource === 'log' && info.verb === 'get') {
    return servePodLog(req, res, objectOf(getOr404(ctx, r, info)), q);
  }
  if (isPods && info.subresource === 'eviction' && info.verb === 'create') {
    const ev = parseJsonBody(req, body!) as any;
    ctx.cluster.delete(r, info.namespace, info.name, { gracePeriodSeconds: ev?.deleteOptions?.gracePeriodSeconds, dryRun });
    return writeJson(res, 201, JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 }));
  }
  if (isPods && info.subresource === 'ephemeralcontainers') {
    if (info.verb === 'get') return writeObject(req, res, r, 200, getOr404(ctx, r, info), q);
    if (info.verb === 'patch') {
      const stored = ctx.cluster.patch(r, info.namespace, info.name, body!.toString('utf8'), patchType(req), { dryRun });
      return writeObject(req, res, r, 200, stored, q);
    }
  }
  if (isPods && (info.subresource === 'exec' || info.subresource === 'attach' || info.subresource === 'portforward')) {
    throw newBadRequest('Upgrade request required');
  }
  throw newMethodNotSupported(r, info.verb);
}

function toScale(r: SimResource, o: StoredObject): object {
  const obj = objectOf(o) as any;
  const m = obj.metadata;
  const sel = r.scale!.labelSelectorPath ? getPath(obj, r.scale!.labelSelectorPath) : undefined;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: getPath(obj, r.scale!.specReplicasPath) ?? 0 },
    status: { replicas: getPath(obj, r.scale!.statusReplicasPath) ?? 0, ...(sel ? { selector: selectorString(sel) } : {}) },
  };
}

function selectorString(sel: any): string {
  if (typeof sel === 'string') return sel;
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const op = String(e.operator);
    if (op === 'Exists') parts.push(e.key);
    else if (op === 'DoesNotExist') parts.push(`!${e.key}`);
    else parts.push(`${e.key} ${op.toLowerCase()} (${(e.values ?? []).join(',')})`);
  }
  return parts.join(',');
}

function getPath(o: any, path: string[]): any {
  return path.reduce((x, k) => (x == null ? undefined : x[k]), o);
}

function setPath(o: any, path: string[], v: unknown): void {
  let x = o;
  for (const k of path.slice(0, -1)) x = x[k] ??= {};
  x[path[path.length - 1]] = v;
}

async function upgrade(ctx: Ctx, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://sim');
  const info = newRequestInfo(req.method ?? 'GET', url.pathname, url.searchParams);
  const user = await identify(ctx, req);
  authorizeRequest(ctx, user, info);
  const r = ctx.cluster.resource(info.apiGroup, info.apiVersion, info.resource);
  if (!r || r.group !== '' || r.resource !== 'pods' || (info.subresource !== 'exec' && info.subresource !== 'attach')) {
    throw newResourceNotFound();
  }
  const pod = getOr404(ctx, r, info);
  handleExecUpgrade(req, socket, head, objectOf(pod), url.searchParams, info.subresource);
}

// ---- non-resource paths ----

function nonResource(ctx: Ctx, req: IncomingMessage, res: ServerResponse, url: URL): void {
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const resources = ctx.cluster.allResources();
  const extra = authApiResources();
  if (path === '/version') {
    const gitVersion = ctx.gitVersion ?? 'v1.34.4';
    const minor = gitVersion.split('.')[1] ?? '34';
    return writeJson(res, 200, JSON.stringify({ major: '1', minor, emulationMajor: '1', emulationMinor: minor, minCompatibilityMajor: '1', minCompatibilityMinor: String(Number(minor) - 1), gitVersion, gitCommit: 'fleetgate-sim', gitTreeState: 'clean', buildDate: '2026-01-01T00:00:00Z', goVersion: 'node', compiler: 'gc', platform: 'linux/amd64' }, null, 2));
  }
  if (path === '/healthz' || path === '/livez' || path === '/readyz' || /^\/(healthz|livez|readyz)\/[a-z-]+$/.test(path)) {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
    return void res.end('ok');
  }
  if (path === '/api' || path === '/apis') {
    const v = aggregatedVersion(req.headers.accept);
    if (v) {
      const { body, etag } = aggregatedDiscovery(path === '/api', v, resources, extra);
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ETag: etag });
        return void res.end();
      }
      res.writeHead(200, { 'Content-Type': v === 'v2' ? AGGREGATED_V2 : AGGREGATED_V2BETA1, ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' });
      return void res.end(body);
    }
    return writeJson(res, 200, path === '/api' ? apiVersions(ctx.address) : apiGroupList(resources, extra));
  }
  let m = /^\/api\/(v1)$/.exec(path);
  if (m) return writeJson(res, 200, apiResourceList('', 'v1', resources, extra)!);
  m = /^\/apis\/([^/]+)$/.exec(path);
  if (m) {
    const doc = apiGroupDoc(m[1], resources, extra);
    if (doc) return writeJson(res, 200, doc);
  }
  m = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
  if (m) {
    const doc = apiResourceList(m[1], m[2], resources, extra);
    if (doc) return writeJson(res, 200, doc);
  }
  // OpenAPI v3 with CRD schemas, and an empty v2 for kubectl 1.27/1.28 (see openapi.ts).
  if (serveOpenAPIV3(req, res, path, url.searchParams, resources, extra, ctx.gitVersion ?? 'v1.34.4')) return;
  if (path === '/openapi/v2') return serveOpenAPIV2(req, res, ctx.gitVersion ?? 'v1.34.4');
  pageNotFound(res);
}

function pageNotFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
  res.end('404 page not found\n');
}

// ---- bodies and content negotiation ----

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(newRequestEntityTooLarge(`limit is ${limit}`));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(newRequestEntityTooLarge(`limit is ${limit}`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseJsonBody(req: IncomingMessage, body: Buffer): unknown {
  const ct = (req.headers['content-type'] ?? JSON_TYPE).split(';')[0].trim();
  if (ct === 'application/vnd.kubernetes.protobuf') {
    let decoded: unknown;
    try {
      decoded = decodeProtobufObject(body);
    } catch (e) {
      throw newBadRequest((e as Error).message);
    }
    if (decoded === undefined) throw newUnsupportedMediaType(ct);
    return decoded;
  }
  if (ct !== JSON_TYPE && ct !== 'application/yaml' && !ct.endsWith('+json') && ct !== '*/*') throw newUnsupportedMediaType(ct);
  const text = body.toString('utf8');
  if (ct === 'application/yaml') {
    throw newUnsupportedMediaType(ct);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw newBadRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}

function patchType(req: IncomingMessage): PatchType {
  const ct = (req.headers['content-type'] ?? '').split(';')[0].trim();
  if (!PATCH_TYPES.has(ct)) throw newUnsupportedMediaType(ct);
  return ct as PatchType;
}

function deleteOptions(req: IncomingMessage, q: URLSearchParams, body?: Buffer): { gracePeriodSeconds?: number; dryRun?: boolean; preconditions?: { uid?: string; resourceVersion?: string } } {
  let opts: any = {};
  if (body && body.length > 0) opts = parseJsonBody(req, body) ?? {};
  const g = q.get('gracePeriodSeconds');
  if (g !== null) opts.gracePeriodSeconds = Number(g);
  return {
    gracePeriodSeconds: typeof opts.gracePeriodSeconds === 'number' ? opts.gracePeriodSeconds : undefined,
    dryRun: Array.isArray(opts.dryRun) && opts.dryRun.includes('All'),
    preconditions: opts.preconditions,
  };
}

function negotiate(req: IncomingMessage, q: URLSearchParams): ResponseForm {
  const a = parseAcceptForTable(req.headers.accept);
  if (!a.acceptable) throw newNotAcceptable('only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  if (a.as === 'Table') {
    const inc = q.get('includeObject');
    const include = inc === 'None' || inc === 'Object' ? inc : 'Metadata';
    return { as: 'table', include };
  }
  if (a.as === 'PartialObjectMetadata' || a.as === 'PartialObjectMetadataList') return { as: 'metadata' };
  return { as: 'object' };
}

// ---- responses ----

function writeJson(res: ServerResponse, code: number, body: string | Buffer): void {
  res.writeHead(code, { 'Content-Type': JSON_TYPE });
  res.end(body);
}

export function writeStatus(res: ServerResponse, s: Status): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache, private', 'X-Content-Type-Options': 'nosniff' };
  if (s.details?.retryAfterSeconds) headers['Retry-After'] = String(s.details.retryAfterSeconds);
  res.writeHead(s.code, headers);
  res.end(statusBody(s));
}

function writeObject(req: IncomingMessage, res: ServerResponse, r: SimResource, code: number, o: StoredObject, q: URLSearchParams): void {
  const form = negotiate(req, q);
  if (form.as === 'table') {
    const { prefix, suffix } = tableHeadJson(r.printer, { resourceVersion: String(o.rv) });
    return writeJson(res, code, prefix + tableRowOf(r.printer, o, form.include, Date.now()) + suffix);
  }
  if (form.as === 'metadata') return writeJson(res, code, partialObjectMetadataJson({ metadata: metadataOf(o) }));
  writeJson(res, code, o.json);
}

/** Pods, namespaces and CRDs answer a delete with the object; other resources with a Success Status. */
function writeDeleted(req: IncomingMessage, res: ServerResponse, r: SimResource, o: StoredObject, q: URLSearchParams): void {
  const returnsObject = (r.group === '' && (r.resource === 'pods' || r.resource === 'namespaces')) || r.crd !== undefined || r.resource === 'customresourcedefinitions';
  const meta = metadataOf(o);
  if (returnsObject || meta.deletionTimestamp) return writeObject(req, res, r, 200, o, q);
  const details: Record<string, string> = { name: o.name, kind: r.resource, uid: meta.uid ?? '' };
  if (r.group) details.group = r.group;
  writeJson(res, 200, JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: details.name, group: details.group, kind: details.kind, uid: details.uid } }));
}
