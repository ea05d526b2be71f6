// Building one request's audit Event the way k8s.io/apiserver's audit package fills it in: request metadata
// (LogRequestMetadata), the impersonated user, request and response objects (with managedFields dropped when the
// policy asks), the response status, and MicroTime timestamps.

import { isIP } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { parse as parseYaml } from 'yaml';
import { isDeepFrozen, type UserInfo } from '../api/user.js';
import type { RequestInfo } from '../request/requestinfo.js';
import type { Request } from '../server/context.js';
import type { Event, EventStatus, EventUser, Level, ObjectReference } from './types.js';

const MAX_USER_AGENT = 1024;
const USER_AGENT_TRUNCATED = '...TRUNCATED';

/** Wall-clock time in epoch microseconds (Date.now() only has milliseconds). */
export function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** metav1.MicroTime's JSON form: "2006-01-02T15:04:05.000000Z" in UTC. */
export function microTime(epochMicros: number): string {
  const sec = Math.floor(epochMicros / 1_000_000);
  // Date's toISOString costs ~6,700 instructions (V8 formats it with snprintf), and a request's two stamps fall
  // in different milliseconds more often than not, but in the same second: the date and time are made once a second.
  if (sec !== lastSec) {
    lastSec = sec;
    lastPrefix = new Date(sec * 1000).toISOString().slice(0, 20); // 2006-01-02T15:04:05.
  }
  return lastPrefix + String(1_000_000 + (epochMicros - sec * 1_000_000)).slice(1) + 'Z';
}
let lastSec = NaN;
let lastPrefix = '';

export function eventUser(u: UserInfo): EventUser {
  const kept = eventUsers.get(u);
  if (kept !== undefined) return kept;
  const out: EventUser = { username: u.username };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length > 0) out.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length > 0) out.extra = u.extra;
  if (isDeepFrozen(u)) {
    // A connection's or a token's user for good: every event of its requests shares one EventUser and its JSON.
    Object.freeze(out);
    eventUsers.set(u, out);
    userJSONs.set(out, JSON.stringify(out));
  }
  return out;
}

const eventUsers = new WeakMap<UserInfo, EventUser>();
const userJSONs = new WeakMap<EventUser, string>();

function userJSON(u: EventUser): string {
  return userJSONs.get(u) ?? JSON.stringify(u);
}

/**
 * utilnet.SourceIPs: every valid address in X-Forwarded-For, then X-Real-Ip unless already listed, then the peer
 * address unless it is the last one already.
 */
export function sourceIPs(req: Request): string[] {
  const ips: string[] = [];
  const xff = header(req, 'x-forwarded-for');
  if (xff) {
    for (const part of xff.split(',')) {
      const ip = normalizeIP(part.trim());
      if (ip) ips.push(ip);
    }
  }
  const real = header(req, 'x-real-ip');
  if (real) {
    const ip = normalizeIP(real.trim());
    if (ip && !ips.includes(ip)) ips.push(ip);
  }
  const remote = normalizeIP(req.socket?.remoteAddress ?? '');
  if (remote && (ips.length === 0 || ips[ips.length - 1] !== remote)) ips.push(remote);
  return ips;
}

/** net.IP.String() for what we meet: IPv4-mapped IPv6 prints as IPv4. */
function normalizeIP(s: string): string | undefined {
  if (s === '') return undefined;
  if (s.startsWith('::ffff:') && isIP(s.slice(7)) === 4) return s.slice(7);
  return isIP(s) !== 0 ? s.toLowerCase() : undefined;
}

function header(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function userAgentOf(req: Request): string | undefined {
  const ua = header(req, 'user-agent');
  if (!ua) return undefined;
  return ua.length > MAX_USER_AGENT ? ua.slice(0, MAX_USER_AGENT) + USER_AGENT_TRUNCATED : ua;
}

export function objectRefOf(info: RequestInfo): ObjectReference | undefined {
  if (!info.isResourceRequest) return undefined;
  // Every key in Go's field order; empty ones stay undefined and are left out of the JSON.
  return {
    resource: info.resource || undefined,
    namespace: info.namespace || undefined,
    name: info.name || undefined,
    uid: undefined,
    apiGroup: info.apiGroup || undefined,
    apiVersion: info.apiVersion || undefined,
    resourceVersion: undefined,
    subresource: info.subresource || undefined,
  };
}

export interface NewEventInput {
  level: Level;
  auditID: string;
  req: Request;
  info: RequestInfo;
  /** Who made the request: the impersonator when the caller impersonated someone. */
  user: UserInfo | undefined;
  impersonatedUser: UserInfo | undefined;
  receivedMicros: number;
}

/** A new event; every key is present (undefined when unset) so serialization keeps the Go field order. */
export function newEvent(i: NewEventInput): Event {
  const received = microTime(i.receivedMicros);
  const ips = sourceIPs(i.req);
  return {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: i.level,
    auditID: i.auditID,
    stage: 'RequestReceived',
    requestURI: i.req.url ?? '/',
    verb: i.info.verb,
    user: i.user ? eventUser(i.user) : {},
    impersonatedUser: i.impersonatedUser ? eventUser(i.impersonatedUser) : undefined,
    sourceIPs: ips.length > 0 ? ips : undefined,
    userAgent: userAgentOf(i.req),
    objectRef: objectRefOf(i.info),
    responseStatus: undefined,
    requestObject: undefined,
    responseObject: undefined,
    requestReceivedTimestamp: received,
    stageTimestamp: received,
    annotations: undefined,
  };
}

/**
 * One JSON line (no newline), byte for byte JSON.stringify(ev). Events hold only JSON data, so this never throws.
 *
 * An audited request writes two to four events that differ only from objectRef on: the head and the caller's
 * identity (requestURI to userAgent, most of a Metadata line) are made JSON once per event and kept on it,
 * valid while the fields they were made from hold the same values (objects by identity: the user objects and the
 * source IPs are never changed in place). A connection's user is made JSON once for all its requests (eventUser).
 */
export function eventJSON(ev: Event): string {
  const e = ev as KeptEvent;
  let k = e[KEPT];
  if (
    k === undefined ||
    k.kind !== ev.kind ||
    k.apiVersion !== ev.apiVersion ||
    k.level !== ev.level ||
    k.auditID !== ev.auditID ||
    k.requestURI !== ev.requestURI ||
    k.verb !== ev.verb ||
    k.user !== ev.user ||
    k.impersonatedUser !== ev.impersonatedUser ||
    k.sourceIPs !== ev.sourceIPs ||
    k.userAgent !== ev.userAgent
  ) {
    k = keptParts(ev);
    e[KEPT] = k;
  }
  // The tail lists its keys in the Go field order; undefined values are left out as JSON.stringify leaves them.
  const tail = JSON.stringify({
    objectRef: ev.objectRef,
    responseStatus: ev.responseStatus,
    requestObject: ev.requestObject,
    responseObject: ev.responseObject,
    requestReceivedTimestamp: ev.requestReceivedTimestamp,
    stageTimestamp: ev.stageTimestamp,
    annotations: ev.annotations,
  });
  // The tail always has the two timestamps, so it is never "{}".
  return k.head + (STAGE_JSON[ev.stage] ?? JSON.stringify(ev.stage)) + k.identity + tail.slice(1);
}

const KEPT = Symbol('event-json');

interface KeptParts {
  kind: string;
  apiVersion: string;
  level: Event['level'];
  auditID: string;
  requestURI: string;
  verb: string;
  user: Event['user'];
  impersonatedUser: Event['impersonatedUser'];
  sourceIPs: Event['sourceIPs'];
  userAgent: Event['userAgent'];
  /** '{"kind":…,"auditID":…,"stage":' */
  head: string;
  /** ',"requestURI":…' up to userAgent, then the comma before the tail's first key. */
  identity: string;
}

interface KeptEvent extends Event {
  [KEPT]?: KeptParts;
}

const STAGE_JSON: Record<string, string> = Object.fromEntries(['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'].map((s) => [s, JSON.stringify(s)]));

function keptParts(ev: Event): KeptParts {
  // Each key as JSON.stringify writes it: in the Event's order, left out when undefined.
  let identity = ',"requestURI":' + quoted(ev.requestURI) + ',"verb":' + quoted(ev.verb) + ',"user":' + userJSON(ev.user);
  if (ev.impersonatedUser !== undefined) identity += ',"impersonatedUser":' + userJSON(ev.impersonatedUser);
  if (ev.sourceIPs !== undefined) identity += ',"sourceIPs":' + quotedList(ev.sourceIPs);
  if (ev.userAgent !== undefined) identity += ',"userAgent":' + quoted(ev.userAgent);
  return {
    kind: ev.kind,
    apiVersion: ev.apiVersion,
    level: ev.level,
    auditID: ev.auditID,
    requestURI: ev.requestURI,
    verb: ev.verb,
    user: ev.user,
    impersonatedUser: ev.impersonatedUser,
    sourceIPs: ev.sourceIPs,
    userAgent: ev.userAgent,
    head: '{"kind":' + quoted(ev.kind) + ',"apiVersion":' + quoted(ev.apiVersion) + ',"level":' + quoted(ev.level) + ',"auditID":' + quoted(ev.auditID) + ',"stage":',
    identity: identity + ',',
  };
}

/**
 * JSON.stringify(s), byte for byte: printable ASCII without a quote or a backslash is written as it is. Each call of
 * JSON.stringify costs ~1,000-2,000 instructions before it looks at a character, and a request's kept parts are
 * eight short strings (the count of scenario 1, test/bench/tools/request-instructions.ts).
 */
function quoted(s: string): string {
  return PLAIN_JSON.test(s) ? '"' + s + '"' : JSON.stringify(s);
}

const PLAIN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function quotedList(a: readonly string[]): string {
  let out = '[';
  for (let i = 0; i < a.length; i++) out += (i === 0 ? '' : ',') + quoted(a[i]!);
  return out + ']';
}

/** The Status fields LogResponseObject keeps. */
export function eventStatus(s: { status?: string; message?: string; reason?: string; details?: unknown; code?: number }): EventStatus {
  const out: EventStatus = { metadata: {} };
  if (s.status) out.status = s.status;
  if (s.message) out.message = s.message;
  if (s.reason) out.reason = s.reason;
  if (s.details !== undefined) out.details = s.details;
  if (s.code) out.code = s.code;
  return out;
}

/** A response that is only a code (what the audit filter's response writer records). */
export function codeStatus(code: number): EventStatus {
  return { metadata: {}, code };
}

// ---------------------------------------------------------------------------------------------------------------
// Bodies.

const JSON_TYPES = new Set(['application/json', 'application/merge-patch+json', 'application/json-patch+json', 'application/strategic-merge-patch+json']);
const YAML_TYPES = new Set(['application/yaml', 'application/apply-patch+yaml']);

function mediaTypeOf(contentType: string | undefined): string {
  if (!contentType) return '';
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** A request body as the object it describes; undefined for bodies that are not JSON or YAML (protobuf, CBOR). */
export function decodeRequestBody(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const mt = mediaTypeOf(contentType);
  try {
    if (JSON_TYPES.has(mt)) return JSON.parse(body.toString('utf8'));
    if (YAML_TYPES.has(mt)) return parseYaml(body.toString('utf8'));
  } catch {
    // A malformed body is refused later with a 400; the event simply has no requestObject.
  }
  return undefined;
}

const PROTOBUF_MAGIC = Buffer.from('k8s\0', 'latin1');

/**
 * The name, namespace, uid and resourceVersion of a protobuf request body, without its schema: the envelope is a
 * runtime.Unknown whose raw (field 2) is the object, whose metadata (field 1, for every built-in kind) is an
 * ObjectMeta (name 1, namespace 3, uid 5, resourceVersion 6). kubectl sends built-in kinds as protobuf, and "who
 * created what" must not depend on the encoding. Anything unexpected yields undefined.
 */
export function protobufObjectMeta(body: Buffer, contentType: string | undefined): Record<string, string> | undefined {
  if (mediaTypeOf(contentType) !== 'application/vnd.kubernetes.protobuf' || body.length < 4 || !body.subarray(0, 4).equals(PROTOBUF_MAGIC)) return undefined;
  try {
    const raw = field(body, 4, body.length, 2);
    if (!raw) return undefined;
    const md = field(body, raw[0], raw[1], 1);
    if (!md) return undefined;
    const out: Record<string, string> = {};
    for (const [n, key] of [[1, 'name'], [3, 'namespace'], [5, 'uid'], [6, 'resourceVersion']] as const) {
      const v = field(body, md[0], md[1], n);
      if (v) out[key] = body.toString('utf8', v[0], v[1]);
    }
    return out;
  } catch {
    return undefined;
  }
}

/** The [start, end) of the first length-delimited field number n in b[start, end). */
function field(b: Buffer, start: number, end: number, n: number): [number, number] | undefined {
  let pos = start;
  while (pos < end) {
    let key: number;
    [key, pos] = varint(b, pos);
    const wire = key & 7;
    const num = key >>> 3;
    if (wire === 2) {
      let len: number;
      [len, pos] = varint(b, pos);
      if (pos + len > end) throw new Error('truncated');
      if (num === n) return [pos, pos + len];
      pos += len;
    } else if (wire === 0) {
      [, pos] = varint(b, pos);
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new Error('unsupported wire type');
    }
  }
  return undefined;
}

function varint(b: Buffer, pos: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= b.length) throw new Error('truncated');
    const byte = b[pos++]!;
    v += (byte & 0x7f) * mul;
    if ((byte & 0x80) === 0) return [v, pos];
    mul *= 128;
  }
  throw new Error('bad varint');
}

/** A response body as JSON; undefined when it is not JSON (protobuf, text) or cannot be decoded. */
export function decodeResponseBody(body: Buffer, contentType: string | undefined, contentEncoding: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const mt = mediaTypeOf(contentType);
  if (mt !== 'application/json') return undefined;
  try {
    const raw = contentEncoding === 'gzip' ? gunzipSync(body) : body;
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A decoded Status body (kind Status) as the event's responseStatus, or undefined when it is not one. */
export function statusFromBody(obj: unknown, code: number): EventStatus | undefined {
  if (typeof obj !== 'object' || obj === null) return undefined;
  const o = obj as Record<string, unknown>;
  if (o.kind !== 'Status') return undefined;
  return eventStatus({
    status: typeof o.status === 'string' ? o.status : undefined,
    message: typeof o.message === 'string' ? o.message : undefined,
    reason: typeof o.reason === 'string' ? o.reason : undefined,
    details: typeof o.details === 'object' && o.details !== null ? o.details : undefined,
    code: typeof o.code === 'number' ? o.code : code,
  });
}

/**
 * copyWithoutManagedFields: objects, lists (items) and Tables (rows[].object) lose metadata.managedFields. The
 * object passed in was decoded for the event alone, so it is changed in place.
 */
export function dropManagedFields(obj: unknown): void {
  if (typeof obj !== 'object' || obj === null) return;
  const o = obj as Record<string, any>;
  dropOne(o);
  if (Array.isArray(o.items)) for (const it of o.items) dropOne(it);
  if (o.kind === 'Table' && Array.isArray(o.rows)) for (const row of o.rows) dropOne(row?.object);
}

function dropOne(o: any): void {
  if (o && typeof o === 'object' && o.metadata && typeof o.metadata === 'object' && 'managedFields' in o.metadata) delete o.metadata.managedFields;
}

/** LogRequestObject: a created or replaced object's own metadata fills what the URL did not say. */
export function fillObjectRef(ref: ObjectReference | undefined, obj: unknown): void {
  if (!ref || typeof obj !== 'object' || obj === null) return;
  const md = (obj as { metadata?: Record<string, unknown> }).metadata;
  if (!md || typeof md !== 'object') return;
  if (!ref.namespace && typeof md.namespace === 'string' && md.namespace) ref.namespace = md.namespace;
  if (!ref.name && typeof md.name === 'string' && md.name) ref.name = md.name;
  if (!ref.uid && typeof md.uid === 'string' && md.uid) ref.uid = md.uid;
  if (!ref.resourceVersion && typeof md.resourceVersion === 'string' && md.resourceVersion) ref.resourceVersion = md.resourceVersion;
}
