// Exposed resources: the config's allowlist decides which resources users see through the gateway. Discovery
// (legacy and aggregated) is fetched from the upstream and rewritten to list only those; a request for anything
// else answers 404 the way a kube-apiserver that never served the resource would.

import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { goJson, newResourceNotFound, StatusError } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import type { Request, Response } from '../server/context.js';
import type { Upstream } from './client.js';
import { UpstreamDeadline, upstreamFailure } from './errors.js';
import { upstreamPath } from './forward.js';
import { requestHeaders, responseHeaders } from './headers.js';

export interface ExposedResources {
  /** Is group/resource (or a subresource "pods/log", which follows its parent) visible through the gateway? */
  isExposed(group: string, resource: string): boolean;
  /** Does the group have any visible resource (else the group itself does not exist for users)? */
  hasGroup(group: string): boolean;
}

/**
 * Always visible, whatever the config says: pods and events (the gateway's own merged view, core and
 * events.k8s.io), and the self-review APIs behind `kubectl auth whoami` and `kubectl auth can-i`, which describe
 * the caller rather than any resource and without which those commands fail.
 */
const ALWAYS: ReadonlyArray<{ group: string; resources: string[] }> = [
  { group: '', resources: ['pods', 'events'] },
  { group: 'events.k8s.io', resources: ['events'] },
  { group: 'authentication.k8s.io', resources: ['selfsubjectreviews'] },
  { group: 'authorization.k8s.io', resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] },
];

/** The allowlist: per group, resource names (plural, lower case) or "*" for every resource of the group. */
export function exposedResources(list: Array<{ group: string; resources: string[] }>): ExposedResources {
  const groups = new Map<string, Set<string> | '*'>();
  for (const e of [...ALWAYS, ...list]) {
    const cur = groups.get(e.group);
    if (cur === '*') continue;
    if (e.resources.includes('*')) {
      groups.set(e.group, '*');
      continue;
    }
    const set = cur ?? new Set<string>();
    for (const r of e.resources) set.add(r);
    groups.set(e.group, set);
  }
  return {
    isExposed(group, resource) {
      const g = groups.get(group);
      if (g === undefined) return false;
      if (g === '*') return true;
      const slash = resource.indexOf('/');
      return g.has(slash < 0 ? resource : resource.slice(0, slash));
    },
    hasGroup(group) {
      const g = groups.get(group);
      return g !== undefined && (g === '*' || g.size > 0);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Not found, as kube-apiserver says it.

export { newResourceNotFound };

/** A path no handler serves (an API group that does not exist): Go's http.NotFound, plain text. */
export function writePageNotFound(res: Response, auditID: string): void {
  (res as WritableResponse).writeHead(404, {
    'audit-id': auditID,
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
  });
  (res as WritableResponse).end('404 page not found\n');
}

/**
 * How to refuse a request for a resource that is not exposed: a group with nothing exposed does not exist at
 * all ("404 page not found"), a hidden resource of a visible group is the Status above. Returns false when the
 * resource is exposed and the request may proceed.
 */
export function rejectNotExposed(exposed: ExposedResources, group: string, resource: string, res: Response, auditID: string): boolean {
  if (exposed.isExposed(group, resource)) return false;
  if (!exposed.hasGroup(group)) {
    writePageNotFound(res, auditID);
    return true;
  }
  throw newResourceNotFound();
}

// ---------------------------------------------------------------------------------------------------------------
// Discovery documents.

type DiscoveryPath =
  | { kind: 'api' } // /api: APIVersions
  | { kind: 'apis' } // /apis: APIGroupList
  | { kind: 'group'; group: string } // /apis/<g>: APIGroup
  | { kind: 'groupVersion'; group: string; version: string }; // /api/v1, /apis/<g>/<v>: APIResourceList

/** /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version> (a trailing slash is allowed), else null. */
export function discoveryPath(path: string): DiscoveryPath | null {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (p === '/api') return { kind: 'api' };
  if (p === '/apis') return { kind: 'apis' };
  if (p.startsWith('/api/')) {
    const v = p.slice(5);
    return v !== '' && !v.includes('/') ? { kind: 'groupVersion', group: '', version: v } : null;
  }
  if (!p.startsWith('/apis/')) return null;
  const parts = p.slice(6).split('/');
  if (parts.length === 1 && parts[0] !== '') return { kind: 'group', group: parts[0]! };
  if (parts.length === 2 && parts[0] !== '' && parts[1] !== '') return { kind: 'groupVersion', group: parts[0]!, version: parts[1]! };
  return null;
}

export function isDiscoveryPath(path: string): boolean {
  return discoveryPath(path) !== null;
}

/** Does the document at path exist for users at all (its group has an exposed resource)? */
export function discoveryExposed(path: string, exposed: ExposedResources): boolean {
  const d = discoveryPath(path);
  if (d === null || d.kind === 'api' || d.kind === 'apis') return true;
  return exposed.hasGroup(d.group);
}

function isAggregated(contentType: string): boolean {
  return contentType.includes('as=APIGroupDiscoveryList') && contentType.includes('g=apidiscovery.k8s.io');
}

function isJSON(contentType: string): boolean {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/**
 * The discovery document at path with only exposed resources: groups and versions left empty are dropped.
 * Handles legacy documents (APIGroupList, APIResourceList) and aggregated ones (APIGroupDiscoveryList, v2 and
 * v2beta1). Returns null when nothing had to change (or the body is not a JSON document we know), so the upstream
 * bytes and ETag can be used as they are. A changed aggregated document needs a new ETag: aggregatedETag().
 */
export function filterDiscovery(path: string, contentType: string, body: Buffer, exposed: ExposedResources): Buffer | null {
  if (!isJSON(contentType)) return null;
  const d = discoveryPath(path);
  if (d === null || (d.kind === 'api' && !isAggregated(contentType))) return null;
  let doc: any;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (doc === null || typeof doc !== 'object') return null;
  let changed = false;
  switch (doc.kind) {
    case 'APIGroupDiscoveryList':
      changed = filterAggregated(doc, exposed);
      break;
    case 'APIGroupList':
      changed = filterGroupList(doc, exposed);
      break;
    case 'APIResourceList':
      changed = filterResourceList(doc, d.kind === 'groupVersion' ? d.group : groupOf(doc.groupVersion), exposed);
      break;
    default:
      return null;
  }
  if (!changed) return null;
  // Go's encoder escapes <, > and &; its json.Encoder (the apiserver's serializer) ends with a newline.
  const trailer = body.length > 0 && body[body.length - 1] === 0x0a ? '\n' : '';
  return Buffer.from(goJson(doc) + trailer, 'utf8');
}

function groupOf(groupVersion: unknown): string {
  if (typeof groupVersion !== 'string') return '';
  const slash = groupVersion.indexOf('/');
  return slash < 0 ? '' : groupVersion.slice(0, slash);
}

function filterGroupList(doc: any, exposed: ExposedResources): boolean {
  if (!Array.isArray(doc.groups)) return false;
  const kept = doc.groups.filter((g: any) => exposed.hasGroup(String(g?.name ?? '')));
  if (kept.length === doc.groups.length) return false;
  doc.groups = kept;
  return true;
}

function filterResourceList(doc: any, group: string, exposed: ExposedResources): boolean {
  if (!Array.isArray(doc.resources)) return false;
  const kept = doc.resources.filter((r: any) => exposed.isExposed(group, String(r?.name ?? '')));
  if (kept.length === doc.resources.length) return false;
  doc.resources = kept;
  return true;
}

function filterAggregated(doc: any, exposed: ExposedResources): boolean {
  if (!Array.isArray(doc.items)) return false;
  let changed = false;
  const items: any[] = [];
  for (const item of doc.items) {
    const group = String(item?.metadata?.name ?? '');
    if (!exposed.hasGroup(group)) {
      changed = true;
      continue;
    }
    const versions: any[] = [];
    for (const v of Array.isArray(item.versions) ? item.versions : []) {
      const resources = Array.isArray(v?.resources) ? v.resources : [];
      const kept = resources.filter((r: any) => exposed.isExposed(group, String(r?.resource ?? '')));
      if (kept.length !== resources.length) {
        changed = true;
        if (kept.length === 0) continue;
        v.resources = kept;
      }
      versions.push(v);
    }
    if (versions.length === 0) {
      changed = true;
      continue;
    }
    item.versions = versions;
    items.push(item);
  }
  if (changed) doc.items = items;
  return changed;
}

/** `"<uppercase hex SHA-512>"` of the document's JSON (without the encoder's trailing newline), as kube's etag.go. */
export function aggregatedETag(body: Buffer): string {
  const end = body.length > 0 && body[body.length - 1] === 0x0a ? body.length - 1 : body.length;
  return `"${createHash('sha512').update(body.subarray(0, end)).digest('hex').toUpperCase()}"`;
}

// ---------------------------------------------------------------------------------------------------------------
// Serving discovery through the gateway.

export interface DiscoveryOptions {
  impersonate?: UserInfo;
  /** Default 60s. */
  timeoutMs?: number;
  /** Path and query to use instead of the client's (e.g. after a /clusters/<name> prefix is stripped). */
  path?: string;
}

interface FilteredDoc {
  /** The upstream's ETag for the document this was filtered from ('' when it sent none). */
  upstreamETag: string;
  contentType: string | undefined;
  /** Ours: the upstream's when nothing changed, recomputed when something did. */
  etag: string | undefined;
  body: Buffer;
}

/** Aggregated documents already filtered, per exposure config, keyed by upstream, path and Accept. */
const cache = new WeakMap<ExposedResources, Map<string, FilteredDoc>>();
const CACHE_ENTRIES = 32;

/**
 * Answers a discovery request from the upstream's document, filtered. The upstream is asked for JSON only
 * (a protobuf document could not be filtered) and uncompressed; If-None-Match is answered here against the
 * filtered document's ETag, compared as kube-apiserver does (the whole header value against the quoted hash).
 * Filtered aggregated documents are kept per upstream ETag, so a repeat costs the upstream a 304 and us nothing.
 * Groups with nothing exposed answer "404 page not found". Resolves with the status sent; transport failures
 * reject with the same Status errors as forward().
 */
export async function forwardDiscovery(up: Upstream, req: Request, res: Response, auditID: string, exposed: ExposedResources, opts: DiscoveryOptions = {}): Promise<number> {
  const url = new URL(opts.path ?? req.url ?? '/', 'https://gateway.invalid');
  if (!discoveryExposed(url.pathname, exposed)) {
    writePageNotFound(res, auditID);
    return 404;
  }
  const accept = jsonOnlyAccept(header(req.headers.accept));
  const key = `${up.name}\u0000${url.pathname}\u0000${accept ?? ''}`;
  let perConfig = cache.get(exposed);
  if (!perConfig) cache.set(exposed, (perConfig = new Map()));
  const cached = perConfig.get(key);

  const headers = requestHeaders(up, req, {
    auditID,
    impersonate: opts.impersonate,
    keepContentLength: false,
    accept,
    omit: OMIT_FOR_DISCOVERY,
  });
  if (cached) headers.push('if-none-match', cached.upstreamETag);
  const got = await fetchBuffered(up, url.pathname + url.search, headers, Math.min(opts.timeoutMs ?? Infinity, up.requestTimeoutMs ?? 60_000));
  // This exchange's own headers (Audit-Id, Date, flow-control UIDs); the document's come from the document.
  const out = responseHeaders(got.headers);
  delete out['content-length'];

  let doc: FilteredDoc;
  if (got.status === 304 && cached) {
    doc = cached;
  } else if (got.status !== 200) {
    return writeDoc(res, got.status, out, got.body);
  } else {
    let body = got.body;
    if (header(got.headers['content-encoding']) === 'gzip') body = gunzipSync(body);
    const contentType = header(got.headers['content-type']);
    const upstreamETag = header(got.headers.etag);
    const filtered = filterDiscovery(url.pathname, contentType ?? '', body, exposed);
    doc = {
      upstreamETag: upstreamETag ?? '',
      contentType,
      etag: filtered !== null && upstreamETag !== undefined ? aggregatedETag(filtered) : upstreamETag,
      body: filtered ?? body,
    };
    if (upstreamETag !== undefined) {
      if (perConfig.size >= CACHE_ENTRIES && !perConfig.has(key)) perConfig.delete(perConfig.keys().next().value!);
      perConfig.set(key, doc);
    }
  }
  delete out['content-encoding'];
  delete out['content-type'];
  delete out.etag;
  if (doc.etag !== undefined) out.etag = doc.etag;
  if (doc.etag !== undefined && header(req.headers['if-none-match']) === doc.etag) return writeDoc(res, 304, out, undefined);
  if (doc.contentType !== undefined) out['content-type'] = doc.contentType;
  return writeDoc(res, 200, out, doc.body);
}

/** Discovery is requested whole and in the clear: we answer conditional requests ourselves. */
const OMIT_FOR_DISCOVERY: ReadonlySet<string> = new Set(['if-none-match', 'if-modified-since', 'accept-encoding']);

/**
 * The client's Accept without the media types we cannot filter (protobuf, YAML, CBOR): JSON and the aggregated
 * JSON forms stay in the client's order. undefined keeps the upstream's default (JSON).
 */
export function jsonOnlyAccept(accept: string | undefined): string | undefined {
  if (accept === undefined || accept.trim() === '') return undefined;
  const kept: string[] = [];
  for (const part of accept.split(',')) {
    const p = part.trim();
    const semi = p.indexOf(';');
    const type = (semi < 0 ? p : p.slice(0, semi)).trim().toLowerCase();
    if (type === 'application/json' || type === '*/*' || type === 'application/*') kept.push(p);
  }
  return kept.length > 0 ? kept.join(',') : 'application/json';
}

interface Buffered {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function fetchBuffered(up: Upstream, target: string, headers: string[], timeoutMs: number): Promise<Buffered> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new UpstreamDeadline(timeoutMs)), timeoutMs);
  let responded = false;
  try {
    const r = await up.dispatcher.request({ method: 'GET', path: upstreamPath(up, target), headers, signal: ac.signal });
    responded = true;
    const body = Buffer.from(await r.body.arrayBuffer());
    return { status: r.statusCode, headers: r.headers, body };
  } catch (e) {
    if (e instanceof StatusError) throw e;
    throw upstreamFailure(up, ac.signal.aborted ? ac.signal.reason : e, responded || (e as { code?: string })?.code === 'UND_ERR_SOCKET' ? 'response' : 'connect');
  } finally {
    clearTimeout(timer);
  }
}

function writeDoc(res: Response, status: number, headers: Record<string, string | string[]>, body: Buffer | undefined): number {
  const w = res as WritableResponse;
  if (body !== undefined && status !== 304 && status !== 204) headers = { ...headers, 'content-length': String(body.length) };
  w.writeHead(status, headers);
  w.end(body);
  return status;
}

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

interface WritableResponse {
  writeHead(status: number, headers: Record<string, string | string[]>): unknown;
  end(body?: Buffer | string): unknown;
}
