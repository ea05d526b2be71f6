import { describe, expect, it } from 'vitest';
import { parseListOptions, validateListOptions } from '../../src/api/listoptions.js';
import { StatusError, formatFieldError, statusJson } from '../../src/api/status.js';

const pods = { group: '', version: 'v1', resource: 'pods' };

function parse(q: string, target = pods, config = {}) {
  return parseListOptions(new URLSearchParams(q), target, config);
}

function failure(q: string, target = pods, config = {}) {
  try {
    parse(q, target, config);
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return (e as StatusError).status;
  }
  throw new Error(`expected ${q} to fail`);
}

describe('decoding', () => {
  it('defaults', () => {
    const o = parse('');
    expect(o).toMatchObject({
      labelSelectorRaw: '',
      fieldSelectorRaw: '',
      watch: false,
      allowWatchBookmarks: false,
      resourceVersion: '',
      resourceVersionMatch: '',
      limit: 0,
      continue: '',
      initialEventsDefaulted: false,
    });
    expect(o.timeoutSeconds).toBeUndefined();
    expect(o.sendInitialEvents).toBeUndefined();
    expect(o.labelSelector.empty && o.fieldSelector.empty).toBe(true);
  });

  it('parses everything a reflector sends', () => {
    const o = parse('labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=500&resourceVersion=0&timeoutSeconds=300&allowWatchBookmarks=true');
    expect(o.labelSelector.matches({ app: 'web' })).toBe(true);
    expect(o.fieldSelector.toString()).toBe('spec.nodeName=n1');
    expect([o.limit, o.resourceVersion, o.timeoutSeconds, o.allowWatchBookmarks]).toEqual([500, '0', 300, true]);
  });

  it.each([
    ['watch=true', true],
    ['watch=1', true],
    ['watch=', true],
    ['watch=yes', true],
    ['watch=FALSE', false],
    ['watch=0', false],
  ])('bool %s -> %s (Convert_Slice_string_To_bool)', (q, want) => expect(parse(`${q}&resourceVersion=5`).watch).toBe(want));

  it('uses the first value of repeated parameters', () => {
    expect(parse('limit=5&limit=abc').limit).toBe(5);
  });

  it.each([
    ['timeoutSeconds=0.1s', 'strconv.ParseInt: parsing "0.1s": invalid syntax'],
    ['limit=abc', 'strconv.ParseInt: parsing "abc": invalid syntax'],
    ['limit=', 'strconv.ParseInt: parsing "": invalid syntax'],
    ['limit=99999999999999999999', 'strconv.ParseInt: parsing "99999999999999999999": value out of range'],
    ['labelSelector=x%3Da%20b', "found 'b', expected: ',' or 'end of string'"],
    ['fieldSelector=x', "invalid selector: 'x'; can't understand 'x'"],
    ['fieldSelector=spec.containers%3Dx', 'field label not supported: spec.containers'],
    // Numbers decode before selectors, so the number error wins.
    ['labelSelector=x%3Da%20b&limit=abc', 'strconv.ParseInt: parsing "abc": invalid syntax'],
  ])('%s -> 400 %j', (q, message) => {
    const s = failure(q);
    expect([s.code, s.reason, s.message]).toEqual([400, 'BadRequest', message]);
  });

  it('accepts signed numbers as ParseInt does', () => {
    expect(parse('limit=-1').limit).toBe(-1);
    expect(parse('timeoutSeconds=%2B5').timeoutSeconds).toBe(5);
  });

  it('converts field labels (spec.host -> spec.nodeName)', () => {
    const o = parse('fieldSelector=spec.host%3Dn1');
    expect(o.fieldSelectorRaw).toBe('spec.host=n1');
    expect(o.fieldSelector.toString()).toBe('spec.nodeName=n1');
  });
});

describe('WatchList defaulting (SetListOptionsDefaults)', () => {
  it('turns legacy watches from "" or "0" into sendInitialEvents', () => {
    for (const rv of ['', '0']) {
      const o = parse(`watch=1&resourceVersion=${rv}`);
      expect([o.sendInitialEvents, o.resourceVersionMatch, o.initialEventsDefaulted]).toEqual([true, 'NotOlderThan', true]);
    }
    expect(parse('watch=1&resourceVersion=7').sendInitialEvents).toBeUndefined();
    expect(parse('resourceVersion=0').sendInitialEvents).toBeUndefined();
  });

  it('leaves explicit choices and a disabled gate alone', () => {
    const o = parse('watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan');
    expect([o.sendInitialEvents, o.initialEventsDefaulted]).toEqual([false, false]);
    expect(parse('watch=1', pods, { watchList: false }).sendInitialEvents).toBeUndefined();
  });

  it('the client-go watch-list request is valid', () => {
    const o = parse('watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=');
    expect([o.watch, o.sendInitialEvents, o.resourceVersionMatch, o.allowWatchBookmarks]).toEqual([true, true, 'NotOlderThan', true]);
  });
});

describe('validation (422 ListOptions.meta.k8s.io)', () => {
  it.each([
    ['resourceVersionMatch=Exact', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'],
    [
      'resourceVersionMatch=NotOlderThan&resourceVersion=5&continue=abc',
      'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided',
    ],
    [
      'resourceVersionMatch=foo&resourceVersion=5',
      'resourceVersionMatch: Unsupported value: "foo": supported values: "Exact", "NotOlderThan", ""',
    ],
    ['resourceVersionMatch=Exact&resourceVersion=0', 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
    ['sendInitialEvents=true', 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'],
    [
      'watch=1&resourceVersion=5&resourceVersionMatch=NotOlderThan',
      'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    ],
    [
      'watch=1&sendInitialEvents=true&resourceVersion=5',
      'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    ],
  ])('%s', (q, err) => {
    const s = failure(q);
    expect([s.code, s.reason]).toEqual([422, 'Invalid']);
    expect(s.message).toBe(`ListOptions.meta.k8s.io "" is invalid: ${err}`);
    expect(s.details?.group).toBe('meta.k8s.io');
    expect(s.details?.kind).toBe('ListOptions');
  });

  it('aggregates several errors', () => {
    const s = failure('watch=1&sendInitialEvents=true&resourceVersionMatch=Exact');
    expect(s.message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
    );
    expect(statusJson(s)).toContain(
      '"details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan","field":"resourceVersionMatch"}',
    );
  });

  it('without the WatchList gate, sendInitialEvents on watch is forbidden (apimachinery test case)', () => {
    expect(validateListOptions({ watch: true, resourceVersion: '', resourceVersionMatch: '', continue: '', sendInitialEvents: true }, false).map(formatFieldError)).toEqual([
      'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
    ]);
  });

  it('validation runs before field label conversion', () => {
    expect(failure('fieldSelector=bad.field%3Dx&sendInitialEvents=true').code).toBe(422);
  });

  it('the legacy /watch/ prefix validates as a list, then watches', () => {
    const o = parse('resourceVersion=0', pods, { forceWatch: true });
    expect(o.watch).toBe(true);
    expect(o.sendInitialEvents).toBeUndefined();
  });
});

describe('named watches', () => {
  const named = { ...pods, name: 'p1' };
  it('adds metadata.name from the path', () => {
    expect(parse('', named).fieldSelector.toString()).toBe('metadata.name=p1');
    expect(parse('fieldSelector=metadata.name%3Dp1', named).fieldSelector.toString()).toBe('metadata.name=p1');
  });
  it('rejects a conflicting selector', () => {
    const s = failure('fieldSelector=metadata.name%3Dp2', named);
    expect([s.code, s.message]).toEqual([400, "fieldSelector metadata.name doesn't match requested name"]);
    expect(failure('fieldSelector=status.phase%3DRunning', named).code).toBe(400);
  });
});
