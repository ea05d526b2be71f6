// client-go's reflector for one resource of one upstream: list (in pages), then watch from the list's
// resourceVersion with bookmarks, resume a broken watch from the last version seen, and on 410 list again and
// hand the sink the complete new state so it can emit the difference. Every change reaches the sink exactly
// once: a resumed watch replays only what came after the last version the sink saw, and a relist replaces
// rather than adds.
//
// A list reaches the sink page by page as the pages arrive, not as one array at its end: a member's list is
// gigabytes parsed, and objects held until the last page outlive young-generation collections, get promoted and
// then make old-space garbage. Only a complete list removes what the member no longer has, and only a complete
// list makes the reflector synced and gives it a resourceVersion.

import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { KubeObject } from '../api/meta.js';
import { INITIAL_EVENTS_END_ANNOTATION } from '../api/watch.js';
import type { Upstream } from '../upstream/client.js';
import { listItems, listMetadataOf, watchEventOf, type EncodedPage, type WatchChange } from './intake.js';
import { errorText } from '../upstream/errors.js';
import { upstreamPath } from '../upstream/forward.js';
import { backoff as newBackoff, sleep, type Backoff, type RateLimiter } from './ratelimit.js';

/**
 * Where a reflector delivers. A sink takes lists either as they arrive (startList) or whole (replace): one of the
 * two is required, and startList is used when both are there.
 */
export interface ReflectorSink {
  /**
   * A (re)list begins. Its objects follow page by page; it then ends complete or is abandoned. At most one list of
   * a reflector is open at a time, and no apply or progress comes while one is.
   */
  startList?(): ListIntake;
  /**
   * After a complete (re)list: the whole set of the member's objects; the sink emits the difference. For small
   * sinks only: the reflector holds the whole list until its end to call it.
   */
  replace?(objects: KubeObject[], listRV: string): void;
  apply(type: WatchChange, obj: KubeObject): void;
  /**
   * As apply, for a change once the watch is live, with the object as its bytes b[start, end) rather than parsed:
   * returns the object's metadata.resourceVersion ('' when it has none) once applied, or undefined to have it
   * parsed and handed to apply instead (then nothing of it may have reached the sink). The bytes are not checked
   * beforehand: the sink takes only one JSON value there, and leaves the rest to apply (which is how invalid JSON
   * breaks the watch). Valid only during the call.
   */
  applyBytes?(type: WatchChange, b: Buffer, start: number, end: number): string | undefined;
  /** A bookmark: progress without a change. */
  progress?(rv: string): void;
}

/** One list on its way into a sink. */
export interface ListIntake {
  /**
   * The next objects of the list, which the sink may make its own at once. Each is the object as of the list's
   * snapshot, which is no older than anything the sink has seen from this reflector, so taking it replaces the
   * sink's version with a newer (or the same) one: watchers of the sink may see objects move forward while a
   * relist is under way, but never back.
   */
  add(objects: KubeObject[]): void;
  /** As add, for a page serialized elsewhere (ReflectorOptions.encode); required when the reflector has encode. */
  addEncoded?(page: EncodedPage): void;
  /** The list is complete at listRV: what the sink holds that no page named is gone. */
  end(listRV: string): void;
  /**
   * The list will not complete (a continue token expired and the list starts over, an error, stop, a sink that
   * threw): what was added stays, nothing is removed, and the sink's resourceVersion stays what it was. A list
   * started over is a new startList, with nothing seen yet.
   */
  abort(): void;
}

export interface ReflectorStats {
  lists: number;
  relists: number;
  watchRestarts: number;
  events: number;
  lastEventAt?: number;
}

export interface Reflector {
  /** The first list has reached the sink (stays true: later trouble shows as stale). */
  readonly synced: boolean;
  /** When the sink last got a complete list (epoch ms). */
  readonly lastSyncedAt?: number;
  readonly lastError?: string;
  /** The last attempt to list or watch failed: the sink holds the last known state, not the live one. */
  readonly stale: boolean;
  /** When the current stale spell began (epoch ms). */
  readonly staleSince?: number;
  /** The last resourceVersion the sink has seen (list, event or bookmark). */
  readonly resourceVersion?: string;
  /** Whether the initial state comes from a streaming list (false after a fallback to list+watch). */
  readonly watchList: boolean;
  stats: ReflectorStats;
  stop(): Promise<void>;
}

export interface ReflectorOptions {
  upstream: Upstream;
  /** e.g. /api/v1/pods, optionally with a query (labelSelector=...). */
  path: string;
  sink: ReflectorSink;
  limiter: RateLimiter;
  log: Logger;
  pageSize?: number;
  /** sendInitialEvents (KEP-3157) instead of a paged list; falls back to list+watch when the server refuses. */
  useWatchList?: boolean;
  /** Called whenever synced, stale or lastError changes. */
  onStatus?: () => void;
  /** The retry policy; client-go's by default. */
  backoff?: Backoff;
  /** Watches ask for timeoutSeconds in [min, 2*min); client-go's minWatchTimeout is 5 minutes. */
  minWatchTimeoutSeconds?: number;
  /**
   * Parses and serializes a list page (its JSON bytes, given away) off the main thread: intake workers
   * (intakepool.ts). The pages then reach the sink by addEncoded, in order, and the next page is fetched while one
   * is encoded. Without it pages are parsed here and reach the sink by add.
   */
  encode?: (page: Buffer) => Promise<EncodedPage>;
  /**
   * Serializes a list page here, at once (intake.ts encodeListBytes), keeping nothing of its bytes: a list's pages
   * are then read into one buffer, one after another, and reach the sink by addEncoded. Not with encode.
   */
  encodeNow?: (page: Buffer) => EncodedPage;
}

/** A watch that ends this quickly without a single event counts as a failure (client-go: "very short watch"). */
const SHORT_WATCH_MS = 1000;
/** The server should end a watch at timeoutSeconds; a peer that never does is cut this much later. */
const WATCH_GRACE_MS = 30_000;
/** A list whose continue token keeps expiring is a failure after this many fresh starts. */
const MAX_LIST_RESTARTS = 3;

/** Why a request failed, with the Status the server sent when it sent one. */
class RequestFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly reason: string,
    readonly tooLargeRV = false,
    readonly retryAfterMs = 0,
  ) {
    super(message);
  }
}

type WatchEnd =
  /** The stream ended (timeout, server shutdown, cut connection): watch again from the last version. */
  | { kind: 'closed' }
  /**
   * 410, a future version, or an error the server reported: list again. quick: the watch failed before it
   * delivered anything, so listing again at once could spin (a window smaller than the list's latency).
   */
  | { kind: 'relist'; error?: string; quick?: boolean }
  /** The server could not be reached or refused for now: wait, then watch again from the last version. */
  | { kind: 'retry'; error: string; retryAfterMs: number; incomplete?: boolean }
  /** The server does not do streaming lists: list and watch from now on. */
  | { kind: 'noWatchList'; error: string };

export function startReflector(o: ReflectorOptions): Reflector {
  const pageSize = o.pageSize ?? 500;
  const minTimeout = o.minWatchTimeoutSeconds ?? 300;
  const bo = o.backoff ?? newBackoff();
  const log = o.log.child({ resource: o.path });
  const ac = new AbortController();
  const signal = ac.signal;
  const sep = o.path.includes('?') ? '&' : '?';
  if (!o.sink.startList && !o.sink.replace) throw new Error('reflector sink takes no lists: it needs startList or replace');
  // Sink calls are wrapped so their failures are told apart from the stream's.
  const sink = {
    /** A list into the sink; abort never throws (it runs on the way out of a failure: a second one would hide the first). */
    startList: (): ListIntake & { addEncoded(page: EncodedPage): void } => {
      const intake = guard(() => (o.sink.startList ? o.sink.startList() : wholeList(o.sink)));
      return {
        add: (objects) => guard(() => intake.add(objects)),
        addEncoded: (page) =>
          guard(() => {
            if (!intake.addEncoded) throw new Error('the sink takes no encoded pages (addEncoded)');
            intake.addEncoded(page);
          }),
        end: (listRV) => guard(() => intake.end(listRV)),
        abort: () => {
          try {
            intake.abort();
          } catch (e) {
            log.error({ err: errorText(e) }, 'abandoning a list in the sink failed');
          }
        },
      };
    },
    apply: (type: WatchChange, obj: KubeObject) => guard(() => o.sink.apply(type, obj)),
    applyBytes: o.sink.applyBytes ? (type: WatchChange, b: Buffer, start: number, end: number) => guard(() => o.sink.applyBytes!(type, b, start, end)) : undefined,
    progress: o.sink.progress ? (v: string) => guard(() => o.sink.progress!(v)) : undefined,
  };

  const stats: ReflectorStats = { lists: 0, relists: 0, watchRestarts: 0, events: 0 };
  let synced = false;
  let lastSyncedAt: number | undefined;
  let lastError: string | undefined;
  let staleSince: number | undefined;
  let useWatchList = o.useWatchList ?? false;
  /** The last version the sink has seen; undefined: the next step is a (re)list. */
  let rv: string | undefined;
  /** rv came straight from a list: a watch from it that expires at once means the window is too small. */
  let rvFromList = false;

  const changed = () => {
    try {
      o.onStatus?.();
    } catch (e) {
      log.error({ err: errorText(e) }, 'reflector status listener failed');
    }
  };
  const failed = (error: string) => {
    const first = staleSince === undefined;
    if (first) staleSince = Date.now();
    if (first || error !== lastError) {
      lastError = error;
      changed();
    }
  };
  const healthy = () => {
    if (staleSince === undefined) return;
    staleSince = undefined;
    changed();
  };
  /** A list has ended complete in the sink. */
  const listed = (objects: number, listRV: string) => {
    rv = listRV;
    rvFromList = true;
    lastSyncedAt = Date.now();
    const first = !synced;
    synced = true;
    if (stats.lists > 0) stats.relists++;
    stats.lists++;
    bo.reset();
    if (first) changed();
    healthy();
    log.info({ objects, resourceVersion: listRV, relist: !first }, first ? 'cache synced' : 'cache relisted');
  };

  async function get(query: string, gzip: boolean): Promise<Dispatcher.ResponseData> {
    await o.limiter.wait(signal);
    const up = o.upstream;
    // kube-apiserver compresses large lists, never watch streams.
    const headers: string[] = ['accept', 'application/json', 'user-agent', 'fleetgate'];
    if (gzip) headers.push('accept-encoding', 'gzip');
    if (up.authHeader) headers.push('authorization', up.authHeader);
    return up.dispatcher.request({ method: 'GET', path: upstreamPath(up, o.path + sep + query), headers, signal });
  }

  /**
   * A paged list from a consistent snapshot, each page into the sink as it arrives; restarted from scratch when a
   * continue token expires.
   */
  async function list(): Promise<void> {
    let restarts = 0;
    // This list's pages are read into it one after another (encodeNow keeps nothing of them); it goes with the list.
    const pageBuffer: PageBuffer = { b: EMPTY };
    for (;;) {
      // Begun in the sink with the first page: a list refused outright leaves no trace there.
      let intake: ReturnType<typeof sink.startList> | undefined;
      let complete = false;
      // Encoded pages (o.encode) reach the sink in order, each after the one before it: applied settles once the
      // last page handed over is in the sink. A page still on its way when the list is given up is dropped.
      let applied: Promise<void> = Promise.resolve();
      let givenUp = false;
      try {
        let cont = '';
        let listRV = '';
        let count = 0;
        let expired = false;
        do {
          const q = `limit=${pageSize}` + (cont ? `&continue=${encodeURIComponent(cont)}` : '');
          const r = await get(q, true);
          if (r.statusCode !== 200) {
            const f = await failureOf(r, 'list');
            if (f.code === 410 && cont && restarts < MAX_LIST_RESTARTS) {
              expired = true;
              break;
            }
            throw f;
          }
          if (o.encodeNow) {
            const bytes = await readPage(r, pageBuffer);
            signal.throwIfAborted();
            const page = o.encodeNow(bytes);
            await applied;
            intake ??= sink.startList();
            intake.addEncoded!(page);
            count += page.count;
            listRV = page.listRV;
            cont = page.continue;
            continue;
          }
          if (o.encode) {
            const bytes = await readBytes(r);
            signal.throwIfAborted();
            // Read before the bytes are given away; when the items come first, the next page waits for this one.
            const meta = listMetadataOf(bytes);
            const encoding = o.encode(bytes);
            encoding.catch(() => {}); // seen through applied
            const into = (intake ??= sink.startList());
            const before = applied;
            let last: EncodedPage | undefined;
            applied = before
              .then(() => encoding)
              .then((page) => {
                // Stopped while the page was encoded: nothing more reaches the sink.
                if (givenUp || signal.aborted) return;
                into.addEncoded(page);
                count += page.count;
                last = page;
              });
            applied.catch(() => {}); // awaited below
            // One page ahead at most: the page before this one is in the sink before the next is fetched.
            await before;
            if (!meta) await applied;
            listRV = meta ? meta.resourceVersion : last!.listRV;
            cont = meta ? meta.continue : last!.continue;
            continue;
          }
          const body = JSON.parse(await readText(r)) as { kind?: string; apiVersion?: string; metadata?: { resourceVersion?: string; continue?: string }; items?: KubeObject[] };
          // Stopped while the page was read: nothing more reaches the sink.
          signal.throwIfAborted();
          const items = listItems(body);
          intake ??= sink.startList();
          intake.add(items);
          count += items.length;
          listRV = body.metadata?.resourceVersion ?? '';
          cont = body.metadata?.continue ?? '';
        } while (cont);
        if (expired) {
          restarts++;
          log.info({ restarts }, 'list continue token expired; listing again from the start');
          continue;
        }
        await applied;
        if (!listRV || !intake) throw new RequestFailure('list: the answer carries no resourceVersion', 0, '');
        // Ended, even if end throws: a list is ended or abandoned, not both.
        complete = true;
        intake.end(listRV);
        listed(count, listRV);
        return;
      } finally {
        if (!complete) {
          givenUp = true;
          intake?.abort();
        }
      }
    }
  }

  /**
   * One watch from rv (or, with initial events, a streaming list and then a watch). Resolves with why it ended;
   * rejects only when stopped.
   */
  async function watch(initial: boolean): Promise<WatchEnd> {
    const timeoutSeconds = watchTimeoutSeconds(minTimeout);
    let q = `watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}`;
    if (initial) q += '&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=';
    else q += `&resourceVersion=${encodeURIComponent(rv!)}`;
    const started = Date.now();
    let received = 0;
    let r: Dispatcher.ResponseData;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new Error(`no end of watch ${WATCH_GRACE_MS / 1000}s after its timeout`)), timeoutSeconds * 1000 + WATCH_GRACE_MS);
    const onStop = () => deadline.abort(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    try {
      try {
        r = await get(q, false);
      } catch (e) {
        if (signal.aborted) throw e;
        return { kind: 'retry', error: `watch: ${errorText(e)}`, retryAfterMs: 0 };
      }
      if (r.statusCode !== 200) {
        const f = await failureOf(r, 'watch');
        if (initial && f.code >= 400 && f.code < 500 && f.code !== 429 && f.code !== 410) return { kind: 'noWatchList', error: f.message };
        if (f.code === 410 || f.tooLargeRV) return { kind: 'relist', quick: true };
        if (f.code === 429 || f.code >= 500 || f.code === 0) return { kind: 'retry', error: f.message, retryAfterMs: f.retryAfterMs };
        return { kind: 'relist', error: f.message };
      }
      healthy();
      deadline.signal.addEventListener('abort', () => r.body.destroy(), { once: true });

      // The streaming list's initial events go to the sink in batches of a page, ended by the closing bookmark; the
      // list begins in the sink with its first batch.
      let listing = initial;
      let intake: ListIntake | undefined;
      let batch: KubeObject[] = [];
      let initialCount = 0;
      const flush = () => {
        if (batch.length === 0) return;
        intake ??= sink.startList();
        intake.add(batch);
        batch = [];
      };
      let outcome: WatchEnd | undefined;
      /** A change has reached the sink. */
      const advanced = (v: string | undefined) => {
        if (v) rv = v;
        rvFromList = false;
        stats.events++;
        stats.lastEventAt = Date.now();
      };
      const onEvent = (ev: { type?: string; object?: KubeObject }): boolean => {
        received++;
        const obj = ev.object;
        const type = ev.type;
        if (type === 'ERROR') {
          const s = obj as unknown as { code?: number; message?: string; reason?: string };
          const message = `watch: ${s?.message ?? 'error event'}`;
          if (s?.code === 410) outcome = { kind: 'relist', quick: received === 1 && Date.now() - started < SHORT_WATCH_MS };
          else if (listing) outcome = { kind: 'noWatchList', error: message };
          else outcome = { kind: 'relist', error: message };
          return false;
        }
        const v = obj?.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          if (!v) return true;
          if (listing) {
            if (obj.metadata.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === 'true') {
              flush();
              const ending = intake ?? sink.startList();
              listing = false;
              intake = undefined;
              ending.end(v);
              listed(initialCount, v);
            }
            return true;
          }
          rv = v;
          rvFromList = false;
          // A bookmark proves the watch is alive on a quiet member (fleetgate_member_seconds_since_last_event).
          stats.lastEventAt = Date.now();
          sink.progress?.(v);
          return true;
        }
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') {
          log.warn({ type }, 'watch event of unknown type ignored');
          return true;
        }
        if (!obj?.metadata) return true;
        if (listing) {
          // Initial events are the state, not changes: they reach the sink as a list, ended by the closing bookmark.
          if (type !== 'ADDED') {
            outcome = { kind: 'noWatchList', error: `watch: ${type} event before the initial events ended` };
            return false;
          }
          batch.push(obj);
          initialCount++;
          if (batch.length >= pageSize) flush();
          return true;
        }
        sink.apply(type, obj);
        advanced(v);
        return true;
      };
      const applyBytes = sink.applyBytes;
      const onLine = (b: Buffer, start: number, end: number): boolean => {
        // Changes once the watch is live go to a sink that reads them as bytes when they are framed as usual; the
        // rest, and what the sink declines, is parsed.
        if (applyBytes && !listing) {
          const ev = watchEventOf(b, start, end);
          if (ev) {
            const v = applyBytes(ev.type, b, ev.objectStart, ev.objectEnd);
            if (v !== undefined) {
              received++;
              advanced(v);
              return true;
            }
          }
        }
        const text = b.toString('utf8', start, end);
        if (text.trim() === '') return true;
        return onEvent(JSON.parse(text));
      };

      try {
        await readEvents(r, onLine);
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof SinkError) throw e;
        log.debug({ err: errorText(e) }, 'watch stream broken');
      } finally {
        // Cut before the closing bookmark (or stopped, refused, the sink failed): what reached the sink stays, and
        // nothing is removed. The last batch is dropped with it: nothing more is added to a list given up.
        if (listing) {
          listing = false;
          intake?.abort();
          intake = undefined;
          batch = [];
          if (!outcome && !signal.aborted) outcome = { kind: 'retry', error: 'watch: the stream ended before its initial events did', retryAfterMs: 0, incomplete: true };
        }
      }
      if (outcome) return outcome;
      if (received === 0 && Date.now() - started < SHORT_WATCH_MS) {
        return { kind: 'retry', error: 'watch: very short watch: it ended at once without any event', retryAfterMs: 0 };
      }
      return { kind: 'closed' };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
    }
  }

  async function run(): Promise<void> {
    let incompleteWatchLists = 0;
    while (!signal.aborted) {
      try {
        if (rv === undefined && !useWatchList) {
          try {
            await list();
          } catch (e) {
            if (signal.aborted) return;
            if (e instanceof SinkError) throw e;
            const error = e instanceof RequestFailure ? e.message : `list: ${errorText(e)}`;
            failed(error);
            const wait = bo.next();
            log.warn({ err: error, retryInMs: Math.round(wait) }, 'list failed');
            await sleep(wait, signal);
            continue;
          }
        }
        const initial = rv === undefined;
        const fresh = rvFromList;
        const end = await watch(initial);
        if (signal.aborted) return;
        if (initial && synced && rv !== undefined) incompleteWatchLists = 0;
        switch (end.kind) {
          case 'closed':
            stats.watchRestarts++;
            bo.reset();
            continue;
          case 'relist': {
            rv = undefined;
            if (end.error) {
              failed(end.error);
              const wait = bo.next();
              log.warn({ err: end.error, retryInMs: Math.round(wait) }, 'watch failed; listing again');
              await sleep(wait, signal);
            } else if (end.quick && (fresh || initial)) {
              const wait = bo.next();
              log.info({ retryInMs: Math.round(wait) }, 'watch expired (410) at once; listing again after a pause');
              await sleep(wait, signal);
            } else {
              log.info('watch expired (410); listing again');
            }
            continue;
          }
          case 'noWatchList':
            useWatchList = false;
            log.warn({ err: end.error }, 'streaming list refused; falling back to list and watch');
            continue;
          case 'retry': {
            if (end.incomplete && ++incompleteWatchLists >= 3) {
              useWatchList = false;
              log.warn({ err: end.error }, 'streaming list never completed; falling back to list and watch');
            }
            stats.watchRestarts++;
            failed(end.error);
            const wait = Math.max(bo.next(), end.retryAfterMs);
            log.warn({ err: end.error, retryInMs: Math.round(wait) }, 'watch failed');
            await sleep(wait, signal);
            continue;
          }
        }
      } catch (e) {
        if (signal.aborted) return;
        // The sink threw: what it holds can no longer be trusted to follow the events, so it gets a fresh list.
        rv = undefined;
        const error = `sink: ${errorText(e instanceof SinkError ? e.cause : e)}`;
        failed(error);
        log.error({ err: error }, 'applying an update failed; listing again');
        await sleep(bo.next(), signal);
      }
    }
  }

  const done = run().catch((e) => {
    if (!signal.aborted) log.error({ err: errorText(e) }, 'reflector stopped unexpectedly');
  });

  return {
    get synced() {
      return synced;
    },
    get lastSyncedAt() {
      return lastSyncedAt;
    },
    get lastError() {
      return lastError;
    },
    get stale() {
      return staleSince !== undefined;
    },
    get staleSince() {
      return staleSince;
    },
    get resourceVersion() {
      return rv;
    },
    get watchList() {
      return useWatchList;
    },
    stats,
    async stop() {
      ac.abort(new Error('reflector stopped'));
      await done;
    },
  };
}

/** client-go: timeoutSeconds = minWatchTimeout * (1 + rand), i.e. in [5, 10) minutes by default. */
export function watchTimeoutSeconds(minSeconds = 300, random = Math.random): number {
  return Math.floor(minSeconds * (1 + random()));
}

class SinkError extends Error {
  constructor(cause: unknown) {
    super(errorText(cause), { cause });
  }
}

function guard<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw new SinkError(e);
  }
}

/** A list gathered whole for a sink that takes it whole (ReflectorSink.replace). */
function wholeList(s: ReflectorSink): ListIntake {
  let all: KubeObject[] = [];
  return {
    add: (objects) => {
      for (const obj of objects) all.push(obj);
    },
    end: (listRV) => s.replace!(all, listRV),
    abort: () => {
      all = [];
    },
  };
}

function bodyStream(r: Dispatcher.ResponseData): Readable {
  const enc = r.headers['content-encoding'];
  return enc === 'gzip' ? (r.body as Readable).pipe(createGunzip()) : (r.body as Readable);
}

/** The whole body, in a buffer of its own (it is given away whole: ReflectorOptions.encode). */
async function readBytes(r: Dispatcher.ResponseData): Promise<Buffer> {
  const page: PageBuffer = { b: EMPTY };
  const bytes = await readPage(r, page);
  return bytes.length === page.b.length ? page.b : Buffer.from(bytes);
}

const EMPTY = Buffer.alloc(0);
/** Pages of 500 pods are a few MB; a larger declared length grows the buffer as the bytes arrive. */
const PRESIZE_MAX = 64 * 1024 * 1024;

/** A buffer that pages are read into, replaced by a larger one when a page does not fit. */
interface PageBuffer {
  b: Buffer;
}

/**
 * The body, copied into page.b as each chunk arrives; the bytes are a view of page.b, valid until its next read.
 * Holding the chunks until the page was complete kept each socket read's buffer alive long enough, on a busy
 * gateway, for the young generation to promote it; memory outside the JS heap that dies in the old generation goes
 * only at a full mark, and V8 starts one for about every 64 MiB of it (at 1M pods, most of the cold sync's marks).
 */
async function readPage(r: Dispatcher.ResponseData, page: PageBuffer): Promise<Buffer> {
  // Sized from content-length up to a bound: a member's header alone must not make the gateway allocate gigabytes.
  const declared = r.headers['content-encoding'] === undefined ? Math.min(Number(r.headers['content-length']), PRESIZE_MAX) : NaN;
  if (declared > page.b.length) page.b = Buffer.allocUnsafeSlow(declared);
  let at = 0;
  for await (const chunk of bodyStream(r)) {
    const c = chunk as Buffer;
    if (at + c.length > page.b.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(page.b.length * 2, at + c.length, 1 << 20));
      page.b.copy(grown, 0, 0, at);
      page.b = grown;
    }
    at += c.copy(page.b, at);
  }
  return page.b.subarray(0, at);
}

async function readText(r: Dispatcher.ResponseData): Promise<string> {
  const stream = bodyStream(r);
  const decoder = new StringDecoder('utf8');
  let s = '';
  for await (const chunk of stream) s += decoder.write(chunk as Buffer);
  return s + decoder.end();
}

/** Calls onLine for each line of the stream until it ends or onLine returns false. */
async function readEvents(r: Dispatcher.ResponseData, onLine: OnLine): Promise<void> {
  const stream = bodyStream(r);
  try {
    await splitLines(stream, onLine);
  } finally {
    stream.destroy();
    if (stream !== r.body) (r.body as Readable).destroy();
  }
}

/** A line is b[start, end), its newline left out; valid only during the call. Returns whether to go on. */
export type OnLine = (b: Buffer, start: number, end: number) => boolean;

const NEWLINE = 0x0a;

/**
 * Calls onLine for each newline-ended line of the chunks, and for what follows the last newline, until they end
 * or onLine returns false. A line within one chunk is given as a view of it; only a line that spans chunks is
 * copied, once, when its end comes.
 */
export async function splitLines(chunks: AsyncIterable<Buffer>, onLine: OnLine): Promise<void> {
  /** The start of a line that goes on in a later chunk. */
  let held: Buffer[] = [];
  for await (const chunk of chunks) {
    let from = 0;
    let nl = chunk.indexOf(NEWLINE);
    if (held.length > 0) {
      if (nl < 0) {
        held.push(chunk);
        continue;
      }
      held.push(chunk.subarray(0, nl));
      const line = Buffer.concat(held);
      held = [];
      if (!onLine(line, 0, line.length)) return;
      from = nl + 1;
      nl = chunk.indexOf(NEWLINE, from);
    }
    for (; nl >= 0; nl = chunk.indexOf(NEWLINE, from)) {
      if (!onLine(chunk, from, nl)) return;
      from = nl + 1;
    }
    if (from < chunk.length) held.push(chunk.subarray(from));
  }
  if (held.length > 0) {
    const line = held.length === 1 ? held[0]! : Buffer.concat(held);
    onLine(line, 0, line.length);
  }
}

/** The Status a non-200 answer carries, as a RequestFailure naming what failed. */
async function failureOf(r: Dispatcher.ResponseData, what: string): Promise<RequestFailure> {
  let text = '';
  try {
    text = await readText(r);
  } catch {
    // the code alone has to do
  }
  let message = `HTTP ${r.statusCode}`;
  let reason = '';
  let tooLarge = false;
  try {
    const s = JSON.parse(text);
    if (s && typeof s === 'object' && s.kind === 'Status') {
      if (typeof s.message === 'string' && s.message) message = `${message}: ${s.message}`;
      if (typeof s.reason === 'string') reason = s.reason;
      tooLarge = Array.isArray(s.details?.causes) && s.details.causes.some((c: { reason?: string }) => c?.reason === 'ResourceVersionTooLarge');
    }
  } catch {
    const line = text.trim().split('\n')[0]?.slice(0, 200);
    if (line) message = `${message}: ${line}`;
  }
  if (!tooLarge && r.statusCode === 504 && message.includes('Too large resource version')) tooLarge = true;
  const ra = Number(r.headers['retry-after']);
  return new RequestFailure(`${what}: ${message}`, r.statusCode, reason, tooLarge, Number.isFinite(ra) && ra > 0 ? ra * 1000 : 0);
}
