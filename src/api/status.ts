// metav1.Status errors with the exact codes, reasons, messages and details k8s.io/apimachinery/pkg/api/errors and
// k8s.io/apiserver build, so clients (kubectl, client-go's errors.IsNotFound etc.) cannot tell us from a real
// kube-apiserver.

import type { Attributes } from './user.js';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

export class StatusError extends Error {
  readonly status: Status;
  constructor(status: Status) {
    super(status.message ?? '');
    this.name = 'StatusError';
    this.status = status;
  }
}

export function isStatusError(err: unknown): err is StatusError {
  return err instanceof StatusError;
}

export interface GroupResource {
  group: string;
  resource: string;
}

export interface GroupKind {
  group: string;
  kind: string;
}

/** schema.GroupResource.String(): "pods", "deployments.apps". */
export function groupResourceString(gr: GroupResource): string {
  return gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`;
}

/** schema.GroupKind.String(): "Pod", "Deployment.apps". */
export function groupKindString(gk: GroupKind): string {
  return gk.group === '' ? gk.kind : `${gk.kind}.${gk.group}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Status reasons (metav1.StatusReason*). The empty string is StatusReasonUnknown.

export const StatusReason = {
  Unknown: '',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  NotFound: 'NotFound',
  AlreadyExists: 'AlreadyExists',
  Conflict: 'Conflict',
  Gone: 'Gone',
  Invalid: 'Invalid',
  ServerTimeout: 'ServerTimeout',
  StoreReadError: 'StorageReadError',
  Timeout: 'Timeout',
  TooManyRequests: 'TooManyRequests',
  BadRequest: 'BadRequest',
  MethodNotAllowed: 'MethodNotAllowed',
  NotAcceptable: 'NotAcceptable',
  RequestEntityTooLarge: 'RequestEntityTooLarge',
  UnsupportedMediaType: 'UnsupportedMediaType',
  InternalError: 'InternalError',
  Expired: 'Expired',
  ServiceUnavailable: 'ServiceUnavailable',
} as const;

function failure(code: number, reason: string, message: string, details?: StatusDetails): StatusError {
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  if (details !== undefined) s.details = details;
  return new StatusError(s);
}

/** Details as Go builds them: empty strings are omitted by `omitempty`, so we never store them. */
function resourceDetails(group: string, kind: string, name: string): StatusDetails {
  const d: StatusDetails = {};
  if (name !== '') d.name = name;
  if (group !== '') d.group = group;
  if (kind !== '') d.kind = kind;
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// Field errors (k8s.io/apimachinery/pkg/util/validation/field).

export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueTooFew'
  | 'FieldValueTooShort'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

export interface FieldError {
  type: FieldErrorType;
  field: string;
  badValue?: unknown;
  detail?: string;
}

/** field.ErrorType.String(). */
const FIELD_ERROR_TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueTooFew: 'Too few',
  FieldValueTooShort: 'Too short',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/** Marker for "no bad value to print" (field's omitValue). */
export const OMIT_VALUE: unique symbol = Symbol('omitValue');

export function fieldRequired(field: string, detail = ''): FieldError {
  return { type: 'FieldValueRequired', field, badValue: '', detail };
}
export function fieldNotFound(field: string, value: unknown): FieldError {
  return { type: 'FieldValueNotFound', field, badValue: value, detail: '' };
}
export function fieldInvalid(field: string, value: unknown, detail = ''): FieldError {
  return { type: 'FieldValueInvalid', field, badValue: value, detail };
}
export function fieldTypeInvalid(field: string, value: unknown, detail = ''): FieldError {
  return { type: 'FieldValueTypeInvalid', field, badValue: value, detail };
}
export function fieldForbidden(field: string, detail = ''): FieldError {
  return { type: 'FieldValueForbidden', field, badValue: '', detail };
}
export function fieldDuplicate(field: string, value: unknown): FieldError {
  return { type: 'FieldValueDuplicate', field, badValue: value, detail: '' };
}
export function fieldNotSupported(field: string, value: unknown, valid: readonly string[] = []): FieldError {
  const detail = valid.length > 0 ? 'supported values: ' + valid.map((v) => goQuote(String(v))).join(', ') : '';
  return { type: 'FieldValueNotSupported', field, badValue: value, detail };
}
/** field.TooLong: the value itself is never printed. A negative max gives the generic "value is too long". */
export function fieldTooLong(field: string, _value: unknown, maxLength: number): FieldError {
  const detail =
    maxLength >= 0 ? `may not be more than ${maxLength} ${maxLength === 1 ? 'byte' : 'bytes'}` : 'value is too long';
  return { type: 'FieldValueTooLong', field, badValue: '<value omitted>', detail };
}
export function fieldTooMany(field: string, actualQuantity: number, maxQuantity: number): FieldError {
  const detail =
    maxQuantity >= 0 ? `must have at most ${maxQuantity} ${maxQuantity === 1 ? 'item' : 'items'}` : 'has too many items';
  return { type: 'FieldValueTooMany', field, badValue: actualQuantity < 0 ? OMIT_VALUE : actualQuantity, detail };
}
export function fieldTooFew(field: string, actualQuantity: number, minQuantity: number): FieldError {
  const detail =
    minQuantity >= 0 ? `must have at least ${minQuantity} ${minQuantity === 1 ? 'item' : 'items'}` : 'has too few items';
  return { type: 'FieldValueTooFew', field, badValue: actualQuantity, detail };
}
export function fieldInternalError(field: string, err: unknown): FieldError {
  return { type: 'InternalError', field, badValue: undefined, detail: errorText(err) };
}

/** field.Error.ErrorBody(): the part after "<field>: ". */
export function fieldErrorBody(e: FieldError): string {
  let s: string;
  switch (e.type) {
    case 'FieldValueRequired':
    case 'FieldValueForbidden':
    case 'FieldValueTooLong':
    case 'FieldValueTooShort':
    case 'InternalError':
      s = FIELD_ERROR_TYPE_TEXT[e.type];
      break;
    default:
      s = e.badValue === OMIT_VALUE ? FIELD_ERROR_TYPE_TEXT[e.type] : `${FIELD_ERROR_TYPE_TEXT[e.type]}: ${goValue(e.badValue)}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** field.Error.Error(): `metadata.name: Required value: name or generateName is required`. */
export function formatFieldError(e: FieldError): string {
  return `${e.field}: ${fieldErrorBody(e)}`;
}

/**
 * ErrorList.ToAggregate().Error(): duplicates dropped, one message bare, several as "[a, b]".
 * Returns '' for an empty list.
 */
export function aggregateFieldErrors(errs: readonly FieldError[]): string {
  return aggregateMessages(errs.map(formatFieldError));
}

/** utilerrors.Aggregate.Error() over already-formatted messages. */
export function aggregateMessages(msgs: readonly string[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const m of msgs) {
    if (seen.has(m)) continue;
    seen.add(m);
    out.push(m);
  }
  if (out.length === 0) return '';
  if (out.length === 1) return out[0]!;
  return '[' + out.join(', ') + ']';
}

/** How ErrorBody prints a bad value: %v for numbers and bools, %q for strings, JSON for everything else. */
function goValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string':
      return goQuote(v);
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(v);
    default:
      return goJson(v);
  }
}

/** strconv.Quote for the strings we meet (printable UTF-8 kept, control characters escaped). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).padStart(2, '0');
    else if (c >= 0x80 && c < 0xa0) out += '\\u' + c.toString(16).padStart(4, '0');
    else if (c >= 0xd800 && c <= 0xdfff) out += '\ufffd';
    else out += ch;
  }
  return out + '"';
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

// ---------------------------------------------------------------------------------------------------------------
// Constructors, one per apimachinery NewXxx.

export const OPTIMISTIC_LOCK_ERROR =
  'the object has been modified; please apply your changes to the latest version and try again';

/** errors.NewNotFound: 404 `pods "x" not found`. */
export function newNotFound(gr: GroupResource, name: string): StatusError {
  return failure(404, StatusReason.NotFound, `${groupResourceString(gr)} ${goQuote(name)} not found`,
    resourceDetails(gr.group, gr.resource, name));
}

/** errors.NewAlreadyExists: 409 `pods "x" already exists`. */
export function newAlreadyExists(gr: GroupResource, name: string): StatusError {
  return failure(409, StatusReason.AlreadyExists, `${groupResourceString(gr)} ${goQuote(name)} already exists`,
    resourceDetails(gr.group, gr.resource, name));
}

/** errors.NewGenerateNameConflict: the name generator collided; clients retry after a second. */
export function newGenerateNameConflict(gr: GroupResource, name: string, retryAfterSeconds: number): StatusError {
  const d = resourceDetails(gr.group, gr.resource, name);
  if (retryAfterSeconds) d.retryAfterSeconds = retryAfterSeconds;
  return failure(409, StatusReason.AlreadyExists,
    `${groupResourceString(gr)} ${goQuote(name)} already exists, the server was not able to generate a unique name for the object`, d);
}

/** errors.NewConflict: 409 `Operation cannot be fulfilled on pods "x": <err>`. */
export function newConflict(gr: GroupResource, name: string, err: string): StatusError {
  return failure(409, StatusReason.Conflict,
    `Operation cannot be fulfilled on ${groupResourceString(gr)} ${goQuote(name)}: ${err}`,
    resourceDetails(gr.group, gr.resource, name));
}

/** errors.NewInvalid: 422 `Pod "x" is invalid: <aggregate>`, one cause per field error. */
export function newInvalid(gk: GroupKind, name: string, errs: readonly FieldError[]): StatusError {
  const causes: StatusCause[] = errs.map((e) => {
    const c: StatusCause = { reason: e.type, message: fieldErrorBody(e) };
    if (e.field !== '') c.field = e.field;
    return c;
  });
  const d = resourceDetails(gk.group, gk.kind, name);
  // Go's Causes slice is allocated non-nil but an empty slice is still dropped by omitempty.
  if (causes.length > 0) d.causes = causes;
  const agg = aggregateFieldErrors(errs);
  const head = `${groupKindString(gk)} ${goQuote(name)} is invalid`;
  return failure(422, StatusReason.Invalid, agg === '' ? head : `${head}: ${agg}`, d);
}

/** errors.NewBadRequest: 400 with the message as given. */
export function newBadRequest(message: string): StatusError {
  return failure(400, StatusReason.BadRequest, message);
}

/**
 * 401. errors.NewUnauthorized defaults to "not authorized", but the apiserver's authentication filter always
 * passes "Unauthorized", which is what clients see.
 */
export function newUnauthorized(message = 'Unauthorized'): StatusError {
  return failure(401, StatusReason.Unauthorized, message === '' ? 'not authorized' : message);
}

/** errors.NewForbidden: 403; the message shape depends on whether resource and name are known. */
export function newForbidden(gr: GroupResource, name: string, reason: string): StatusError {
  let message: string;
  if (gr.group === '' && gr.resource === '') message = `forbidden: ${reason}`;
  else if (name === '') message = `${groupResourceString(gr)} is forbidden: ${reason}`;
  else message = `${groupResourceString(gr)} ${goQuote(name)} is forbidden: ${reason}`;
  return failure(403, StatusReason.Forbidden, message, resourceDetails(gr.group, gr.resource, name));
}

const HTML_SANITIZER = /[&<>]/g;
const HTML_ENTITY: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** responsewriters.forbiddenMessage: what the user may not do, in the authorizer's attribute terms. */
export function forbiddenMessage(attrs: Attributes): string {
  const user = goQuote(attrs.user?.username ?? '');
  if (!attrs.isResourceRequest) return `User ${user} cannot ${attrs.verb} path ${goQuote(attrs.path)}`;
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  if (attrs.namespace) {
    return `User ${user} cannot ${attrs.verb} resource ${goQuote(resource)} in API group ${goQuote(attrs.apiGroup)} in the namespace ${goQuote(attrs.namespace)}`;
  }
  return `User ${user} cannot ${attrs.verb} resource ${goQuote(resource)} in API group ${goQuote(attrs.apiGroup)} at the cluster scope`;
}

/**
 * responsewriters.Forbidden: the authorizer said no. The attribute sentence is HTML-sanitized (as the apiserver
 * does, since it may echo user input); the authorizer's reason is appended unsanitized.
 */
export function newForbiddenAttributes(attrs: Attributes, reason: string): StatusError {
  const msg = forbiddenMessage(attrs).replace(HTML_SANITIZER, (c) => HTML_ENTITY[c]!);
  const errMsg = reason === '' ? msg : `${msg}: ${reason}`;
  return newForbidden({ group: attrs.apiGroup, resource: attrs.resource }, attrs.name, errMsg);
}

/**
 * A refusal by an authorizer's decision: newForbiddenAttributes, remembered as an explicit denial when the authorizer
 * said Deny (SubjectAccessReview status.denied) rather than having no opinion (allowed false, denied false: RBAC's
 * answer when no rule matches). kube-apiserver's authorization_attempts_total labels the two apart.
 */
export function newForbiddenDecision(attrs: Attributes, d: { reason: string; denied?: boolean }): StatusError {
  const e = newForbiddenAttributes(attrs, d.reason);
  if (d.denied) explicitDenials.add(e);
  return e;
}

const explicitDenials = new WeakSet<StatusError>();

/** Whether e is a refusal newForbiddenDecision made from an explicit Deny. */
export function isExplicitDenial(e: unknown): boolean {
  return e instanceof StatusError && explicitDenials.has(e);
}

/** errors.NewMethodNotSupported: 405 `<action> is not supported on resources of kind "pods"`. */
export function newMethodNotSupported(gr: GroupResource, action: string): StatusError {
  return failure(405, StatusReason.MethodNotAllowed,
    `${action} is not supported on resources of kind ${goQuote(groupResourceString(gr))}`,
    resourceDetails(gr.group, gr.resource, ''));
}

/** The media types a built-in resource's handlers accept for request bodies and responses (1.34, no CBOR). */
export const SERVED_MEDIA_TYPES: readonly string[] = [
  'application/json',
  'application/yaml',
  'application/vnd.kubernetes.protobuf',
];

/** Patch content types accepted for built-in types (custom resources lack strategic merge). */
export const PATCH_MEDIA_TYPES: readonly string[] = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

/**
 * negotiation.NewNotAcceptableError: 406 when no Accept entry can be served. Pass the accepted media types (or,
 * for callers that already have a sentence, a ready message).
 */
export function newNotAcceptable(acceptedOrMessage: readonly string[] | string = SERVED_MEDIA_TYPES): StatusError {
  const message = typeof acceptedOrMessage === 'string'
    ? acceptedOrMessage
    : `only the following media types are accepted: ${acceptedOrMessage.join(', ')}`;
  return failure(406, StatusReason.NotAcceptable, message);
}

/**
 * negotiation.NewUnsupportedMediaTypeError: 415. The apiserver's message names what it accepts, not what was sent;
 * the content type parameter is kept for logging by callers and for symmetry with the other constructors.
 */
export function newUnsupportedMediaType(_contentType: string, accepted: readonly string[] = SERVED_MEDIA_TYPES): StatusError {
  return failure(415, StatusReason.UnsupportedMediaType,
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`);
}

/** errors.NewGone: 410 Gone (legacy; watch expiry uses Expired). */
export function newGone(message: string): StatusError {
  return failure(410, StatusReason.Gone, message);
}

/** errors.NewResourceExpired: 410 Expired. */
export function newResourceExpired(message: string): StatusError {
  return failure(410, StatusReason.Expired, message);
}

/** errors.NewTooManyRequests: 429 with retryAfterSeconds in details (details always present). */
export function newTooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  const d: StatusDetails = {};
  if (retryAfterSeconds) d.retryAfterSeconds = retryAfterSeconds;
  return failure(429, StatusReason.TooManyRequests, message, d);
}

/** errors.NewTooManyRequestsError: 429 `Too many requests: <message>`, no details. */
export function newTooManyRequestsError(message: string): StatusError {
  return failure(429, StatusReason.TooManyRequests, `Too many requests: ${message}`);
}

/** errors.NewRequestEntityTooLargeError: 413 `Request entity too large: <message>`. */
export function newRequestEntityTooLarge(message: string): StatusError {
  return failure(413, StatusReason.RequestEntityTooLarge, `Request entity too large: ${message}`);
}

/** errors.NewInternalError: 500 `Internal error occurred: <err>` with the error as the single cause. */
export function newInternalError(err: unknown): StatusError {
  const text = errorText(err);
  return failure(500, StatusReason.InternalError, `Internal error occurred: ${text}`, { causes: [{ message: text }] });
}

/** errors.NewServiceUnavailable: 503 with the message as given. */
export function newServiceUnavailable(message: string): StatusError {
  return failure(503, StatusReason.ServiceUnavailable, message);
}

/** errors.NewTimeoutError: 504 `Timeout: <message>`; details are always present (possibly `{}`). */
export function newTimeoutError(message: string, retryAfterSeconds: number): StatusError {
  const d: StatusDetails = {};
  if (retryAfterSeconds) d.retryAfterSeconds = retryAfterSeconds;
  return failure(504, StatusReason.Timeout, `Timeout: ${message}`, d);
}

/** errors.NewServerTimeout: 500 ServerTimeout, "The <op> operation against <gr> could not be completed ...". */
export function newServerTimeout(gr: GroupResource, operation: string, retryAfterSeconds: number): StatusError {
  const d = resourceDetails(gr.group, gr.resource, operation);
  if (retryAfterSeconds) d.retryAfterSeconds = retryAfterSeconds;
  return failure(500, StatusReason.ServerTimeout,
    `The ${operation} operation against ${groupResourceString(gr)} could not be completed at this time, please try again.`, d);
}

/**
 * 502. apimachinery has no BadGateway reason (the constructor set stops at 504), and Go's reverse proxy answers
 * an unreachable backend with a bare 502. We keep the code and leave the reason Unknown (''), which is what
 * client-go's NewGenericServerResponse would report for a 502 anyway. For "member cluster unreachable" the
 * gateway should prefer newServiceUnavailable (what kube-aggregator gives for an unavailable APIService).
 */
export function newBadGateway(message: string): StatusError {
  return failure(502, StatusReason.Unknown, message);
}

/** Anything thrown -> the Status to send: StatusErrors as they are, everything else as a 500 InternalError. */
export function toStatus(err: unknown): Status {
  if (err instanceof StatusError) return err.status;
  return newInternalError(err).status;
}

// ---------------------------------------------------------------------------------------------------------------
// Serialization.

// Go's encoding/json escapes these for HTML safety; the apiserver's JSON serializer keeps that default.
const GO_JSON_ESCAPES = /[<>&\u2028\u2029]/g;
const GO_JSON_ESCAPE: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** Compact JSON text as Go's encoder writes it: the same text with <, >, &, U+2028 and U+2029 escaped. */
export function goEscape(json: string): string {
  return GO_JSON_ESCAPES.test(json) ? json.replace(GO_JSON_ESCAPES, (c) => GO_JSON_ESCAPE[c]!) : json;
}

/** JSON.stringify, then the escapes Go's encoding/json adds (<, >, &, U+2028, U+2029). */
export function goJson(value: unknown): string {
  return goEscape(JSON.stringify(value));
}

/** The Status as compact JSON in metav1.Status field order, no trailing newline (for embedding). */
export function statusJson(s: Status): string {
  const o: Record<string, unknown> = { kind: 'Status', apiVersion: 'v1', metadata: s.metadata ?? {}, status: s.status };
  if (s.message) o.message = s.message;
  if (s.reason) o.reason = s.reason;
  if (s.details !== undefined) o.details = orderedDetails(s.details);
  if (s.code) o.code = s.code;
  return goJson(o);
}

/** The response body exactly as the apiserver writes it: compact JSON and a trailing newline (json.Encoder). */
export function statusBody(s: Status): string {
  return statusJson(s) + '\n';
}

function orderedDetails(d: StatusDetails): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (d.name) o.name = d.name;
  if (d.group) o.group = d.group;
  if (d.kind) o.kind = d.kind;
  if (d.uid) o.uid = d.uid;
  if (d.causes && d.causes.length > 0) {
    o.causes = d.causes.map((c) => {
      const co: Record<string, unknown> = {};
      if (c.reason) co.reason = c.reason;
      if (c.message) co.message = c.message;
      if (c.field) co.field = c.field;
      return co;
    });
  }
  if (d.retryAfterSeconds) o.retryAfterSeconds = d.retryAfterSeconds;
  return o;
}

/**
 * A resource the server does not have in a group/version it serves: go-restful's 404, which kube-apiserver
 * turns into this Status (NewGenericServerResponse with an empty resource: `details` present but empty).
 */
export function newResourceNotFound(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
}
