// What the merged cache makes of a member's object before storing it, in one place for the main thread (watch
// events, lists when cache.intakeWorkers is 0) and the intake workers (intakeworker.ts, lists): the cluster label,
// managedFields dropped, the selectable fields, for events the events.k8s.io/v1 view, and the JSON as served.
//
// The served JSON carries the gateway's resourceVersion, which only the main thread can issue, and only when it
// stores the object. So the object is serialized with a placeholder as metadata.resourceVersion, and the bytes
// around the placeholder are kept: storing is then head + the version's digits + tail, a copy instead of a
// JSON.stringify and a UTF-8 encode.

import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { coreToEventsV1 } from '../api/eventconv.js';
import { eventFields, podFieldSet, podFields, shareFieldValues } from '../api/fields.js';
import { intern } from '../api/intern.js';
import { dropIndex, hugeNumbers, isSpace, MemberCursor, resetSpaced, skipSpace, spaced, stringAt, useIndex } from '../api/jsonbytes.js';
import { mirrorJSON, type JSONMirror } from '../api/jsonscan.js';
import type { KubeObject } from '../api/meta.js';
import { copyBytes } from '../api/offheap.js';
import { topLevelValue } from './store.js';

export const CLUSTER_LABEL = 'fleetgate.io/cluster';

export type CachedResource = 'pods' | 'events';

/** What to do to a member's objects: the merged cache's settings for one member and resource. */
export interface IntakeTransform {
  cluster: string;
  resource: CachedResource;
  dropManagedFields: boolean;
}

/**
 * A page of a member's objects, serialized. Object i is namespaces[i]/names[i]; its JSON is
 * bytes[offsets[s], offsets[s+1]) + the resourceVersion's digits + bytes[offsets[s+2], offsets[s+3]) with
 * s = i * stride, and for events the v1 view follows in the same way at s + 4. An object the caller said it
 * already holds (unchanged) has no bytes: all its offsets are equal.
 */
export interface EncodedPage {
  /** The list's metadata, when the page came as a list. */
  listRV: string;
  continue: string;
  count: number;
  stride: number;
  bytes: Buffer;
  offsets: Uint32Array;
  namespaces: string[];
  names: string[];
  memberRVs: string[];
  /** Labels and selectable fields; empty for an object left unserialized (the caller holds that version). */
  labels: Record<string, string>[];
  fields: Record<string, string>[];
  /** events: the v1 view's selectable fields. */
  v1Fields: Record<string, string>[];
}

/** What a list answer carries besides its items. */
interface ListBody {
  kind?: string;
  apiVersion?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
}

// The placeholder: random, so a member cannot plant it; all are as long, so the offsets do not depend on which.
const PLACEHOLDER_PREFIX = 'fleetgate-rv-';
const PLACEHOLDER_LENGTH = PLACEHOLDER_PREFIX.length + 16;
let placeholder = newPlaceholder();
let placeholderBytes = Buffer.from(placeholder, 'latin1');

function newPlaceholder(): string {
  return PLACEHOLDER_PREFIX + randomBytes(8).toString('hex');
}

/**
 * The items of a list answer, with kind and apiVersion set: list items of built-in kinds come without them, and
 * served objects need them.
 */
export function listItems(body: ListBody): KubeObject[] {
  const items = body.items ?? [];
  const kind = body.kind?.endsWith('List') ? body.kind.slice(0, -4) : undefined;
  const apiVersion = body.apiVersion;
  return items.map((it) => {
    if (it === null || typeof it !== 'object') return it;
    const addKind = kind && !it.kind;
    const addApiVersion = apiVersion && !it.apiVersion;
    if (!addKind && !addApiVersion) return it;
    // First, where kube-apiserver writes them and where encodeListBytes puts them.
    const out = { kind: undefined, apiVersion: undefined, ...it } as unknown as KubeObject;
    if (addKind) out.kind = kind;
    if (addApiVersion) out.apiVersion = apiVersion;
    return out;
  });
}

/**
 * The objects made the cache's and serialized (see EncodedPage). The objects are changed on the way and are of no
 * use afterwards. unchanged(namespace, name, memberRV): the caller already holds that version (it is left
 * unserialized). Objects without a name are left out.
 */
export function encodeObjects(objects: KubeObject[], t: IntakeTransform, sizeHint = 0, unchanged?: Unchanged): EncodedPage {
  const stride = t.resource === 'events' ? 8 : 4;
  const n = objects.length;
  const offsets = new Uint32Array(n * stride);
  const page: EncodedPage = { listRV: '', continue: '', count: 0, stride, bytes: pageBuffer(sizeHint), offsets, namespaces: [], names: [], memberRVs: [], labels: [], fields: [], v1Fields: [] };
  let pos = 0;
  /** Writes one serialization at pos, recording where its placeholder is. */
  const write = (json: string, s: number) => {
    let buf = page.bytes;
    // Room enough even if every character takes 3 bytes; measured only when that is not certain.
    if (buf.length - pos < json.length * 3) {
      const need = Buffer.byteLength(json, 'utf8');
      if (buf.length - pos < need) {
        const grown = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, pos + need, 64 * 1024));
        buf.copy(grown, 0, 0, pos);
        page.bytes = buf = grown;
      }
    }
    const start = pos;
    pos += buf.write(json, pos, 'utf8');
    const at = buf.indexOf(placeholderBytes, start);
    offsets[s] = start;
    offsets[s + 1] = at;
    offsets[s + 2] = at + PLACEHOLDER_LENGTH;
    offsets[s + 3] = pos;
  };
  let i = 0;
  for (const obj of objects) {
    const meta = obj?.metadata;
    if (!meta?.name) continue;
    const namespace = intern(meta.namespace ?? '');
    const name = meta.name;
    const memberRV = meta.resourceVersion ?? '';
    const s = i * stride;
    page.namespaces.push(namespace);
    page.names.push(name);
    page.memberRVs.push(memberRV);
    i++;
    if (unchanged?.(namespace, name, memberRV)) {
      offsets.fill(pos, s, s + stride);
      page.labels.push({});
      page.fields.push({});
      page.v1Fields.push({});
      continue;
    }
    // Assigning undefined (JSON drops it) keeps the object's shape, unlike delete.
    if (t.dropManagedFields && meta.managedFields !== undefined) meta.managedFields = undefined;
    if (meta.labels) meta.labels[CLUSTER_LABEL] = t.cluster;
    else meta.labels = { [CLUSTER_LABEL]: t.cluster };
    page.labels.push(meta.labels);
    if (t.resource === 'pods') {
      page.fields.push(podFields(obj));
      page.v1Fields.push({});
      write(serialize(obj), s);
    } else {
      page.fields.push(eventFields(obj));
      write(serialize(obj), s);
      // The v1 view shares metadata, placeholder included.
      const v1 = coreToEventsV1(obj);
      page.v1Fields.push(eventFields(v1));
      write(serialize(v1), s + 4);
    }
  }
  page.count = i;
  return page;
}

/** obj's JSON with the placeholder as metadata.resourceVersion, which occurs nowhere else in it. */
function serialize(obj: KubeObject): string {
  for (;;) {
    obj.metadata.resourceVersion = placeholder;
    const json = JSON.stringify(obj);
    const at = json.indexOf(placeholder);
    if (json.indexOf(placeholder, at + PLACEHOLDER_LENGTH) < 0) return json;
    // The object holds the placeholder elsewhere (no member can know it; but a placeholder's job is to be unique).
    placeholder = newPlaceholder();
    placeholderBytes = Buffer.from(placeholder, 'latin1');
  }
}

/** Whether the cache already holds that version of a member's object (it is then left unserialized). */
export type Unchanged = (namespace: string, name: string, memberRV: string) => boolean;

// A page's bytes are needed only until its objects are stored (servedJSON copies each out). The sink gives them
// back (releasePage) for the next page: a fresh buffer of a few MB is memory touched for the first time, which costs
// a page fault per 4 KiB, more than filling it.
let spare: Buffer | undefined;
const EMPTY = Buffer.alloc(0);

/** A buffer of at least size bytes for a page's serializations: the spare one when it is big enough. */
function pageBuffer(size: number): Buffer {
  const s = spare;
  if (s && s.length >= size) {
    spare = undefined;
    return s;
  }
  return Buffer.allocUnsafeSlow(size);
}

/** The page's objects are stored: its bytes may serve the next page. The page is of no use afterwards. */
export function releasePage(page: EncodedPage): void {
  const b = page.bytes;
  // A whole list taken at once (replace) can be tens of MB: not worth keeping for the pages that follow.
  if (b.length > 0 && b.length <= SPARE_MAX && (!spare || b.length > spare.length)) spare = b;
  page.bytes = EMPTY;
}

/** The largest page buffer kept: a few pages of 500 pods. */
const SPARE_MAX = 16 * 1024 * 1024;

/** A list answer's text made into its page. */
export function encodeList(text: string, t: IntakeTransform, sizeHint = 0, unchanged?: Unchanged): EncodedPage {
  const body = JSON.parse(text) as ListBody;
  const page = encodeObjects(listItems(body), t, sizeHint, unchanged);
  page.listRV = body.metadata?.resourceVersion ?? '';
  page.continue = body.metadata?.continue ?? '';
  return page;
}

/**
 * Pages taken by each path (tests and benchmarks: the byte path must be the one real pages take); scanned: those of
 * the byte path whose pods the WebAssembly scan checked (src/api/jsonscan.ts).
 */
export const intakePaths = { bytes: 0, objects: 0, scanned: 0 };

/**
 * A list answer's bytes made into its page: the same page as encodeList on their text. Pods are read without
 * parsing them (src/api/jsonbytes.ts; each checked first by the WebAssembly scan once it is loaded,
 * src/api/jsonscan.ts): each pod's bytes are copied with the transform's edits spliced in, and only
 * its labels, name, namespace, resourceVersion and selectable fields are read as values. What that path does not
 * take as it is (events, whitespace between tokens, escaped or repeated keys the transform reads, odd values, bytes
 * that are not UTF-8, invalid JSON) goes through JSON.parse instead, which also gives invalid JSON its error.
 */
export function encodeListBytes(bytes: Buffer, t: IntakeTransform, sizeHint = 0, unchanged?: Unchanged): EncodedPage {
  if (t.resource === 'pods' && isUtf8(bytes)) {
    try {
      const page = encodePodListBytes(bytes, t, sizeHint, unchanged);
      intakePaths.bytes++;
      return page;
    } catch {
      // Left to the object path, which decides.
    }
  }
  intakePaths.objects++;
  return encodeList(bytes.toString('utf8'), t, sizeHint, unchanged);
}

/** Thrown where the byte path leaves a page to the object path (caught in encodeListBytes). */
const OBJECT_PATH = new Error('left to the object path');

const QUOTE = 0x22;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const COMMA = 0x2c;

// Cursors for each level read; reused, since a page is encoded in one go on one thread.
const listCursor = new MemberCursor();
const listMetaCursor = new MemberCursor();
const itemCursor = new MemberCursor();
const metaCursor = new MemberCursor();
const specCursor = new MemberCursor();
const statusCursor = new MemberCursor();

/** The current value, a string (anything else is left to the object path). */
function stringOf(c: MemberCursor): string {
  if (c.b[c.valueStart] !== QUOTE) throw OBJECT_PATH;
  const esc = c.stringValue();
  return stringAt(c.b as Buffer, c.valueStart, c.valueEnd, esc);
}

/**
 * The current value if a string, else "" (as podFields reads a field that is not a string). With recent, interned:
 * one of the field's recent values when its bytes are one's.
 */
function fieldOf(c: MemberCursor, recent?: RecentValues): string {
  const b = c.b;
  const start = c.valueStart;
  if (b[start] !== QUOTE) {
    c.skip();
    return '';
  }
  const esc = c.stringValue();
  if (recent === undefined) return stringAt(b as Buffer, start, c.valueEnd, esc);
  const n = c.valueEnd - start;
  const json = recent.json;
  next: for (let k = 0; k < json.length; k++) {
    const v = json[k]!;
    if (v.length !== n) continue;
    for (let j = 0; j < n; j++) if (b[start + j] !== v[j]) continue next;
    return recent.values[k]!;
  }
  const value = intern(stringAt(b as Buffer, start, c.valueEnd, esc));
  const k = recent.next;
  recent.next = k + 1 === RECENT_VALUES ? 0 : k + 1;
  json[k] = new Uint8Array(b.subarray(start, c.valueEnd));
  recent.values[k] = value;
  return value;
}

/**
 * The last few values read of a field that most pods share with others (a namespace, a restart policy, a phase), by
 * their JSON bytes: a value whose bytes equal one of them is that string, interned already. Making a string of the
 * bytes, hashing it and looking it up to intern it cost ~1,000 instructions a value; comparing the bytes, ~100.
 */
interface RecentValues {
  /** A copy of each value's JSON, quotes included (the page's buffer is reused). */
  readonly json: Uint8Array[];
  readonly values: string[];
  next: number;
}

const RECENT_VALUES = 4;

function recentValues(): RecentValues {
  return { json: [], values: [], next: 0 };
}

const recentNamespaces = recentValues();
const recentRestartPolicies = recentValues();
const recentSchedulerNames = recentValues();
const recentServiceAccounts = recentValues();
const recentPhases = recentValues();

/** Marks a key as read; a key read twice (JSON.parse keeps the last) is left to the object path. */
function once(seen: number, bit: number): number {
  if (seen & bit) throw OBJECT_PATH;
  return seen | bit;
}

/** What a page being built needs of its list. */
interface PodPage {
  page: EncodedPage;
  pos: number;
  t: IntakeTransform;
  unchanged?: Unchanged;
  /** "kind":"Pod", and "apiVersion":"v1", for items without them; empty when the list names none. */
  kindMember: Buffer;
  apiVersionMember: Buffer;
  /** "fleetgate.io/cluster":"<cluster>" */
  clusterMember: Buffer;
  /** The page in the WebAssembly scan's memory (src/api/jsonscan.ts), which then checks each pod. */
  mirror?: JSONMirror;
}

function encodePodListBytes(b: Buffer, t: IntakeTransform, sizeHint: number, unchanged?: Unchanged): EncodedPage {
  // Whitespace around the list (kube-apiserver ends its answers with a newline) is fine; inside it, the pods'
  // bytes would keep it, so such a page is left to the object path.
  const start = skipSpace(b, 0);
  resetSpaced();
  const list = listCursor.open(b, start);
  const estimate = Math.max(16, Math.ceil(b.length / 2048));
  const page: EncodedPage = { listRV: '', continue: '', count: 0, stride: 4, bytes: pageBuffer(Math.max(sizeHint, b.length + (b.length >>> 4) + 1024)), offsets: new Uint32Array(estimate * 4), namespaces: [], names: [], memberRVs: [], labels: [], fields: [], v1Fields: [] };
  const pp: PodPage = { page, pos: 0, t, unchanged, kindMember: EMPTY, apiVersionMember: EMPTY, clusterMember: clusterMemberOf(t), mirror: mirrorJSON(b) };
  let kind: string | undefined;
  let apiVersion: string | undefined;
  let itemsAt = -1;
  let seen = 0;
  while (list.next()) {
    if (list.keyEscaped) throw OBJECT_PATH;
    if (list.keyIs('kind')) {
      seen = once(seen, 1);
      kind = stringOf(list);
    } else if (list.keyIs('apiVersion')) {
      seen = once(seen, 2);
      apiVersion = stringOf(list);
    } else if (list.keyIs('metadata')) {
      seen = once(seen, 4);
      readListMeta(list, page);
    } else if (list.keyIs('items')) {
      seen = once(seen, 8);
      const c = b[list.valueStart];
      if (c === OPEN_ARRAY) {
        // Items are read once kind and apiVersion are known: at once when they came first, as lists have them.
        if ((seen & 3) === 3) {
          setItemKind(pp, kind, apiVersion);
          list.skipped(addItems(b, list.valueStart, pp));
        } else {
          itemsAt = list.valueStart;
          list.skip();
        }
      } else if (c === 0x6e) {
        list.skip();
      } else {
        throw OBJECT_PATH;
      }
    }
  }
  if (itemsAt >= 0) {
    setItemKind(pp, kind, apiVersion);
    addItems(b, itemsAt, pp);
  }
  if (oddlySpelled(pp.mirror) || skipSpace(b, list.end) !== b.length) throw OBJECT_PATH;
  if (pp.mirror) intakePaths.scanned++;
  page.offsets = page.offsets.slice(0, page.count * 4);
  return page;
}

// One per transform (a member's sink), not per watch event.
const clusterMembers = new WeakMap<IntakeTransform, { cluster: string; member: Buffer }>();

/** "fleetgate.io/cluster":"<cluster>" */
function clusterMemberOf(t: IntakeTransform): Buffer {
  const m = clusterMembers.get(t);
  if (m && m.cluster === t.cluster) return m.member;
  const member = Buffer.from(`${JSON.stringify(CLUSTER_LABEL)}:${JSON.stringify(t.cluster)}`);
  clusterMembers.set(t, { cluster: t.cluster, member });
  return member;
}

/** Watch events taken by each path (tests and benchmarks, as intakePaths; scanned: checked by the scan). */
export const watchPaths = { bytes: 0, objects: 0, scanned: 0 };

/**
 * One pod's bytes b[start, end) (a watch event's object; whitespace around it is fine) made into a page of one: the
 * page encodeObjects gives for the parsed pod, by the code that reads a list's items. undefined where the list path
 * would leave the pod to the object path (see encodeListBytes), and for a pod without a name. The bytes are only
 * read, and nothing is read of them beyond the pod's closing brace.
 */
export function encodePodBytes(b: Buffer, start: number, end: number, t: IntakeTransform, unchanged?: Unchanged): EncodedPage | undefined {
  let page: EncodedPage | undefined;
  try {
    if (t.resource === 'pods' && isUtf8(b.subarray(start, end))) {
      const p = skipSpace(b, start);
      resetSpaced();
      if (b[p] === OPEN_OBJECT) {
        const clusterMember = clusterMemberOf(t);
        page = { listRV: '', continue: '', count: 0, stride: 4, bytes: pageBuffer(end - start + 2 * clusterMember.length + 64), offsets: new Uint32Array(4), namespaces: [], names: [], memberRVs: [], labels: [], fields: [], v1Fields: [] };
        // The event's object alone is copied for the scan (the line sits in a larger read buffer).
        const mirror = mirrorJSON(b, start, end);
        const pp: PodPage = { page, pos: 0, t, unchanged, kindMember: EMPTY, apiVersionMember: EMPTY, clusterMember, mirror };
        const podEnd = mirror ? addCheckedPod(b, p, mirror, pp) : addPod(b, p, pp);
        if (!oddlySpelled(mirror) && page.count === 1 && skipSpace(b, podEnd) === end) {
          watchPaths.bytes++;
          if (mirror) watchPaths.scanned++;
          return page;
        }
      }
    }
  } catch {
    // Left to the object path, which decides.
  }
  if (page) releasePage(page);
  watchPaths.objects++;
  return undefined;
}

export type WatchChange = 'ADDED' | 'MODIFIED' | 'DELETED';

/** Where a watch event's object is in its line (watchEventOf). */
export interface WatchEventBytes {
  type: WatchChange;
  objectStart: number;
  objectEnd: number;
}

const eventCursor = new MemberCursor();
const CHANGES: WatchChange[] = ['ADDED', 'MODIFIED', 'DELETED'];

/**
 * The change a watch event line b[start, end) carries, when the line is framed as kube-apiserver frames it:
 * {"type":"<ADDED|MODIFIED|DELETED>","object":{...}}, whitespace allowed between tokens. undefined for anything else
 * (other types, keys escaped, repeated or in another order): the caller parses those. Only the frame is read: the
 * object is b[objectStart, objectEnd) if the bytes there are one JSON value, which the one who reads it checks (the
 * line is then valid JSON).
 */
export function watchEventOf(b: Buffer, start: number, end: number): WatchEventBytes | undefined {
  try {
    const p = skipSpace(b, start);
    if (b[p] !== OPEN_OBJECT) return undefined;
    const c = eventCursor.open(b, p);
    if (!c.next() || !c.keyIs('type') || b[c.valueStart] !== QUOTE || c.stringValue()) return undefined;
    const type = CHANGES.find((name) => c.valueEnd - c.valueStart === name.length + 2 && bytesAre(b, c.valueStart + 1, name));
    if (!type || !c.next() || !c.keyIs('object') || b[c.valueStart] !== OPEN_OBJECT) return undefined;
    // The object is taken to run up to the frame's closing brace: anything else between them, and it is not one value.
    let close = end;
    while (close > c.valueStart && isSpace(b[close - 1])) close--;
    close--;
    if (close <= c.valueStart || b[close] !== CLOSE_OBJECT) return undefined;
    return { type, objectStart: c.valueStart, objectEnd: close };
  } catch {
    return undefined;
  }
}

/** Whether b holds the ASCII word at i. */
function bytesAre(b: Buffer, i: number, word: string): boolean {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return false;
  return true;
}

/** As listItems: items get the list's kind without "List" and its apiVersion when they have none. */
function setItemKind(pp: PodPage, kind: string | undefined, apiVersion: string | undefined): void {
  const itemKind = kind?.endsWith('List') ? kind.slice(0, -4) : undefined;
  pp.kindMember = itemKind ? Buffer.from(`"kind":${JSON.stringify(itemKind)},`) : EMPTY;
  pp.apiVersionMember = apiVersion ? Buffer.from(`"apiVersion":${JSON.stringify(apiVersion)},`) : EMPTY;
}

function readListMeta(list: MemberCursor, page: EncodedPage): void {
  const b = list.b;
  const c = b[list.valueStart];
  if (c === 0x6e) return void list.skip();
  if (c !== OPEN_OBJECT) throw OBJECT_PATH;
  const m = listMetaCursor.open(b, list.valueStart);
  let seen = 0;
  while (m.next()) {
    if (m.keyEscaped) throw OBJECT_PATH;
    if (m.keyIs('resourceVersion')) {
      seen = once(seen, 1);
      page.listRV = stringOf(m);
    } else if (m.keyIs('continue')) {
      seen = once(seen, 2);
      page.continue = stringOf(m);
    }
  }
  list.skipped(m.end);
}

/** The items array at b[i]; returns its end. */
function addItems(b: Buffer, i: number, pp: PodPage): number {
  i++;
  if (b[i] === 0x5d) return i + 1;
  for (;;) {
    if (b[i] !== OPEN_OBJECT) throw OBJECT_PATH;
    i = pp.mirror ? addCheckedPod(b, i, pp.mirror, pp) : addPod(b, i, pp);
    const c = b[i];
    if (c === COMMA) i++;
    else if (c === 0x5d) return i + 1;
    else throw OBJECT_PATH;
  }
}

/**
 * addPod, with the pod checked first by the WebAssembly scan: addPod then steps over the values it does not read
 * instead of checking them byte by byte. Each pod is checked just before it is read, while its part of the scan's
 * index is in the CPU's caches.
 */
function addCheckedPod(b: Buffer, p: number, mirror: JSONMirror, pp: PodPage): number {
  const end = mirror.value(p);
  // Not JSON: the object path's parse says why. Too deep for the scan: the byte scanner reads it all.
  if (end === -1) throw OBJECT_PATH;
  if (end === -2) return addPod(b, p, pp);
  useIndex(b, mirror.ends, mirror.base);
  try {
    return addPod(b, p, pp);
  } finally {
    dropIndex();
  }
}

/**
 * Whether whitespace between tokens or a number beyond a double was met since resetSpaced, by the byte scanner or by
 * the WebAssembly scan (mirror): bytes the byte path would not serve as they are.
 */
function oddlySpelled(mirror: JSONMirror | undefined): boolean {
  return spaced || hugeNumbers || (mirror !== undefined && (mirror.spaced() || mirror.huge()));
}

/** Room for n more bytes in the page. */
function reserve(pp: PodPage, n: number): Buffer {
  const buf = pp.page.bytes;
  if (buf.length - pp.pos >= n) return buf;
  const grown = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, pp.pos + n));
  buf.copy(grown, 0, 0, pp.pos);
  return (pp.page.bytes = grown);
}

// The edits to a pod's metadata, in the order they are found (not necessarily their order in the bytes).
const CUT = 0;
const VERSION = 1;
const INSERT = 2;
const editAt: number[] = [];
const editTo: number[] = [];
const editKind: number[] = [];
const editBytes: Buffer[] = [];
let edits = 0;

function edit(kind: number, at: number, to: number, bytes: Buffer): void {
  // Insertion sort: a pod has at most four edits.
  let j = edits++;
  while (j > 0 && editAt[j - 1] > at) {
    editAt[j] = editAt[j - 1];
    editTo[j] = editTo[j - 1];
    editKind[j] = editKind[j - 1];
    editBytes[j] = editBytes[j - 1];
    j--;
  }
  editAt[j] = at;
  editTo[j] = to;
  editKind[j] = kind;
  editBytes[j] = bytes;
}

const LABELS_HEAD = Buffer.from(',"labels":{');
const VERSION_HEAD = Buffer.from(',"resourceVersion":"');

/** The pod at b[p] into the page (unless it has no name); returns the index after it. */
function addPod(b: Buffer, p: number, pp: PodPage): number {
  const item = itemCursor.open(b, p);
  let seen = 0;
  let metaStart = -1;
  let metaEnd = -1;
  let nodeName = '';
  let restartPolicy = '';
  let schedulerName = '';
  let serviceAccountName = '';
  let hostNetwork = false;
  let phase = '';
  let podIP = '';
  let firstPodIP: string | undefined;
  let nominatedNodeName = '';
  let name = '';
  let namespace = '';
  let memberRV = '';
  let rvStart = -1;
  let rvEnd = -1;
  let labelsStart = -1;
  let labelsEnd = -1;
  let mfStart = -1;
  let mfEnd = -1;
  // Each key is compared by length before keyIs is called (MemberCursor.keyLength): this function is too large for
  // V8 to inline keyIs, and most of a pod's ~40 members differ in length from every name asked of them.
  while (item.next()) {
    if (item.keyEscaped) throw OBJECT_PATH;
    if (item.keyLength === 'metadata'.length && item.keyIs('metadata')) {
      seen = once(seen, 1);
      if (b[item.valueStart] !== OPEN_OBJECT) throw OBJECT_PATH;
      metaStart = item.valueStart;
      const m = metaCursor.open(b, metaStart);
      let ms = 0;
      while (m.next()) {
        if (m.keyEscaped) throw OBJECT_PATH;
        if (m.keyLength === 'name'.length && m.keyIs('name')) {
          ms = once(ms, 1);
          name = stringOf(m);
        } else if (m.keyLength === 'namespace'.length && m.keyIs('namespace')) {
          ms = once(ms, 2);
          if (b[m.valueStart] !== QUOTE) throw OBJECT_PATH;
          namespace = fieldOf(m, recentNamespaces);
        } else if (m.keyLength === 'resourceVersion'.length && m.keyIs('resourceVersion')) {
          ms = once(ms, 4);
          memberRV = stringOf(m);
          rvStart = m.valueStart;
          rvEnd = m.valueEnd;
        } else if (m.keyLength === 'labels'.length && m.keyIs('labels')) {
          ms = once(ms, 8);
          if (b[m.valueStart] !== OPEN_OBJECT) throw OBJECT_PATH;
          labelsStart = m.valueStart;
          labelsEnd = m.skip();
        } else if (m.keyLength === 'managedFields'.length && m.keyIs('managedFields')) {
          ms = once(ms, 16);
          const first = m.memberBoundary === metaStart + 1;
          const end = m.skip();
          // The member and one comma: the one before it, or after it when it comes first.
          mfStart = first ? m.keyStart - 1 : m.memberBoundary;
          mfEnd = first && b[end] === COMMA ? end + 1 : end;
        }
      }
      metaEnd = m.end;
      item.skipped(metaEnd);
    } else if ((item.keyLength === 'kind'.length && item.keyIs('kind')) || (item.keyLength === 'apiVersion'.length && item.keyIs('apiVersion'))) {
      // Kept as it is when it has a value listItems would not replace (a non-empty string).
      seen = once(seen, item.keyIs('kind') ? 2 : 4);
      if (b[item.valueStart] !== QUOTE || b[item.valueStart + 1] === QUOTE) throw OBJECT_PATH;
      item.stringValue();
    } else if (item.keyLength === 'spec'.length && item.keyIs('spec')) {
      seen = once(seen, 8);
      if (b[item.valueStart] !== OPEN_OBJECT) continue;
      const s = specCursor.open(b, item.valueStart);
      let ss = 0;
      while (s.next()) {
        if (s.keyEscaped) throw OBJECT_PATH;
        if (s.keyLength === 'nodeName'.length && s.keyIs('nodeName')) {
          ss = once(ss, 1);
          nodeName = fieldOf(s);
        } else if (s.keyLength === 'restartPolicy'.length && s.keyIs('restartPolicy')) {
          ss = once(ss, 2);
          restartPolicy = fieldOf(s, recentRestartPolicies);
        } else if (s.keyLength === 'schedulerName'.length && s.keyIs('schedulerName')) {
          ss = once(ss, 4);
          schedulerName = fieldOf(s, recentSchedulerNames);
        } else if (s.keyLength === 'serviceAccountName'.length && s.keyIs('serviceAccountName')) {
          ss = once(ss, 8);
          serviceAccountName = fieldOf(s, recentServiceAccounts);
        } else if (s.keyLength === 'hostNetwork'.length && s.keyIs('hostNetwork')) {
          ss = once(ss, 16);
          hostNetwork = b[s.valueStart] === 0x74;
        }
      }
      item.skipped(s.end);
    } else if (item.keyLength === 'status'.length && item.keyIs('status')) {
      seen = once(seen, 16);
      if (b[item.valueStart] !== OPEN_OBJECT) continue;
      const s = statusCursor.open(b, item.valueStart);
      let ss = 0;
      while (s.next()) {
        if (s.keyEscaped) throw OBJECT_PATH;
        if (s.keyLength === 'phase'.length && s.keyIs('phase')) {
          ss = once(ss, 1);
          phase = fieldOf(s, recentPhases);
        } else if (s.keyLength === 'podIP'.length && s.keyIs('podIP')) {
          ss = once(ss, 2);
          podIP = fieldOf(s);
        } else if (s.keyLength === 'nominatedNodeName'.length && s.keyIs('nominatedNodeName')) {
          ss = once(ss, 4);
          nominatedNodeName = fieldOf(s);
        } else if (s.keyLength === 'podIPs'.length && s.keyIs('podIPs')) {
          ss = once(ss, 8);
          if (b[s.valueStart] === OPEN_ARRAY) {
            const ips = JSON.parse(b.toString('utf8', s.valueStart, s.skip())) as Array<{ ip?: unknown } | null>;
            if (ips.length > 0) firstPodIP = typeof ips[0]?.ip === 'string' ? ips[0].ip : '';
          }
        }
      }
      item.skipped(s.end);
    }
  }
  const end = item.end;
  // No name: left out, as encodeObjects leaves it out.
  if (!name) return end;
  const page = pp.page;
  const i = page.count++;
  const s = i * 4;
  if (page.offsets.length < s + 4) {
    const grown = new Uint32Array(page.offsets.length * 2);
    grown.set(page.offsets);
    page.offsets = grown;
  }
  const offsets = page.offsets;
  page.namespaces.push(namespace);
  page.names.push(name);
  page.memberRVs.push(memberRV);
  if (pp.unchanged?.(namespace, name, memberRV)) {
    offsets.fill(pp.pos, s, s + 4);
    page.labels.push({});
    page.fields.push({});
    page.v1Fields.push({});
    return end;
  }
  // (Whitespace there was seen by the scan already, so skipSpace marks the page no more spaced than it is.)
  const labelsEmpty = labelsStart < 0 || b[skipSpace(b, labelsStart + 1)] === CLOSE_OBJECT;
  page.labels.push(labelsWithCluster(b, labelsEmpty ? -1 : labelsStart, labelsEnd, pp.t.cluster));
  page.fields.push(podFieldSet(nodeName, restartPolicy, schedulerName, serviceAccountName, hostNetwork, phase, firstPodIP ?? podIP, nominatedNodeName, name, namespace));
  page.v1Fields.push({});

  // The pod's bytes with the edits: managedFields cut, the resourceVersion's value left out (servedJSON puts the
  // gateway's there), the cluster label added; labels and resourceVersion added at the end when it has none.
  edits = 0;
  if (mfStart >= 0 && pp.t.dropManagedFields) edit(CUT, mfStart, mfEnd, EMPTY);
  if (rvStart >= 0) edit(VERSION, rvStart + 1, rvEnd - 1, EMPTY);
  if (labelsStart >= 0) edit(INSERT, labelsEnd - 1, labelsEnd - 1, labelsEmpty ? EMPTY : COMMA_BYTE);
  const tail = metaEnd - 1;
  const buf = reserve(pp, end - p + pp.kindMember.length + pp.apiVersionMember.length + 2 * pp.clusterMember.length + 64);
  let pos = pp.pos;
  offsets[s] = pos;
  buf[pos++] = OPEN_OBJECT;
  if (!(seen & 2)) pos += pp.kindMember.copy(buf, pos);
  if (!(seen & 4)) pos += pp.apiVersionMember.copy(buf, pos);
  let from = p + 1;
  for (let e = 0; e < edits; e++) {
    pos += b.copy(buf, pos, from, editAt[e]);
    from = editTo[e];
    const kind = editKind[e];
    if (kind === VERSION) {
      offsets[s + 1] = pos;
      offsets[s + 2] = pos;
    } else if (kind === INSERT) {
      pos += editBytes[e].copy(buf, pos);
      pos += pp.clusterMember.copy(buf, pos);
    }
  }
  // Up to the metadata's closing brace: what a pod without labels or a resourceVersion gets is added there.
  pos += b.copy(buf, pos, from, tail);
  if (labelsStart < 0) {
    pos += LABELS_HEAD.copy(buf, pos);
    pos += pp.clusterMember.copy(buf, pos);
    buf[pos++] = 0x7d;
  }
  if (rvStart < 0) {
    pos += VERSION_HEAD.copy(buf, pos);
    offsets[s + 1] = pos;
    offsets[s + 2] = pos;
    buf[pos++] = QUOTE;
  }
  pos += b.copy(buf, pos, tail, end);
  offsets[s + 3] = pos;
  pp.pos = pos;
  return end;
}

const COMMA_BYTE = Buffer.from(',');

/**
 * The start of the text labelsWithCluster parses: the cluster label first, with a value no label can have (label
 * values are at most alphanumerics, '-', '_' and '.'), so that a member's own cluster label, which JSON.parse lets
 * win, shows.
 */
const CLUSTER_FIRST = `{${JSON.stringify(CLUSTER_LABEL)}:" "`;

/**
 * The labels of b[start, end) (a non-empty object; start -1 for none) with the cluster label, parsed as one
 * object: the label added after the parse put it in a separate property array, ~40 bytes more per cached pod. Label
 * values longer than JSON.parse shares are made the process's own copy (src/api/intern.ts): an app's or a chart's
 * name is the same in all of its pods.
 *
 * One object, frozen, for every pod of a cluster whose labels have the same bytes: a ReplicaSet's or a DaemonSet's
 * pods carry the same labels, and an object of its own per pod was ~64 bytes of heap and one more object per cached
 * pod for every full collection to visit (scenarios 4 and 6), and a JSON.parse per pod taken in.
 */
function labelsWithCluster(b: Buffer, start: number, end: number, cluster: string): Record<string, string> {
  const text = start < 0 ? '' : b.toString('utf8', start + 1, end);
  const have = labelSets.get(cluster)?.get(text);
  if (have !== undefined) return have;
  if (start < 0) return keepLabelSet(cluster, text, { [CLUSTER_LABEL]: cluster });
  const labels = JSON.parse(CLUSTER_FIRST + ',' + text) as Record<string, string>;
  // A member's own value for the cluster label is replaced where it stands: the object path's job.
  if (labels[CLUSTER_LABEL] !== ' ') throw OBJECT_PATH;
  labels[CLUSTER_LABEL] = cluster;
  return keepLabelSet(cluster, text, internValues(labels));
}

/** labels with its values longer than JSON.parse shares made the process's own copy (src/api/intern.ts). */
function internValues(labels: Record<string, string>): Record<string, string> {
  for (const k in labels) {
    const v = labels[k];
    if (typeof v === 'string' && v.length > SHARED_BY_PARSE) labels[k] = intern(v);
  }
  return labels;
}

/**
 * labels, frozen, as the object of cluster's pods whose labels are text (their bytes, or their JSON from an intake
 * worker), which labelSets then gives them all.
 */
function keepLabelSet(cluster: string, text: string, labels: Record<string, string>): Record<string, string> {
  Object.freeze(labels);
  let sets = labelSets.get(cluster);
  if (labelSetCount >= MAX_LABEL_SETS) {
    // Objects handed out stay valid: the pods holding them keep them, the table only forgets them.
    labelSets = new Map();
    labelSetCount = 0;
    sets = undefined;
  }
  if (sets === undefined) labelSets.set(cluster, (sets = new Map()));
  sets.set(text, labels);
  labelSetCount++;
  return labels;
}

/**
 * Label sets kept for sharing (keepLabelSet), over all clusters; past it the table starts over, so pods whose
 * labels are their own (a StatefulSet labels each pod with its own name) cost a lookup and never memory.
 */
const MAX_LABEL_SETS = 1 << 15;
/** cluster -> the labels' bytes as text (or their JSON, from a worker) -> their object. */
let labelSets = new Map<string, Map<string, Record<string, string>>>();
let labelSetCount = 0;

/** JSON.parse makes one string of each value up to this long (V8's kMaxInternalizedStringValueLength). */
const SHARED_BY_PARSE = 10;

/** An EncodedPage as it crosses between threads: the bytes and offsets transferred, the small parts as JSON. */
export interface WirePage {
  listRV: string;
  continue: string;
  count: number;
  stride: number;
  bytes: Uint8Array;
  offsets: Uint32Array;
  /** [namespaces, names, memberRVs, label sets, each object's label set, fields, v1Fields] */
  parts: string;
}

/** The page for postMessage (transfer wire.bytes.buffer and wire.offsets.buffer). */
export function toWire(page: EncodedPage): WirePage {
  const { listRV, count, stride, bytes, offsets } = page;
  // Each set of labels once, and for each object which (the worker's objects are shared as the main thread's are).
  const sets: Record<string, string>[] = [];
  const setOf = new Map<Record<string, string>, number>();
  const labelSet = page.labels.map((l) => {
    let k = setOf.get(l);
    if (k === undefined) setOf.set(l, (k = sets.push(l) - 1));
    return k;
  });
  const parts = JSON.stringify([page.namespaces, page.names, page.memberRVs, sets, labelSet, page.fields, page.v1Fields]);
  return { listRV, continue: page.continue, count, stride, bytes, offsets, parts };
}

/**
 * The page from its wire form. The small parts come as JSON rather than structured-cloned: JSON.parse makes the
 * labels and fields objects, which the store keeps, half the size (V8 sizes each object for its properties) and
 * in about half the time.
 */
export function fromWire(wire: WirePage): EncodedPage {
  const [namespaces, names, memberRVs, sets, labelSet, fields, v1Fields] = JSON.parse(wire.parts) as [string[], string[], string[], Record<string, string>[], number[], Record<string, string>[], Record<string, string>[]];
  // Made in the worker's own strings: the shared ones become this process's (src/api/intern.ts).
  for (let i = 0; i < namespaces.length; i++) namespaces[i] = intern(namespaces[i]!);
  // Labels shared as on the byte path (keepLabelSet), keyed by their JSON; an object the page holds no labels for
  // (one the cache has already: an empty object) stays as it came.
  const shared = sets.map((l) => {
    const cluster = l[CLUSTER_LABEL];
    if (cluster === undefined) return l;
    const text = JSON.stringify(l);
    return labelSets.get(cluster)?.get(text) ?? keepLabelSet(cluster, text, internValues(l));
  });
  const labels = labelSet.map((k) => shared[k]!);
  for (const f of fields) shareFieldValues(f);
  for (const f of v1Fields) shareFieldValues(f);
  const b = wire.bytes;
  const bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { listRV: wire.listRV, continue: wire.continue, count: wire.count, stride: wire.stride, bytes, offsets: wire.offsets, namespaces, names, memberRVs, labels, fields, v1Fields };
}

/**
 * Object i's served JSON under rv (view 0: the object, 1: the events.k8s.io/v1 view), in bytes from a store's
 * arena, or else in a buffer of its own (see ownBytes in store.ts).
 */
export function servedJSON(page: EncodedPage, i: number, view: 0 | 1, rv: string, arena?: { alloc(len: number): Buffer }): Buffer {
  const s = i * page.stride + view * 4;
  const o = page.offsets;
  const head = o[s + 1] - o[s];
  const len = head + rv.length + o[s + 3] - o[s + 2];
  const b = arena ? arena.alloc(len) : Buffer.allocUnsafeSlow(len);
  copyBytes(page.bytes, b, 0, o[s], o[s + 1]);
  b.write(rv, head, 'latin1');
  copyBytes(page.bytes, b, head + rv.length, o[s + 2], o[s + 3]);
  return b;
}

/**
 * The resourceVersion and continue token of a list answer, read from the start of its bytes without parsing the
 * items; undefined when the metadata does not come before them (then only the whole parse tells).
 */
export function listMetadataOf(bytes: Buffer): { resourceVersion: string; continue: string } | undefined {
  const text = bytes.toString('utf8', 0, Math.min(bytes.length, 64 * 1024));
  const span = topLevelValue(text, 'metadata');
  if (!span || span[1] >= text.length) return undefined;
  try {
    const m = JSON.parse(text.slice(span[0], span[1])) as { resourceVersion?: unknown; continue?: unknown };
    if (!m || typeof m !== 'object') return undefined;
    return { resourceVersion: typeof m.resourceVersion === 'string' ? m.resourceVersion : '', continue: typeof m.continue === 'string' ? m.continue : '' };
  } catch {
    return undefined;
  }
}
