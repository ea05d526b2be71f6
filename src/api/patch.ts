// PATCH bodies as a kube-apiserver 1.34 applies them (k8s.io/apiserver endpoints/handlers/patch.go):
// - application/json-patch+json: RFC 6902 with gopkg.in/evanphx/json-patch.v4 semantics,
// - application/merge-patch+json: RFC 7386 as evanphx's MergePatch does it,
// - application/strategic-merge-patch+json: k8s.io/apimachinery/pkg/util/strategicpatch over the built-in kinds'
//   patchStrategy/patchMergeKey struct tags (the table below), with its $patch, $retainKeys,
//   $deleteFromPrimitiveList and $setElementOrder directives.
// Errors carry the codes, reasons and messages the apiserver answers with. Server-side apply is not done here.

import jsonpatch from 'fast-json-patch';
import {
  StatusError,
  fieldInvalid,
  goJson,
  newBadRequest,
  newInvalid,
  newUnsupportedMediaType,
  PATCH_MEDIA_TYPES,
} from './status.js';

export type PatchType =
  | 'application/json-patch+json'
  | 'application/merge-patch+json'
  | 'application/strategic-merge-patch+json'
  | 'application/apply-patch+yaml';

type Json = any;
type JsonMap = Record<string, Json>;

/**
 * Applies a PATCH body to `original` (not modified) and returns the patched object. `schema` names the built-in
 * kind (strategic merge needs its struct tags); null means a custom resource, for which strategic merge is a 415.
 * Throws StatusError.
 */
export function applyPatch(original: any, patchBody: string, type: PatchType, schema: { group: string; kind: string } | null): any {
  switch (type) {
    case 'application/json-patch+json':
      return decodeResult(applyJsonPatch(structuredClone(original), patchBody));
    case 'application/merge-patch+json':
      return decodeResult(applyMergePatch(structuredClone(original), patchBody));
    case 'application/strategic-merge-patch+json':
      if (schema === null) {
        // The CRD handler serves no strategic merge patch (apiextensions-apiserver customresource_handler.go).
        throw newUnsupportedMediaType(type, PATCH_MEDIA_TYPES.filter((t) => t !== type));
      }
      return applyStrategicMergePatch(structuredClone(original), patchBody, schema);
    default:
      // Server-side apply needs managed fields and the OpenAPI schemas; the gateway forwards it upstream.
      throw newUnsupportedMediaType(type, PATCH_MEDIA_TYPES.filter((t) => t !== 'application/apply-patch+yaml'));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Errors the way the handler reports them

/** errors.NewGenericServerResponse(422, ...): the detail is dropped, only this sentence reaches the client. */
function genericInvalid(): StatusError {
  return new StatusError({
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
    message: 'the server rejected our request due to an error in our request', reason: 'Invalid', details: {}, code: 422,
  });
}

/** A plain Go error reaching responsewriters.ErrorToAPIStatus: 500, reason Unknown, the error text as message. */
function internal(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 });
}

/**
 * The patched JSON is decoded into the typed object; anything but a JSON object fails there with a 422 naming the
 * patched document (jsonPatcher.applyPatchToCurrentObject).
 */
function decodeResult(patched: Json): Json {
  if (patched !== null && typeof patched === 'object' && !Array.isArray(patched)) return patched;
  const what = patched === null ? null : Array.isArray(patched) ? 'array' : goKindName(patched);
  if (what === null) return {}; // null decodes as an empty object
  const detail = `couldn't get version/kind; json parse error: json: cannot unmarshal ${what} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }`;
  throw newInvalid({ group: '', kind: '' }, '', [fieldInvalid('patch', goJson(patched), detail)]);
}

// ---------------------------------------------------------------------------------------------------------------
// encoding/json's syntax check (scanner.go), for the exact text of decode errors

const enum S {
  BeginValue, BeginValueOrEmpty, BeginStringOrEmpty, BeginString, EndValue, EndTop, InString, InStringEsc,
  EscU, EscU1, EscU12, EscU123, Neg, One, Zero, Dot, Dot0, E, ESign, E0, T, Tr, Tru, F, Fa, Fal, Fals, N, Nu, Nul,
}
const enum P { ObjectKey, ObjectValue, ArrayValue }

/** strconv.Quote of string(byte) between single quotes, as the scanner's quoteChar prints it. */
function quoteChar(c: number): string {
  if (c === 0x27) return "'\\''";
  if (c === 0x22) return "'\"'";
  const esc: Record<number, string> = { 7: '\\a', 8: '\\b', 12: '\\f', 10: '\\n', 13: '\\r', 9: '\\t', 11: '\\v', 92: '\\\\' };
  if (esc[c]) return `'${esc[c]}'`;
  if (c < 0x20 || c === 0x7f) return `'\\x${c.toString(16).padStart(2, '0')}'`;
  if ((c >= 0x80 && c < 0xa1) || c === 0xad) return `'\\u${c.toString(16).padStart(4, '0')}'`;
  return `'${String.fromCharCode(c)}'`;
}

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;

/** The error json.Unmarshal reports for malformed input, or null when the text is valid JSON. */
export function goJsonSyntaxError(text: string): string | null {
  const data = Buffer.from(text, 'utf8');
  const stack: P[] = [];
  let step = S.BeginValue;
  let err: string | null = null;
  const fail = (c: number, ctx: string) => {
    err = `invalid character ${quoteChar(c)} ${ctx}`;
    return false;
  };
  const literal = (c: number, want: number, next: S, ctx: string) => (c === want ? ((step = next), true) : fail(c, ctx));
  const pop = () => {
    stack.pop();
    step = stack.length === 0 ? S.EndTop : S.EndValue;
  };
  const push = (c: number, p: P, next: S) => {
    stack.push(p);
    step = next;
    return stack.length <= 10000 ? true : fail(c, 'exceeded max depth');
  };
  const endValue = (c: number): boolean => {
    if (stack.length === 0) {
      step = S.EndTop;
      return isSpace(c) ? true : fail(c, 'after top-level value');
    }
    if (isSpace(c)) {
      step = S.EndValue;
      return true;
    }
    switch (stack[stack.length - 1]) {
      case P.ObjectKey:
        if (c === 0x3a) {
          stack[stack.length - 1] = P.ObjectValue;
          step = S.BeginValue;
          return true;
        }
        return fail(c, 'after object key');
      case P.ObjectValue:
        if (c === 0x2c) {
          stack[stack.length - 1] = P.ObjectKey;
          step = S.BeginString;
          return true;
        }
        if (c === 0x7d) return pop(), true;
        return fail(c, 'after object key:value pair');
      default:
        if (c === 0x2c) return (step = S.BeginValue), true;
        if (c === 0x5d) return pop(), true;
        return fail(c, 'after array element');
    }
  };
  const beginValue = (c: number): boolean => {
    if (isSpace(c)) return true;
    switch (c) {
      case 0x7b: return push(c, P.ObjectKey, S.BeginStringOrEmpty);
      case 0x5b: return push(c, P.ArrayValue, S.BeginValueOrEmpty);
      case 0x22: return (step = S.InString), true;
      case 0x2d: return (step = S.Neg), true;
      case 0x30: return (step = S.Zero), true;
      case 0x74: return (step = S.T), true;
      case 0x66: return (step = S.F), true;
      case 0x6e: return (step = S.N), true;
    }
    if (c >= 0x31 && c <= 0x39) return (step = S.One), true;
    return fail(c, 'looking for beginning of value');
  };
  const zero = (c: number): boolean => {
    if (c === 0x2e) return (step = S.Dot), true;
    if (c === 0x65 || c === 0x45) return (step = S.E), true;
    return endValue(c);
  };
  const beginString = (c: number): boolean => {
    if (isSpace(c)) return true;
    if (c === 0x22) return (step = S.InString), true;
    return fail(c, 'looking for beginning of object key string');
  };
  const eSign = (c: number): boolean => (isDigit(c) ? ((step = S.E0), true) : fail(c, 'in exponent of numeric literal'));
  const stepOf = (c: number): boolean => {
    switch (step) {
      case S.BeginValue: return beginValue(c);
      case S.BeginValueOrEmpty:
        if (isSpace(c)) return true;
        return c === 0x5d ? endValue(c) : beginValue(c);
      case S.BeginStringOrEmpty:
        if (isSpace(c)) return true;
        if (c === 0x7d) {
          stack[stack.length - 1] = P.ObjectValue;
          return endValue(c);
        }
        return beginString(c);
      case S.BeginString:
        return beginString(c);
      case S.EndValue: return endValue(c);
      case S.EndTop: return isSpace(c) ? true : fail(c, 'after top-level value');
      case S.InString:
        if (c === 0x22) return (step = S.EndValue), true;
        if (c === 0x5c) return (step = S.InStringEsc), true;
        return c < 0x20 ? fail(c, 'in string literal') : true;
      case S.InStringEsc:
        if ('bfnrt\\/"'.includes(String.fromCharCode(c))) return (step = S.InString), true;
        if (c === 0x75) return (step = S.EscU), true;
        return fail(c, 'in string escape code');
      case S.EscU: return isHex(c) ? ((step = S.EscU1), true) : fail(c, 'in \\u hexadecimal character escape');
      case S.EscU1: return isHex(c) ? ((step = S.EscU12), true) : fail(c, 'in \\u hexadecimal character escape');
      case S.EscU12: return isHex(c) ? ((step = S.EscU123), true) : fail(c, 'in \\u hexadecimal character escape');
      case S.EscU123: return isHex(c) ? ((step = S.InString), true) : fail(c, 'in \\u hexadecimal character escape');
      case S.Neg:
        if (c === 0x30) return (step = S.Zero), true;
        if (c >= 0x31 && c <= 0x39) return (step = S.One), true;
        return fail(c, 'in numeric literal');
      case S.One: return isDigit(c) ? true : zero(c);
      case S.Zero: return zero(c);
      case S.Dot: return isDigit(c) ? ((step = S.Dot0), true) : fail(c, 'after decimal point in numeric literal');
      case S.Dot0:
        if (isDigit(c)) return true;
        if (c === 0x65 || c === 0x45) return (step = S.E), true;
        return endValue(c);
      case S.E:
        if (c === 0x2b || c === 0x2d) return (step = S.ESign), true;
        return eSign(c);
      case S.ESign: return eSign(c);
      case S.E0: return isDigit(c) ? true : endValue(c);
      case S.T: return literal(c, 0x72, S.Tr, "in literal true (expecting 'r')");
      case S.Tr: return literal(c, 0x75, S.Tru, "in literal true (expecting 'u')");
      case S.Tru: return literal(c, 0x65, S.EndValue, "in literal true (expecting 'e')");
      case S.F: return literal(c, 0x61, S.Fa, "in literal false (expecting 'a')");
      case S.Fa: return literal(c, 0x6c, S.Fal, "in literal false (expecting 'l')");
      case S.Fal: return literal(c, 0x73, S.Fals, "in literal false (expecting 's')");
      case S.Fals: return literal(c, 0x65, S.EndValue, "in literal false (expecting 'e')");
      case S.N: return literal(c, 0x75, S.Nu, "in literal null (expecting 'u')");
      case S.Nu: return literal(c, 0x6c, S.Nul, "in literal null (expecting 'l')");
      case S.Nul: return literal(c, 0x6c, S.EndValue, "in literal null (expecting 'l')");
    }
    return false;
  };
  for (let i = 0; i < data.length; i++) if (!stepOf(data[i]!)) return err;
  // eof: a trailing space completes a number or literal at the top level.
  if ((step as S) !== S.EndTop) {
    stepOf(0x20);
    if ((step as S) !== S.EndTop) return err ?? 'unexpected end of JSON input';
  }
  return null;
}

/** The JSON kind word of an UnmarshalTypeError ("array", "object", "string", "number", "bool"). */
function goKindName(v: Json): string {
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'object': return 'object';
    case 'string': return 'string';
    case 'boolean': return 'bool';
    default: return 'number';
  }
}

/** json.Unmarshal into `goType`: syntax errors first, then the type error for a wrong top-level kind. */
function decodeBody(body: string, want: 'object' | 'array', goType: string): Json {
  const syntax = goJsonSyntaxError(body);
  if (syntax !== null) throw newBadRequest(syntax);
  const v = JSON.parse(body);
  if (v === null) return null;
  const kind = goKindName(v);
  if (kind !== want) throw newBadRequest(`json: cannot unmarshal ${kind} into Go value of type ${goType}`);
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// JSON patch (evanphx/json-patch v4, as the apiserver vendors it). Its quirks are kept: replace on a missing
// object key adds it, negative array indexes count from the end, copy/move of a missing key yields null. Any
// failure while applying is a bare 422.

class OpError extends Error {}

const isMap = (v: Json): v is JsonMap => v !== null && typeof v === 'object' && !Array.isArray(v);

/** strconv.Atoi. */
function atoi(s: string): number | undefined {
  return /^[+-]?\d+$/.test(s) && Math.abs(Number(s)) <= Number.MAX_SAFE_INTEGER ? Number(s) : undefined;
}

interface Container {
  get(key: string): Json | undefined; // undefined: an index error
  set(key: string, v: Json): void;
  add(key: string, v: Json): void;
  remove(key: string): void;
}

function containerOf(v: Json): Container | null {
  if (isMap(v)) {
    return {
      get: (k) => (Object.hasOwn(v, k) ? v[k] : null),
      set: (k, x) => void (v[k] = x),
      add: (k, x) => void (v[k] = x),
      remove: (k) => {
        if (!Object.hasOwn(v, k)) throw new OpError(`Unable to remove nonexistent key: ${k}`);
        delete v[k];
      },
    };
  }
  if (Array.isArray(v)) {
    const idx = (k: string, len: number): number => {
      let i = atoi(k);
      if (i === undefined) throw new OpError(`bad index ${k}`);
      if (i < 0) {
        if (i < -len) throw new OpError(`Unable to access invalid index: ${i}`);
        i += len;
      }
      return i;
    };
    return {
      get: (k) => {
        const i = idx(k, v.length);
        if (i >= v.length) throw new OpError(`Unable to access invalid index: ${i}`);
        return v[i];
      },
      set: (k, x) => void (v[idx(k, v.length)] = x),
      add: (k, x) => {
        if (k === '-') return void v.push(x);
        const i = atoi(k);
        if (i === undefined || i > v.length) throw new OpError(`Unable to access invalid index: ${k}`);
        v.splice(idx(k, v.length + 1), 0, x);
      },
      remove: (k) => {
        const i = atoi(k);
        if (i === undefined || i >= v.length) throw new OpError(`Unable to access invalid index: ${k}`);
        v.splice(idx(k, v.length), 1);
      },
    };
  }
  return null;
}

/** findObject: the container holding the last path segment, and that segment decoded. */
function findObject(doc: Json, path: Json): [Container, string] {
  if (typeof path !== 'string') throw new OpError('missing path');
  const split = path.split('/');
  if (split.length < 2) throw new OpError('doc is missing path');
  let cur = doc;
  for (const part of split.slice(1, -1)) {
    const c = containerOf(cur);
    const next = c?.get(jsonpatch.unescapePathComponent(part));
    if (next === null || next === undefined || containerOf(next) === null) throw new OpError('doc is missing path');
    cur = next;
  }
  return [containerOf(cur)!, jsonpatch.unescapePathComponent(split[split.length - 1]!)];
}

function applyJsonPatch(doc: JsonMap, body: string): Json {
  const ops = decodeBody(body, 'array', 'jsonpatch.Patch');
  if (ops === null) return doc;
  for (const op of ops) {
    if (!isMap(op) && op !== null) throw newBadRequest(`json: cannot unmarshal ${goKindName(op)} into Go value of type jsonpatch.Operation`);
  }
  if (ops.length > 10000) {
    throw new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
      message: `Request entity too large: The allowed maximum operations in a JSON patch is 10000, got ${ops.length}`,
      reason: 'RequestEntityTooLarge', code: 413 });
  }
  let root: Json = doc;
  try {
    for (const op of ops as (JsonMap | null)[]) root = applyOp(root, op ?? {});
  } catch (e) {
    if (e instanceof OpError) throw genericInvalid();
    throw e;
  }
  return root;
}

function applyOp(root: Json, op: JsonMap): Json {
  const value = Object.hasOwn(op, 'value') ? op.value : null;
  switch (op.op) {
    case 'add': {
      const [c, key] = findObject(root, op.path);
      c.add(key, value);
      return root;
    }
    case 'remove': {
      const [c, key] = findObject(root, op.path);
      c.remove(key);
      return root;
    }
    case 'replace': {
      if (op.path === '') {
        if (value === null || typeof value !== 'object') throw new OpError('replace operation value must be object or array');
        return value;
      }
      const [c, key] = findObject(root, op.path);
      if (c.get(key) === undefined) throw new OpError('doc is missing key');
      c.set(key, value);
      return root;
    }
    case 'move': {
      const [from, fromKey] = findObject(root, op.from);
      const v = from.get(fromKey);
      from.remove(fromKey);
      const [to, key] = findObject(root, op.path);
      to.add(key, v ?? null);
      return root;
    }
    case 'copy': {
      const [from, fromKey] = findObject(root, op.from);
      const v = from.get(fromKey);
      const [to, key] = findObject(root, op.path);
      to.add(key, jsonpatch.deepClone(v ?? null));
      return root;
    }
    case 'test': {
      if (op.path === '') {
        if (!jsonpatch._areEquals(root, value)) throw new OpError('test failed');
        return root;
      }
      const [c, key] = findObject(root, op.path);
      const v = c.get(key) ?? null;
      if (!jsonpatch._areEquals(v, value)) throw new OpError('test failed');
      return root;
    }
  }
  throw new OpError(`Unexpected kind: ${typeof op.op === 'string' ? op.op : 'unknown'}`);
}

// ---------------------------------------------------------------------------------------------------------------
// JSON merge patch (evanphx MergePatch). A patch that is not an object replaces the document (arrays) or is
// rejected as "Invalid JSON Patch".

function applyMergePatch(doc: JsonMap, body: string): Json {
  if (goJsonSyntaxError(body) !== null) throw newBadRequest('Invalid JSON Patch');
  const patch = JSON.parse(body);
  if (patch === null || (typeof patch !== 'object')) throw newBadRequest('Invalid JSON Patch');
  if (Array.isArray(patch)) return pruneNulls(patch);
  mergeDocs(doc, patch);
  return doc;
}

function mergeDocs(doc: JsonMap, patch: JsonMap): void {
  for (const k of Object.keys(patch)) {
    const v = patch[k];
    if (v === null) {
      delete doc[k];
    } else if (!Object.hasOwn(doc, k) || doc[k] === null) {
      doc[k] = pruneNulls(v);
    } else {
      doc[k] = mergeValue(doc[k], v);
    }
  }
}

function mergeValue(cur: Json, patch: Json): Json {
  if (!isMap(cur)) return pruneNulls(patch);
  if (!isMap(patch)) return patch;
  mergeDocs(cur, patch);
  return cur;
}

function pruneNulls(v: Json): Json {
  if (isMap(v)) {
    for (const k of Object.keys(v)) {
      if (v[k] === null) delete v[k];
      else pruneNulls(v[k]);
    }
  } else if (Array.isArray(v)) {
    for (const x of v) if (x !== null) pruneNulls(x);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch metadata: patchStrategy;patchMergeKey;element-or-field type, from the k8s.io/api 1.34
// struct tags (generated by walking the types with reflection). Fields not listed have no strategy: maps merge,
// lists are replaced. Kinds not listed only carry ObjectMeta's tagged fields (M).

const T: Record<string, Record<string, string>> = {
  CSINode: { metadata: ';;ObjectMeta', spec: ';;CSINodeSpec' },
  CSINodeSpec: { drivers: 'merge;name;' },
  ComponentStatus: { conditions: 'merge;type;', metadata: ';;ObjectMeta' },
  Container: { env: 'merge;name;', ports: 'merge;containerPort;', volumeDevices: 'merge;devicePath;', volumeMounts: 'merge;mountPath;' },
  ContainerStatus: { allocatedResourcesStatus: 'merge;name;', volumeMounts: 'merge;mountPath;' },
  CronJob: { metadata: ';;ObjectMeta', spec: ';;CronJobSpec' },
  CronJobSpec: { jobTemplate: ';;JobTemplateSpec' },
  DaemonSet: { metadata: ';;ObjectMeta', spec: ';;DaemonSetSpec', status: ';;DaemonSetStatus' },
  DaemonSetSpec: { template: ';;PodTemplateSpec' },
  DaemonSetStatus: { conditions: 'merge;type;' },
  Deployment: { metadata: ';;ObjectMeta', spec: ';;DeploymentSpec', status: ';;DeploymentStatus' },
  DeploymentSpec: { strategy: 'retainKeys;;', template: ';;PodTemplateSpec' },
  DeploymentStatus: { conditions: 'merge;type;' },
  EphemeralContainer: { env: 'merge;name;', ports: 'merge;containerPort;', volumeDevices: 'merge;devicePath;', volumeMounts: 'merge;mountPath;' },
  EphemeralVolumeSource: { volumeClaimTemplate: ';;M' },
  FlowSchema: { metadata: ';;ObjectMeta', status: ';;FlowSchemaStatus' },
  FlowSchemaStatus: { conditions: 'merge;type;' },
  Job: { metadata: ';;ObjectMeta', spec: ';;JobSpec', status: ';;JobStatus' },
  JobSpec: { template: ';;PodTemplateSpec' },
  JobStatus: { conditions: 'merge;type;' },
  JobTemplateSpec: { metadata: ';;ObjectMeta', spec: ';;JobSpec' },
  M: { metadata: ';;ObjectMeta' },
  MutatingAdmissionPolicy: { metadata: ';;ObjectMeta', spec: ';;MutatingAdmissionPolicySpec' },
  MutatingAdmissionPolicySpec: { matchConditions: 'merge;name;' },
  MutatingWebhook: { matchConditions: 'merge;name;' },
  MutatingWebhookConfiguration: { metadata: ';;ObjectMeta', webhooks: 'merge;name;MutatingWebhook' },
  Namespace: { metadata: ';;ObjectMeta', status: ';;NamespaceStatus' },
  NamespaceStatus: { conditions: 'merge;type;' },
  Node: { metadata: ';;ObjectMeta', spec: ';;NodeSpec', status: ';;NodeStatus' },
  NodeSpec: { podCIDRs: 'merge;;' },
  NodeStatus: { addresses: 'merge;type;', conditions: 'merge;type;' },
  ObjectMeta: { finalizers: 'merge;;', ownerReferences: 'merge;uid;' },
  PersistentVolumeClaim: { metadata: ';;ObjectMeta', status: ';;PersistentVolumeClaimStatus' },
  PersistentVolumeClaimStatus: { conditions: 'merge;type;' },
  Pod: { metadata: ';;ObjectMeta', spec: ';;PodSpec', status: ';;PodStatus' },
  PodCertificateRequest: { metadata: ';;ObjectMeta', status: ';;PodCertificateRequestStatus' },
  PodCertificateRequestStatus: { conditions: 'merge;type;' },
  PodDisruptionBudget: { metadata: ';;ObjectMeta', spec: ';;PodDisruptionBudgetSpec', status: ';;PodDisruptionBudgetStatus' },
  PodDisruptionBudgetSpec: { selector: 'replace;;' },
  PodDisruptionBudgetStatus: { conditions: 'merge;type;' },
  PodSpec: {
    containers: 'merge;name;Container', ephemeralContainers: 'merge;name;EphemeralContainer', hostAliases: 'merge;ip;',
    imagePullSecrets: 'merge;name;', initContainers: 'merge;name;Container', resourceClaims: 'merge,retainKeys;name;',
    schedulingGates: 'merge;name;', topologySpreadConstraints: 'merge;topologyKey;', volumes: 'merge,retainKeys;name;Volume',
  },
  PodStatus: {
    conditions: 'merge;type;', containerStatuses: ';;ContainerStatus', ephemeralContainerStatuses: ';;ContainerStatus',
    hostIPs: 'merge;ip;', initContainerStatuses: ';;ContainerStatus', podIPs: 'merge;ip;', resourceClaimStatuses: 'merge,retainKeys;name;',
  },
  PodTemplate: { metadata: ';;ObjectMeta', template: ';;PodTemplateSpec' },
  PodTemplateSpec: { metadata: ';;ObjectMeta', spec: ';;PodSpec' },
  PriorityLevelConfiguration: { metadata: ';;ObjectMeta', status: ';;PriorityLevelConfigurationStatus' },
  PriorityLevelConfigurationStatus: { conditions: 'merge;type;' },
  ReplicaSet: { metadata: ';;ObjectMeta', spec: ';;ReplicaSetSpec', status: ';;ReplicaSetStatus' },
  ReplicaSetSpec: { template: ';;PodTemplateSpec' },
  ReplicaSetStatus: { conditions: 'merge;type;' },
  ReplicationController: { metadata: ';;ObjectMeta', spec: ';;ReplicationControllerSpec', status: ';;ReplicationControllerStatus' },
  ReplicationControllerSpec: { template: ';;PodTemplateSpec' },
  ReplicationControllerStatus: { conditions: 'merge;type;' },
  ResourceClaim: { metadata: ';;ObjectMeta', status: ';;ResourceClaimStatus' },
  ResourceClaimStatus: { reservedFor: 'merge;uid;' },
  ResourceClaimTemplate: { metadata: ';;ObjectMeta', spec: ';;M' },
  Service: { metadata: ';;ObjectMeta', spec: ';;ServiceSpec', status: ';;ServiceStatus' },
  ServiceAccount: { metadata: ';;ObjectMeta', secrets: 'merge;name;' },
  ServiceCIDR: { metadata: ';;ObjectMeta', status: ';;ServiceCIDRStatus' },
  ServiceCIDRStatus: { conditions: 'merge;type;' },
  ServiceSpec: { ports: 'merge;port;' },
  ServiceStatus: { conditions: 'merge;type;' },
  StatefulSet: { metadata: ';;ObjectMeta', spec: ';;StatefulSetSpec', status: ';;StatefulSetStatus' },
  StatefulSetSpec: { template: ';;PodTemplateSpec', volumeClaimTemplates: ';;PersistentVolumeClaim' },
  StatefulSetStatus: { conditions: 'merge;type;' },
  StorageVersionMigration: { metadata: ';;ObjectMeta', status: ';;StorageVersionMigrationStatus' },
  StorageVersionMigrationStatus: { conditions: 'merge;type;' },
  ValidatingAdmissionPolicy: { metadata: ';;ObjectMeta', spec: ';;ValidatingAdmissionPolicySpec' },
  ValidatingAdmissionPolicySpec: { matchConditions: 'merge;name;', variables: 'merge;name;' },
  ValidatingWebhook: { matchConditions: 'merge;name;' },
  ValidatingWebhookConfiguration: { metadata: ';;ObjectMeta', webhooks: 'merge;name;ValidatingWebhook' },
  Volume: { ephemeral: ';;EphemeralVolumeSource' },
};

/** group/Kind -> root type; anything else built in is M. */
const KINDS: Record<string, string> = {
  '/ComponentStatus': 'ComponentStatus',
  '/Namespace': 'Namespace',
  '/Node': 'Node',
  '/PersistentVolumeClaim': 'PersistentVolumeClaim',
  '/Pod': 'Pod',
  '/PodTemplate': 'PodTemplate',
  '/ReplicationController': 'ReplicationController',
  '/Service': 'Service',
  '/ServiceAccount': 'ServiceAccount',
  'admissionregistration.k8s.io/MutatingAdmissionPolicy': 'MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': 'MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy': 'ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': 'ValidatingWebhookConfiguration',
  'apps/DaemonSet': 'DaemonSet',
  'apps/Deployment': 'Deployment',
  'apps/ReplicaSet': 'ReplicaSet',
  'apps/StatefulSet': 'StatefulSet',
  'batch/CronJob': 'CronJob',
  'batch/Job': 'Job',
  'certificates.k8s.io/PodCertificateRequest': 'PodCertificateRequest',
  'flowcontrol.apiserver.k8s.io/FlowSchema': 'FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration': 'PriorityLevelConfiguration',
  'networking.k8s.io/ServiceCIDR': 'ServiceCIDR',
  'policy/PodDisruptionBudget': 'PodDisruptionBudget',
  'resource.k8s.io/ResourceClaim': 'ResourceClaim',
  'resource.k8s.io/ResourceClaimTemplate': 'ResourceClaimTemplate',
  'storage.k8s.io/CSINode': 'CSINode',
  'storagemigration.k8s.io/StorageVersionMigration': 'StorageVersionMigration',
};

interface FieldMeta {
  strategies: string[];
  mergeKey: string;
  /** The struct type of the field (or of its list elements), undefined when it carries no tags. */
  ref: string | undefined;
}

const NO_META: FieldMeta = { strategies: [''], mergeKey: '', ref: undefined };

function lookup(schema: string | undefined, key: string): FieldMeta {
  const spec = schema === undefined ? undefined : T[schema]?.[key];
  if (spec === undefined) return NO_META;
  const [strategy, mergeKey, ref] = spec.split(';') as [string, string, string];
  return { strategies: strategy.split(','), mergeKey, ref: ref === '' ? undefined : ref };
}

/** extractRetainKeysPatchStrategy: the strategy besides retainKeys. */
function strategyOf(m: FieldMeta): string {
  const s = m.strategies;
  if (s.length === 1) return s[0] === 'retainKeys' ? '' : s[0]!;
  if (s[0] === 'retainKeys') return s[1]!;
  return s[0]!;
}

// ---------------------------------------------------------------------------------------------------------------
// Go's fmt %v, for the error texts strategicpatch builds with it

/** fmt's %v of a float64: shortest digits, exponent form below 1e-4 and from 1e21 on, two-digit exponents. */
export function goFloat(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN';
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e21)) {
    const [mant, exp] = n.toExponential().split('e') as [string, string];
    const e = Number(exp);
    return `${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  return String(n);
}

function goV(v: Json): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goV).join(' ')}]`;
  if (typeof v === 'object') return `map[${Object.keys(v).sort().map((k) => `${k}:${goV(v[k])}`).join(' ')}]`;
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v);
  return String(v);
}

/** reflect.TypeOf(v).String() for decoded JSON (integers decode as int64, as the apiserver preserves them). */
function goTypeName(v: Json): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  switch (typeof v) {
    case 'object': return 'map[string]interface {}';
    case 'string': return 'string';
    case 'boolean': return 'bool';
    default: return Number.isInteger(v) ? 'int64' : 'float64';
  }
}

/** fmt's %s of an interface value. */
function goS(v: Json): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '%!s(<nil>)';
  if (typeof v === 'object') return goV(v);
  return `%!s(${goTypeName(v)}=${goV(v)})`;
}

/** Sentinel errors interpretStrategicMergePatchError maps to 400 or 422; everything else is a plain 500. */
class SmpError extends Error {
  constructor(message: string, readonly kind: 'bad' | 'invalid' | 'internal' = 'internal') {
    super(message);
  }
}

const ERR_PRIMITIVE_LIST = () => new SmpError('invalid patch format of primitive list', 'bad');
const ERR_RETAIN_KEYS = () => new SmpError('invalid patch format of retainKeys', 'bad');
const ERR_SET_ELEMENT_ORDER = () => new SmpError('invalid patch format of setElementOrder list', 'bad');
const ERR_NO_LIST_OF_LISTS = () => new SmpError('lists of lists are not supported', 'invalid');
const errNoMergeKey = (m: Json, k: string) => new SmpError(`map: ${goV(m)} does not contain declared merge key: ${k}`);
const errBadArgType = (expected: string, actual: Json) => new SmpError(`expected a ${expected}, but received a ${goTypeName(actual)}`);
const errBadPatchType = (t: Json, m: Json) => new SmpError(`unknown patch type: ${goS(t)} in map: ${goV(m)}`);

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER = '$setElementOrder';
const MAP_T = 'map[string]interface {}';
const SLICE_T = '[]interface {}';

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch (strategicpatch.StrategicMergeMapPatch with MergeParallelList and IgnoreUnmatchedNulls)

function applyStrategicMergePatch(original: JsonMap, body: string, schema: { group: string; kind: string }): Json {
  const patch = decodeBody(body, 'object', MAP_T);
  if (patch === null) return original;
  const root = KINDS[`${schema.group}/${schema.kind}`] ?? 'M';
  let merged: Json;
  try {
    merged = mergeMap(original, patch, root);
  } catch (e) {
    if (!(e instanceof SmpError)) throw e;
    if (e.kind === 'bad') throw newBadRequest(e.message);
    if (e.kind === 'invalid') throw genericInvalid();
    throw internal(e.message);
  }
  // Decoding into the typed object drops the directive keys that strategicpatch leaves in new list items.
  return stripDirectives(merged);
}

function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) {
    for (const x of v) stripDirectives(x);
  } else if (isMap(v)) {
    for (const k of Object.keys(v)) {
      if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(SET_ELEMENT_ORDER + '/') || k.startsWith(DELETE_FROM_PRIMITIVE_LIST + '/')) delete v[k];
      else stripDirectives(v[k]);
    }
  }
  return v;
}

/** reflect.TypeOf equality for decoded JSON values. */
function sameType(a: Json, b: Json): boolean {
  return goTypeName(a) === goTypeName(b);
}

function mergeMap(original: JsonMap | null, patch: JsonMap, schema: string | undefined): JsonMap {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE];
    if (directive === 'replace') {
      delete patch[DIRECTIVE];
      return patch;
    }
    if (directive === 'delete') return {};
    throw errBadPatchType(directive, patch);
  }
  const orig: JsonMap = original ?? {};
  applyRetainKeys(orig, patch);
  mergeSetElementOrder(orig, patch, schema);

  for (let k of Object.keys(patch)) {
    const patchV = patch[k];
    let isDeleteList = false;
    if (k.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      k = extractKey(k, DELETE_FROM_PRIMITIVE_LIST);
      isDeleteList = true;
    }
    if (patchV === null) {
      delete orig[k];
      continue;
    }
    if (!Object.hasOwn(orig, k) || !sameType(orig[k], patchV)) {
      if (!isDeleteList) {
        discardNulls(patchV);
        const [v, keep] = removeDirectives(patchV);
        if (keep) orig[k] = v;
        else delete orig[k];
      }
      continue;
    }
    const meta = lookup(schema, k);
    const strategy = strategyOf(meta);
    if (isMap(patchV)) {
      orig[k] = strategy !== 'replace' ? mergeMap(orig[k], patchV, meta.ref) : patchV;
    } else if (Array.isArray(patchV)) {
      orig[k] = strategy === 'merge' || isDeleteList ? mergeSlice(orig[k], patchV, meta.ref, meta.mergeKey, isDeleteList) : patchV;
    } else {
      const [v, keep] = removeDirectives(patchV);
      if (keep) orig[k] = v;
      else delete orig[k];
    }
  }
  return orig;
}

/** extractKey: "$prefix/field" -> field. */
function extractKey(s: string, prefix: string): string {
  const slash = s.indexOf('/');
  if (slash < 0 || s.slice(0, slash) !== prefix) {
    throw prefix === DELETE_FROM_PRIMITIVE_LIST ? ERR_PRIMITIVE_LIST() : ERR_SET_ELEMENT_ORDER();
  }
  return s.slice(slash + 1);
}

/** applyRetainKeysDirective: drop the original's fields not listed; every patched field must be listed. */
function applyRetainKeys(original: JsonMap, patch: JsonMap): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw ERR_RETAIN_KEYS();
  const keep = new Set(list);
  for (const k of Object.keys(patch)) {
    if (patch[k] === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) continue;
    if (!keep.has(k)) throw ERR_RETAIN_KEYS();
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
}

/** mergePatchIntoOriginal: each $setElementOrder list with its patch list, merged and put in that order. */
function mergeSetElementOrder(original: JsonMap, patch: JsonMap, schema: string | undefined): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[key];
    delete patch[key];
    if (!Array.isArray(order)) throw errBadArgType(SLICE_T, order);
    const field = extractKey(key, SET_ELEMENT_ORDER);
    const foundOriginal = Object.hasOwn(original, field);
    const foundPatch = Object.hasOwn(patch, field);
    const originalList = original[field];
    const patchList = patch[field];
    if (foundOriginal && !Array.isArray(originalList)) throw errBadArgType(SLICE_T, originalList);
    if (foundPatch && !Array.isArray(patchList)) throw errBadArgType(SLICE_T, patchList);
    const originalValue: Json[] = foundOriginal ? originalList : [];
    const patchValue: Json[] = foundPatch ? patchList : [];
    const meta = lookup(schema, field);
    const mergeKey = meta.mergeKey;
    validatePatchWithSetOrderList(patchValue, order, mergeKey);
    let merged: Json[];
    if (foundOriginal && !foundPatch) merged = originalValue;
    else if (!foundOriginal && foundPatch) merged = removeDirectives(patchValue)[0];
    else if (foundOriginal && foundPatch) {
      merged = strategyOf(meta) === 'merge' ? mergeSlice(originalValue, patchValue, meta.ref, mergeKey, false) : patchValue;
    } else continue;
    const [patchItems, serverOnly] = mergeKey === '' ? partitionPrimitives(merged, order) : partitionMaps(merged, order, mergeKey);
    const kind = sliceElementKind(originalValue, patchValue);
    original[field] = normalizeElementOrder(patchItems, serverOnly, order, originalValue, mergeKey, kind);
    delete patch[field];
  }
}

function validatePatchWithSetOrderList(patchList: Json[], setOrderList: Json[], mergeKey: string): void {
  if (setOrderList.length === 0 || patchList.length === 0) return;
  const nonDelete = mergeKey !== '' ? extractToDeleteItems(patchList)[0] : patchList;
  let p = 0;
  let s = 0;
  while (p < nonDelete.length && s < setOrderList.length) {
    if (isMap(nonDelete[p]) && Object.hasOwn(nonDelete[p], DIRECTIVE)) {
      p++;
      continue;
    }
    if (mergeKeyValueEqual(nonDelete[p], setOrderList[s], mergeKey)) p++;
    s++;
  }
  if (p < nonDelete.length && s >= setOrderList.length) {
    throw new SmpError(`The order in patch list:\n${goV(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goV(setOrderList)}\n`);
  }
}

function mergeKeyValueEqual(left: Json, right: Json, mergeKey: string): boolean {
  if (mergeKey === '') return left === right;
  if (!isMap(left)) throw errBadArgType(MAP_T, left);
  if (!isMap(right)) throw errBadArgType(MAP_T, right);
  if (!Object.hasOwn(left, mergeKey)) throw errNoMergeKey(left, mergeKey);
  if (!Object.hasOwn(right, mergeKey)) throw errNoMergeKey(right, mergeKey);
  return left[mergeKey] === right[mergeKey];
}

/** removeDirectives: drops maps carrying $patch (and list items that are such maps). */
function removeDirectives(v: Json): [Json, boolean] {
  if (isMap(v)) {
    if (Object.hasOwn(v, DIRECTIVE)) return [null, false];
    for (const k of Object.keys(v)) {
      const [x, keep] = removeDirectives(v[k]);
      if (keep) v[k] = x;
      else delete v[k];
    }
    return [v, true];
  }
  if (Array.isArray(v)) {
    const out: Json[] = [];
    for (const x of v) {
      const [y, keep] = removeDirectives(x);
      if (keep) out.push(y);
    }
    return [out, true];
  }
  return [v, true];
}

/** discardNullValuesFromPatch. */
function discardNulls(v: Json): void {
  if (isMap(v)) {
    for (const k of Object.keys(v)) {
      if (v[k] === null) delete v[k];
      else discardNulls(v[k]);
    }
  } else if (Array.isArray(v)) {
    for (const x of v) discardNulls(x);
  }
}

type Kind = 'map' | 'scalar';

/** sliceElementType: every element of every list the same type, no lists of lists. */
function sliceElementKind(...lists: Json[][]): Kind {
  let prev: string | undefined;
  for (const l of lists) {
    for (const v of l) {
      const t = goTypeName(v);
      if (prev === undefined) {
        prev = t;
        if (t === SLICE_T) throw ERR_NO_LIST_OF_LISTS();
      } else if (prev !== t) {
        throw new SmpError(`list element types are not identical: ${goV(lists)}`);
      }
    }
  }
  if (prev === undefined) throw new SmpError('no elements in any of the given slices');
  return prev === MAP_T ? 'map' : 'scalar';
}

function mergeSlice(original: Json[], patch: Json[], schema: string | undefined, mergeKey: string, isDeleteList: boolean): Json[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = sliceElementKind(original, patch);
  let merged: Json[];
  if (kind !== 'map') {
    if (isDeleteList) return deleteFromSlice(original, patch);
    merged = deduplicateScalars([...original, ...patch]);
  } else {
    if (mergeKey === '') throw new SmpError('cannot merge lists without merge key for struct');
    [original, patch] = mergeSliceWithSpecialElements(original, patch, mergeKey);
    merged = mergeSliceWithoutSpecialElements(original, patch, mergeKey, schema);
  }
  const [patchItems, serverOnly] = mergeKey === '' ? partitionPrimitives(merged, patch) : partitionMaps(merged, patch, mergeKey);
  return normalizeElementOrder(patchItems, serverOnly, patch, original, mergeKey, kind);
}

/** The "clever" in-place dedup of strategicpatch: a duplicate is overwritten by the last element. */
function deduplicateScalars(s: Json[]): Json[] {
  let length = s.length - 1;
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j <= length; j++) {
      if (s[i] === s[j]) {
        s[j] = s[length];
        s.length = length;
        length--;
        j--;
      }
    }
  }
  return s;
}

function deleteFromSlice(current: Json[], toDelete: Json[]): Json[] {
  const del = new Set(toDelete);
  return current.filter((v) => !del.has(v));
}

function findByKey(list: Json[], key: string, value: Json): number {
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    if (!isMap(v)) throw new SmpError(`value for key ${i} is not a map`);
    if (Object.hasOwn(v, key) && v[key] === value) return i;
  }
  return -1;
}

function mergeSliceWithSpecialElements(original: Json[], patch: Json[], mergeKey: string): [Json[], Json[]] {
  const plain: Json[] = [];
  let replace = false;
  let orig = original;
  for (const v of patch) {
    if (!Object.hasOwn(v, DIRECTIVE)) {
      plain.push(v);
      continue;
    }
    switch (v[DIRECTIVE]) {
      case 'delete': {
        if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
        for (let i = findByKey(orig, mergeKey, v[mergeKey]); i >= 0; i = findByKey(orig, mergeKey, v[mergeKey])) {
          orig = [...orig.slice(0, i), ...orig.slice(i + 1)];
        }
        break;
      }
      case 'replace':
        replace = true;
        break;
      case 'merge':
        throw new SmpError('merging lists cannot yet be specified in the patch');
      default:
        throw errBadPatchType(v[DIRECTIVE], v);
    }
  }
  return replace ? [plain, []] : [orig, plain];
}

function mergeSliceWithoutSpecialElements(original: Json[], patch: Json[], mergeKey: string, schema: string | undefined): Json[] {
  const out = [...original];
  for (const v of patch) {
    if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    const i = findByKey(out, mergeKey, v[mergeKey]);
    if (i >= 0) out[i] = mergeMap(out[i], v, schema);
    else out.push(v);
  }
  return out;
}

function partitionPrimitives(list: Json[], by: Json[]): [Json[], Json[]] {
  const inPatch = new Set(by);
  const patch: Json[] = [];
  const serverOnly: Json[] = [];
  for (const v of list) (inPatch.has(v) ? patch : serverOnly).push(v);
  return [patch, serverOnly];
}

function partitionMaps(list: Json[], by: Json[], mergeKey: string): [Json[], Json[]] {
  const patch: Json[] = [];
  const serverOnly: Json[] = [];
  for (const v of list) {
    if (!isMap(v)) throw errBadArgType(MAP_T, v);
    if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    (findByKey(by, mergeKey, v[mergeKey]) >= 0 ? patch : serverOnly).push(v);
  }
  return [patch, serverOnly];
}

function extractToDeleteItems(l: Json[]): [Json[], Json[]] {
  const keep: Json[] = [];
  const del: Json[] = [];
  for (const v of l) {
    if (!isMap(v)) throw errBadArgType(MAP_T, v);
    (v[DIRECTIVE] === 'delete' ? del : keep).push(v);
  }
  return [keep, del];
}

/** index(): position of the item (by merge key for maps) in l, -1 if absent. */
function indexIn(l: Json[], item: Json, mergeKey: string, kind: Kind): number {
  const key = (x: Json) => (kind === 'map' ? (isMap(x) ? (x[mergeKey] ?? null) : null) : x);
  const want = key(item);
  for (let i = 0; i < l.length; i++) if (key(l[i]) === want) return i;
  return -1;
}

function normalizeElementOrder(patch: Json[], serverOnly: Json[], patchOrder: Json[], serverOrder: Json[], mergeKey: string, kind: Kind): Json[] {
  const p = normalizeSliceOrder(patch, patchOrder, mergeKey, kind);
  const s = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  return mergeSortedSlice(s, p, serverOrder, mergeKey, kind);
}

function normalizeSliceOrder(toSort: Json[], order: Json[], mergeKey: string, kind: Kind): Json[] {
  let del: Json[] = [];
  if (kind === 'map') {
    for (const l of [toSort, order]) {
      for (const v of l) {
        if (!isMap(v)) throw errBadArgType(MAP_T, v);
        if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
      }
    }
    [toSort, del] = extractToDeleteItems(toSort);
  } else {
    toSort = [...toSort];
  }
  // The comparator is not a strict order ("less" when either is unknown), so Go's stable sort is reproduced exactly.
  goSliceStable(toSort, (a, b) => {
    const ia = indexIn(order, a, mergeKey, kind);
    if (ia >= 0) {
      const ib = indexIn(order, b, mergeKey, kind);
      if (ib >= 0) return ia < ib;
    }
    return true;
  });
  return [...toSort, ...del];
}

function mergeSortedSlice(left: Json[], right: Json[], serverOrder: Json[], mergeKey: string, kind: Kind): Json[] {
  const out: Json[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = indexIn(serverOrder, left[i], mergeKey, kind);
      const ri = indexIn(serverOrder, right[j], mergeKey, kind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// sort.SliceStable (insertion sort in blocks of 20, then SymMerge), with the same comparator calls as Go.

function goSliceStable(a: Json[], less: (x: Json, y: Json) => boolean): void {
  const n = a.length;
  const lessAt = (i: number, j: number) => less(a[i], a[j]);
  const swap = (i: number, j: number) => {
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  };
  const insertionSort = (lo: number, hi: number) => {
    for (let i = lo + 1; i < hi; i++) for (let j = i; j > lo && lessAt(j, j - 1); j--) swap(j, j - 1);
  };
  const swapRange = (x: number, y: number, m: number) => {
    for (let i = 0; i < m; i++) swap(x + i, y + i);
  };
  const rotate = (lo: number, m: number, hi: number) => {
    let i = m - lo;
    let j = hi - m;
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j);
        i -= j;
      } else {
        swapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    swapRange(m - i, m, i);
  };
  const symMerge = (lo: number, m: number, hi: number): void => {
    if (m - lo === 1) {
      let i = m;
      let j = hi;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (lessAt(h, lo)) i = h + 1;
        else j = h;
      }
      for (let k = lo; k < i - 1; k++) swap(k, k + 1);
      return;
    }
    if (hi - m === 1) {
      let i = lo;
      let j = m;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (!lessAt(m, h)) i = h + 1;
        else j = h;
      }
      for (let k = m; k > i; k--) swap(k, k - 1);
      return;
    }
    const mid = (lo + hi) >>> 1;
    const nn = mid + m;
    let start: number;
    let r: number;
    if (m > mid) {
      start = nn - hi;
      r = mid;
    } else {
      start = lo;
      r = m;
    }
    const p = nn - 1;
    while (start < r) {
      const c = (start + r) >>> 1;
      if (!lessAt(p - c, c)) start = c + 1;
      else r = c;
    }
    const end = nn - start;
    if (start < m && m < end) rotate(start, m, end);
    if (lo < start && start < mid) symMerge(lo, start, mid);
    if (mid < end && end < hi) symMerge(mid, end, hi);
  };
  let blockSize = 20;
  let lo = 0;
  let hi = blockSize;
  while (hi <= n) {
    insertionSort(lo, hi);
    lo = hi;
    hi += blockSize;
  }
  insertionSort(lo, n);
  while (blockSize < n) {
    lo = 0;
    hi = 2 * blockSize;
    while (hi <= n) {
      symMerge(lo, lo + blockSize, hi);
      lo = hi;
      hi += 2 * blockSize;
    }
    const m = lo + blockSize;
    if (m < n) symMerge(lo, m, n);
    blockSize *= 2;
  }
}
