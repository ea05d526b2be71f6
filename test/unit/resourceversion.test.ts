import { describe, expect, it } from 'vitest';
import {
  checkContinueResourceVersion,
  decodeContinue,
  encodeContinue,
  expiredContinueError,
  expiredListError,
  parseResourceVersion,
  tooLargeResourceVersionError,
  tooOldResourceVersionError,
} from '../../src/api/resourceversion.js';
import { StatusError, statusJson } from '../../src/api/status.js';

function thrown(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error('expected a StatusError');
}

/** Build a token the way a (possibly hostile) client could: any JSON, base64url. */
function rawToken(json: string): string {
  return Buffer.from(json).toString('base64url');
}

describe('parseResourceVersion', () => {
  it.each([
    ['', 0],
    ['0', 0],
    ['00', 0],
    ['1', 1],
    ['123456789012345', 123456789012345],
    ['9007199254740991', 9007199254740991],
    ['9007199254740992', Infinity],
    ['18446744073709551615', Infinity],
  ])('%j -> %d', (rv, want) => expect(parseResourceVersion(rv)).toBe(want));

  it.each([
    ['abc', 'invalid syntax'],
    ['-1', 'invalid syntax'],
    ['+1', 'invalid syntax'],
    [' 1', 'invalid syntax'],
    ['1.5', 'invalid syntax'],
    ['18446744073709551616', 'value out of range'],
  ])('%j is a 500 without a reason, as a real apiserver answers', (rv, why) => {
    const s = thrown(() => parseResourceVersion(rv)).status;
    const q = JSON.stringify(rv);
    expect(statusJson(s)).toBe(
      `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":${JSON.stringify(`resourceVersion: Invalid value: ${q}: strconv.ParseUint: parsing ${q}: ${why}`)},"code":500}`,
    );
  });
});

describe('continue tokens', () => {
  it('encode exactly as storage.EncodeContinue', () => {
    const t = encodeContinue(42, 'ns/name\u0000');
    expect(Buffer.from(t, 'base64url').toString()).toBe('{"v":"meta.k8s.io/v1","rv":42,"start":"ns/name\\u0000"}');
    expect(t).not.toMatch(/[=+/]/);
  });

  it('round-trip, with extra fields kept', () => {
    expect(decodeContinue(encodeContinue(42, 'ns/name\u0000'))).toEqual({ v: 'meta.k8s.io/v1', rv: 42, start: 'ns/name\u0000' });
    const d = decodeContinue(encodeContinue(7, 'a', { cluster: 'c1', rc: 3 }));
    expect(d).toMatchObject({ rv: 7, start: 'a', cluster: 'c1', rc: 3 });
    expect(decodeContinue(encodeContinue(-1, 'x')).rv).toBe(-1);
  });

  it('accept a root path and a leading slash', () => {
    expect(decodeContinue(rawToken('{"v":"meta.k8s.io/v1","rv":1,"start":"/"}')).start).toBe('');
    expect(decodeContinue(rawToken('{"v":"meta.k8s.io/v1","rv":1,"start":"/key"}')).start).toBe('key');
  });

  it.each([
    ['{"v":"","rv":1,"start":"key"}', 'continue key is not valid: server does not recognize this encoded version '],
    ['{"v":"v1","rv":1,"start":"key"}', 'continue key is not valid: server does not recognize this encoded version v1'],
    ['{"v":"meta.k8s.io/v1","rv":0,"start":"key"}', 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)'],
    ['{"v":"meta.k8s.io/v1","rv":1,"start":""}', 'continue key is not valid: encoded start key empty (version meta.k8s.io/v1)'],
    ['{"v":"meta.k8s.io/v1","rv":1,"start":"../key"}', 'continue key is not valid: ../key'],
    ['{"v":"meta.k8s.io/v1","rv":1,"start":"./key"}', 'continue key is not valid: ./key'],
    ['{"v":"meta.k8s.io/v1","rv":1,"start":"./../key"}', 'continue key is not valid: ./../key'],
    ['{"v":"meta.k8s.io/v1","rv":1,"start":"key/"}', 'continue key is not valid: key/'],
    ['{"v":"meta.k8s.io/v1","rv":"1","start":"key"}', 'continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64'],
    ['x', "continue key is not valid: invalid character 'x' looking for beginning of value"],
    ['', 'continue key is not valid: unexpected end of JSON input'],
  ])('rejects %j with 400 "invalid continue token: ..."', (json, detail) => {
    const s = thrown(() => decodeContinue(rawToken(json))).status;
    expect([s.code, s.reason, s.message]).toEqual([400, 'BadRequest', `invalid continue token: ${detail}`]);
  });

  it('rejects bad base64 where Go reports it', () => {
    expect(thrown(() => decodeContinue('abc=')).status.message).toBe(
      'invalid continue token: continue key is not valid: illegal base64 data at input byte 3',
    );
    expect(thrown(() => decodeContinue('abcde')).status.message).toBe(
      'invalid continue token: continue key is not valid: illegal base64 data at input byte 4',
    );
  });

  it('forbids a resourceVersion with continue except "0"', () => {
    expect(() => checkContinueResourceVersion('')).not.toThrow();
    expect(() => checkContinueResourceVersion('0')).not.toThrow();
    const s = thrown(() => checkContinueResourceVersion('5')).status;
    expect([s.code, s.message]).toEqual([400, 'specifying resource version is not allowed when using continue']);
  });
});

describe('expiry errors', () => {
  it('expired continue without and with an inconsistent token', () => {
    const plain = expiredContinueError().status;
    expect([plain.code, plain.reason, plain.message]).toEqual([
      410,
      'Expired',
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
    ]);
    const inc = expiredContinueError('ns/b\u0000').status;
    expect(inc.message).toBe(
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    );
    const token = (inc.metadata as { continue: string }).continue;
    expect(decodeContinue(token)).toMatchObject({ rv: -1, start: 'ns/b\u0000' });
    expect(statusJson(inc)).toMatch(/^\{"kind":"Status","apiVersion":"v1","metadata":\{"continue":"[A-Za-z0-9_-]+"\},"status":"Failure"/);
  });

  it('too old and list expired', () => {
    expect(statusJson(tooOldResourceVersionError(3, 10).status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 3 (10)","reason":"Expired","code":410}',
    );
    expect(expiredListError().status.message).toBe('The resourceVersion for the provided list is too old.');
  });

  it('too large is a 504 Timeout with the ResourceVersionTooLarge cause', () => {
    expect(statusJson(tooLargeResourceVersionError(100, 42).status)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 100, current: 42","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}',
    );
    expect(tooLargeResourceVersionError('18446744073709551615', 42).status.message).toBe(
      'Timeout: Too large resource version: 18446744073709551615, current: 42',
    );
  });
});
