// WATCH from a Store with a kube-apiserver's semantics: where the stream starts (synthetic ADDED for the current
// state, a replay after a resourceVersion, or 410 when that is too old), sendInitialEvents with its closing
// bookmark, per-watcher selectors that turn a MODIFIED into ADDED or DELETED as objects enter or leave the
// selection, bookmarks, timeoutSeconds, and ending watchers that cannot keep up instead of buffering forever.
// Each event is encoded once per form and shared by every watcher that receives it.

import type { ServerResponse } from 'node:http';
import type { ListOptions } from '../api/listoptions.js';
import { concatBytes } from '../api/offheap.js';
import { groupVersion } from '../api/resource.js';
import { tooOldResourceVersionError } from '../api/resourceversion.js';
import { toStatus } from '../api/status.js';
import { partialObjectMetadataJson, tableHeadJson } from '../api/table.js';
import { bookmarkJson, encodeWatchEvent, errorEventFromStatus, INITIAL_EVENTS_END_ANNOTATION } from '../api/watch.js';
import { inScope, matcher, tableRowOf, type ListTarget, type ObjectFilter, type ResponseForm } from './list.js';
import { connectionGone, nextTurn, SLICE_MS, untilDrainOrClose } from '../server/respond.js';
import { metadataOf, ResourceVersionTooOld, type Store, type StoreEvent, type StoreEventType, type StoredObject, type Trigger } from './store.js';

export interface WatchSettings {
  /** How often a watcher that asked for bookmarks gets one. The apiserver sends about one a minute. */
  bookmarkIntervalMs: number;
  /** A watcher whose unsent bytes pass this is ended; its client re-watches from its last resourceVersion. */
  maxBufferedBytes: number;
  /** Upper bound for timeoutSeconds, and the default when the client gives none (the apiserver picks 30-60 min). */
  maxTimeoutSeconds: number;
  /** Live events a watcher may have waiting while its initial events or replay are still being written. */
  maxPendingEvents: number;
}

export const defaultWatchSettings: WatchSettings = {
  bookmarkIntervalMs: 60_000,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxTimeoutSeconds: 1800,
  maxPendingEvents: 100_000,
};

/** Shared frame chunks a watcher's connection may hold views of before its batches go as copies (see flush). */
export const MAX_HELD_CHUNKS = 16;
/** The cacher's bookmark before a watch's timeout. */
const PRE_TIMEOUT_BOOKMARK_MS = 2000;

export interface ActiveWatch {
  /** Ends the stream cleanly (graceful shutdown). */
  stop(): void;
  /** Resolves when the stream is over, with why. */
  done: Promise<WatchEnd>;
}

/**
 * Why a watch ended. unresponsive: its client did not keep up (its unsent bytes passed maxBufferedBytes, or changes
 * outran it while it read its initial events), as kube-apiserver's cacher ends a watcher whose buffer is full
 * (apiserver_terminated_watchers_total); closed: the client left; timeout: its timeoutSeconds; stopped: stop();
 * error: it could not start (a resourceVersion too old) or its backlog failed.
 */
export type WatchEnd = 'unresponsive' | 'closed' | 'timeout' | 'stopped' | 'error';

/** Told the size of each event a watch sends (apiserver_watch_events_total and apiserver_watch_events_sizes). */
export type WatchEventSent = (bytes: number) => void;

/** Starts a watch on res; the response is ended by the watch itself. */
export function serveWatch(
  res: ServerResponse,
  store: Store,
  target: ListTarget,
  opts: ListOptions,
  form: ResponseForm,
  settings: WatchSettings = defaultWatchSettings,
  extra?: ObjectFilter,
  sent?: WatchEventSent,
): ActiveWatch {
  const prefix = target.namespace ? `${target.namespace}/` : '';
  const sel = matcher(opts, extra);
  const match = (o: StoredObject | undefined): boolean => !!o && (!prefix || o.key.startsWith(prefix)) && (!sel || sel(o));
  const enc = encoderFor(target, form, store);

  let finished = false;
  let resolveDone!: (why: WatchEnd) => void;
  const done = new Promise<WatchEnd>((r) => (resolveDone = r));
  const timers: NodeJS.Timeout[] = [];
  let unsubscribe = (): void => {};
  let lastRV = 0;

  // A watcher's events of one event-loop iteration leave as one write at its end: every write to a TLS connection
  // is a record and a syscall of its own, and under churn a watcher gets many events per iteration. They are
  // written corked, so the socket (or the HTTP/2 stream) takes them as one writev: joining them here first
  // allocated a fresh buffer per watcher per iteration (at 1,000 watchers, most of the fan-out's memory traffic).
  // The initial events and a replay are written straight away, as they are produced (no iteration to batch).
  let live = false;
  let queued: Buffer[] = [];
  let queuedBytes = 0;
  let closed = false;
  // An event's frame is a view of a shared 1 MiB chunk (src/api/watch.ts), and a view keeps its whole chunk alive.
  // A connection that has not taken its frames yet holds them: a stalled watcher with a narrow selection, one
  // frame of a few KB in each chunk, would keep ~200 times its allowance alive. So the chunks a connection holds
  // views of are counted (frames of consecutive events share one; a batch's write callback says when the
  // connection took them), and past MAX_HELD_CHUNKS a batch goes as a copy. A watcher that keeps up holds one or two.
  let chunksHeld = 0;
  let lastChunk: ArrayBufferLike | undefined;
  const heldBatches: number[] = [];
  const batchTaken = (): void => {
    chunksHeld -= heldBatches.shift() ?? 0;
  };
  const flush = (): void => {
    if (queued.length === 0) return;
    const bs = queued;
    const bytes = queuedBytes;
    queued = [];
    queuedBytes = 0;
    if (closed || res.writableEnded) return;
    if (chunksHeld >= MAX_HELD_CHUNKS) {
      res.write(concatBytes(bs, bytes));
      return;
    }
    let chunks = 0;
    for (let i = 0; i < bs.length; i++) {
      if (bs[i]!.buffer !== lastChunk) {
        lastChunk = bs[i]!.buffer;
        chunks++;
      }
    }
    chunksHeld += chunks;
    heldBatches.push(chunks);
    if (bs.length === 1) {
      res.write(bs[0]!, batchTaken);
      return;
    }
    res.cork();
    const last = bs.length - 1;
    for (let i = 0; i < last; i++) res.write(bs[i]!);
    res.write(bs[last]!, batchTaken);
    res.uncork();
  };

  const finish = (why: WatchEnd) => {
    if (finished) return;
    finished = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    flush();
    if (!res.writableEnded) res.end();
    resolveDone(why);
  };
  const stop = () => finish('stopped');
  res.on('close', () => {
    closed = true;
    finish('closed');
  });

  const write = (buf: Buffer | string): void => {
    if (finished) return;
    sent?.(buf.length);
    if (!live) {
      res.write(buf);
      if (res.writableLength > settings.maxBufferedBytes) finish('unresponsive');
      return;
    }
    const b = typeof buf === 'string' ? Buffer.from(buf) : buf;
    if (queued.push(b) === 1) flushSoon(flush);
    queuedBytes += b.length;
    if (res.writableLength + queuedBytes > settings.maxBufferedBytes) finish('unresponsive');
  };

  /** The bytes of ev for this watcher, if its selection sees ev at all. */
  const render = (ev: StoreEvent): Buffer | undefined => {
    lastRV = ev.rv;
    const now = match(ev.object);
    const before = ev.type === 'MODIFIED' ? match(ev.prev) : false;
    if (ev.type === 'ADDED') return now ? enc.event(ev, 'ADDED', false) : undefined;
    if (ev.type === 'DELETED') return match(ev.prev) ? enc.event(ev, 'DELETED', false) : undefined;
    if (now && before) return enc.event(ev, 'MODIFIED', false);
    if (now) return enc.event(ev, 'ADDED', false);
    // The object left the selection: watchers see its old state deleted at this event's version.
    if (before) return enc.event(ev, 'DELETED', true);
    return undefined;
  };

  // What a watcher gets before its live events, the current state (synthetic ADDED) or a replay of the window,
  // can be a whole fleet: far more than a slow watcher's allowance, and more than any socket takes at once. It is
  // taken in the same turn as the subscription (StoredObjects and StoreEvents never change, so the references are
  // a consistent snapshot) and written with backpressure; live events that arrive meanwhile wait, as references,
  // and follow it in order. Only then does the watch go live and the allowance apply.
  let initialObjects: StoredObject[] | undefined;
  let replay: StoreEvent[] | undefined;
  let closingBookmark: string | undefined;
  const pending: StoreEvent[] = [];
  const onEvent = (ev: StoreEvent): void => {
    if (live) {
      const b = render(ev);
      if (b) write(b);
    } else if (pending.push(ev) > settings.maxPendingEvents) {
      // Changes outran a client still reading its initial events: it starts over, as after any ended watch.
      finish('unresponsive');
    }
  };

  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
  // Flush the headers now: clients wait for them before they consider the watch established.
  res.flushHeaders?.();
  // A client that went away while the request was on its way here had its 'close' before the listener above: nothing
  // would end the watch but its timeout.
  if (connectionGone(res)) {
    closed = true;
    finish('closed');
    return { stop, done };
  }

  const rv = opts.resourceVersion;
  let replayFrom = 0;
  try {
    const fromNow = rv === '' || rv === '0';
    if (opts.sendInitialEvents ?? fromNow) {
      const snapRV = store.clock.current();
      initialObjects = [];
      for (const o of inScope(store, store.snapshot(), opts, prefix, prefix).objects) {
        if (!sel || sel(o)) initialObjects.push(o);
      }
      lastRV = snapRV;
      // The closing bookmark goes only to clients that take bookmarks, as the apiserver does (sendInitialEvents
      // is also defaulted on for plain watches from "" or "0" since WatchList went beta).
      if (opts.sendInitialEvents && opts.allowWatchBookmarks) {
        closingBookmark = encodeWatchEvent('BOOKMARK', enc.bookmark(String(snapRV), { [INITIAL_EVENTS_END_ANNOTATION]: 'true' })).toString();
      }
    } else if (fromNow) {
      lastRV = store.clock.current();
    } else {
      replayFrom = Number(rv);
      replay = [...store.eventsSince(replayFrom)];
      lastRV = replayFrom;
    }
  } catch (e) {
    if (e instanceof ResourceVersionTooOld) {
      write(errorEventFromStatus(tooOldResourceVersionError(e.requested, e.oldest).status));
    } else {
      write(errorEventFromStatus(toStatus(e)));
    }
    finish('error');
    return { stop, done };
  }
  if (finished) return { stop, done };
  unsubscribe = store.subscribe(onEvent, triggerFor(opts, target.namespace, store));
  if (initialObjects === undefined && replay === undefined) {
    live = true;
  } else {
    sendBacklog().catch(() => finish('error'));
  }

  // timeoutSeconds=0 means none asked, as in the apiserver's watch handler (clients send it for "no timeout").
  const timeout = Math.min(opts.timeoutSeconds || settings.maxTimeoutSeconds, settings.maxTimeoutSeconds);
  timers.push(setTimeout(() => finish('timeout'), timeout * 1000));
  if (opts.allowWatchBookmarks && form.as !== 'table') {
    const bookmark = () => {
      // Not while the backlog is being written: a bookmark says "you have everything up to here".
      if (live) write(encodeWatchEvent('BOOKMARK', enc.bookmark(String(Math.max(lastRV, store.clock.current())))));
    };
    const tick = () => {
      bookmark();
      timers.push(setTimeout(tick, settings.bookmarkIntervalMs));
    };
    timers.push(setTimeout(tick, settings.bookmarkIntervalMs));
    // And one 2 s before the timeout, as the cacher sends (cacheWatcher.nextBookmarkTime): the client's next watch
    // then starts from now rather than from a bookmark up to a minute old, which the window may no longer hold.
    if (timeout * 1000 - PRE_TIMEOUT_BOOKMARK_MS > 0) timers.push(setTimeout(bookmark, timeout * 1000 - PRE_TIMEOUT_BOOKMARK_MS));
  }
  return { stop, done };

  async function sendBacklog(): Promise<void> {
    let sliceStart = performance.now();
    // Waits when the connection is full, and lets other responses have the loop every SLICE_MS.
    const send = async (b: Buffer | string): Promise<void> => {
      sent?.(b.length);
      if (!res.write(b)) {
        // An ended watch has had its 'close' already: nothing would wake this wait.
        if (finished || res.writableEnded) return;
        await untilDrainOrClose(res as unknown as Parameters<typeof untilDrainOrClose>[0]);
        sliceStart = performance.now();
      } else if (performance.now() - sliceStart >= SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    };
    if (initialObjects) {
      const objs = initialObjects;
      initialObjects = undefined;
      for (let i = 0; i < objs.length && !finished; i++) await send(enc.synthetic(objs[i]!));
      if (closingBookmark !== undefined && !finished) await send(closingBookmark);
    } else if (replay) {
      const evs = replay;
      replay = undefined;
      for (let i = 0; i < evs.length && !finished; i++) {
        const b = render(evs[i]!);
        if (b) await send(b);
      }
      lastRV = Math.max(lastRV, replayFrom);
    }
    // Live events that came meanwhile, until none is left; going live then happens in the same turn, with no await
    // between the last look at pending and live: an event in between would wait in pending for ever.
    while (pending.length > 0 && !finished) {
      const evs = pending.splice(0, pending.length);
      for (let i = 0; i < evs.length && !finished; i++) {
        const b = render(evs[i]!);
        if (b) await send(b);
      }
    }
    if (!finished) live = true;
  }
}


/**
 * What a watch's selection demands of every object it can see, for Store.subscribe: a field the store indexes
 * (spec.nodeName for pods, what kube's cacher triggers on), else its one-valued label equalities together, else the
 * namespace. Any of them is correct (the watch still matches every event it gets); only the number of events it is
 * shown differs. All the equalities at once: a watch of app=web,fleetgate.io/cluster=c is called for c's changes of
 * web, not for every change in c or every change of web in the fleet.
 */
export function triggerFor(opts: ListOptions, namespace: string, store: Store): Trigger | undefined {
  for (const r of opts.fieldSelector.requirements) {
    if (r.operator !== '!=' && store.index?.fields.has(r.field)) return { kind: 'field', name: r.field, value: r.value };
  }
  const labels = new Map<string, string>();
  for (const r of opts.labelSelector.requirements) {
    // One value only: a listener sits under one value, so an object moving between two of its values can't reach it
    // twice. A key asked twice with two values matches nothing; its first value is as good a trigger as any.
    if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1 && !labels.has(r.key)) {
      labels.set(r.key, r.values[0]!);
    }
  }
  if (labels.size > 0) return { kind: 'labels', labels: [...labels].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) };
  return namespace ? { kind: 'namespace', value: namespace } : undefined;
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
  event(ev: StoreEvent, type: StoreEventType, leftSelection: boolean): Buffer;
  /** A synthetic ADDED for a watch that starts from the current state. */
  synthetic(obj: StoredObject): Buffer;
  bookmark(rv: string, annotations?: Record<string, string>): string;
}

function encoderFor(target: ListTarget, form: ResponseForm, store: Store): Encoder {
  const d = target.desc;
  const gv = groupVersion(d);
  const stateOf = (ev: StoreEvent, leftSelection: boolean): StoredObject =>
    leftSelection ? store.restamp(ev.prev!, ev.rv) : ev.object;
  const bookmark = (rv: string, annotations?: Record<string, string>): string =>
    form.as === 'metadata'
      ? bookmarkJson('meta.k8s.io/v1', 'PartialObjectMetadata', rv, annotations)
      : bookmarkJson(gv, d.kind, rv, annotations);
  if (form.as === 'table') {
    // The first event carries the column definitions, later ones do not (kubectl reuses the last columns).
    let headerSent = false;
    const keys = eventKeys(`table:${form.include}`);
    const table = (obj: StoredObject, headers: boolean): string => {
      const { prefix, suffix } = tableHeadJson(target.printer, { resourceVersion: String(obj.rv) }, !headers);
      return prefix + tableRowOf(target.printer, obj, form.include, Date.now()) + suffix;
    };
    return {
      event(ev, type, leftSelection) {
        if (!headerSent) {
          headerSent = true;
          return encodeWatchEvent(type, table(stateOf(ev, leftSelection), true));
        }
        const key = keys[type][leftSelection ? 1 : 0];
        return cachedEvent(ev, key) ?? cacheEvent(ev, key, encodeWatchEvent(type, table(stateOf(ev, leftSelection), false)));
      },
      synthetic(obj) {
        const b = encodeWatchEvent('ADDED', table(obj, !headerSent));
        headerSent = true;
        return b;
      },
      bookmark,
    };
  }
  const body = form.as === 'metadata' ? (o: StoredObject): string | Buffer => partialObjectMetadataJson({ metadata: metadataOf(o) }) : (o: StoredObject): string | Buffer => o.json;
  const keys = eventKeys(form.as);
  return {
    event(ev, type, leftSelection) {
      const key = keys[type][leftSelection ? 1 : 0];
      return cachedEvent(ev, key) ?? cacheEvent(ev, key, encodeWatchEvent(type, body(stateOf(ev, leftSelection))));
    },
    synthetic: (obj) => encodeWatchEvent('ADDED', body(obj)),
    bookmark,
  };
}

/**
 * The keys of one encoder's forms of an event in StoreEvent.encoded (for a left selection second), made once per
 * watch: built per delivery, each string was hashed anew on every lookup.
 */
function eventKeys(form: string): Record<StoreEventType, readonly [string, string]> {
  const pair = (type: StoreEventType) => [`${form}:${type}:false`, `${form}:${type}:true`] as const;
  return { ADDED: pair('ADDED'), MODIFIED: pair('MODIFIED'), DELETED: pair('DELETED') };
}

function cachedEvent(ev: StoreEvent, key: string): Buffer | undefined {
  return ev.encoded?.get(key);
}

function cacheEvent(ev: StoreEvent, key: string, b: Buffer): Buffer {
  (ev.encoded ??= new Map()).set(key, b);
  return b;
}
