// Requests that a member cluster answers: every write to pods and events seen through the merged view, the pod
// subresources (log, exec, attach, port-forward, status, eviction, ephemeralcontainers, ...), and the whole API of
// one member under /clusters/<name>/. They go to the member as the caller (the member's impersonator identity
// with Impersonate-* headers), so the member's RBAC decides and its answers (403, 404, 409, 422) come back as
// they are.
//
// Through the merged view the member is the one the cache says holds the object; a name several members hold
// needs the label fleetgate.io/cluster in the body (update, patch), a uid or resourceVersion that only one of them
// has, or the /clusters path, else 409. A new object needs the label or the path, else 400. Bodies lose the label
// and have their (gateway) resourceVersions translated into the member's; a stale one is the 409 Conflict the
// member would have given.
//
// Answers: the member's object with the label added and its resourceVersion mapped into the gateway's space.
// A successful write waits (briefly) until the cache holds the version the member returned, so the answer carries
// the gateway resourceVersion of exactly that version and a read right after the write sees it
// (read-your-writes). If the cache has meanwhile moved past that version, the cached newer object is the answer
// (its content and resourceVersion agree, so a later update with it cannot overwrite a change unseen); if the
// cache does not get there in time (a stale member), the member's object goes back with the member's
// resourceVersion, which a later conditional write cannot match (409, never a lost update).
//
// Under /clusters/<name>/ everything is the member's own: its resourceVersions, its discovery, unfiltered; only
// the label is taken off pod and event bodies, and a label naming another cluster is refused.

import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Requirement } from '../api/labels.js';
import { badLabelSelector, LabelSelectorError, parseLabelSelector, type LabelSelector } from '../api/labels.js';
import {
  fieldInvalid,
  fieldNotSupported,
  goJson,
  goQuote,
  newBadRequest,
  newConflict,
  newInternalError,
  newInvalid,
  newMethodNotSupported,
  newNotFound,
  newResourceNotFound,
  newServiceUnavailable,
  OPTIMISTIC_LOCK_ERROR,
  StatusError,
} from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import { CLUSTER_LABEL, newAmbiguousError, type CachedResource, type MergedCache, type Owner } from '../cache/merged.js';
import { isCachedRead } from '../cache/serve.js';
import { metadataOf, objectOf } from '../cache/store.js';
import { parseWriteBody, type WriteBody, type WriteBodyKind } from '../cache/writebody.js';
import { checkBodySyntax, mediaType, readBody } from '../request/body.js';
import { targetPath } from '../request/filter.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { RequestContext } from '../server/context.js';
import type { Upstream } from '../upstream/client.js';
import { UpstreamDeadline, upstreamFailure } from '../upstream/errors.js';
import { forward, upstreamPath } from '../upstream/forward.js';
import { requestHeaders, responseHeaders } from '../upstream/headers.js';
import { forwardUpgrade } from '../upstream/upgrade.js';
import type { MemberConnection, MemberConnections } from './connections.js';

export interface MemberRouting {
  cache: MergedCache;
  members: MemberConnections;
  maxBodyBytes: number;
  /** How long a write's answer waits for the cache to catch up with the member (default 2000 ms). */
  settleMs?: number;
  /** Members whose cache is known to lag (down, watch broken): their writes do not wait for it. */
  isStale?: (cluster: string) => boolean;
}

/** Pods and events, core and events.k8s.io: what the merged view holds. */
export function memberResourceOf(info: RequestInfo): CachedResource | undefined {
  if (!info.isResourceRequest) return undefined;
  if (info.apiGroup === '' && info.apiVersion === 'v1' && (info.resource === 'pods' || info.resource === 'events')) return info.resource;
  if (info.apiGroup === 'events.k8s.io' && info.apiVersion === 'v1' && info.resource === 'events') return 'events';
  return undefined;
}

/**
 * Whether routeToMember answers the request: everything under /clusters/<name>/, and every request on pods and
 * events that is not a read the merged cache serves (isCachedRead).
 */
export function routesToMember(ctx: Pick<RequestContext, 'cluster' | 'info'>): boolean {
  if (ctx.cluster) return true;
  return memberResourceOf(ctx.info) !== undefined && !isCachedRead(ctx.info);
}

export async function routeToMember(ctx: RequestContext, g: MemberRouting): Promise<void> {
  if (!ctx.user) throw newInternalError('no authenticated user to send to the member cluster');
  if (ctx.cluster) return routeToCluster(ctx, g, ctx.cluster);
  const resource = memberResourceOf(ctx.info);
  if (!resource) throw newResourceNotFound();
  const info = ctx.info;
  // Namespaced resources have no cluster-wide paths for single objects or creation (the apiserver's 404).
  if (!info.namespace && info.verb !== 'deletecollection') throw newResourceNotFound();
  if (info.name === '') {
    if (info.verb === 'create' && !ctx.upgrade) return create(ctx, g, resource);
    if (info.verb === 'deletecollection') return deleteCollection(ctx, g, resource);
    throw newMethodNotSupported(groupResource(info), info.verb);
  }
  return routeNamed(ctx, g, resource);
}

// ---------------------------------------------------------------------------------------------------------------
// /clusters/<name>/...: one member's whole API.

async function routeToCluster(ctx: RequestContext, g: MemberRouting, cluster: string): Promise<void> {
  const conn = connection(g, cluster);
  const path = targetPath(ctx);
  if (ctx.upgrade) {
    forwardUpgrade(conn.impersonator, ctx.req as IncomingMessage, ctx.upgrade.socket, ctx.upgrade.head, ctx.auditID, ctx.user!, { path });
    return;
  }
  const resource = memberResourceOf(ctx.info);
  let body: Buffer | undefined;
  const kind = resource && bodyKind(ctx.info);
  if (kind === 'object' || kind === 'patch') {
    body = await readBody(ctx, g.maxBodyBytes);
    checkBodySyntax(ctx.req.headers['content-type'], body);
    const wb = parseWriteBody(kind, ctx.req.headers['content-type'], body, CLUSTER_LABEL);
    if (wb.cluster !== undefined && wb.cluster !== cluster) {
      throw newBadRequest(`the label ${CLUSTER_LABEL}=${wb.cluster} names another member cluster than the path /clusters/${cluster}/`);
    }
    const out = wb.forMember((rv) => rv);
    if (out.body !== body) {
      await sendBuffered(ctx, conn.impersonator, out.body, out.contentType, undefined);
      return;
    }
  }
  await forward(conn.impersonator, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, timeoutMs: remaining(ctx), path, body });
}

// ---------------------------------------------------------------------------------------------------------------
// Through the merged view.

/** Subresources whose answers are streams or tunnels, passed through untouched. */
const STREAMING = new Set(['log', 'proxy', 'exec', 'attach', 'portforward']);

async function routeNamed(ctx: RequestContext, g: MemberRouting, resource: CachedResource): Promise<void> {
  const info = ctx.info;
  const path = targetPath(ctx);
  if (ctx.upgrade) {
    const conn = connection(g, pickCluster(g, resource, info, undefined, false));
    forwardUpgrade(conn.impersonator, ctx.req as IncomingMessage, ctx.upgrade.socket, ctx.upgrade.head, ctx.auditID, ctx.user!, { path });
    return;
  }
  if (STREAMING.has(info.subresource)) {
    const conn = connection(g, pickCluster(g, resource, info, undefined, false));
    await forward(conn.impersonator, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, timeoutMs: remaining(ctx), path });
    return;
  }

  const contentType = ctx.req.headers['content-type'];
  let body: Buffer | undefined;
  let wb: WriteBody | undefined;
  if (sendsBody(ctx)) {
    body = await readBody(ctx, g.maxBodyBytes);
    checkBodySyntax(contentType, body);
    const kind = bodyKind(info);
    if (kind) wb = parseWriteBody(kind, contentType, body, CLUSTER_LABEL);
  }
  const isApply = info.verb === 'patch' && mediaType(contentType) === 'application/apply-patch+yaml';
  const cluster = pickCluster(g, resource, info, wb, isApply);
  const conn = connection(g, cluster);
  let out: { body: Buffer; contentType: string | undefined } | undefined;
  if (wb) out = wb.forMember((rv) => memberRV(g, resource, info, cluster, rv));
  else if (body) out = { body, contentType };
  await sendBuffered(ctx, conn.impersonator, out?.body, out?.contentType, { g, resource, cluster });
}

async function create(ctx: RequestContext, g: MemberRouting, resource: CachedResource): Promise<void> {
  const info = ctx.info;
  const contentType = ctx.req.headers['content-type'];
  const body = await readBody(ctx, g.maxBodyBytes);
  checkBodySyntax(contentType, body);
  const wb = parseWriteBody('object', contentType, body, CLUSTER_LABEL);
  if (wb.cluster === undefined) throw needsCluster(g, info, collectionPath(info));
  checkKnown(g, info, wb.cluster, wb.name ?? '');
  const conn = connection(g, wb.cluster);
  // A resourceVersion on a new object is refused by the member as it is; nothing to translate.
  const out = wb.forMember((rv) => rv);
  await sendBuffered(ctx, conn.impersonator, out.body, out.contentType, { g, resource, cluster: wb.cluster });
}

/** Which member a request on an existing object goes to. */
function pickCluster(g: MemberRouting, resource: CachedResource, info: RequestInfo, wb: WriteBody | undefined, isApply: boolean): string {
  const owners = g.cache.owners(resource, info.namespace, info.name);
  const named = wb?.cluster;
  if (named !== undefined) {
    checkKnown(g, info, named, info.name);
    // The cache may not have seen a brand-new object yet: a named member with no copy in the cache decides.
    if (owners.length === 0 || owners.some((o) => o.cluster === named)) return named;
    const where = owners.map((o) => o.cluster).join(', ');
    throw newInvalid(groupKind(info), info.name, [
      fieldInvalid(`metadata.labels[${CLUSTER_LABEL}]`, named, `field is immutable: the ${singular(info)} is in member cluster ${where}`),
    ]);
  }
  if (owners.length === 1) return owners[0]!.cluster;
  if (owners.length === 0) {
    // Server-side apply creates what does not exist, and then it needs a member like any creation.
    if (isApply) throw needsCluster(g, info, collectionPath(info));
    throw newNotFound(groupResource(info), info.name);
  }
  let picked: Owner[] = owners;
  if (wb?.uid) picked = owners.filter((o) => metadataOf(o.stored).uid === wb.uid);
  if (picked.length !== 1 && wb?.resourceVersion) picked = owners.filter((o) => String(o.stored.rv) === wb.resourceVersion);
  if (picked.length === 1) return picked[0]!.cluster;
  throw newAmbiguousError(groupResource(info), info.name, owners.map((o) => o.cluster));
}

/** The member's resourceVersion for the gateway one a write is conditional on; 409 when it is not current. */
function memberRV(g: MemberRouting, resource: CachedResource, info: RequestInfo, cluster: string, rv: string): string {
  const m = g.cache.toMemberRV(resource, info.namespace, info.name, cluster, rv);
  if (m !== undefined && m !== '') return m;
  const gr = groupResource(info);
  if (info.verb === 'delete' || info.subresource === 'eviction') {
    // What the storage layer says when a delete precondition fails, with the versions the client can see.
    const current = g.cache.owners(resource, info.namespace, info.name).find((o) => o.cluster === cluster);
    const key = `/registry/${info.resource}/${info.namespace}/${info.name}`;
    throw newConflict(gr, info.name,
      `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: ` +
      `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in object meta: ${current ? current.stored.rv : ''}`);
  }
  throw newConflict(gr, info.name, OPTIMISTIC_LOCK_ERROR);
}

function checkKnown(g: MemberRouting, info: RequestInfo, cluster: string, name: string): void {
  if (g.members.get(cluster) || g.members.problem(cluster) !== undefined) return;
  throw newInvalid(groupKind(info), name, [fieldNotSupported(`metadata.labels[${CLUSTER_LABEL}]`, cluster, g.members.names())]);
}

function needsCluster(g: MemberRouting, info: RequestInfo, collectionPath: string): StatusError {
  const names = g.members.names();
  const choice = names.length > 0 ? `one of ${names.join(', ')}` : 'a member cluster';
  return newBadRequest(
    `the member cluster to create the ${singular(info)} in is not known: set the label ${CLUSTER_LABEL} on the object to ${choice}, ` +
      `or send the request to /clusters/<cluster>${collectionPath}`,
  );
}

function connection(g: MemberRouting, cluster: string): MemberConnection {
  const conn = g.members.get(cluster);
  if (conn) return conn;
  const problem = g.members.problem(cluster);
  if (problem !== undefined) throw newServiceUnavailable(`the member cluster ${goQuote(cluster)} cannot be reached: ${problem}`);
  throw newNotFound({ group: 'cluster.karmada.io', resource: 'clusters' }, cluster);
}

// ---------------------------------------------------------------------------------------------------------------
// deletecollection: every member (or those a fleetgate.io/cluster requirement selects), the rest of the selector
// as it is; the answer is one list of everything deleted, or the first member's refusal.

/**
 * A collection's members and the label selector each is asked with: the fleetgate.io/cluster requirements pick the
 * members (their objects do not carry the label, the gateway adds it), the rest goes to them. Deleting a
 * collection and admission's look at what that will delete share it, so both see the same objects.
 */
export function memberCollection(labelSelector: string, members: readonly string[]): { clusters: string[]; labelSelector: string } {
  let selector: LabelSelector;
  try {
    selector = parseLabelSelector(labelSelector);
  } catch (e) {
    if (e instanceof LabelSelectorError) throw badLabelSelector(e);
    throw e;
  }
  const onCluster = selector.requirements.filter((r) => r.key === CLUSTER_LABEL);
  const rest = selector.requirements.filter((r) => r.key !== CLUSTER_LABEL);
  const clusters = members.filter((c) => onCluster.length === 0 || selectorOver(selector, onCluster).matches({ [CLUSTER_LABEL]: c }));
  return { clusters, labelSelector: rest.length > 0 ? selectorOver(selector, rest).toString() : '' };
}

async function deleteCollection(ctx: RequestContext, g: MemberRouting, resource: CachedResource): Promise<void> {
  const q = new URLSearchParams(ctx.url.search);
  const { clusters, labelSelector } = memberCollection(q.get('labelSelector') ?? '', g.members.names());
  if (labelSelector) q.set('labelSelector', labelSelector);
  else q.delete('labelSelector');
  const qs = q.toString();
  const path = ctx.url.pathname + (qs ? `?${qs}` : '');
  const body = sendsBody(ctx) ? await readBody(ctx, g.maxBodyBytes) : undefined;
  const contentType = ctx.req.headers['content-type'];

  const answers = await Promise.all(
    clusters.map(async (cluster) => {
      try {
        const a = await exchange(ctx, connection(g, cluster).impersonator, path, body, contentType, 'application/json');
        return { cluster, a };
      } catch (e) {
        return { cluster, error: e };
      }
    }),
  );
  const items: unknown[] = [];
  let listHead: Record<string, unknown> | undefined;
  for (const r of answers) {
    if (r.error !== undefined) throw r.error;
    const a = r.a!;
    const doc = a.status >= 200 && a.status < 300 ? parseJSON(a) : undefined;
    if (!doc || !Array.isArray(doc.items)) return writeAnswer(ctx, a, a.body);
    listHead ??= { kind: doc.kind, apiVersion: doc.apiVersion };
    for (const item of doc.items) {
      mapObject(g, resource, r.cluster, item);
      items.push(item);
    }
  }
  const info = ctx.info;
  const head = listHead ?? { kind: `${info.resource === 'pods' ? 'Pod' : 'Event'}List`, apiVersion: info.apiGroup ? `${info.apiGroup}/${info.apiVersion}` : info.apiVersion };
  const list = { ...head, metadata: { resourceVersion: String(g.cache.clock.current()) }, items };
  writeJSON(ctx, 200, {}, Buffer.from(goJson(list) + '\n', 'utf8'));
}

/** The selector's own serialization and matching, over some of its requirements. */
function selectorOver(sel: LabelSelector, requirements: Requirement[]): Pick<LabelSelector, 'matches' | 'toString'> {
  // The parser's selector reads only its requirements; run its methods over the subset.
  const view = { requirements } as unknown as LabelSelector;
  return { matches: (labels) => sel.matches.call(view, labels), toString: () => sel.toString.call(view) };
}

// ---------------------------------------------------------------------------------------------------------------
// The exchange with the member, and the answer.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Rewrite {
  g: MemberRouting;
  resource: CachedResource;
  cluster: string;
}

/**
 * Sends the (possibly rewritten) request and answers with the member's response; with `rewrite`, a JSON object of
 * the cached kinds comes back labelled and with a gateway resourceVersion. Clients that cannot read JSON get the
 * member's bytes untouched.
 */
async function sendBuffered(ctx: RequestContext, up: Upstream, body: Buffer | undefined, contentType: string | undefined, rewrite: Rewrite | undefined): Promise<void> {
  const accept = rewrite && acceptsJSON(ctx.req.headers.accept) ? 'application/json' : undefined;
  const a = await exchange(ctx, up, targetPath(ctx), body, contentType, accept);
  if (!rewrite || accept === undefined || a.status < 200 || a.status >= 300) return writeAnswer(ctx, a, a.body);
  const doc = parseJSON(a);
  if (!doc || !isCachedKind(doc)) return writeAnswer(ctx, a, a.body);
  const out = await answerObject(ctx, rewrite, doc);
  writeAnswer(ctx, a, Buffer.from(goJson(out) + '\n', 'utf8'));
}

async function answerObject(ctx: RequestContext, r: Rewrite, obj: any): Promise<any> {
  const meta = obj.metadata;
  const rv: string = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '';
  const { g, resource, cluster } = r;
  const ns: string = meta.namespace ?? ctx.info.namespace;
  const name: string = meta.name ?? ctx.info.name;
  if (rv === '') return labelled(obj, cluster);
  let gw = g.cache.toGatewayRV(resource, ns, name, cluster, rv);
  const dryRun = ctx.url.searchParams.getAll('dryRun').length > 0;
  const wrote = ctx.info.verb !== 'get' && !dryRun;
  if (gw === undefined && wrote && !g.isStale?.(cluster)) {
    await settle(g.cache, resource, ns, name, cluster, rv, ctx.info.verb === 'delete', Math.min(g.settleMs ?? 2000, remaining(ctx) ?? Infinity));
    gw = g.cache.toGatewayRV(resource, ns, name, cluster, rv);
    if (gw === undefined) {
      const now = g.cache.owners(resource, ns, name).find((o) => o.cluster === cluster);
      if (now && rvAtLeast(now.memberRV, rv)) return cachedView(g.cache, ctx.info, now);
    }
  }
  if (gw !== undefined) meta.resourceVersion = gw;
  return labelled(obj, cluster);
}

/** An item of a list answer: labelled, its version mapped when the cache holds exactly that one. */
function mapObject(g: MemberRouting, resource: CachedResource, cluster: string, obj: any): void {
  const meta = obj?.metadata;
  if (!meta || typeof meta !== 'object') return;
  const rv = meta.resourceVersion;
  if (typeof rv === 'string' && rv !== '') {
    const gw = g.cache.toGatewayRV(resource, meta.namespace ?? '', meta.name ?? '', cluster, rv);
    if (gw !== undefined) meta.resourceVersion = gw;
  }
  labelled(obj, cluster);
}

/** The cached object as this request's API version shows it (events.k8s.io reads the v1 mirror). */
function cachedView(cache: MergedCache, info: RequestInfo, owner: Owner): unknown {
  const v1 = info.apiGroup === 'events.k8s.io' ? cache.eventsV1.get(owner.stored.key) : undefined;
  return objectOf(v1 ?? owner.stored);
}

function labelled(obj: any, cluster: string): any {
  const meta = obj.metadata;
  if (meta.labels && typeof meta.labels === 'object') meta.labels[CLUSTER_LABEL] = cluster;
  else meta.labels = { [CLUSTER_LABEL]: cluster };
  return obj;
}

/**
 * Resolves once the cache holds the member's object at memberRV or later (or, for a delete, no longer holds it),
 * or after ms. Checked after each change of the object in the cache, once the change is fully recorded.
 */
function settle(cache: MergedCache, resource: CachedResource, ns: string, name: string, cluster: string, memberRV: string, goneIsEnough: boolean, ms: number): Promise<void> {
  const reached = () => {
    const cur = cache.owners(resource, ns, name).find((o) => o.cluster === cluster);
    return cur ? rvAtLeast(cur.memberRV, memberRV) : goneIsEnough;
  };
  if (reached() || !(ms > 0)) return Promise.resolve();
  const prefix = `${ns}/${name}\u0000`;
  return new Promise((resolve) => {
    let checking = false;
    const done = () => {
      clearTimeout(timer);
      stop();
      resolve();
    };
    const stop = cache.storeOf(resource).subscribe((ev) => {
      if (checking || !ev.object.key.startsWith(prefix)) return;
      checking = true;
      // The cache notes the member's version right after storing the object.
      queueMicrotask(() => {
        checking = false;
        if (reached()) done();
      });
    });
    const timer = setTimeout(done, ms);
  });
}

/** a >= b for the member's resourceVersions (decimal etcd revisions); equality for anything else. */
function rvAtLeast(a: string, b: string): boolean {
  if (a === b) return true;
  if (!/^[0-9]+$/.test(a) || !/^[0-9]+$/.test(b)) return false;
  return BigInt(a) >= BigInt(b);
}

const OMIT: ReadonlySet<string> = new Set(['accept-encoding', 'content-type']);

/** One buffered request to the member as the caller; transport failures throw the 503/504/502 Statuses forward() uses. */
async function exchange(ctx: RequestContext, up: Upstream, path: string, body: Buffer | undefined, contentType: string | undefined, accept: string | undefined): Promise<Answer> {
  const headers = requestHeaders(up, ctx.req, { auditID: ctx.auditID, impersonate: ctx.user as UserInfo, keepContentLength: false, accept, omit: OMIT });
  if (body !== undefined && contentType) headers.push('content-type', contentType);
  const timeoutMs = remaining(ctx) ?? 60_000;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new UpstreamDeadline(timeoutMs)), timeoutMs);
  let responded = false;
  try {
    const r = await up.dispatcher.request({
      method: (ctx.req.method ?? 'GET') as Dispatcher.HttpMethod,
      path: upstreamPath(up, path),
      headers,
      body: body ?? null,
      signal: ac.signal,
    });
    responded = true;
    const out = Buffer.from(await r.body.arrayBuffer());
    return { status: r.statusCode, headers: r.headers, body: out };
  } catch (e) {
    if (e instanceof StatusError) throw e;
    const reason = ac.signal.aborted ? ac.signal.reason : e;
    throw upstreamFailure(up, reason, responded || (e as { code?: string })?.code === 'UND_ERR_SOCKET' ? 'response' : 'connect');
  } finally {
    clearTimeout(timer);
  }
}

function writeAnswer(ctx: RequestContext, a: Answer, body: Buffer): void {
  const headers = responseHeaders(a.headers);
  delete headers['content-length'];
  if (body !== a.body) {
    delete headers['content-encoding'];
    headers['content-type'] = 'application/json';
  }
  writeJSON(ctx, a.status, headers, body);
}

function writeJSON(ctx: RequestContext, status: number, headers: Record<string, string | string[]>, body: Buffer): void {
  const res = ctx.res as { writeHead(s: number, h: Record<string, string | string[]>): unknown; end(b?: Buffer): unknown };
  const h: Record<string, string | string[]> = { 'content-type': 'application/json', ...headers };
  if (status !== 204 && status !== 304) h['content-length'] = String(body.length);
  res.writeHead(status, h);
  res.end(status === 204 || status === 304 ? undefined : body);
}

function parseJSON(a: Answer): any {
  if (mediaType(headerValue(a.headers['content-type'])) !== 'application/json' || headerValue(a.headers['content-encoding'])) return undefined;
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function isCachedKind(doc: any): boolean {
  return typeof doc === 'object' && doc !== null && (doc.kind === 'Pod' || doc.kind === 'Event') && typeof doc.metadata === 'object' && doc.metadata !== null;
}

/** Does the client take a plain JSON answer (JSON listed, a wildcard, or no Accept at all)? */
function acceptsJSON(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  for (const part of accept.split(',')) {
    const p = part.trim();
    const semi = p.indexOf(';');
    const type = (semi < 0 ? p : p.slice(0, semi)).trim().toLowerCase();
    const params = semi < 0 ? '' : p.slice(semi);
    if ((type === 'application/json' && !/;\s*as=/i.test(params)) || type === '*/*' || type === 'application/*') return true;
  }
  return false;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

// ---------------------------------------------------------------------------------------------------------------
// Small facts about requests.

/** Which kind of body a request on pods or events carries, for the rewriting in src/cache/writebody.ts. */
function bodyKind(info: RequestInfo): WriteBodyKind | undefined {
  switch (info.verb) {
    case 'create':
      if (info.subresource === 'eviction') return 'eviction';
      return info.subresource === '' ? 'object' : undefined;
    case 'update':
      return 'object';
    case 'patch':
      return 'patch';
    case 'delete':
      return 'deleteOptions';
    default:
      return undefined;
  }
}

/** Does the request carry a body (DELETE may, with DeleteOptions)? */
function sendsBody(ctx: RequestContext): boolean {
  const m = ctx.req.method;
  if (m === 'POST' || m === 'PUT' || m === 'PATCH') return true;
  const stream = (ctx.req as { stream?: { endAfterHeaders?: boolean } }).stream;
  if (stream !== undefined && typeof stream.endAfterHeaders === 'boolean') return !stream.endAfterHeaders;
  const cl = ctx.req.headers['content-length'];
  if (cl !== undefined) return cl !== '0';
  return ctx.req.headers['transfer-encoding'] !== undefined;
}

function groupResource(info: RequestInfo): { group: string; resource: string } {
  return { group: info.apiGroup, resource: info.resource };
}

function groupKind(info: RequestInfo): { group: string; kind: string } {
  return { group: info.apiGroup, kind: info.resource === 'pods' ? 'Pod' : 'Event' };
}

/** The collection's path: /api/v1/namespaces/<ns>/pods, /apis/events.k8s.io/v1/namespaces/<ns>/events. */
function collectionPath(info: RequestInfo): string {
  const gv = info.apiGroup ? `/apis/${info.apiGroup}/${info.apiVersion}` : `/api/${info.apiVersion}`;
  return `${gv}/namespaces/${info.namespace}/${info.resource}`;
}

function singular(info: RequestInfo): string {
  return info.resource === 'pods' ? 'pod' : 'event';
}

/** Milliseconds left before the request's deadline; undefined for long-running requests. */
function remaining(ctx: RequestContext): number | undefined {
  return ctx.deadline === undefined ? undefined : Math.max(1, ctx.deadline - Date.now());
}
