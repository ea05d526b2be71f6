// What the merged cache makes of a member's object before storing it, in one place for the main thread (watch
// events, lists when cache.intakeWorkers is 0) and the intake workers (intakeworker.ts, lists): the cluster label,
// managedFields dropped, the selectable fields, for events the events.k8s.io/v1 view, and the JSON as served.
//
// The served JSON carries the gateway's resourceVersion, which only the main thread can issue, and only when it
// stores the object. So the object is serialized with a placeholder as metadata.resourceVersion, and the bytes
// around the placeholder are kept: storing is then head + the version's digits + tail, a copy instead of a
// JSON.stringify and a UTF-8 encode.

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
export function encodeObjects(objects: KubeObject[], t: IntakeTransform, sizeHint = 0, unchanged?: (namespace: string, name: string, memberRV: string) => boolean): EncodedPage {
  const stride = t.resource === 'events' ? 8 : 4;
  const n = objects.length;
  const offsets = new Uint32Array(n * stride);
  const page: EncodedPage = { listRV: '', continue: '', count: 0, stride, bytes: Buffer.allocUnsafeSlow(sizeHint), offsets, namespaces: [], names: [], memberRVs: [], labels: [], fields: [], v1Fields: [] };
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
    const namespace = meta.namespace ?? '';
    const name = meta.name;
    const memberRV = meta.resourceVersion ?? '';
    const s = i * stride;
    page.namespaces.push(namespace);
    page.names.push(name);
    page.memberRVs.push(memberRV);
    i++;
    if (unchanged?.(namespace, name, memberRV)) {
      offsets.fill(pos, s, s + stride);
      page.labels.push(meta.labels ?? {});
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

/** A list answer's text made into its page. */
export function encodeList(text: string, t: IntakeTransform, sizeHint = 0): EncodedPage {
  const body = JSON.parse(text) as ListBody;
  const page = encodeObjects(listItems(body), t, sizeHint);
  page.listRV = body.metadata?.resourceVersion ?? '';
  page.continue = body.metadata?.continue ?? '';
  return page;
}

/** An EncodedPage as it crosses between threads: the bytes and offsets transferred, the small parts as JSON. */
export interface WirePage {
  listRV: string;
  continue: string;
  count: number;
  stride: number;
  bytes: Uint8Array;
  offsets: Uint32Array;
  /** [namespaces, names, memberRVs, labels, fields, v1Fields] */
  parts: string;
}

/** The page for postMessage (transfer wire.bytes.buffer and wire.offsets.buffer). */
export function toWire(page: EncodedPage): WirePage {
  const { listRV, count, stride, bytes, offsets } = page;
  const parts = JSON.stringify([page.namespaces, page.names, page.memberRVs, page.labels, page.fields, page.v1Fields]);
  return { listRV, continue: page.continue, count, stride, bytes, offsets, parts };
}

/**
 * The page from its wire form. The small parts come as JSON rather than structured-cloned: JSON.parse makes the
 * labels and fields objects, which the store keeps, half the size (V8 sizes each object for its properties) and
 * in about half the time.
 */
export function fromWire(wire: WirePage): EncodedPage {
  const [namespaces, names, memberRVs, labels, fields, v1Fields] = JSON.parse(wire.parts) as [string[], string[], string[], Record<string, string>[], Record<string, string>[], Record<string, string>[]];
  const b = wire.bytes;
  const bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { listRV: wire.listRV, continue: wire.continue, count: wire.count, stride: wire.stride, bytes, offsets: wire.offsets, namespaces, names, memberRVs, labels, fields, v1Fields };
}

/**
 * Object i's served JSON under rv (view 0: the object, 1: the events.k8s.io/v1 view), in a buffer of its own
 * (see ownBytes in store.ts).
 */
export function servedJSON(page: EncodedPage, i: number, view: 0 | 1, rv: string): Buffer {
  const s = i * page.stride + view * 4;
  const o = page.offsets;
  const head = o[s + 1] - o[s];
  const b = Buffer.allocUnsafeSlow(head + rv.length + o[s + 3] - o[s + 2]);
  page.bytes.copy(b, 0, o[s], o[s + 1]);
  b.write(rv, head, 'latin1');
  page.bytes.copy(b, head + rv.length, o[s + 2], o[s + 3]);
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
