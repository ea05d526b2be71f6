// LIST from a Store with a kube-apiserver's semantics: which resourceVersion a request is served at, pages with
// continue tokens from one consistent snapshot, remainingItemCount, and the three forms a client may ask for
// (the object list, a server-side Table, a PartialObjectMetadataList). Unpaged lists are streamed in chunks,
// never built as one string.

import type { ServerResponse } from 'node:http';
import type { ListOptions } from '../api/listoptions.js';
import type { ResourceDescriptor } from '../api/resource.js';
import { groupVersion } from '../api/resource.js';
import { copyBytes } from '../api/offheap.js';
import { checkContinueResourceVersion, decodeContinue, encodeContinue, expiredContinueError, expiredListError, tooLargeResourceVersionError } from '../api/resourceversion.js';
import type { Printer } from '../api/printers/index.js';
import { partialObjectMetadataJson, tableHeadJson, tableRowFromJson, type IncludeObject } from '../api/table.js';
import { untilDrainOrClose, type StreamingBody } from '../server/respond.js';
import { candidatesFor } from './selectorindex.js';
import { batchesOf, metadataOf, ResourceVersionTooOld, type ObjectBatches, type Snapshot, type Store, type StoredObject } from './store.js';

/** The representation a client negotiated. */
export type ResponseForm =
  | { as: 'object' }
  | { as: 'table'; include: IncludeObject }
  | { as: 'metadata' };

export interface ListTarget {
  desc: ResourceDescriptor;
  printer: Printer;
  /** '' for all namespaces. */
  namespace: string;
}

/** Extra filtering beyond selectors (authorization per cluster, for example). */
export type ObjectFilter = (o: StoredObject) => boolean;

export interface ListPage {
  rv: number;
  items: StoredObject[] | IterableIterator<StoredObject>;
  continueToken: string;
  remainingItemCount?: number;
}

/** How long a list for a resourceVersion newer than the store's waits, as the apiserver's watch cache does. */
const FRESHNESS_WAIT_MS = 3000;
const CHUNK_BYTES = 64 * 1024;

export function matcher(opts: ListOptions, extra?: ObjectFilter): ObjectFilter | undefined {
  const ls = opts.labelSelector.empty ? undefined : opts.labelSelector;
  const fs = opts.fieldSelector.empty ? undefined : opts.fieldSelector;
  if (!ls && !fs && !extra) return undefined;
  return (o) => (!ls || ls.matches(o.labels)) && (!fs || fs.matches(o.fields)) && (!extra || extra(o));
}

/** Picks the snapshot a list is served from (see kube-api-surface.md §3), waiting for a future version briefly. */
export async function listSnapshot(store: Store, opts: ListOptions): Promise<{ snap: Snapshot; start: string }> {
  if (opts.continue) {
    checkContinueResourceVersion(opts.resourceVersion);
    const token = decodeContinue(opts.continue);
    // rv -1 is the "inconsistent" token a 410 hands out: continue at the latest version.
    if (token.rv < 0) return { snap: store.snapshot(), start: token.start };
    try {
      return { snap: store.snapshot(token.rv), start: token.start };
    } catch (e) {
      if (e instanceof ResourceVersionTooOld) throw expiredContinueError(token.start);
      throw e;
    }
  }
  const rv = opts.resourceVersion;
  if (rv === '' || rv === '0') return { snap: store.snapshot(), start: '' };
  const n = Number(rv);
  await waitFresh(store, n);
  const exact = opts.resourceVersionMatch === 'Exact' || (opts.resourceVersionMatch === '' && opts.limit > 0);
  if (!exact) return { snap: store.snapshot(), start: '' };
  try {
    return { snap: store.snapshot(n), start: '' };
  } catch (e) {
    if (e instanceof ResourceVersionTooOld) throw expiredListError();
    throw e;
  }
}

async function waitFresh(store: Store, rv: number): Promise<void> {
  try {
    await store.waitForRV(rv, FRESHNESS_WAIT_MS);
  } catch {
    throw tooLargeResourceVersionError(rv, store.clock.current());
  }
}

/** One page (or, without a limit, everything) of a list. */
export async function listPage(store: Store, target: ListTarget, opts: ListOptions, extra?: ObjectFilter): Promise<ListPage> {
  const { snap, start: relStart } = await listSnapshot(store, opts);
  const prefix = target.namespace ? `${target.namespace}/` : '';
  const start = relStart ? prefix + relStart : '';
  const match = matcher(opts, extra);
  const { objects: source, indexed } = inScope(store, snap, opts, start, prefix);
  if (opts.limit <= 0) {
    return { rv: snap.rv, items: match ? filterIter(source, match) : source, continueToken: '' };
  }
  const items: StoredObject[] = [];
  let last: StoredObject | undefined;
  let more = false;
  for (const o of source) {
    if (items.length >= opts.limit) {
      more = true;
      break;
    }
    if (!match || match(o)) {
      items.push(o);
      last = o;
    }
  }
  // The scan answers a token whenever any object follows the last item, matching or not; the candidates skip those.
  if (indexed && !more && last && items.length >= opts.limit) more = !snap.iterate(last.key + '\x00', prefix).next().done;
  if (!more || !last) return { rv: snap.rv, items, continueToken: '' };
  // Like the apiserver: the token names the next key after the last returned one, relative to the list's scope.
  const next = last.key.slice(prefix.length) + '\x00';
  const page: ListPage = { rv: snap.rv, items, continueToken: encodeContinue(snap.rv, next) };
  if (!match) page.remainingItemCount = snap.countFrom(prefix + next, prefix);
  return page;
}

/**
 * The objects under prefix from start on that a list (or a watch's initial events) has to look at: the selector
 * index's candidates when there are fewer of them than objects in scope (a namespace is a key range already), else
 * all. Not matched yet: the caller matches each against the whole selector.
 */
export function inScope(store: Store, snap: Snapshot, opts: ListOptions, start: string, prefix: string): { objects: IterableIterator<StoredObject>; indexed: boolean } {
  const c = store.index && candidatesFor(store.index, opts.labelSelector, opts.fieldSelector);
  if (c && c.size < snap.countFrom(start, prefix)) return { objects: snap.iterateAmong(c.from, start, prefix), indexed: true };
  return { objects: snap.iterate(start, prefix), indexed: false };
}

/** The objects of it that f keeps; in batches when it has them (see ObjectBatches). */
function filterIter(it: IterableIterator<StoredObject>, f: ObjectFilter): IterableIterator<StoredObject> & ObjectBatches {
  const source = batchesOf(it);
  const filtered = {
    next(): IteratorResult<StoredObject> {
      for (;;) {
        const r = it.next();
        if (r.done || f(r.value)) return r;
      }
    },
    fill(out: StoredObject[]): number {
      for (;;) {
        const n = source.fill(out);
        if (n === 0) return 0;
        let k = 0;
        for (let i = 0; i < n; i++) if (f(out[i]!)) out[k++] = out[i]!;
        if (k > 0) return k;
      }
    },
    [Symbol.iterator]() {
      return filtered;
    },
  };
  return filtered;
}

function listMetaJson(page: ListPage): string {
  let s = `{"resourceVersion":"${page.rv}"`;
  if (page.continueToken) s += `,"continue":"${page.continueToken}"`;
  if (page.remainingItemCount !== undefined) s += `,"remainingItemCount":${page.remainingItemCount}`;
  return s + '}';
}

/** A cached object's Table row, from its stored bytes: only what the printer reads is parsed. */
export function tableRowOf(p: Printer, o: StoredObject, include: IncludeObject, now: number): string {
  return tableRowFromJson(p, o.json, include, now);
}

/**
 * Writes a list page in the negotiated form, in chunks of about 64 KiB. Object lists are assembled from the stored
 * bytes (copied, never encoded again); Tables and metadata lists are built as text, since each item is made anew.
 */
export async function writeList(res: ServerResponse, target: ListTarget, page: ListPage, form: ResponseForm, headers?: Record<string, string>): Promise<void> {
  const d = target.desc;
  res.writeHead(200, { 'Content-Type': 'application/json', ...headers });
  if (form.as === 'object') {
    const prefix = `{"kind":"${d.listKind}","apiVersion":"${groupVersion(d)}","metadata":${listMetaJson(page)},"items":[`;
    await writeBytesList(res, Buffer.from(prefix), page.items, Buffer.from(']}'));
    return;
  }
  let prefix: string;
  let suffix: string;
  let item: (o: StoredObject, now: number) => string;
  if (form.as === 'table') {
    ({ prefix, suffix } = tableHeadJson(target.printer, {
      resourceVersion: String(page.rv),
      continue: page.continueToken || undefined,
      remainingItemCount: page.remainingItemCount,
    }));
    const include = form.include;
    item = (o, now) => tableRowOf(target.printer, o, include, now);
  } else {
    prefix = `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":${listMetaJson(page)},"items":[`;
    suffix = ']}';
    item = (o) => partialObjectMetadataJson({ metadata: metadataOf(o) });
  }
  const now = Date.now();
  let buf = prefix;
  let first = true;
  for (const o of page.items) {
    buf += first ? item(o, now) : ',' + item(o, now);
    first = false;
    if (buf.length >= CHUNK_BYTES) {
      if (!res.write(buf)) await untilDrainOrClose(res as unknown as Parameters<typeof untilDrainOrClose>[0]);
      buf = '';
      if (res.destroyed) return;
    }
  }
  res.end(buf + suffix);
}

/**
 * prefix, the items' stored bytes separated by commas, suffix: each object copied once, straight into ~256 KiB
 * chunks from a pool. Nothing is allocated per item: objects come in batches into one array (ObjectBatches).
 */
async function writeBytesList(res: ServerResponse, prefix: Buffer, items: Iterable<StoredObject>, suffix: Buffer): Promise<void> {
  const body = res as unknown as StreamingBody;
  const source = batchesOf(items);
  const batch: StoredObject[] = new Array(LIST_BATCH);
  let buf = chunkBuffer(Math.max(POOLED_CHUNK, prefix.length));
  let at = prefix.copy(buf, 0);
  let first = true;
  for (let n = source.fill(batch); n > 0; n = source.fill(batch)) {
    for (let i = 0; i < n; i++) {
      const o = batch[i]!;
      const need = o.end - o.start + (first ? 0 : 1);
      if (at + need > buf.length) {
        // It does not fit: what is there goes, and the object gets a buffer it fits in (its own when it is large).
        const ok = at === 0 || sendChunk(body, buf, at);
        if (at === 0) giveBack(buf);
        buf = chunkBuffer(need);
        at = 0;
        if (!ok) await untilDrainOrClose(body);
        if (res.destroyed) return giveBack(buf);
      }
      if (!first) buf[at++] = 0x2c; // ,
      first = false;
      at += copyBytes(o.bytes, buf, at, o.start, o.end);
      if (at >= BYTES_CHUNK) {
        const ok = sendChunk(body, buf, at);
        buf = chunkBuffer(POOLED_CHUNK);
        at = 0;
        if (!ok) await untilDrainOrClose(body);
        if (res.destroyed) return giveBack(buf);
      }
    }
  }
  // The last chunk leaves from the pool too: a fresh buffer per list (up to a chunk) is memory outside the heap
  // that V8 counts, and a process serving many lists collects for it (see below).
  if (at + suffix.length <= buf.length) {
    at += suffix.copy(buf, at);
    body.end(buf.subarray(0, at), () => giveBack(buf));
    return;
  }
  const last = Buffer.allocUnsafe(at + suffix.length);
  buf.copy(last, 0, 0, at);
  suffix.copy(last, at);
  giveBack(buf);
  res.end(last);
}

/** Writes buf's first len bytes; buf goes back to the pool once the connection has taken them. */
function sendChunk(body: StreamingBody, buf: Buffer, len: number): boolean {
  return body.write(len === buf.length ? buf : buf.subarray(0, len), () => giveBack(buf));
}

/** Objects taken from the store at a time by a list writer. */
const LIST_BATCH = 256;

// List chunks are copied into buffers from a pool, given back once written. A new buffer per chunk is memory
// outside the JS heap, which V8 answers every few MB with a scavenge: at a million cached pods, 4-30 ms each every
// ~70 ms while filtered lists were served (--trace-gc, scenario 3), which is where their p99 went.
// Chunks of stored bytes are 256 KiB: each chunk fills the socket past its high-water mark, and waiting for its
// drain (and the pacing turn after it) allocates a few KB of promises and closures in the JS heap. With 64 KiB
// chunks that was ~0.36 MB per 500-pod page, a young-generation collection every ~40 pages (scenario 3, heap
// sampling at 100k pods: 144 -> 85 MB sampled over the same 400 lists, page p50 6.9 -> 4.2 ms in one run each).
// The pool keeps as many chunks as the lists in flight use (each holds one or two while its connection drains):
// a chunk allocated for each one past a small pool is memory outside the heap that V8 counts, and every ~64 MiB of
// it starts a collection. A process serving a hundred lists at once (the benchmarks' simulated members, a gateway
// under a fleet's informers) collected that way every second or so, and at a million objects each full mark of
// its heap cost the two cores ~0.3 s (--trace-gc; perf: 25 s of GC threads in a 1M cold sync). Chunks no list
// needed for a whole TRIM_MS are let go, down to POOL_KEEP.
const BYTES_CHUNK = 256 * 1024;
const POOLED_CHUNK = 2 * BYTES_CHUNK;
const POOL_MAX = 256;
const POOL_KEEP = 16;
const TRIM_MS = 10_000;
const chunkPool: Buffer[] = [];
/** The fewest chunks the pool held since the last trim: that many were not needed. */
let poolLow = 0;
let trimTimer: NodeJS.Timeout | undefined;

function chunkBuffer(size: number): Buffer {
  if (size > POOLED_CHUNK) return Buffer.allocUnsafeSlow(size);
  const b = chunkPool.pop();
  if (chunkPool.length < poolLow) poolLow = chunkPool.length;
  return b ?? Buffer.allocUnsafeSlow(POOLED_CHUNK);
}

function giveBack(buf: Buffer): void {
  if (buf.length !== POOLED_CHUNK || chunkPool.length >= POOL_MAX) return;
  chunkPool.push(buf);
  if (chunkPool.length > POOL_KEEP && !trimTimer) {
    poolLow = chunkPool.length;
    trimTimer = setInterval(trimPool, TRIM_MS).unref();
  }
}

/** Chunks the pool holds now (tests). */
export function listChunkPoolSize(): number {
  return chunkPool.length;
}

function trimPool(): void {
  chunkPool.length -= Math.max(0, Math.min(poolLow, chunkPool.length - POOL_KEEP));
  poolLow = chunkPool.length;
  if (chunkPool.length <= POOL_KEEP) {
    clearInterval(trimTimer);
    trimTimer = undefined;
  }
}
