// What admission asks the upstream before a write goes out: the object as the caller sees it, the collection a
// delete would sweep, the result of the same write with dryRun=All, and (for namespace deletion) the namespaced
// resources there are. Every read but discovery is made as the caller (Impersonate-*), so admission never learns
// or reveals more than the caller could read for themselves.

import type { Dispatcher } from 'undici';
import { newInternalError, StatusError, type Status } from '../api/status.js';
import type { UserInfo } from '../api/user.js';
import { describeUpstream, type Upstream } from '../upstream/client.js';
import { UpstreamDeadline, upstreamFailure } from '../upstream/errors.js';
import { upstreamPath } from '../upstream/forward.js';
import { appendImpersonation } from '../upstream/headers.js';
import type { GroupVersionResource } from './rules.js';

/** Full metadata without the rest of the object; JSON as the fallback for servers that cannot (none we know). */
const ACCEPT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const ACCEPT_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const ACCEPT_DISCOVERY =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
const LIST_PAGE = 500;

export interface Reply {
  status: number;
  /** Parsed JSON, or the text when the body is not JSON. */
  body: any;
}

export interface CallOptions {
  method: string;
  /** Path and query on the upstream (its own path prefix is added here). */
  path: string;
  accept: string;
  /** The caller; undefined only for discovery, which the gateway reads as itself. */
  as?: UserInfo;
  body?: Buffer;
  contentType?: string;
  timeoutMs: number;
}

/** One exchange; transport failures throw the same 503/504/502 Status forward() gives, HTTP errors are returned. */
export async function call(up: Upstream, o: CallOptions): Promise<Reply> {
  const headers: string[] = ['accept', o.accept];
  if (o.body !== undefined && o.contentType) headers.push('content-type', o.contentType);
  if (up.authHeader) headers.push('authorization', up.authHeader);
  if (o.as) appendImpersonation(headers, o.as);
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new UpstreamDeadline(o.timeoutMs)), o.timeoutMs);
  let started = false;
  try {
    const r = await up.dispatcher.request({
      method: o.method as Dispatcher.HttpMethod,
      path: upstreamPath(up, o.path),
      headers,
      body: o.body,
      signal: ac.signal,
    });
    started = true;
    const text = await r.body.text();
    let body: any = text;
    const ct = r.headers['content-type'];
    if (typeof ct === 'string' && ct.startsWith('application/json')) {
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
    }
    return { status: r.statusCode, body };
  } catch (e) {
    if (e instanceof StatusError) throw e;
    throw upstreamFailure(up, ac.signal.aborted ? ac.signal.reason : e, started ? 'response' : 'connect');
  } finally {
    clearTimeout(timer);
  }
}

/** The upstream's own error, passed on as the Status it sent (the write itself would have failed with it). */
export function upstreamError(up: Upstream, r: Reply): StatusError {
  const b = r.body;
  if (b !== null && typeof b === 'object' && b.kind === 'Status') {
    const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: typeof b.code === 'number' ? b.code : r.status };
    if (typeof b.message === 'string') s.message = b.message;
    if (typeof b.reason === 'string') s.reason = b.reason;
    if (b.details && typeof b.details === 'object') s.details = b.details;
    return new StatusError(s);
  }
  return newInternalError(`${describeUpstream(up)} answered ${r.status} to an admission check`);
}

/** The Status message of an upstream error reply, for "could not check" explanations. */
export function replyMessage(r: Reply): string {
  const b = r.body;
  if (b !== null && typeof b === 'object' && typeof b.message === 'string') return b.message;
  return `HTTP ${r.status}`;
}

export function getMetadata(up: Upstream, path: string, as: UserInfo, timeoutMs: number): Promise<Reply> {
  return call(up, { method: 'GET', path, accept: ACCEPT_METADATA, as, timeoutMs });
}

export function getObject(up: Upstream, path: string, as: UserInfo, timeoutMs: number): Promise<Reply> {
  return call(up, { method: 'GET', path, accept: 'application/json', as, timeoutMs });
}

/** Metadata of one listed object (PartialObjectMetadata or the full object: both have it). */
export interface ListedMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
}

/**
 * Walks a list page by page (limit 500) and hands each item's metadata to visit until it returns false. Returns the
 * reply that ended the walk when it was not a 200, else undefined.
 */
export async function scanList(
  up: Upstream,
  path: string,
  query: URLSearchParams,
  as: UserInfo,
  deadline: number,
  visit: (m: ListedMeta) => boolean,
): Promise<Reply | undefined> {
  let cont = '';
  for (;;) {
    const q = new URLSearchParams(query);
    if (!q.has('limit')) q.set('limit', String(LIST_PAGE));
    if (cont) q.set('continue', cont);
    const r = await call(up, { method: 'GET', path: `${path}?${q}`, accept: ACCEPT_METADATA_LIST, as, timeoutMs: left(deadline) });
    if (r.status !== 200) return r;
    const items = Array.isArray(r.body?.items) ? r.body.items : [];
    for (const it of items) if (!visit((it?.metadata ?? {}) as ListedMeta)) return undefined;
    cont = typeof r.body?.metadata?.continue === 'string' ? r.body.metadata.continue : '';
    if (!cont || query.has('limit')) return undefined;
  }
}

/** Milliseconds until deadline, at least 1. */
export function left(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

// ---------------------------------------------------------------------------------------------------------------
// Discovery: which namespaced resources a namespace can hold. Read as the gateway (discovery is the same for
// everyone and every authenticated identity may read it) and kept per upstream for a while.

interface DiscoveryEntry {
  until: number;
  resources: Promise<GroupVersionResource[]>;
}
const discoveryCache = new WeakMap<Upstream, DiscoveryEntry>();

/** Records, not workloads: events copy the labels of what they are about and are never protected themselves. */
const NOT_PROTECTED = new Set(['/events', 'events.k8s.io/events']);

export function namespacedResources(up: Upstream, ttlMs: number, timeoutMs: number): Promise<GroupVersionResource[]> {
  const now = Date.now();
  const hit = discoveryCache.get(up);
  if (hit && hit.until > now) return hit.resources;
  const resources = discoverNamespaced(up, timeoutMs);
  const entry = { until: now + ttlMs, resources };
  discoveryCache.set(up, entry);
  // A failure is not remembered: the next namespace deletion asks again.
  resources.catch(() => {
    if (discoveryCache.get(up) === entry) discoveryCache.delete(up);
  });
  return resources;
}

async function discoverNamespaced(up: Upstream, timeoutMs: number): Promise<GroupVersionResource[]> {
  const out: GroupVersionResource[] = [];
  const seen = new Set<string>();
  const add = (group: string, version: string, resource: string, namespaced: boolean, verbs: unknown) => {
    const key = `${group}/${resource}`;
    if (!namespaced || resource.includes('/') || seen.has(key) || NOT_PROTECTED.has(key)) return;
    // What the namespace controller deletes: listable and deletable (metrics and other read-only views are not).
    if (!Array.isArray(verbs) || !verbs.includes('list') || !(verbs.includes('delete') || verbs.includes('deletecollection'))) return;
    seen.add(key);
    out.push({ group, version, resource });
  };
  for (const root of ['/api', '/apis']) {
    const r = await call(up, { method: 'GET', path: root, accept: ACCEPT_DISCOVERY, timeoutMs });
    if (r.status !== 200 || typeof r.body !== 'object') throw discoveryFailed(up, root, r);
    if (r.body.kind === 'APIGroupDiscoveryList') {
      for (const g of r.body.items ?? []) {
        const group = g?.metadata?.name ?? '';
        // Versions come in preference order; a resource is taken from the first version that serves it.
        for (const v of g?.versions ?? []) {
          for (const res of v?.resources ?? []) add(group, v.version, res.resource, res.scope === 'Namespaced', res.verbs);
        }
      }
      continue;
    }
    // Legacy discovery: one document per group version (the preferred one).
    const gvs: Array<{ group: string; version: string; path: string }> = [];
    if (root === '/api') for (const v of r.body.versions ?? []) gvs.push({ group: '', version: v, path: `/api/${v}` });
    else {
      for (const g of r.body.groups ?? []) {
        const pv = g?.preferredVersion?.version ?? g?.versions?.[0]?.version;
        if (pv) gvs.push({ group: g.name, version: pv, path: `/apis/${g.name}/${pv}` });
      }
    }
    for (const gv of gvs) {
      const d = await call(up, { method: 'GET', path: gv.path, accept: 'application/json', timeoutMs });
      // An aggregated API that is down makes its group version unavailable (503): its objects cannot be checked,
      // and the namespace controller could not delete them either.
      if (d.status !== 200) continue;
      for (const res of d.body?.resources ?? []) add(gv.group, gv.version, res.name, res.namespaced === true, res.verbs);
    }
  }
  return out;
}

function discoveryFailed(up: Upstream, path: string, r: Reply): StatusError {
  return newInternalError(`admission could not read discovery ${path} from ${describeUpstream(up)}: ${replyMessage(r)}`);
}

/** The collection path of a namespaced resource in one namespace. */
export function namespacedCollectionPath(gvr: GroupVersionResource, namespace: string): string {
  const ns = encodeURIComponent(namespace);
  return gvr.group === '' ? `/api/${gvr.version}/namespaces/${ns}/${gvr.resource}` : `/apis/${gvr.group}/${gvr.version}/namespaces/${ns}/${gvr.resource}`;
}
