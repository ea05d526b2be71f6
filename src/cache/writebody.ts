// Request bodies of writes that go through the merged view to a member cluster. Objects served from the merged
// cache carry the label fleetgate.io/cluster and the gateway's resourceVersions; a member knows neither. So before
// a write goes out the label is taken off (it is remembered: it names the cluster the caller means) and every
// resourceVersion the write is conditional on is translated back into the member's own.
//
// Bodies come as JSON or YAML objects (create, update, status), patches of the four kinds kube-apiserver accepts,
// DeleteOptions (delete) and Evictions, and from client-go 1.32+ typed clients as protobuf; protobuf is edited at
// the wire level (only ObjectMeta's labels and resourceVersion and the preconditions are touched), so no schema is
// needed and every other byte stays as the client wrote it. Bodies in any other format go out unchanged.

import { parse as parseYaml } from 'yaml';
import { mediaType } from '../request/body.js';

/** What the body is, by the request it belongs to. */
export type WriteBodyKind = 'object' | 'patch' | 'deleteOptions' | 'eviction';

export interface WriteBody {
  /** The cluster the body's label names (a string value only; a label being removed names none). */
  cluster?: string;
  /** The (gateway) resourceVersion the write is conditional on: metadata.resourceVersion or a precondition. */
  resourceVersion?: string;
  /** The uid the body names (metadata.uid or preconditions.uid), which tells same-named objects apart. */
  uid?: string;
  /** metadata.name of an object body. */
  name?: string;
  /**
   * The body for the member: without the label, every resourceVersion passed through translate (which throws to
   * refuse the write). The original bytes when there is nothing to change.
   */
  forMember(translate: (gatewayRV: string) => string): { body: Buffer; contentType: string | undefined };
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

export function parseWriteBody(kind: WriteBodyKind, contentType: string | undefined, body: Buffer, label: string): WriteBody {
  const mt = mediaType(contentType);
  if (body.length === 0) return unchanged(body, contentType);
  if (mt === PROTOBUF) return protobufBody(kind, contentType, body, label);
  if (mt === 'application/json-patch+json') return jsonPatchBody(contentType, body, label);
  const yaml = mt === 'application/yaml' || mt === 'application/apply-patch+yaml';
  if (!yaml && mt !== 'application/json' && mt !== 'application/merge-patch+json' && mt !== 'application/strategic-merge-patch+json' && mt !== '') {
    return unchanged(body, contentType);
  }
  let doc: any;
  try {
    doc = yaml ? parseYaml(body.toString('utf8')) : JSON.parse(body.toString('utf8'));
  } catch {
    // The member answers a malformed body with its own 400.
    return unchanged(body, contentType);
  }
  // YAML objects go out as JSON (a YAML apply patch stays one: JSON is YAML).
  const outType = mt === 'application/yaml' ? 'application/json' : contentType;
  return jsonDocBody(kind, doc, body, contentType, outType, label);
}

function unchanged(body: Buffer, contentType: string | undefined): WriteBody {
  return { forMember: () => ({ body, contentType }) };
}

function isMap(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------------------------
// JSON and YAML documents: objects, merge/strategic/apply patches, DeleteOptions, Evictions.

function jsonDocBody(kind: WriteBodyKind, doc: any, raw: Buffer, inType: string | undefined, outType: string | undefined, label: string): WriteBody {
  const out: WriteBody & { sites: Array<{ holder: Record<string, any>; key: string }>; changed: boolean } = {
    sites: [],
    changed: false,
    forMember(translate) {
      if (!out.changed && out.sites.length === 0) return { body: raw, contentType: inType };
      for (const s of out.sites) s.holder[s.key] = translate(s.holder[s.key]);
      return { body: Buffer.from(JSON.stringify(doc), 'utf8'), contentType: outType };
    },
  };
  if (!isMap(doc)) return out;
  if (kind === 'object' || kind === 'patch') {
    const meta = doc.metadata;
    if (isMap(meta)) {
      if (takeLabel(meta, label, out)) out.changed = true;
      noteRV(meta, 'resourceVersion', out);
      if (typeof meta.uid === 'string' && meta.uid !== '') out.uid = meta.uid;
      if (typeof meta.name === 'string' && meta.name !== '') out.name = meta.name;
    }
    return out;
  }
  const opts = kind === 'eviction' ? doc.deleteOptions : doc;
  const pre = isMap(opts) ? opts.preconditions : undefined;
  if (isMap(pre)) {
    noteRV(pre, 'resourceVersion', out);
    if (typeof pre.uid === 'string' && pre.uid !== '') out.uid = pre.uid;
  }
  return out;
}

/** Removes the label from metadata.labels (and labels itself when it is left empty); true when it was there. */
function takeLabel(meta: Record<string, any>, label: string, into: { cluster?: string }): boolean {
  const labels = meta.labels;
  if (!isMap(labels) || !(label in labels)) return false;
  const v = labels[label];
  if (typeof v === 'string' && v !== '') into.cluster = v;
  delete labels[label];
  if (Object.keys(labels).length === 0) delete meta.labels;
  return true;
}

function noteRV(holder: Record<string, any>, key: string, out: { resourceVersion?: string; sites: Array<{ holder: Record<string, any>; key: string }> }): void {
  const v = holder[key];
  // "" means unconditional, as it does to the member.
  if (typeof v !== 'string' || v === '') return;
  out.resourceVersion ??= v;
  out.sites.push({ holder, key });
}

// ---------------------------------------------------------------------------------------------------------------
// JSON patches (RFC 6902): operations on the label are dropped (the member never had it), values that carry
// labels or metadata lose it, and resourceVersions in values are translated.

function jsonPatchBody(contentType: string | undefined, raw: Buffer, label: string): WriteBody {
  let ops: any;
  try {
    ops = JSON.parse(raw.toString('utf8'));
  } catch {
    return unchanged(raw, contentType);
  }
  if (!Array.isArray(ops)) return unchanged(raw, contentType);
  const labelPath = '/metadata/labels/' + label.replace(/~/g, '~0').replace(/\//g, '~1');
  const out: WriteBody & { sites: Array<{ holder: Record<string, any>; key: string }>; changed: boolean } = {
    sites: [],
    changed: false,
    forMember(translate) {
      if (!out.changed && out.sites.length === 0) return { body: raw, contentType };
      for (const s of out.sites) s.holder[s.key] = translate(s.holder[s.key]);
      return { body: Buffer.from(JSON.stringify(kept), 'utf8'), contentType };
    },
  };
  const kept: any[] = [];
  for (const op of ops) {
    if (!isMap(op) || typeof op.path !== 'string') {
      kept.push(op);
      continue;
    }
    const path = op.path;
    if (path === labelPath || (typeof op.from === 'string' && op.from === labelPath)) {
      if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && typeof op.value === 'string' && op.value !== '') out.cluster ??= op.value;
      out.changed = true;
      continue;
    }
    kept.push(op);
    if (op.op !== 'add' && op.op !== 'replace' && op.op !== 'test') continue;
    if (path === '/metadata/resourceVersion') noteRV(op, 'value', out);
    else if (path === '/metadata/uid' && typeof op.value === 'string' && op.value !== '') out.uid = op.value;
    else if (path === '/metadata/labels' && isMap(op.value)) {
      if (takeLabelFromMap(op.value, label, out)) out.changed = true;
    } else if ((path === '/metadata' || path === '') && isMap(op.value)) {
      const meta = path === '' ? op.value.metadata : op.value;
      if (isMap(meta)) {
        if (takeLabel(meta, label, out)) out.changed = true;
        noteRV(meta, 'resourceVersion', out);
      }
    }
  }
  return out;
}

function takeLabelFromMap(labels: Record<string, any>, label: string, into: { cluster?: string }): boolean {
  if (!(label in labels)) return false;
  const v = labels[label];
  if (typeof v === 'string' && v !== '') into.cluster = v;
  delete labels[label];
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Protobuf: the magic "k8s\0", then runtime.Unknown {1 typeMeta, 2 raw, 3 contentEncoding, 4 contentType}. In raw:
// Pod and Event have ObjectMeta as field 1 (5 uid, 6 resourceVersion, 11 labels: entries {1 key, 2 value});
// DeleteOptions has preconditions as field 2 ({1 uid, 2 resourceVersion}); Eviction has DeleteOptions as field 2.

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const LEN = 2;

interface PbField {
  num: number;
  wire: number;
  /** The whole field, tag included. */
  start: number;
  end: number;
  /** Length-delimited fields: where the payload begins. */
  data: number;
}

function readVarint(b: Buffer, pos: number): [number, number] | null {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10 && pos < b.length; i++) {
    const byte = b[pos++]!;
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) return [v, pos];
    mul *= 128;
  }
  return null;
}

function writeVarint(v: number): Buffer {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** The fields of one message, or null when it is not well-formed protobuf. */
function scan(b: Buffer): PbField[] | null {
  const out: PbField[] = [];
  let pos = 0;
  while (pos < b.length) {
    const start = pos;
    const tag = readVarint(b, pos);
    if (!tag) return null;
    pos = tag[1];
    const num = Math.floor(tag[0] / 8);
    const wire = tag[0] % 8;
    let data = pos;
    switch (wire) {
      case 0: {
        const v = readVarint(b, pos);
        if (!v) return null;
        pos = v[1];
        break;
      }
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case LEN: {
        const l = readVarint(b, pos);
        if (!l) return null;
        data = l[1];
        pos = data + l[0];
        break;
      }
      default:
        return null;
    }
    if (pos > b.length) return null;
    out.push({ num, wire, start, end: pos, data });
  }
  return out;
}

function lenField(num: number, payload: Buffer): Buffer {
  return Buffer.concat([writeVarint(num * 8 + LEN), writeVarint(payload.length), payload]);
}

function payload(b: Buffer, f: PbField): Buffer {
  return b.subarray(f.data, f.end);
}

/** b with some fields replaced (a Buffer) or dropped (null); b itself when nothing changed. */
function rebuild(b: Buffer, fields: PbField[], edits: Map<PbField, Buffer | null>): Buffer {
  if (edits.size === 0) return b;
  const parts: Buffer[] = [];
  for (const f of fields) {
    const e = edits.get(f);
    if (e === undefined) parts.push(b.subarray(f.start, f.end));
    else if (e !== null) parts.push(e);
  }
  return Buffer.concat(parts);
}

interface PbInfo {
  cluster?: string;
  name?: string;
  resourceVersion?: string;
  uid?: string;
}

/** Edits (or, without translate, only reads) a length-delimited string field that holds a resourceVersion. */
type Translate = ((rv: string) => string) | undefined;

/** ObjectMeta: notes label, uid and resourceVersion; drops the label and translates the resourceVersion. */
function editObjectMeta(b: Buffer, label: string, info: PbInfo, translate: Translate): Buffer | null {
  const fields = scan(b);
  if (!fields) return null;
  const edits = new Map<PbField, Buffer | null>();
  for (const f of fields) {
    if (f.wire !== LEN) continue;
    if (f.num === 1) {
      const name = payload(b, f).toString('utf8');
      if (name) info.name = name;
    } else if (f.num === 5) {
      const uid = payload(b, f).toString('utf8');
      if (uid) info.uid = uid;
    } else if (f.num === 6) {
      const rv = payload(b, f).toString('utf8');
      if (rv === '') continue;
      info.resourceVersion ??= rv;
      if (translate) edits.set(f, lenField(6, Buffer.from(translate(rv), 'utf8')));
    } else if (f.num === 11) {
      const entry = payload(b, f);
      const ef = scan(entry);
      if (!ef) return null;
      const key = ef.find((x) => x.num === 1 && x.wire === LEN);
      if (!key || payload(entry, key).toString('utf8') !== label) continue;
      const value = ef.find((x) => x.num === 2 && x.wire === LEN);
      const v = value ? payload(entry, value).toString('utf8') : '';
      if (v) info.cluster = v;
      edits.set(f, null);
    }
  }
  return rebuild(b, fields, edits);
}

/** Preconditions: notes uid and resourceVersion; translates the resourceVersion. */
function editPreconditions(b: Buffer, info: PbInfo, translate: Translate): Buffer | null {
  const fields = scan(b);
  if (!fields) return null;
  const edits = new Map<PbField, Buffer | null>();
  for (const f of fields) {
    if (f.wire !== LEN) continue;
    if (f.num === 1) {
      const uid = payload(b, f).toString('utf8');
      if (uid) info.uid = uid;
    } else if (f.num === 2) {
      const rv = payload(b, f).toString('utf8');
      if (rv === '') continue;
      info.resourceVersion ??= rv;
      if (translate) edits.set(f, lenField(2, Buffer.from(translate(rv), 'utf8')));
    }
  }
  return rebuild(b, fields, edits);
}

/** Replaces field num of message b (length-delimited) by edit(payload); null when b or the edit is malformed. */
function editField(b: Buffer, num: number, edit: (p: Buffer) => Buffer | null): Buffer | null {
  const fields = scan(b);
  if (!fields) return null;
  const edits = new Map<PbField, Buffer | null>();
  for (const f of fields) {
    if (f.num !== num || f.wire !== LEN) continue;
    const p = payload(b, f);
    const e = edit(p);
    if (e === null) return null;
    if (e !== p) edits.set(f, lenField(num, e));
  }
  return rebuild(b, fields, edits);
}

function editObject(kind: WriteBodyKind, raw: Buffer, label: string, info: PbInfo, translate: Translate): Buffer | null {
  switch (kind) {
    case 'object':
      return editField(raw, 1, (m) => editObjectMeta(m, label, info, translate));
    case 'deleteOptions':
      return editField(raw, 2, (p) => editPreconditions(p, info, translate));
    case 'eviction':
      return editField(raw, 2, (d) => editField(d, 2, (p) => editPreconditions(p, info, translate)));
    default:
      return raw;
  }
}

function editEnvelope(kind: WriteBodyKind, body: Buffer, label: string, info: PbInfo, translate: Translate): Buffer | null {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const unknown = body.subarray(MAGIC.length);
  const edited = editField(unknown, 2, (raw) => editObject(kind, raw, label, info, translate));
  if (edited === null) return null;
  return edited === unknown ? body : Buffer.concat([MAGIC, edited]);
}

function protobufBody(kind: WriteBodyKind, contentType: string | undefined, body: Buffer, label: string): WriteBody {
  const info: PbInfo = {};
  const readOnly = editEnvelope(kind, body, label, info, undefined);
  if (readOnly === null) return unchanged(body, contentType);
  const out: WriteBody = {
    forMember(translate) {
      if (readOnly === body && info.resourceVersion === undefined) return { body, contentType };
      return { body: editEnvelope(kind, body, label, {}, translate) ?? body, contentType };
    },
  };
  if (info.cluster !== undefined) out.cluster = info.cluster;
  if (info.resourceVersion !== undefined) out.resourceVersion = info.resourceVersion;
  if (info.uid !== undefined) out.uid = info.uid;
  if (info.name !== undefined) out.name = info.name;
  return out;
}
