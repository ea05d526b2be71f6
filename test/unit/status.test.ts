import { describe, expect, it } from 'vitest';
import {
  OPTIMISTIC_LOCK_ERROR,
  StatusError,
  aggregateFieldErrors,
  fieldDuplicate,
  fieldForbidden,
  fieldInternalError,
  fieldInvalid,
  fieldNotSupported,
  fieldRequired,
  fieldTooLong,
  fieldTooMany,
  formatFieldError,
  goJson,
  goQuote,
  newAlreadyExists,
  newBadGateway,
  newBadRequest,
  newConflict,
  newForbidden,
  newForbiddenAttributes,
  newGenerateNameConflict,
  newGone,
  newInternalError,
  newInvalid,
  newMethodNotSupported,
  newNotAcceptable,
  newNotFound,
  newRequestEntityTooLarge,
  newResourceExpired,
  newServerTimeout,
  newServiceUnavailable,
  newTimeoutError,
  newTooManyRequests,
  newTooManyRequestsError,
  newUnauthorized,
  newUnsupportedMediaType,
  statusBody,
  statusJson,
  toStatus,
} from '../../src/api/status.js';
import type { Attributes } from '../../src/api/user.js';
import {
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isValidPathSegmentName,
  nameValidatorFor,
  objectKey,
  nowRfc3339,
  validateObjectMeta,
  validateObjectName,
} from '../../src/api/meta.js';

const pods = { group: '', resource: 'pods' };
const deployments = { group: 'apps', resource: 'deployments' };

describe('resource errors', () => {
  it('NotFound names the qualified resource and puts the resource in details.kind', () => {
    expect(statusBody(newNotFound(pods, 'x').status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \\"x\\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}\n',
    );
    expect(statusJson(newNotFound(deployments, 'web').status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \\"web\\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":"deployments"},"code":404}',
    );
  });

  it('AlreadyExists and Conflict', () => {
    const ae = newAlreadyExists(pods, 'x').status;
    expect([ae.code, ae.reason, ae.message]).toEqual([409, 'AlreadyExists', 'pods "x" already exists']);
    const c = newConflict(deployments, 'web', OPTIMISTIC_LOCK_ERROR).status;
    expect([c.code, c.reason, c.message]).toEqual([
      409,
      'Conflict',
      'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again',
    ]);
    expect(c.details).toEqual({ name: 'web', group: 'apps', kind: 'deployments' });
    const g = newGenerateNameConflict(pods, 'x-abcde', 1).status;
    expect(g.message).toBe('pods "x-abcde" already exists, the server was not able to generate a unique name for the object');
    expect(g.details?.retryAfterSeconds).toBe(1);
  });

  it('MethodNotSupported', () => {
    const s = newMethodNotSupported(pods, 'create').status;
    expect([s.code, s.reason, s.message]).toEqual([405, 'MethodNotAllowed', 'create is not supported on resources of kind "pods"']);
    expect(s.details).toEqual({ kind: 'pods' });
  });

  it('quotes names the way Go %q does', () => {
    expect(newNotFound(pods, 'a"b\\c\n').status.message).toBe('pods "a\\"b\\\\c\\n" not found');
    expect(goQuote('é')).toBe('"é"');
    expect(goQuote('\x01')).toBe('"\\x01"');
  });
});

describe('field errors', () => {
  it('format like field.Error.Error()', () => {
    expect(formatFieldError(fieldRequired('metadata.name', 'name or generateName is required'))).toBe(
      'metadata.name: Required value: name or generateName is required',
    );
    expect(formatFieldError(fieldRequired('metadata.namespace'))).toBe('metadata.namespace: Required value');
    expect(formatFieldError(fieldInvalid('metadata.name', 'Foo', 'bad'))).toBe('metadata.name: Invalid value: "Foo": bad');
    expect(formatFieldError(fieldInvalid('spec.replicas', -1, 'must be greater than or equal to 0'))).toBe(
      'spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    );
    expect(formatFieldError(fieldInvalid('spec.x', true))).toBe('spec.x: Invalid value: true');
    expect(formatFieldError(fieldInvalid('values', ['a', 'b'], 'x'))).toBe('values: Invalid value: ["a","b"]: x');
    expect(formatFieldError(fieldInvalid('spec.x', null))).toBe('spec.x: Invalid value: null');
    expect(formatFieldError(fieldForbidden('metadata.namespace', 'not allowed on this type'))).toBe(
      'metadata.namespace: Forbidden: not allowed on this type',
    );
    expect(formatFieldError(fieldNotSupported('resourceVersionMatch', 'foo', ['Exact', 'NotOlderThan', '']))).toBe(
      'resourceVersionMatch: Unsupported value: "foo": supported values: "Exact", "NotOlderThan", ""',
    );
    expect(formatFieldError(fieldDuplicate('spec.containers[1].name', 'a'))).toBe('spec.containers[1].name: Duplicate value: "a"');
    expect(formatFieldError(fieldTooLong('metadata.annotations', '', 262144))).toBe(
      'metadata.annotations: Too long: may not be more than 262144 bytes',
    );
    expect(formatFieldError(fieldTooLong('x', '', 1))).toBe('x: Too long: may not be more than 1 byte');
    expect(formatFieldError(fieldTooMany('spec.items', 5, 3))).toBe('spec.items: Too many: 5: must have at most 3 items');
    expect(formatFieldError(fieldTooMany('spec.items', -1, 1))).toBe('spec.items: Too many: must have at most 1 item');
    expect(formatFieldError(fieldInternalError('spec', new Error('boom')))).toBe('spec: Internal error: boom');
  });

  it('escape HTML in complex bad values as encoding/json does', () => {
    expect(formatFieldError(fieldInvalid('x', { a: '<b>' }))).toBe('x: Invalid value: {"a":"\\u003cb\\u003e"}');
  });

  it('aggregate like utilerrors: one bare, several bracketed, duplicates dropped', () => {
    expect(aggregateFieldErrors([])).toBe('');
    const a = fieldRequired('a');
    const b = fieldRequired('b');
    expect(aggregateFieldErrors([a])).toBe('a: Required value');
    expect(aggregateFieldErrors([a, b, a])).toBe('[a: Required value, b: Required value]');
    expect(aggregateFieldErrors([a, a])).toBe('a: Required value');
  });
});

describe('Invalid', () => {
  it('carries the Kind, field causes and the aggregated message', () => {
    const err = newInvalid({ group: '', kind: 'Pod' }, 'x', [
      fieldRequired('spec.containers'),
      fieldInvalid('metadata.name', 'X', 'bad name'),
    ]);
    expect(err.status).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Pod "x" is invalid: [spec.containers: Required value, metadata.name: Invalid value: "X": bad name]',
      reason: 'Invalid',
      details: {
        name: 'x',
        kind: 'Pod',
        causes: [
          { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers' },
          { reason: 'FieldValueInvalid', message: 'Invalid value: "X": bad name', field: 'metadata.name' },
        ],
      },
      code: 422,
    });
    expect(statusJson(err.status)).toContain(
      '"details":{"name":"x","kind":"Pod","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}',
    );
  });

  it('with a group and no errors', () => {
    const s = newInvalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', []).status;
    expect(s.message).toBe('ListOptions.meta.k8s.io "" is invalid');
    expect(statusJson(s)).toContain('"details":{"group":"meta.k8s.io","kind":"ListOptions"}');
  });
});

describe('Forbidden', () => {
  const user = { username: 'u', groups: [] };
  const attrs = (over: Partial<Attributes>): Attributes => ({
    user,
    verb: 'get',
    isResourceRequest: true,
    path: '/api/v1/namespaces/ns/pods/x',
    namespace: 'ns',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'pods',
    subresource: '',
    name: 'x',
    ...over,
  });

  it('namespaced, named resource', () => {
    const s = newForbiddenAttributes(attrs({}), '').status;
    expect(s.message).toBe('pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "ns"');
    expect(s.details).toEqual({ name: 'x', kind: 'pods' });
    expect(s.code).toBe(403);
  });

  it('cluster scope, list, subresource, group and reason', () => {
    expect(newForbiddenAttributes(attrs({ namespace: '', name: '', verb: 'list', apiGroup: 'apps', resource: 'deployments' }), '').status.message).toBe(
      'deployments.apps is forbidden: User "u" cannot list resource "deployments" in API group "apps" at the cluster scope',
    );
    expect(newForbiddenAttributes(attrs({ verb: 'create', subresource: 'exec' }), 'RBAC: nope').status.message).toBe(
      'pods "x" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "ns": RBAC: nope',
    );
  });

  it('non-resource paths keep an empty details object', () => {
    const s = newForbiddenAttributes(attrs({ isResourceRequest: false, path: '/foo', resource: '', name: '', namespace: '' }), '').status;
    expect(statusJson(s)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \\"u\\" cannot get path \\"/foo\\"","reason":"Forbidden","details":{},"code":403}',
    );
  });

  it('sanitizes HTML in the attribute sentence only, and Go-escapes it in JSON', () => {
    const s = newForbiddenAttributes(attrs({ name: '<x>', path: '' }), 'a<b').status;
    expect(s.message).toBe('pods "<x>" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "ns": a<b');
    expect(statusJson(s)).toContain('pods \\"\\u003cx\\u003e\\" is forbidden');
    const np = newForbiddenAttributes(attrs({ isResourceRequest: false, path: '/a<b>', resource: '', name: '' }), '').status;
    expect(np.message).toBe('forbidden: User "u" cannot get path "/a&lt;b&gt;"');
  });

  it('generic NewForbidden with a name-less resource', () => {
    expect(newForbidden(pods, '', 'no').status.message).toBe('pods is forbidden: no');
  });
});

describe('other constructors', () => {
  it.each([
    [newBadRequest('Upgrade request required'), 400, 'BadRequest', 'Upgrade request required'],
    [newUnauthorized(), 401, 'Unauthorized', 'Unauthorized'],
    [newUnauthorized(''), 401, 'Unauthorized', 'not authorized'],
    [newGone('gone'), 410, 'Gone', 'gone'],
    [newResourceExpired('too old resource version: 1 (5)'), 410, 'Expired', 'too old resource version: 1 (5)'],
    [newTooManyRequestsError('slow down'), 429, 'TooManyRequests', 'Too many requests: slow down'],
    [newRequestEntityTooLarge('limit is 3145728'), 413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728'],
    [newServiceUnavailable('down'), 503, 'ServiceUnavailable', 'down'],
    [newTimeoutError('request did not complete within the allotted timeout', 0), 504, 'Timeout', 'Timeout: request did not complete within the allotted timeout'],
    [newServerTimeout(pods, 'list', 2), 500, 'ServerTimeout', 'The list operation against pods could not be completed at this time, please try again.'],
    [newNotAcceptable(), 406, 'NotAcceptable', 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf'],
    [
      newUnsupportedMediaType('text/plain'),
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf',
    ],
  ])('%#', (err, code, reason, message) => {
    expect(err).toBeInstanceOf(StatusError);
    expect([err.status.code, err.status.reason, err.status.message]).toEqual([code, reason, message]);
    expect(err.message).toBe(message);
  });

  it('Timeout and TooManyRequests always carry details (empty when no retry)', () => {
    expect(statusJson(newTimeoutError('x', 0).status)).toContain('"reason":"Timeout","details":{},"code":504');
    expect(statusJson(newTooManyRequests('x', 3).status)).toContain('"details":{"retryAfterSeconds":3},"code":429');
  });

  it('InternalError has the error as its only cause', () => {
    const s = newInternalError(new Error('etcd down')).status;
    expect(statusJson(s)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: etcd down","reason":"InternalError","details":{"causes":[{"message":"etcd down"}]},"code":500}',
    );
  });

  it('BadGateway has no reason (apimachinery defines none)', () => {
    const s = newBadGateway('member unreachable').status;
    expect(s.code).toBe(502);
    expect(statusJson(s)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"member unreachable","code":502}',
    );
  });
});

describe('toStatus and JSON', () => {
  it('passes StatusErrors through and wraps anything else as InternalError', () => {
    const nf = newNotFound(pods, 'x');
    expect(toStatus(nf)).toBe(nf.status);
    expect(toStatus(new Error('boom')).message).toBe('Internal error occurred: boom');
    expect(toStatus('str').code).toBe(500);
  });

  it('goJson escapes like encoding/json', () => {
    expect(goJson({ a: '<&>\u2028' })).toBe('{"a":"\\u003c\\u0026\\u003e\\u2028"}');
    expect(goJson('plain')).toBe('"plain"');
  });
});

// Object metadata validation (src/api/meta.ts) feeds newInvalid on create; messages are apimachinery's.
const SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_ERR =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

describe('object meta validation', () => {
  it('name rules', () => {
    expect(isDNS1123Subdomain('a.b-c')).toEqual([]);
    expect(isDNS1123Subdomain('Foo')).toEqual([SUBDOMAIN_ERR]);
    expect(isDNS1123Subdomain('a'.repeat(254))).toEqual(['must be no more than 253 characters']);
    expect(isDNS1123Label('a.b')).toEqual(['must not contain dots']);
    expect(isDNS1123Label('-a')).toEqual([LABEL_ERR]);
    expect(isDNS1035Label('1abc')).toEqual([
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]);
    expect(isValidPathSegmentName('..')).toEqual(["may not be '..'"]);
    expect(isValidPathSegmentName('a/b%c')).toEqual(["may not contain '/'", "may not contain '%'"]);
    expect(validateObjectName('ok-name')).toEqual([]);
    expect(validateObjectName('a.b', nameValidatorFor('', 'namespaces'))).toEqual(['must not contain dots']);
    expect(validateObjectName('system:admin', nameValidatorFor('rbac.authorization.k8s.io', 'clusterroles'))).toEqual([]);
  });

  it('builds the create-time 422 exactly', () => {
    const errs = validateObjectMeta({ namespace: 'ns' }, true);
    expect(newInvalid({ group: '', kind: 'Pod' }, '', errs).status.message).toBe(
      'Pod "" is invalid: metadata.name: Required value: name or generateName is required',
    );
    const bad = validateObjectMeta({ name: 'Bad_Name', labels: { 'a/b/c': 'x', ok: '-bad' } }, true);
    expect(bad.map(formatFieldError)).toEqual([
      `metadata.name: Invalid value: "Bad_Name": ${SUBDOMAIN_ERR}`,
      'metadata.namespace: Required value',
      `metadata.labels: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      `metadata.labels: Invalid value: "-bad": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    ]);
    expect(validateObjectMeta({ name: 'n', namespace: 'x' }, false).map(formatFieldError)).toEqual([
      'metadata.namespace: Forbidden: not allowed on this type',
    ]);
    // generateName may end in '-': the random suffix follows.
    expect(validateObjectMeta({ generateName: 'web-', name: 'web-abcde', namespace: 'ns' }, true)).toEqual([]);
    expect(validateObjectMeta({ name: 'n', namespace: 'ns', annotations: { 'Example.com/Key': 'v' } }, true)).toEqual([]);
    expect(validateObjectMeta({ name: 'n', namespace: 'ns', annotations: { big: 'x'.repeat(256 * 1024) } }, true).map(formatFieldError)).toEqual([
      'metadata.annotations: Too long: may not be more than 262144 bytes',
    ]);
  });

  it('object keys and timestamps', () => {
    expect(objectKey('ns', 'a')).toBe('ns/a');
    expect(objectKey(undefined, 'a')).toBe('a');
    expect(objectKey('', 'a')).toBe('a');
    expect(nowRfc3339()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});
