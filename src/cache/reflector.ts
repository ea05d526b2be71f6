// client-go's reflector for one resource of one upstream: list (in pages), then watch from the list's
// resourceVersion with bookmarks, resume a broken watch from the last version seen, and on 410 list again and
// hand the sink the complete new state so it can emit the difference. Every change reaches the sink exactly
// once: a resumed watch replays only what came after the last version the sink saw, and a relist replaces
// rather than adds.

import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { KubeObject } from '../api/meta.js';
import { INITIAL_EVENTS_END_ANNOTATION } from '../api/watch.js';
import type { Upstream } from '../upstream/client.js';
import { errorText } from '../upstream/errors.js';
import { upstreamPath } from '../upstream/forward.js';
import { backoff as newBackoff, sleep, type Backoff, type RateLimiter } from './ratelimit.js';

export interface ReflectorSink {
  /** After a (re)list: the complete set of the member's objects; the sink emits the difference. */
  replace(objects: KubeObject[], listRV: string): void;
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void;
  /** A bookmark: progress without a change. */
  progress?(rv: string): void;
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
  // Sink calls are wrapped so their failures are told apart from the stream's.
  const sink: ReflectorSink = {
    replace: (objects, listRV) => guard(() => o.sink.replace(objects, listRV)),
    apply: (type, obj) => guard(() => o.sink.apply(type, obj)),
    progress: o.sink.progress ? (v) => guard(() => o.sink.progress!(v)) : undefined,
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
  const replaced = (objects: KubeObject[], listRV: string) => {
    sink.replace(objects, listRV);
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
    log.info({ objects: objects.length, resourceVersion: listRV, relist: !first }, first ? 'cache synced' : 'cache relisted');
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

  /** A paged list from a consistent snapshot, restarted from scratch when a continue token expires. */
  async function list(): Promise<void> {
    let restarts = 0;
    for (;;) {
      const items: KubeObject[] = [];
      let cont = '';
      let listRV = '';
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
        const body = JSON.parse(await readText(r)) as { kind?: string; apiVersion?: string; metadata?: { resourceVersion?: string; continue?: string }; items?: KubeObject[] };
        // List items of built-in kinds come without kind and apiVersion; served objects need them.
        const kind = body.kind?.endsWith('List') ? body.kind.slice(0, -4) : undefined;
        for (const it of body.items ?? []) {
          if (kind && !it.kind) it.kind = kind;
          if (body.apiVersion && !it.apiVersion) it.apiVersion = body.apiVersion;
          items.push(it);
        }
        listRV = body.metadata?.resourceVersion ?? '';
        cont = body.metadata?.continue ?? '';
      } while (cont);
      if (expired) {
        restarts++;
        log.info({ restarts }, 'list continue token expired; listing again from the start');
        continue;
      }
      if (!listRV) throw new RequestFailure('list: the answer carries no resourceVersion', 0, '');
      replaced(items, listRV);
      return;
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

      let pending: KubeObject[] | undefined = initial ? [] : undefined;
      let outcome: WatchEnd | undefined;
      const onEvent = (ev: { type?: string; object?: KubeObject }): boolean => {
        received++;
        const obj = ev.object;
        const type = ev.type;
        if (type === 'ERROR') {
          const s = obj as unknown as { code?: number; message?: string; reason?: string };
          const message = `watch: ${s?.message ?? 'error event'}`;
          if (s?.code === 410) outcome = { kind: 'relist', quick: received === 1 && Date.now() - started < SHORT_WATCH_MS };
          else if (pending) outcome = { kind: 'noWatchList', error: message };
          else outcome = { kind: 'relist', error: message };
          return false;
        }
        const v = obj?.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          if (!v) return true;
          if (pending) {
            if (obj.metadata.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === 'true') {
              const all = pending;
              pending = undefined;
              replaced(all, v);
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
        if (pending) {
          // Initial events are the state, not changes: they reach the sink as one replace at the closing bookmark.
          if (type === 'ADDED') pending.push(obj);
          else outcome = { kind: 'noWatchList', error: `watch: ${type} event before the initial events ended` };
          return type === 'ADDED';
        }
        sink.apply(type, obj);
        if (v) rv = v;
        rvFromList = false;
        stats.events++;
        stats.lastEventAt = Date.now();
        return true;
      };

      try {
        await readEvents(r, onEvent);
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof SinkError) throw e;
        log.debug({ err: errorText(e) }, 'watch stream broken');
      }
      if (outcome) return outcome;
      if (pending) {
        // The stream ended before the initial state was complete: nothing of it reached the sink.
        return { kind: 'retry', error: 'watch: the stream ended before its initial events did', retryAfterMs: 0, incomplete: true };
      }
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

function guard(f: () => void): void {
  try {
    f();
  } catch (e) {
    throw new SinkError(e);
  }
}

function bodyStream(r: Dispatcher.ResponseData): Readable {
  const enc = r.headers['content-encoding'];
  return enc === 'gzip' ? (r.body as Readable).pipe(createGunzip()) : (r.body as Readable);
}

async function readText(r: Dispatcher.ResponseData): Promise<string> {
  const stream = bodyStream(r);
  const decoder = new StringDecoder('utf8');
  let s = '';
  for await (const chunk of stream) s += decoder.write(chunk as Buffer);
  return s + decoder.end();
}

/** Calls onEvent for each newline-framed JSON event until the stream ends or onEvent returns false. */
async function readEvents(r: Dispatcher.ResponseData, onEvent: (ev: { type?: string; object?: KubeObject }) => boolean): Promise<void> {
  const stream = bodyStream(r);
  const decoder = new StringDecoder('utf8');
  let buf = '';
  try {
    for await (const chunk of stream) {
      buf += decoder.write(chunk as Buffer);
      let start = 0;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n', start)) {
        const line = buf.slice(start, nl);
        start = nl + 1;
        if (line.trim() === '') continue;
        if (!onEvent(JSON.parse(line))) return;
      }
      buf = start > 0 ? buf.slice(start) : buf;
    }
    const rest = (buf + decoder.end()).trim();
    if (rest) onEvent(JSON.parse(rest));
  } finally {
    stream.destroy();
    if (stream !== r.body) (r.body as Readable).destroy();
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
