// What the merged cache makes of a member's object before storing it, in one place for the main thread (watch
// events, lists when cache.intakeWorkers is 0) and the intake workers (intakeworker.ts, lists): the cluster label,
// managedFields dropped, the selectable fields, for events the events.k8s.io/v1 view, and the JSON as served.
//
// The served JSON carries the gateway's resourceVersion, which only the main thread can issue, and only when it
// stores the object. So the object is serialized with a placeholder as metadata.resourceVersion, and its bytes are
// laid out in a buffer of their own with a gap as wide as the resourceVersions being issued: storing is then
// writing the digits into the gap, and the buffer becomes the stored object's as it is (a worker's buffers are
// transferred, not copied). Allocating and first touching a million buffers is a good part of a cold sync: it
// happens on the worker's thread.

import { randomBytes } from 'node:crypto';
import { coreToEventsV1 } from '../api/eventconv.js';
import { eventFields, podFields } from '../api/fields.js';
import type { KubeObject } from '../api/meta.js';
import { topLevelValue } from './store.js';

export const CLUSTER_LABEL = 'fleetgate.io/cluster';

export type CachedResource = 'pods' | 'events';

/** What to do to a member's objects: the merged cache's settings for one member and resource. */
export interface IntakeTransform {
  cluster: string;
  resource: CachedResource;
  dropManagedFields: boolean;
  /** How many digits the resourceVersions being issued have: the width of the gap left for them. */
  rvDigits: number;
}

/**
 * A page of a member's objects, serialized. Object i is namespaces[i]/names[i]; view v of it (1 for events: the
 * events.k8s.io/v1 view) is json[i * views + v]: its JSON, in a buffer of its own, with a gap of rvDigits bytes at
 * at[i * views + v] where the resourceVersion's digits go (servedJSON). An object the caller said it already holds
 * (unchanged) has no JSON.
 */
export interface EncodedPage {
  /** The list's metadata, when the page came as a list. */
  listRV: string;
  continue: string;
  count: number;
  views: 1 | 2;
  rvDigits: number;
  json: Array<Buffer | undefined>;
  at: Uint32Array;
  namespaces: string[];
  names: string[];
  memberRVs: string[];
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
  for (const it of items) {
    if (kind && !it.kind) it.kind = kind;
    if (body.apiVersion && !it.apiVersion) it.apiVersion = body.apiVersion;
  }
  return items;
}

/**
 * The objects made the cache's and serialized (see EncodedPage). The objects are changed on the way and are of no
 * use afterwards. unchanged(namespace, name, memberRV): the caller already holds that version (it is left
 * unserialized). Objects without a name are left out.
 */
export function encodeObjects(objects: KubeObject[], t: IntakeTransform, unchanged?: (namespace: string, name: string, memberRV: string) => boolean): EncodedPage {
  const views = t.resource === 'events' ? 2 : 1;
  const n = objects.length;
  const page: EncodedPage = { listRV: '', continue: '', count: 0, views, rvDigits: t.rvDigits, json: new Array(n * views), at: new Uint32Array(n * views), namespaces: [], names: [], memberRVs: [], labels: [], fields: [], v1Fields: [] };
  let i = 0;
  for (const obj of objects) {
    const meta = obj?.metadata;
    if (!meta?.name) continue;
    const namespace = meta.namespace ?? '';
    const name = meta.name;
    const memberRV = meta.resourceVersion ?? '';
    const s = i * views;
    page.namespaces.push(namespace);
    page.names.push(name);
    page.memberRVs.push(memberRV);
    i++;
    if (unchanged?.(namespace, name, memberRV)) {
      page.labels.push(EMPTY);
      page.fields.push(EMPTY);
      page.v1Fields.push(EMPTY);
      continue;
    }
    // Assigning undefined (JSON drops it) keeps the object's shape, unlike delete.
    if (t.dropManagedFields && meta.managedFields !== undefined) meta.managedFields = undefined;
    if (meta.labels) meta.labels[CLUSTER_LABEL] = t.cluster;
    else meta.labels = { [CLUSTER_LABEL]: t.cluster };
    page.labels.push(meta.labels);
    if (t.resource === 'pods') {
      page.fields.push(podFields(obj));
      page.v1Fields.push(EMPTY);
      lay(page, s, serialize(obj));
    } else {
      page.fields.push(eventFields(obj));
      lay(page, s, serialize(obj));
      // The v1 view shares metadata, placeholder included.
      const v1 = coreToEventsV1(obj);
      page.v1Fields.push(eventFields(v1));
      lay(page, s + 1, serialize(v1));
    }
  }
  page.count = i;
  page.json.length = i * views;
  return page;
}

const EMPTY: Record<string, string> = {};

/** Where JSON is encoded first: one buffer per thread, reused. */
let scratch = Buffer.allocUnsafeSlow(256 * 1024);

/** JSON (with the placeholder) laid out in a buffer of its own, the placeholder replaced by a gap, as view s. */
function lay(page: EncodedPage, s: number, json: string): void {
  // Room enough even if every character takes 3 bytes; measured only when that is not certain.
  if (scratch.length < json.length * 3) {
    const need = Buffer.byteLength(json, 'utf8');
    if (scratch.length < need) scratch = Buffer.allocUnsafeSlow(Math.max(scratch.length * 2, need));
  }
  const n = scratch.write(json, 0, 'utf8');
  // The first occurrence is within [0, n): the placeholder is in json.
  const at = scratch.indexOf(placeholderBytes);
  const gap = page.rvDigits;
  const out = Buffer.allocUnsafeSlow(n - PLACEHOLDER_LENGTH + gap);
  scratch.copy(out, 0, 0, at);
  scratch.copy(out, at + gap, at + PLACEHOLDER_LENGTH, n);
  page.json[s] = out;
  page.at[s] = at;
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

/** A list answer's text made into its page. */
export function encodeList(text: string, t: IntakeTransform): EncodedPage {
  const body = JSON.parse(text) as ListBody;
  const page = encodeObjects(listItems(body), t);
  page.listRV = body.metadata?.resourceVersion ?? '';
  page.continue = body.metadata?.continue ?? '';
  return page;
}

/** An EncodedPage as it crosses between threads: the JSON buffers transferred, the small parts as JSON text. */
export interface WirePage {
  listRV: string;
  continue: string;
  count: number;
  views: 1 | 2;
  rvDigits: number;
  json: Array<Uint8Array | undefined>;
  at: Uint32Array;
  /** [namespaces, names, memberRVs, labels, fields, v1Fields] */
  parts: string;
}

/** The page for postMessage, and what to transfer with it. */
export function toWire(page: EncodedPage): { wire: WirePage; transfer: ArrayBuffer[] } {
  const { listRV, count, views, rvDigits, json, at } = page;
  const parts = JSON.stringify([page.namespaces, page.names, page.memberRVs, page.labels, page.fields, page.v1Fields]);
  const transfer: ArrayBuffer[] = [at.buffer as ArrayBuffer];
  for (const b of json) if (b) transfer.push(b.buffer as ArrayBuffer);
  return { wire: { listRV, continue: page.continue, count, views, rvDigits, json, at, parts }, transfer };
}

/**
 * The page from its wire form. The small parts come as JSON rather than structured-cloned: JSON.parse makes the
 * labels and fields objects, which the store keeps, half the size (V8 sizes each object for its properties) and
 * in about half the time.
 */
export function fromWire(wire: WirePage): EncodedPage {
  const [namespaces, names, memberRVs, labels, fields, v1Fields] = JSON.parse(wire.parts) as [string[], string[], string[], Record<string, string>[], Record<string, string>[], Record<string, string>[]];
  // Transferred buffers arrive as plain Uint8Arrays.
  const json = wire.json.map((b) => (b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength) : undefined));
  return { listRV: wire.listRV, continue: wire.continue, count: wire.count, views: wire.views, rvDigits: wire.rvDigits, json, at: wire.at, namespaces, names, memberRVs, labels, fields, v1Fields };
}

/**
 * Object i's served JSON under rv (view 0: the object, 1: its events.k8s.io/v1 view), in a buffer of its own (see
 * ownBytes in store.ts): the page's own buffer with the digits written in when they fit its gap (the page lets go
 * of it), else a copy. Once per object and view.
 */
export function servedJSON(page: EncodedPage, i: number, view: 0 | 1, rv: string): Buffer {
  const s = i * page.views + view;
  const b = page.json[s];
  if (!b) throw new Error(`object ${i} of the page has no JSON (unchanged, or taken already)`);
  page.json[s] = undefined;
  const at = page.at[s];
  const gap = page.rvDigits;
  if (rv.length === gap) {
    for (let k = 0; k < gap; k++) b[at + k] = rv.charCodeAt(k);
    return b;
  }
  // The resourceVersions grew a digit since the page was encoded.
  const out = Buffer.allocUnsafeSlow(b.length - gap + rv.length);
  b.copy(out, 0, 0, at);
  for (let k = 0; k < rv.length; k++) out[at + k] = rv.charCodeAt(k);
  b.copy(out, at + rv.length, at + gap);
  return out;
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
