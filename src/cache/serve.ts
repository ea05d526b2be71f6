// GET, LIST and WATCH of pods, core/v1 events and events.k8s.io/v1 events from the merged cache, with a
// kube-apiserver's semantics (src/cache/list.ts, src/cache/watch.ts) plus what the fleet adds: a CLUSTER column,
// 409 for a name several members hold, 410 for resourceVersions and continue tokens this process did not issue,
// and a Warning naming the members whose objects are only the last known state.

import type { ServerResponse } from 'node:http';
import { createGzip, type Gzip } from 'node:zlib';
import { parseListOptions, type ListOptions } from '../api/listoptions.js';
import { concatBytes } from '../api/offheap.js';
import { printerFor, withClusterColumn, type Printer } from '../api/printers/index.js';
import type { ResourceDescriptor } from '../api/resource.js';
import { checkContinueResourceVersion, decodeContinue, encodeContinue, expiredContinueError, expiredListError, parseResourceVersion } from '../api/resourceversion.js';
import { newNotAcceptable, newNotFound, newResourceExpired, newResourceNotFound, StatusError } from '../api/status.js';
import { parseAcceptForTable, parseIncludeObject, partialObjectMetadataJson, tableHeadJson } from '../api/table.js';
import { errorEventFromStatus } from '../api/watch.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { RequestContext, Response } from '../server/context.js';
import { paced, responseDone, type StreamingBody } from '../server/respond.js';
import { listPage, tableRowOf, writeList, type ListTarget, type ObjectFilter, type ResponseForm } from './list.js';
import { CLUSTER_LABEL, clusterOf, newAmbiguousError, type CachedResource, type MergedCache } from './merged.js';
import { metadataOf, type Store, type StoredObject } from './store.js';
import { defaultWatchSettings, serveWatch, type ActiveWatch, type WatchEventSent, type WatchSettings } from './watch.js';

/** Which member clusters a caller may read; undefined means all (src/authz/cachedreads.ts decides). */
export type ClusterFilter = (cluster: string) => boolean;

export interface StaleMember {
  cluster: string;
  /** Since when its cache is not in sync (epoch ms). */
  since: number;
}

const READ_WARNINGS = Symbol('cachedReadWarnings');

/**
 * A Warning an earlier step wants on this cached read's response (authorization naming the members it left out);
 * serveCached owns the header and sends these before its own.
 */
export function addCachedReadWarning(ctx: RequestContext, text: string): void {
  ((ctx as { [READ_WARNINGS]?: string[] })[READ_WARNINGS] ??= []).push(warningHeader(text));
}

export interface ServeCachedOptions {
  /** Members whose objects are served from their last known state. */
  stale: () => readonly StaleMember[];
  allowedClusters?: ClusterFilter;
  watchSettings?: WatchSettings;
  /** Each watch started, so the server can end them on shutdown. */
  onWatch?: (w: ActiveWatch) => void;
  /** Where a watch of the resource of that group, version and kind reports each event it sends (metrics). */
  watchEventSent?: (group: string, version: string, kind: string) => WatchEventSent;
}

interface CachedView {
  desc: ResourceDescriptor;
  printer: Printer;
  resource: CachedResource;
  store(cache: MergedCache): Store;
}

const READ_VERBS = ['get', 'list', 'watch'];

function view(d: Omit<ResourceDescriptor, 'listKind' | 'verbs' | 'namespaced'>, resource: CachedResource, store: (c: MergedCache) => Store): CachedView {
  const desc: ResourceDescriptor = { ...d, listKind: `${d.kind}List`, namespaced: true, verbs: READ_VERBS };
  return { desc, printer: withClusterColumn(printerFor(d.group, d.resource), clusterOf), resource, store };
}

const PODS = view({ group: '', version: 'v1', resource: 'pods', singular: 'pod', kind: 'Pod' }, 'pods', (c) => c.pods);
const CORE_EVENTS = view({ group: '', version: 'v1', resource: 'events', singular: 'event', kind: 'Event' }, 'events', (c) => c.events);
const EVENTS_V1 = view({ group: 'events.k8s.io', version: 'v1', resource: 'events', singular: 'event', kind: 'Event' }, 'events', (c) => c.eventsV1);

function viewOf(info: RequestInfo): CachedView | undefined {
  if (info.apiGroup === '' && info.apiVersion === 'v1') {
    if (info.resource === 'pods') return PODS;
    if (info.resource === 'events') return CORE_EVENTS;
  } else if (info.apiGroup === 'events.k8s.io' && info.apiVersion === 'v1' && info.resource === 'events') {
    return EVENTS_V1;
  }
  return undefined;
}

/** Requests the merged cache answers: get, list and watch of the cached resources (not their subresources). */
export function isCachedRead(info: RequestInfo): boolean {
  return info.isResourceRequest && info.subresource === '' && READ_VERBS.includes(info.verb) && viewOf(info) !== undefined;
}

export async function serveCached(ctx: RequestContext, cache: MergedCache, opts: ServeCachedOptions): Promise<void> {
  const info = ctx.info;
  const v = viewOf(info);
  if (!v || !isCachedRead(info)) throw newResourceNotFound();
  // Namespaced objects have no cluster-scoped name paths.
  if (info.verb === 'get' && !info.namespace) throw newResourceNotFound();
  const allowed = opts.allowedClusters;
  const filter: ObjectFilter | undefined = allowed ? (o) => allowed(o.labels[CLUSTER_LABEL] ?? '') : undefined;
  const warnings = staleWarnings(opts.stale(), allowed, (ctx as { [READ_WARNINGS]?: string[] })[READ_WARNINGS]);
  if (warnings.length > 0) ctx.res.setHeader('Warning', warnings);
  const q = ctx.url.searchParams;
  const gr = { group: v.desc.group, version: v.desc.version, resource: v.desc.resource };
  switch (info.verb) {
    case 'get':
      return serveGet(ctx, cache, v, negotiate(ctx, q), allowed);
    case 'list': {
      const lo = parseListOptions(q, { ...gr, name: info.name });
      return serveList(ctx, cache, v, lo, negotiate(ctx, q), filter);
    }
    default: {
      const lo = parseListOptions(q, { ...gr, name: info.name }, { forceWatch: true });
      const form = negotiate(ctx, q);
      const rv = lo.resourceVersion;
      if (rv !== '' && rv !== '0') {
        parseResourceVersion(rv);
        if (!cache.isOurRV(rv)) return writeForeignWatch(ctx.res, v.store(cache), rv);
      }
      const target: ListTarget = { desc: v.desc, printer: v.printer, namespace: info.namespace };
      const sent = opts.watchEventSent?.(v.desc.group, v.desc.version, v.desc.kind);
      const w = serveWatch(ctx.res as ServerResponse, v.store(cache), target, lo, form, opts.watchSettings ?? defaultWatchSettings, filter, sent);
      opts.onWatch?.(w);
      return;
    }
  }
}

function negotiate(ctx: RequestContext, q: URLSearchParams): ResponseForm {
  const a = parseAcceptForTable(ctx.req.headers.accept);
  if (!a.acceptable) throw newNotAcceptable();
  if (a.as === 'Table') return { as: 'table', include: parseIncludeObject(q.get('includeObject')) };
  if (a.as === 'PartialObjectMetadata' || a.as === 'PartialObjectMetadataList') return { as: 'metadata' };
  return { as: 'object' };
}

async function serveGet(ctx: RequestContext, cache: MergedCache, v: CachedView, form: ResponseForm, allowed?: ClusterFilter): Promise<void> {
  const { namespace, name } = ctx.info;
  let owners = cache.owners(v.resource, namespace, name);
  if (allowed) owners = owners.filter((o) => allowed(o.cluster));
  if (owners.length === 0) throw newNotFound(v.desc, name);
  if (owners.length > 1) throw newAmbiguousError(v.desc, name, owners.map((o) => o.cluster));
  let o: StoredObject | undefined = owners[0]!.stored;
  if (v === EVENTS_V1) o = cache.eventsV1.get(o.key);
  if (!o) throw newNotFound(v.desc, name);
  let body: string | Buffer;
  if (form.as === 'table') {
    const { prefix, suffix } = tableHeadJson(v.printer, { resourceVersion: String(o.rv) });
    body = prefix + tableRowOf(v.printer, o, form.include, Date.now()) + suffix + '\n';
  } else if (form.as === 'metadata') {
    body = partialObjectMetadataJson({ metadata: metadataOf(o) }) + '\n';
  } else {
    body = concatBytes([o.json, NEWLINE]);
  }
  const out = responseFor(ctx);
  out.writeHead(200, OK_HEADERS);
  out.end(body);
}

const NEWLINE = Buffer.from('\n');
const OK_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' };

async function serveList(ctx: RequestContext, cache: MergedCache, v: CachedView, lo: ListOptions, form: ResponseForm, filter?: ObjectFilter): Promise<void> {
  if (lo.continue) {
    checkContinueResourceVersion(lo.resourceVersion);
    const token = decodeContinue(lo.continue);
    // Another replica's or an earlier process's snapshot cannot be continued here.
    if (token.instance !== cache.instanceID || (token.rv > 0 && !cache.isOurRV(String(token.rv)))) throw expiredContinueError();
  } else if (lo.resourceVersion !== '' && lo.resourceVersion !== '0') {
    parseResourceVersion(lo.resourceVersion);
    if (!cache.isOurRV(lo.resourceVersion)) throw expiredListError();
  }
  const target: ListTarget = { desc: v.desc, printer: v.printer, namespace: ctx.info.namespace };
  let page;
  try {
    page = await listPage(v.store(cache), target, lo, filter);
  } catch (e) {
    // The "inconsistent continuation" a 410 offers must be ours too.
    const meta = e instanceof StatusError ? e.status.metadata : undefined;
    if (meta && typeof meta.continue === 'string') meta.continue = ownToken(cache, meta.continue);
    throw e;
  }
  if (page.continueToken) page.continueToken = ownToken(cache, page.continueToken);
  await writeList(paced(responseFor(ctx)) as unknown as ServerResponse, target, page, form, { 'Cache-Control': 'no-cache, private' });
  // The list holds its flow-control seats (the chain's step awaits this) until its last byte is out.
  await responseDone(ctx.res);
}

/** A continue token re-issued with this process's instance id. */
function ownToken(cache: MergedCache, token: string): string {
  const t = decodeContinue(token);
  return encodeContinue(t.rv, t.start, { instance: cache.instanceID });
}

/** A watch from a resourceVersion this process never issued: the ERROR event a too-old one gets, then the end. */
function writeForeignWatch(res: Response, store: Store, rv: string): void {
  const err = newResourceExpired(`too old resource version: ${rv} (${store.oldestRV + 1})`);
  res.writeHead(200, OK_HEADERS);
  res.end(errorEventFromStatus(err.status));
}

function staleWarnings(stale: readonly StaleMember[], allowed?: ClusterFilter, noted?: string[]): string[] {
  const out: string[] = noted ?? [];
  for (const s of stale) {
    if (allowed && !allowed(s.cluster)) continue;
    const since = new Date(s.since).toISOString().replace(/\.\d{3}Z$/, 'Z');
    out.push(warningHeader(`member cluster ${s.cluster} is not in sync since ${since}: its pods and events are the last known state`));
  }
  return out;
}

/** net.NewWarningHeader: `299 - "text"` with quotes and backslashes escaped. */
function warningHeader(text: string): string {
  return `299 - "${text.replace(/[\\"]/g, (c) => '\\' + c)}"`;
}

// ---------------------------------------------------------------------------------------------------------------
// gzip as the apiserver's deferredResponseWriter does it: only for clients that accept it and only for bodies
// over 128 KiB, decided once that much has been written (smaller bodies go out as they are).

const GZIP_THRESHOLD = 128 * 1024;

type BodyWriter = StreamingBody;

function acceptsGzip(header: string | string[] | undefined): boolean {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return false;
  for (const token of h.split(',')) if (token.trim() === 'gzip') return true;
  return false;
}

function responseFor(ctx: RequestContext): BodyWriter {
  const res = ctx.res;
  if (!acceptsGzip(ctx.req.headers['accept-encoding'])) return res as unknown as BodyWriter;
  return new DeferredGzip(res);
}

/** Looks like the part of a ServerResponse writeList uses; compresses once the body passes the threshold. */
class DeferredGzip implements BodyWriter {
  private code = 200;
  private headers: Record<string, string> = {};
  private pending: Array<string | Buffer> = [];
  private size = 0;
  private gz?: Gzip;

  constructor(private readonly res: Response) {}

  get destroyed(): boolean {
    return (this.res as ServerResponse).destroyed ?? false;
  }

  writeHead(code: number, headers: Record<string, string>): void {
    this.code = code;
    this.headers = headers;
  }

  /** Held chunks are kept until compressed or sent whole: done is called only for chunks gzip has consumed. */
  write(chunk: string | Buffer, done?: () => void): boolean {
    if (this.gz) return done ? this.gz.write(chunk, () => done()) : this.gz.write(chunk);
    this.pending.push(chunk);
    this.size += Buffer.byteLength(chunk);
    if (this.size > GZIP_THRESHOLD) return this.startGzip();
    return true;
  }

  end(chunk?: string | Buffer, done?: () => void): void {
    if (!this.gz && chunk) {
      // Held like the others (done is not called for it, as for them): gzip or the whole body takes it later.
      this.pending.push(chunk);
      this.size += Buffer.byteLength(chunk);
      chunk = undefined;
      done = undefined;
      if (this.size > GZIP_THRESHOLD) this.startGzip();
    }
    if (this.gz) {
      this.gz.end(chunk, done);
      return;
    }
    (this.res as ServerResponse).writeHead(this.code, this.headers);
    this.res.end(Buffer.concat(this.pending.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))));
  }

  on(event: string, fn: () => void): this {
    (event === 'drain' && this.gz ? this.gz : (this.res as ServerResponse)).on(event, fn);
    return this;
  }

  off(event: string, fn: () => void): this {
    this.gz?.off(event, fn);
    (this.res as ServerResponse).off(event, fn);
    return this;
  }

  private startGzip(): boolean {
    const res = this.res as ServerResponse;
    res.writeHead(this.code, { ...this.headers, 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding' });
    const gz = createGzip();
    this.gz = gz;
    gz.pipe(res);
    res.once('close', () => gz.destroy());
    let ok = true;
    for (const p of this.pending) ok = gz.write(p) && ok;
    this.pending = [];
    return ok;
  }
}
