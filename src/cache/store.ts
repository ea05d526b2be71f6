// A watch cache for one resource: current objects kept serialized in key order, plus a bounded window of
// recent events. From these it answers what a kube-apiserver answers from etcd and its cacher: the current state,
// the state at an older resourceVersion (for consistent list pages), and the events after a resourceVersion
// (for watches that resume). The in-memory fleet stores every resource in one of these, and the gateway's
// merged cache keeps pods and events of all members in them, so both follow one set of rules.

import { intern } from '../api/intern.js';
import { metadataMember } from '../api/jsonbytes.js';
import type { KubeObject } from '../api/meta.js';
import { copyBytes } from '../api/offheap.js';
import { buildIndexWith, deferIndex, newSelectorIndex, updateIndex, type SelectorIndex, type SelectorIndexConfig } from './selectorindex.js';
import { Arena, type ArenaOptions } from './arena.js';
import { SortedKeys, lowerBound } from './sortedkeys.js';

export interface StoredObject {
  /** "namespace/name", or "name" for cluster-scoped objects (unless StoreOptions.keyOf says otherwise): the order lists come in. */
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly rv: number;
  /**
   * The object as served (metadata.resourceVersion included): its UTF-8 JSON, serialized once and written as it is
   * by every list, get and watch that serves it. Only the serialized form is kept: a parsed copy beside it cost 1.4
   * times the JSON's size per object. Bytes, not a string: they live outside the JS heap, so a cache of millions of
   * objects does not make every garbage collection walk and move gigabytes, and a response copies them instead of
   * encoding a string each time. objectOf() and metadataOf() parse them when a reader needs more than labels and
   * fields. Current objects' bytes are in the store's slabs (arena.ts).
   *
   * A view made on each read: the object holds where its bytes are (bytes, start, end) instead of a view of its own,
   * a Buffer object of ~100 bytes in the JS heap per cached object. Readers that copy every object, as a list does,
   * copy from bytes[start, end) and make no view at all.
   */
  readonly json: Buffer;
  /** A buffer holding the object's JSON at [start, end): its slab, or a buffer of its own (start 0). */
  readonly bytes: Buffer;
  readonly start: number;
  readonly end: number;
  readonly labels: Readonly<Record<string, string>>;
  /** Selectable fields (field selectors), computed once. */
  readonly fields: Readonly<Record<string, string>>;
}

export type StoreEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  readonly type: StoreEventType;
  readonly rv: number;
  /** The new state; for DELETED the last state, carrying the deletion's resourceVersion. */
  readonly object: StoredObject;
  /** The state before this event (MODIFIED, DELETED). */
  readonly prev?: StoredObject;
  /**
   * Encodings of this event built once and shared by all watchers, keyed by the encoder's name. Made on first
   * use and dropped once the live watchers have theirs: an event stays in the window long after, and an empty
   * map or a few encoded copies per event there would cost more than the object itself. (A watcher resuming from
   * the window caches them again, for the others that resume with it.)
   */
  encoded?: Map<string, Buffer>;
}

/**
 * An object serialized before it is stored (Store.putEncoded): a StoredObject but its resourceVersion, with the JSON
 * already carrying it and the key as StoreOptions.keyOf would give.
 */
export type EncodedObject = Omit<StoredObject, 'rv' | 'bytes' | 'start' | 'end'>;

const RV_SPLIT = 2 ** 30;

/** Every StoredObject is one of these (Store.sealed), so all share one shape. */
class Sealed implements StoredObject {
  /**
   * rv in two parts below 2^30: the merged cache's resourceVersions are past 2^40 (merged.ts), and a field holding
   * numbers that large keeps each in a heap number of its own, an object more per cached pod for every collection
   * to visit (a million at 1M pods). Two small integers are stored in the object itself.
   */
  private readonly rvHigh: number;
  private readonly rvLow: number;

  constructor(
    readonly key: string,
    readonly namespace: string,
    readonly name: string,
    rv: number,
    readonly bytes: Buffer,
    readonly start: number,
    readonly end: number,
    readonly labels: Readonly<Record<string, string>>,
    readonly fields: Readonly<Record<string, string>>,
  ) {
    this.rvHigh = Math.floor(rv / RV_SPLIT);
    this.rvLow = rv - this.rvHigh * RV_SPLIT;
  }

  get rv(): number {
    return this.rvHigh * RV_SPLIT + this.rvLow;
  }

  get json(): Buffer {
    return this.start === 0 && this.end === this.bytes.length ? this.bytes : this.bytes.subarray(this.start, this.end);
  }
}

/** The source of resourceVersions: one per simulated cluster (like an etcd revision), one per gateway. */
export interface RvClock {
  current(): number;
  next(): number;
}

export function newRvClock(start = 1): RvClock {
  let rv = start;
  return { current: () => rv, next: () => ++rv };
}

export interface StoreOptions {
  clock: RvClock;
  /** How many events are kept for watches that resume and for list pages at older versions. */
  windowSize?: number;
  /** Selectable fields of an object (src/api/fields.ts). */
  fieldsOf?: (obj: KubeObject) => Record<string, string>;
  /**
   * The key an object is stored and listed under; "namespace/name" (or "name") when absent. Keys must begin with
   * "namespace/" for namespaced objects, since namespace-scoped lists and watches select by that prefix. The
   * merged cache appends the member cluster, so one name can exist once per cluster.
   */
  keyOf?: (obj: KubeObject, namespace: string, name: string) => string;
  /** Fields and labels to keep a selector index of (src/cache/selectorindex.ts), for filtered lists. */
  index?: SelectorIndexConfig;
  /** Slab and slack sizes of the arena that holds current objects' JSON (tests make them small). */
  arena?: ArenaOptions;
}

export interface Snapshot {
  /** The resourceVersion the snapshot is consistent at. */
  readonly rv: number;
  /** Objects with key >= start (all when start is empty) under prefix, in key order. */
  iterate(start: string, prefix: string): IterableIterator<StoredObject>;
  /**
   * As iterate, over the objects whose current key is among keys (sorted, from a key on: a selector index's
   * candidates) plus, at an older version, every key changed since: the index knows only the current state.
   */
  iterateAmong(keys: (from: string) => IterableIterator<string>, start: string, prefix: string): IterableIterator<StoredObject>;
  /** Objects with key >= start under prefix: exact for the current state, an upper bound otherwise. */
  countFrom(start: string, prefix: string): number;
}

/**
 * An iteration that also hands out its next objects in batches, into an array the caller reuses: a list of every
 * cached pod then allocates nothing per pod (a generator allocates an iterator result per item at every level,
 * ~150 bytes per listed pod with the list writer's own, and each list of 50k pods was a young-generation
 * collection of several ms on the thread every other request waits for; scenario 7).
 */
export interface ObjectBatches {
  /** Puts the next objects into out from index 0, at most out.length (at least one slot); how many, 0 at the end. */
  fill(out: StoredObject[]): number;
}

/** items as batches: their own when they have them, else one next() per object. */
export function batchesOf(items: Iterable<StoredObject>): ObjectBatches {
  if (Array.isArray(items)) {
    let at = 0;
    return {
      fill(out) {
        let n = 0;
        while (n < out.length && at < items.length) out[n++] = items[at++]!;
        return n;
      },
    };
  }
  // (An array's fill is Array.prototype.fill: arrays are taken first.)
  if (typeof (items as Partial<ObjectBatches>).fill === 'function') return items as unknown as ObjectBatches;
  const it = items[Symbol.iterator]();
  return {
    fill(out) {
      let n = 0;
      while (n < out.length) {
        const r = it.next();
        if (r.done) break;
        out[n++] = r.value;
      }
      return n;
    },
  };
}

/**
 * How many keys a cursor takes from the sorted keys at a time: few at first, since most walks are short (a GET by
 * name looks for one key's owners), up to KEY_BATCH for lists.
 */
const KEY_BATCH_FIRST = 4;
const KEY_BATCH = 256;

/**
 * The current objects with key >= from under prefix, as an iterator with batches. Keys come in batches (4 at
 * first, growing to KEY_BATCH) and each object is looked up when it is handed out, so one deleted meanwhile is
 * skipped and one replaced is handed out as it is now, as the key-by-key walk did.
 */
function currentCursor(keys: SortedKeys, objects: Map<string, StoredObject>, from: string, prefix: string): IterableIterator<StoredObject> & ObjectBatches {
  const buf: string[] = [];
  let seek = from;
  let after = false;
  let done = false;
  let pos = 0;
  let len = 0;
  let batch = KEY_BATCH_FIRST;
  const refill = (): boolean => {
    pos = 0;
    len = done ? 0 : keys.fill(seek, after, buf, batch);
    batch = Math.min(batch * 4, KEY_BATCH);
    if (len === 0) {
      done = true;
      return false;
    }
    seek = buf[len - 1]!;
    after = true;
    if (prefix && !seek.startsWith(prefix)) {
      // The scope ends inside this batch.
      done = true;
      let n = 0;
      while (n < len && buf[n]!.startsWith(prefix)) n++;
      len = n;
    }
    return len > 0;
  };
  const cursor = {
    next(): IteratorResult<StoredObject> {
      for (;;) {
        if (pos === len && !refill()) return { value: undefined, done: true };
        const o = objects.get(buf[pos++]!);
        if (o !== undefined) return { value: o, done: false };
      }
    },
    fill(out: StoredObject[]): number {
      let n = 0;
      while (n < out.length) {
        if (pos === len && (n > 0 || !refill())) break;
        const o = objects.get(buf[pos++]!);
        if (o !== undefined) out[n++] = o;
      }
      return n;
    },
    [Symbol.iterator]() {
      return cursor;
    },
  };
  return cursor;
}

export type Listener = (ev: StoreEvent) => void;

/**
 * What a listener's selection demands of every object it can see (kube's cacher calls these trigger functions):
 * the listener gets only the events whose object, or whose previous state, satisfies it. With a thousand watches on
 * different nodes or apps, an event then costs a few calls instead of a thousand selector matches. A narrowing
 * only: the listener still matches every event it gets.
 */
export type Trigger =
  /** A selectable field (fieldsOf) has the value. */
  | { readonly kind: 'field'; readonly name: string; readonly value: string }
  /** The object is in the namespace. */
  | { readonly kind: 'namespace'; readonly value: string }
  /** Each of the labels has its value (one or more, by key in ascending order). */
  | { readonly kind: 'labels'; readonly labels: ReadonlyArray<readonly [key: string, value: string]> };

/**
 * Listeners whose triggers ask the same field, or the same set of label keys: the value asked -> listeners. For
 * several labels the value is their values joined by U+0000: an object that has every value the listener asks gives
 * the same string (two sets of values that join alike only mean a listener called for an event it then rejects).
 */
interface TriggerGroup {
  readonly kind: Trigger['kind'];
  /** A field group's field ('' for the others). */
  readonly name: string;
  /** A labels group's keys, in ascending order (empty for the others). */
  readonly keys: readonly string[];
  readonly byValue: Map<string, Set<Listener>>;
}

export class ResourceVersionTooOld extends Error {
  constructor(readonly requested: number, readonly oldest: number) {
    super(`too old resource version: ${requested} (${oldest})`);
  }
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/** Whether a and b (plain objects of strings: labels, selectable fields) have the same keys and values. */
function sameRecord(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}

/** The stored object, parsed anew on every call: the caller owns the result and may change it. */
export function objectOf(stored: StoredObject): KubeObject {
  return JSON.parse(stored.json.toString('utf8')) as KubeObject;
}

/**
 * s as UTF-8 bytes in a buffer of its own. Buffer.from would place objects under 4 KiB in a shared 8 KiB slab,
 * and one long-lived object would then keep the whole slab, and its dead neighbours, alive.
 */
export function ownBytes(s: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(s, 'utf8'));
  b.write(s, 0, 'utf8');
  return b;
}

/**
 * The stored object's metadata, parsed anew on every call, without parsing the rest of the object: for
 * PartialObjectMetadata and uid checks, where a pod's spec and status are most of its bytes.
 */
export function metadataOf(stored: StoredObject): KubeObject['metadata'] {
  const text = stored.json.toString('utf8');
  const span = topLevelValue(text, 'metadata');
  if (span) return JSON.parse(text.slice(span[0], span[1]));
  return (JSON.parse(text) as KubeObject).metadata;
}

/**
 * Where the value of a top-level key lies in a JSON object's text ([start, end)), found without parsing the rest:
 * string contents are skipped whole, so a key or brace inside a string never matches. Undefined when the key is
 * absent or the text is not an object.
 */
export function topLevelValue(json: string, key: string): [number, number] | undefined {
  const want = `"${key}"`;
  let depth = 0;
  let i = 0;
  const n = json.length;
  while (i < n) {
    const c = json.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const end = stringEnd(json, i);
      if (depth === 1 && end - i === want.length && json.startsWith(want, i)) {
        let j = end;
        while (j < n && isSpace(json.charCodeAt(j))) j++;
        if (json.charCodeAt(j) === 0x3a /* : */) {
          j++;
          while (j < n && isSpace(json.charCodeAt(j))) j++;
          return [j, valueEnd(json, j)];
        }
      }
      i = end;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) return undefined;
    } else if (depth === 0 && !isSpace(c)) return undefined;
    i++;
  }
  return undefined;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The index after the closing quote of the string that opens at i. */
function stringEnd(json: string, i: number): number {
  for (i++; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x5c /* \ */) i++;
    else if (c === 0x22) return i + 1;
  }
  return json.length;
}

/** The index after the value that starts at i. */
function valueEnd(json: string, i: number): number {
  const n = json.length;
  const c = json.charCodeAt(i);
  if (c === 0x22) return stringEnd(json, i);
  if (c !== 0x7b && c !== 0x5b) {
    while (i < n) {
      const d = json.charCodeAt(i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  while (i < n) {
    const d = json.charCodeAt(i);
    if (d === 0x22) {
      i = stringEnd(json, i);
      continue;
    }
    if (d === 0x7b || d === 0x5b) depth++;
    else if ((d === 0x7d || d === 0x5d) && --depth === 0) return i + 1;
    i++;
  }
  return n;
}

/** Keys per step of an index build, and how long a slice of steps may run before other work gets a turn. */
const BUILD_BATCH = 1024;
const BUILD_SLICE_MS = 10;

export class Store {
  private readonly objects = new Map<string, StoredObject>();
  private readonly keys = new SortedKeys();
  private events: StoreEvent[] = [];
  private eventsStart = 0;
  /** Every event with rv <= compactedRV is gone from the window. */
  private compactedRV: number;
  private readonly listeners = new Set<Listener>();
  /** "label\0app" or "field\0spec.nodeName" -> listeners with a trigger on it. */
  private readonly triggers = new Map<string, TriggerGroup>();
  private triggered = 0;
  private readonly windowSize: number;
  private readonly fieldsOf: (obj: KubeObject) => Record<string, string>;
  private readonly keyOf?: (obj: KubeObject, namespace: string, name: string) => string;
  readonly clock: RvClock;
  readonly index?: SelectorIndex;
  /** Where current objects' JSON is kept: putEncoded's bytes come from here (alloc). */
  readonly arena: Arena;

  constructor(opts: StoreOptions) {
    if (opts.index) this.index = newSelectorIndex(opts.index);
    this.clock = opts.clock;
    this.windowSize = opts.windowSize ?? 10_000;
    this.fieldsOf = opts.fieldsOf ?? (() => EMPTY);
    this.keyOf = opts.keyOf;
    this.compactedRV = opts.clock.current();
    this.arena = new Arena((from, done) => this.rehome(from, done), opts.arena);
  }

  get size(): number {
    return this.objects.size;
  }

  /** The oldest resourceVersion a watch can resume from or a list page can be served at. */
  get oldestRV(): number {
    return this.compactedRV;
  }

  get(key: string): StoredObject | undefined {
    return this.objects.get(key);
  }

  /**
   * Stops keeping the selector index until buildIndex (SelectorIndex.state): for a store about to be filled from
   * empty, whose objects the index then takes in one pass in key order. Lists meanwhile select without it.
   */
  deferIndex(): void {
    if (this.index) deferIndex(this.index);
  }

  /**
   * Builds a deferred index from the current objects in key order, in slices of about sliceMs with other work in
   * between (changes meanwhile reach what is built so far); resolves once the index is kept and offered
   * again, or once it was deferred anew.
   */
  async buildIndex(sliceMs = BUILD_SLICE_MS): Promise<void> {
    const idx = this.index;
    if (!idx || idx.state !== 'deferred') return;
    const generation = idx.generation;
    idx.state = 'building';
    const batch: string[] = new Array(BUILD_BATCH);
    let from = '';
    let after = false;
    for (;;) {
      const started = performance.now();
      let n: number;
      do {
        n = this.keys.fill(from, after, batch, BUILD_BATCH);
        for (let i = 0; i < n; i++) buildIndexWith(idx, this.objects.get(batch[i]!)!);
        if (n > 0) {
          from = batch[n - 1]!;
          after = true;
        }
      } while (n === BUILD_BATCH && performance.now() - started < sliceMs);
      if (n < BUILD_BATCH) break;
      await new Promise((resolve) => setImmediate(resolve));
      if (idx.generation !== generation) return;
    }
    idx.state = 'built';
  }

  /**
   * Stores obj as the new state of its key (ADDED or MODIFIED), under a new resourceVersion written into its
   * metadata. The store keeps obj's labels object: the caller must not change it afterwards. A store that mirrors another
   * (another version of the same data) passes the source event's rv.
   */
  put(obj: KubeObject, rv = this.clock.next()): StoredObject {
    const json = JSON.stringify(this.stamp(obj, rv));
    const bytes = this.arena.alloc(Buffer.byteLength(json, 'utf8'));
    bytes.write(json, 0, 'utf8');
    return this.commit(this.sealObject(obj, rv, bytes));
  }

  /**
   * put for an object serialized elsewhere (src/cache/intake.ts), its JSON already carrying rv as
   * metadata.resourceVersion, in bytes from this store's arena. The store keeps the labels and fields objects and
   * the bytes as they are.
   */
  putEncoded(obj: EncodedObject, rv: number): StoredObject {
    // One lookup for both: at a million objects each lookup is a cache miss or two.
    const prev = this.objects.get(obj.key);
    return this.commit(this.sealedAfter(prev, obj.key, obj.namespace, obj.name, rv, obj.json, obj.labels, obj.fields), prev);
  }

  /** A sealed object becomes the new state of its key (ADDED or MODIFIED); prev: the current one, when looked up. */
  private commit(stored: StoredObject, prev = this.objects.get(stored.key)): StoredObject {
    this.objects.set(stored.key, stored);
    if (!prev) this.keys.add(stored.key);
    else this.arena.free(prev.bytes, prev.end - prev.start);
    if (this.index) updateIndex(this.index, prev, stored);
    this.record({ type: prev ? 'MODIFIED' : 'ADDED', rv: stored.rv, object: stored, prev, encoded: undefined });
    return stored;
  }

  /** Removes key (DELETED); the event carries the last state under the deletion's resourceVersion. */
  remove(key: string, rv?: number): StoredObject | undefined {
    const prev = this.objects.get(key);
    if (!prev) return undefined;
    rv ??= this.clock.next();
    // The last state lives in the event window, as a replaced object's old bytes do: in a slab, as bytes no longer
    // current. In a buffer of its own it was memory V8 counts, ~2 MB/s at 2,000 changes/s, and a full mark of the
    // whole heap for every 64 MiB of it (offheap.ts).
    const last = this.restamp(prev, rv, this.pastBytes);
    this.objects.delete(key);
    this.keys.delete(key);
    this.arena.free(prev.bytes, prev.end - prev.start);
    if (this.index) updateIndex(this.index, prev, undefined);
    this.record({ type: 'DELETED', rv, object: last, prev, encoded: undefined });
    return last;
  }

  /**
   * A stored object for obj under rv, as it would be served: for DELETED-from-filter views too. Writes rv into
   * obj's metadata; only obj's labels object is kept (shared, never changed), the rest is left to the caller.
   */
  seal(obj: KubeObject, rv: number): StoredObject {
    return this.sealObject(obj, rv, ownBytes(JSON.stringify(this.stamp(obj, rv))));
  }

  /**
   * o's state under rv: its bytes with only metadata.resourceVersion changed (a DELETED event's last state, and
   * what a watcher sees of an object that left its selection). The version is spliced into the bytes: parsing and
   * serializing ~5 KB of pod for it again cost every delete ~30 µs of the event loop under churn. Bytes whose
   * version cannot be found that way are parsed and sealed as before.
   */
  restamp(o: StoredObject, rv: number, alloc: (len: number) => Buffer = Buffer.allocUnsafeSlow): StoredObject {
    const was = o.json; // one view, not one per use
    const span = metadataMember(was, 'resourceVersion');
    if (!span || was[span[0]] !== 0x22 /* a string */) return this.seal(objectOf(o), rv);
    const [start, end] = span;
    const v = String(rv);
    const json = alloc(was.length - (end - start - 2) + v.length);
    copyBytes(was, json, 0, 0, start + 1);
    json.write(v, start + 1, 'latin1');
    copyBytes(was, json, start + 1 + v.length, end - 1);
    return this.sealed(o.key, o.namespace, o.name, rv, json, o.labels, o.fields);
  }

  /** len bytes in the arena that are not a current object's: they go with their slab. */
  private readonly pastBytes = (len: number): Buffer => {
    const b = this.arena.alloc(len);
    this.arena.free(b);
    return b;
  };

  /** obj with rv as its resourceVersion. */
  private stamp(obj: KubeObject, rv: number): KubeObject {
    obj.metadata.resourceVersion = String(rv);
    return obj;
  }

  private sealObject(obj: KubeObject, rv: number, json: Buffer): StoredObject {
    const meta = obj.metadata;
    const namespace = intern(meta.namespace ?? '');
    const name = meta.name ?? '';
    const key = this.keyOf ? this.keyOf(obj, namespace, name) : namespace ? `${namespace}/${name}` : name;
    return this.sealedAfter(this.objects.get(key), key, namespace, name, rv, json, meta.labels ?? EMPTY, this.fieldsOf(obj));
  }

  /**
   * A version of prev's key (prev undefined: the first). What did not change is prev's: its key and name strings
   * and its labels and fields objects, when equal (namespaces are the process's one copy already, intern.ts). A status update then keeps in the heap only its new
   * StoredObject, where fresh copies of all of these lived as long as it did: under churn, most of what survives
   * to be promoted and marked (scenario 6). The selector index also skips labels that are the same object.
   */
  private sealedAfter(prev: StoredObject | undefined, key: string, namespace: string, name: string, rv: number, json: Buffer, labels: Readonly<Record<string, string>>, fields: Readonly<Record<string, string>>): StoredObject {
    if (prev === undefined) return this.sealed(key, namespace, name, rv, json, labels, fields);
    return this.sealed(
      prev.key,
      namespace,
      prev.name === name ? prev.name : name,
      rv,
      json,
      sameRecord(prev.labels, labels) ? prev.labels : labels,
      sameRecord(prev.fields, fields) ? prev.fields : fields,
    );
  }

  /**
   * The current objects whose bytes are in the slabs from, copied into the arena's current slab (a new
   * StoredObject each, same version: no event), a batch per turn of the event loop. Events and responses in flight
   * keep the old ones, and with them the old slabs, until they are done.
   */
  private rehome(from: ReadonlySet<ArrayBufferLike>, done: () => void): void {
    const objects = this.objects.values();
    const step = (): void => {
      let n = 0;
      for (let r = objects.next(); !r.done; r = objects.next()) {
        const o = r.value;
        if (from.has(o.bytes.buffer)) this.objects.set(o.key, this.sealed(o.key, o.namespace, o.name, o.rv, this.arena.copy(o.json), o.labels, o.fields));
        if (++n >= REHOME_BATCH) return void setImmediate(step);
      }
      done();
    };
    // Not inside the put or remove whose free asked for it.
    setImmediate(step);
  }

  /**
   * Every StoredObject is made here. key: the store's own string for it, if it has one. json: a view into one of
   * the arena's slabs (kept as the slab and where in it), or a buffer of the object's own.
   */
  private sealed(key: string, namespace: string, name: string, rv: number, json: Buffer, labels: Readonly<Record<string, string>>, fields: Readonly<Record<string, string>>): StoredObject {
    const slab = this.arena.slabOf(json);
    if (!slab) return new Sealed(key, namespace, name, rv, json, 0, json.length, labels, fields);
    const start = json.byteOffset - slab.byteOffset;
    return new Sealed(key, namespace, name, rv, slab, start, start + json.length, labels, fields);
  }

  private record(ev: StoreEvent): void {
    this.events.push(ev);
    if (this.events.length - this.eventsStart > this.windowSize) {
      this.compactedRV = this.events[this.eventsStart].rv;
      this.eventsStart++;
      // Drop the consumed head now and then, not on every event.
      if (this.eventsStart >= this.windowSize) {
        this.events = this.events.slice(this.eventsStart);
        this.eventsStart = 0;
      }
    }
    for (const l of this.listeners) l(ev);
    if (this.triggered > 0) this.dispatchTriggered(ev);
    // The slot is made with the event (encoded: undefined): adding the property later would cost each event an
    // out-of-object property store for as long as it stays in the window.
    if (ev.encoded) ev.encoded = undefined;
  }

  /**
   * Forgets the event window, as a kube-apiserver's watch cache starts from a list: watches and list pages at
   * versions before now get 410 Expired. The sim calls it after seeding, so its history begins where a real
   * apiserver's does.
   */
  compact(): void {
    this.compactedRV = this.clock.current();
    this.events = [];
    this.eventsStart = 0;
  }

  /** Events with rv > from, oldest first; throws ResourceVersionTooOld when the window no longer reaches back. */
  eventsSince(from: number): StoreEvent[] {
    if (from < this.compactedRV) throw new ResourceVersionTooOld(from, this.compactedRV + 1);
    const evs = this.events;
    let lo = this.eventsStart;
    let hi = evs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (evs[mid].rv <= from) lo = mid + 1;
      else hi = mid;
    }
    return evs.slice(lo);
  }

  /**
   * Listens for every future event, or with a trigger for those whose object or previous state has the trigger's
   * value. Call it in the same tick as eventsSince() so that nothing falls between the replay and the live stream.
   * Returns the function that stops listening.
   */
  subscribe(l: Listener, trigger?: Trigger): () => void {
    if (!trigger) {
      this.listeners.add(l);
      return () => this.listeners.delete(l);
    }
    const keys = trigger.kind === 'labels' ? trigger.labels.map(([k]) => k) : [];
    const name = trigger.kind === 'field' ? trigger.name : '';
    // JSON, not a join: keys that contain the separator must not make two groups one.
    const id = `${trigger.kind}\u0000${name}\u0000${JSON.stringify(keys)}`;
    const value = trigger.kind === 'labels' ? trigger.labels.map(([, v]) => v).join(LABEL_VALUES_SEPARATOR) : trigger.value;
    let group = this.triggers.get(id);
    if (!group) this.triggers.set(id, (group = { kind: trigger.kind, name, keys, byValue: new Map() }));
    let set = group.byValue.get(value);
    if (!set) group.byValue.set(value, (set = new Set()));
    set.add(l);
    this.triggered++;
    const g = group;
    const bucket = set;
    let active = true;
    return () => {
      if (!active) return false;
      active = false;
      bucket.delete(l);
      this.triggered--;
      if (bucket.size === 0 && g.byValue.get(value) === bucket) g.byValue.delete(value);
      if (g.byValue.size === 0 && this.triggers.get(id) === g) this.triggers.delete(id);
      return true;
    };
  }

  get watcherCount(): number {
    return this.listeners.size + this.triggered;
  }

  private dispatchTriggered(ev: StoreEvent): void {
    for (const g of this.triggers.values()) {
      const now = triggerValue(g, ev.object);
      if (now !== undefined) callAll(g.byValue.get(now), ev);
      const before = ev.prev && triggerValue(g, ev.prev);
      // An object that left the value: its watchers see it go (a listener sits under one value, so none twice).
      if (before !== undefined && before !== now) callAll(g.byValue.get(before), ev);
    }
  }

  /** The current state, or the state at an older rv rebuilt by undoing the window's later events. */
  snapshot(at?: number): Snapshot {
    const current = this.clock.current();
    if (at === undefined || at >= current) return this.currentSnapshot(current);
    const later = this.eventsSince(at);
    if (later.length === 0) return this.currentSnapshot(at);
    // Undo newest first, so the oldest event after `at` leaves its `prev` as the key's state at `at`.
    const overlay = new Map<string, StoredObject | undefined>();
    for (let i = later.length - 1; i >= 0; i--) overlay.set(later[i].object.key, later[i].prev);
    const overlayKeys = [...overlay.keys()].sort();
    const objects = this.objects;
    const keys = this.keys;
    function* among(source: (from: string) => IterableIterator<string>, start: string, prefix: string) {
      const from = start > prefix ? start : prefix;
      const a = source(from);
      let i = lowerBound(overlayKeys, from);
      let ka = a.next();
      while (!ka.done || i < overlayKeys.length) {
        let key: string;
        if (ka.done || (i < overlayKeys.length && overlayKeys[i] <= ka.value)) {
          key = overlayKeys[i++];
          if (!ka.done && ka.value === key) ka = a.next();
        } else {
          key = ka.value;
          ka = a.next();
        }
        if (prefix && !key.startsWith(prefix)) {
          if (key > prefix) return;
          continue;
        }
        const o = overlay.has(key) ? overlay.get(key) : objects.get(key);
        if (o) yield o;
      }
    }
    return {
      rv: at,
      iterate: (start: string, prefix: string) => among((from) => keys.from(from), start, prefix),
      iterateAmong: among,
      countFrom(start: string, prefix: string) {
        // The keys now, then for each key changed since `at` in the range: one more if it was there at `at`, one
        // fewer if it is there now.
        let n = countKeys(keys, start, prefix);
        for (let i = lowerBound(overlayKeys, start > prefix ? start : prefix); i < overlayKeys.length; i++) {
          const key = overlayKeys[i]!;
          if (prefix && !key.startsWith(prefix)) break;
          n += (overlay.get(key) !== undefined ? 1 : 0) - (objects.has(key) ? 1 : 0);
        }
        return n;
      },
    };
  }

  private currentSnapshot(rv: number): Snapshot {
    const objects = this.objects;
    const keys = this.keys;
    return {
      rv,
      iterate(start: string, prefix: string) {
        return currentCursor(keys, objects, start > prefix ? start : prefix, prefix);
      },
      *iterateAmong(source: (from: string) => IterableIterator<string>, start: string, prefix: string) {
        const from = start > prefix ? start : prefix;
        for (const key of source(from)) {
          if (prefix && !key.startsWith(prefix)) return;
          // An index's keys can outlive their object while a list is suspended.
          const o = objects.get(key);
          if (o) yield o;
        }
      },
      countFrom(start: string, prefix: string) {
        return countKeys(keys, start, prefix);
      },
    };
  }

  /** Every current object, in key order. */
  values(): IterableIterator<StoredObject> {
    return this.currentSnapshot(this.clock.current()).iterate('', '');
  }

  /** Resolves once the clock has reached rv, or rejects after timeoutMs (the apiserver waits 3 s). */
  waitForRV(rv: number, timeoutMs: number): Promise<void> {
    if (this.clock.current() >= rv) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const timer = setInterval(() => {
        if (this.clock.current() >= rv) {
          clearInterval(timer);
          resolve();
        } else if (Date.now() - started >= timeoutMs) {
          clearInterval(timer);
          reject(new Error(`Too large resource version: ${rv}, current: ${this.clock.current()}`));
        }
      }, 20);
    });
  }
}

/** Objects looked at per turn of the event loop while slabs are evacuated (~10 ms). */
const REHOME_BATCH = 50_000;

function callAll(ls: Set<Listener> | undefined, ev: StoreEvent): void {
  if (ls) for (const l of ls) l(ev);
}

/**
 * Between the values of a labels trigger: subscribe joins the values asked, triggerValue an object's, with the same
 * separator (label values cannot hold it; two that join alike only cost a call the listener then rejects).
 */
const LABEL_VALUES_SEPARATOR = '\u0000';

/** The object's value for a trigger group; a field's absence reads as "" (fields.Set.Get), a label's as none. */
function triggerValue(g: TriggerGroup, o: StoredObject): string | undefined {
  if (g.kind === 'labels') {
    const keys = g.keys;
    const labels = o.labels;
    if (!Object.hasOwn(labels, keys[0])) return undefined;
    let v = labels[keys[0]];
    for (let i = 1; i < keys.length; i++) {
      if (!Object.hasOwn(labels, keys[i])) return undefined;
      v += LABEL_VALUES_SEPARATOR + labels[keys[i]];
    }
    return v;
  }
  if (g.kind === 'namespace') return o.namespace;
  return o.fields[g.name] ?? '';
}

function countKeys(keys: SortedKeys, start: string, prefix: string): number {
  const from = start > prefix ? start : prefix;
  const n = keys.countFrom(from);
  if (!prefix) return n;
  // Keys under prefix end before prefix with its last character raised by one.
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  return n - keys.countFrom(end);
}
