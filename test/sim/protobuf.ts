// Decoding of the few Kubernetes protobuf request bodies the sim must understand. client-go 1.32+ typed clients
// (so kubectl 1.32+ `auth can-i` and `auth whoami`) send built-in objects as application/vnd.kubernetes.protobuf;
// a real apiserver decodes them, and client-go does not retry them as JSON after a 415.
// Wire format: the 4-byte magic "k8s\0", then a runtime.Unknown {typeMeta{apiVersion, kind}, raw, ...} whose raw
// bytes are the object's message. Field numbers come from k8s.io/api's generated.proto files.

type Schema = { [field: number]: [name: string, kind: 'string' | 'bool' | 'int' | Schema | 'strings' | 'extra'] };

const objectMeta: Schema = { 1: ['name', 'string'], 2: ['generateName', 'string'], 3: ['namespace', 'string'] };
const resourceAttributes: Schema = {
  1: ['namespace', 'string'],
  2: ['verb', 'string'],
  3: ['group', 'string'],
  4: ['version', 'string'],
  5: ['resource', 'string'],
  6: ['subresource', 'string'],
  7: ['name', 'string'],
};
const nonResourceAttributes: Schema = { 1: ['path', 'string'], 2: ['verb', 'string'] };
const ssarSpec: Schema = { 1: ['resourceAttributes', resourceAttributes], 2: ['nonResourceAttributes', nonResourceAttributes] };
const sarSpec: Schema = { ...ssarSpec, 3: ['user', 'string'], 4: ['groups', 'strings'], 5: ['extra', 'extra'], 6: ['uid', 'string'] };

const SCHEMAS: Record<string, Schema> = {
  SelfSubjectAccessReview: { 1: ['metadata', objectMeta], 2: ['spec', ssarSpec] },
  SubjectAccessReview: { 1: ['metadata', objectMeta], 2: ['spec', sarSpec] },
  LocalSubjectAccessReview: { 1: ['metadata', objectMeta], 2: ['spec', sarSpec] },
  SelfSubjectRulesReview: { 1: ['metadata', objectMeta], 2: ['spec', { 1: ['namespace', 'string'] }] },
  SelfSubjectReview: { 1: ['metadata', objectMeta] },
};

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Decodes a protobuf body into the JSON form, or returns undefined when its kind is not one we know. */
export function decodeProtobufObject(body: Buffer): Record<string, unknown> | undefined {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) throw new Error('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  const unknown = readMessage(body.subarray(4), {
    1: ['typeMeta', { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] }],
    2: ['raw', 'string'],
  }, true);
  const tm = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const schema = tm.kind ? SCHEMAS[tm.kind] : undefined;
  if (!schema) return undefined;
  const obj = readMessage(unknown.raw as unknown as Buffer, schema, false);
  return { apiVersion: tm.apiVersion, kind: tm.kind, ...obj };
}

function readMessage(buf: Buffer, schema: Schema, rawBytes: boolean): Record<string, any> {
  const out: Record<string, any> = {};
  let i = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (i >= buf.length) throw new Error('truncated protobuf varint');
      const b = buf[i++];
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    let value: Buffer | number;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const len = varint();
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1) {
      value = 0;
      i += 8;
    } else if (wire === 5) {
      value = 0;
      i += 4;
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
    const def = schema[field];
    if (!def) continue;
    const [name, kind] = def;
    if (kind === 'string') out[name] = rawBytes && name === 'raw' ? value : (value as Buffer).toString('utf8');
    else if (kind === 'strings') (out[name] ??= []).push((value as Buffer).toString('utf8'));
    else if (kind === 'bool') out[name] = value === 1;
    else if (kind === 'int') out[name] = value;
    else if (kind === 'extra') {
      // map<string, ExtraValue>: entries {1: key, 2: ExtraValue{1: repeated string}}
      const entry = readMessage(value as Buffer, { 1: ['key', 'string'], 2: ['value', { 1: ['items', 'strings'] }] }, false);
      (out[name] ??= {})[entry.key] = entry.value?.items ?? [];
    } else out[name] = readMessage(value as Buffer, kind, false);
  }
  return out;
}
