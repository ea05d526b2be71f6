// WATCH from a Store with a kube-apiserver's semantics: where the stream starts (synthetic ADDED for the current
// state, a replay after a resourceVersion, or 410 when that is too old), sendInitialEvents with its closing
// bookmark, per-watcher selectors that turn a MODIFIED into ADDED or DELETED as objects enter or leave the
// selection, bookmarks, timeoutSeconds, and ending watchers that cannot keep up instead of buffering forever.
// Each event is encoded once per form and shared by every watcher that receives it.

import type { ServerResponse } from 'node:http';
import type { ListOptions } from '../api/listoptions.js';
import { groupVersion } from '../api/resource.js';
import { tooOldResourceVersionError } from '../api/resourceversion.js';
import { toStatus } from '../api/status.js';
import { partialObjectMetadataJson, tableHeadJson, tableRowJson } from '../api/table.js';
import { bookmarkJson, encodeWatchEvent, errorEventFromStatus, INITIAL_EVENTS_END_ANNOTATION, type WatchEventType } from '../api/watch.js';
import { inScope, matcher, type ListTarget, type ObjectFilter, type ResponseForm } from './list.js';
import { metadataOf, objectOf, ResourceVersionTooOld, type Store, type StoreEvent, type StoredObject } from './store.js';

export interface WatchSettings {
  /** How often a watcher that asked for bookmarks gets one. The apiserver sends about one a minute. */
  bookmarkIntervalMs: number;
  /** A watcher whose unsent bytes pass this is ended; its client re-watches from its last resourceVersion. */
  maxBufferedBytes: number;
  /** Upper bound for timeoutSeconds, and the default when the client gives none (the apiserver picks 30-60 min). */
  maxTimeoutSeconds: number;
}

export const defaultWatchSettings: WatchSettings = {
  bookmarkIntervalMs: 60_000,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxTimeoutSeconds: 1800,
};

export interface ActiveWatch {
  /** Ends the stream cleanly (graceful shutdown). */
  stop(): void;
  /** Resolves when the stream is over, for whatever reason. */
  done: Promise<void>;
}

/** Starts a watch on res; the response is ended by the watch itself. */
export function serveWatch(
  res: ServerResponse,
  store: Store,
  target: ListTarget,
  opts: ListOptions,
  form: ResponseForm,
  settings: WatchSettings = defaultWatchSettings,
  extra?: ObjectFilter,
): ActiveWatch {
  const prefix = target.namespace ? `${target.namespace}/` : '';
  const sel = matcher(opts, extra);
  const match = (o: StoredObject | undefined): boolean => !!o && (!prefix || o.key.startsWith(prefix)) && (!sel || sel(o));
  const enc = encoderFor(target, form, store);

  let finished = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const timers: NodeJS.Timeout[] = [];
  let unsubscribe = (): void => {};
  let lastRV = 0;

  // A watcher's events of one event-loop iteration leave as one write at its end: every write to a TLS connection
  // is a record and a syscall of its own, and under churn a watcher gets many events per iteration.
  // The initial events and a replay are written straight away, as they are produced (no iteration to batch).
  let live = false;
  let queued: Buffer[] = [];
  let queuedBytes = 0;
  let closed = false;
  const flush = (): void => {
    if (queued.length === 0) return;
    const b = queued.length === 1 ? queued[0]! : Buffer.concat(queued, queuedBytes);
    queued = [];
    queuedBytes = 0;
    if (!closed && !res.writableEnded) res.write(b);
  };

  const finish = () => {
    if (finished) return;
    finished = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    flush();
    if (!res.writableEnded) res.end();
    resolveDone();
  };
  res.on('close', () => {
    closed = true;
    finish();
  });

  const write = (buf: Buffer | string): void => {
    if (finished) return;
    if (!live) {
      res.write(buf);
      if (res.writableLength > settings.maxBufferedBytes) finish();
      return;
    }
    const b = typeof buf === 'string' ? Buffer.from(buf) : buf;
    if (queued.push(b) === 1) flushSoon(flush);
    queuedBytes += b.length;
    if (res.writableLength + queuedBytes > settings.maxBufferedBytes) finish();
  };

  const deliver = (ev: StoreEvent): void => {
    lastRV = ev.rv;
    const now = match(ev.object);
    const before = ev.type === 'MODIFIED' ? match(ev.prev) : false;
    if (ev.type === 'ADDED') {
      if (now) write(enc.event(ev, 'ADDED', false));
    } else if (ev.type === 'DELETED') {
      if (match(ev.prev)) write(enc.event(ev, 'DELETED', false));
    } else if (now && before) {
      write(enc.event(ev, 'MODIFIED', false));
    } else if (now) {
      write(enc.event(ev, 'ADDED', false));
    } else if (before) {
      // The object left the selection: watchers see its old state deleted at this event's version.
      write(enc.event(ev, 'DELETED', true));
    }
  };

  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
  // Flush the headers now: clients wait for them before they consider the watch established.
  res.flushHeaders?.();

  const rv = opts.resourceVersion;
  try {
    const fromNow = rv === '' || rv === '0';
    if (opts.sendInitialEvents ?? fromNow) {
      const snapRV = store.clock.current();
      for (const o of inScope(store, store.snapshot(), opts, prefix, prefix).objects) {
        if (!sel || sel(o)) write(enc.synthetic(o));
      }
      lastRV = snapRV;
      // The closing bookmark goes only to clients that take bookmarks, as the apiserver does (sendInitialEvents
      // is also defaulted on for plain watches from "" or "0" since WatchList went beta).
      if (opts.sendInitialEvents && opts.allowWatchBookmarks) {
        write(encodeWatchEvent('BOOKMARK', enc.bookmark(String(snapRV), { [INITIAL_EVENTS_END_ANNOTATION]: 'true' })));
      }
    } else if (fromNow) {
      lastRV = store.clock.current();
    } else {
      const from = Number(rv);
      for (const ev of store.eventsSince(from)) deliver(ev);
      lastRV = Math.max(lastRV, from);
    }
  } catch (e) {
    if (e instanceof ResourceVersionTooOld) {
      write(errorEventFromStatus(tooOldResourceVersionError(e.requested, e.oldest).status));
    } else {
      write(errorEventFromStatus(toStatus(e)));
    }
    finish();
    return { stop: finish, done };
  }
  if (finished) return { stop: finish, done };
  unsubscribe = store.subscribe(deliver);
  live = true;

  const timeout = Math.min(opts.timeoutSeconds ?? settings.maxTimeoutSeconds, settings.maxTimeoutSeconds);
  timers.push(setTimeout(finish, timeout * 1000));
  if (opts.allowWatchBookmarks && form.as !== 'table') {
    const tick = () => {
      const current = Math.max(lastRV, store.clock.current());
      write(encodeWatchEvent('BOOKMARK', enc.bookmark(String(current))));
      timers.push(setTimeout(tick, settings.bookmarkIntervalMs));
    };
    timers.push(setTimeout(tick, settings.bookmarkIntervalMs));
  }
  return { stop: finish, done };
}

let flushes: Array<() => void> = [];

/** Runs f once the loop has polled for I/O, with every other watcher's flush: one immediate for them all. */
function flushSoon(f: () => void): void {
  if (flushes.push(f) === 1) setImmediate(runFlushes);
}

function runFlushes(): void {
  const fs = flushes;
  flushes = [];
  for (const f of fs) f();
}

interface Encoder {
  /**
   * An event's bytes, cached on the event for every watcher with the same form. With leftSelection, the object
   * is the event's previous state under the event's version: what a watcher sees of an object that stopped
   * matching its selectors.
   */
  event(ev: StoreEvent, type: WatchEventType, leftSelection: boolean): Buffer;
  /** A synthetic ADDED for a watch that starts from the current state. */
  synthetic(obj: StoredObject): Buffer;
  bookmark(rv: string, annotations?: Record<string, string>): string;
}

function encoderFor(target: ListTarget, form: ResponseForm, store: Store): Encoder {
  const d = target.desc;
  const gv = groupVersion(d);
  const stateOf = (ev: StoreEvent, leftSelection: boolean): StoredObject =>
    leftSelection ? store.seal(objectOf(ev.prev!), ev.rv) : ev.object;
  const bookmark = (rv: string, annotations?: Record<string, string>): string =>
    form.as === 'metadata'
      ? bookmarkJson('meta.k8s.io/v1', 'PartialObjectMetadata', rv, annotations)
      : bookmarkJson(gv, d.kind, rv, annotations);
  if (form.as === 'table') {
    // The first event carries the column definitions, later ones do not (kubectl reuses the last columns).
    let headerSent = false;
    const table = (obj: StoredObject, headers: boolean): string => {
      const { prefix, suffix } = tableHeadJson(target.printer, { resourceVersion: String(obj.rv) }, !headers);
      return prefix + tableRowJson(target.printer, objectOf(obj), obj.json, form.include, Date.now()) + suffix;
    };
    return {
      event(ev, type, leftSelection) {
        if (!headerSent) {
          headerSent = true;
          return encodeWatchEvent(type, table(stateOf(ev, leftSelection), true));
        }
        const key = `table:${form.include}:${type}:${leftSelection}`;
        return cached(ev, key, () => encodeWatchEvent(type, table(stateOf(ev, leftSelection), false)));
      },
      synthetic(obj) {
        const b = encodeWatchEvent('ADDED', table(obj, !headerSent));
        headerSent = true;
        return b;
      },
      bookmark,
    };
  }
  const body = form.as === 'metadata' ? (o: StoredObject) => partialObjectMetadataJson({ metadata: metadataOf(o) }) : (o: StoredObject) => o.json;
  return {
    event(ev, type, leftSelection) {
      return cached(ev, `${form.as}:${type}:${leftSelection}`, () => encodeWatchEvent(type, body(stateOf(ev, leftSelection))));
    },
    synthetic: (obj) => encodeWatchEvent('ADDED', body(obj)),
    bookmark,
  };
}

function cached(ev: StoreEvent, key: string, make: () => Buffer): Buffer {
  const encoded = (ev.encoded ??= new Map());
  let b = encoded.get(key);
  if (!b) {
    b = make();
    encoded.set(key, b);
  }
  return b;
}
